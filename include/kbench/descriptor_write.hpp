#pragma once
// Writing descriptor sets and match results to an OutputFile (committed by the caller). Output
// files are written through a temporary name in the same folder and renamed when complete, so a
// failed write leaves no partial file (and an older file of that name intact).

#include <cstdint>
#include <functional>
#include <string>

#include "kbench/cemd.hpp"
#include "kbench/descriptor_io.hpp"
#include "kbench/file_io.hpp"

namespace kbench {

// `set` as a version 1.0 .npy file of shape (count, 128): uint8 ('|u1') or little-endian
// float32 ('<f4').
void write_descriptors_npy(OutputFile& out, const DescriptorSet& set,
                           NpyValueType type = NpyValueType::u8);

// The matches of a nearest-two result as CSV: the header line
//   query,index,distance,second_index,second_distance,accepted
// then one line per query in query order. Indices are 0-based rows of the query and database
// files; distances are printed with 9 significant digits, so they read back as the same float;
// a query without a second neighbour (a one-row database) has second_index -1 and an empty
// second_distance; accepted is 1 when Lowe's ratio test with `ratio` passes, else 0.
void write_matches_csv(OutputFile& out, const CemdResult& result, float ratio);

// The all-pairs distance matrix as CSV: the header line "query,0,1,...,N-1" (the database rows),
// then one line per query: its row, then its distance to every database row, values as in
// write_matches_csv. `on_rows`, when set, is told of every query line written.
void write_distance_matrix_csv(OutputFile& out, const CemdResult& result,
                               const std::function<void(int)>& on_rows = {});

// The same, each to a file of its own, committed when complete.
void write_descriptors_npy(const std::string& path, const DescriptorSet& set,
                           NpyValueType type = NpyValueType::u8);
void write_matches_csv(const std::string& path, const CemdResult& result, float ratio);
void write_distance_matrix_csv(const std::string& path, const CemdResult& result);

// The bytes write_distance_matrix_csv writes at least: every value takes a digit and a comma.
std::uint64_t least_matrix_csv_bytes(std::int64_t queries, std::int64_t database);

}  // namespace kbench
