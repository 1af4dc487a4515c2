#pragma once
// Reading and writing descriptor sets and match results.
//
// Descriptor files (one SIFT descriptor of 128 values per row):
// - NumPy .npy (format versions 1.0, 2.0 and 3.0): dtype uint8 or little-endian float32, shape
//   (N, 128), C order. The format is recognised by its magic bytes, whatever the file's name.
// - Lowe's / VLFeat text .key: a header line "N 128", then per keypoint 4 numbers (row, column,
//   scale, orientation) and 128 integers, separated by any white space.
// - CSV (.csv, .txt): one descriptor per line, 128 comma-separated values; a first line none of
//   whose fields is a number is a header and is skipped; blank lines are skipped.
// Every value must be a whole number from 0 to 255 (what OpenCV's and VLFeat's SIFT give, also
// as float32); anything else (NaN, negative, over 255, fractional) is refused with a message that
// names the file, the row and the column (both 0-based). Rows are counted from 0 in the file's
// descriptor order, headers and blank lines not counted. Empty sets are refused.
//
// Output files are written through a temporary name in the same folder and renamed when
// complete, so a failed write leaves no partial file (and an older file of that name intact).

#include <cstdint>
#include <string>

#include "kbench/cemd.hpp"

namespace kbench {

enum class DescriptorFileFormat { npy, key, csv };
const char* to_string(DescriptorFileFormat format);

// The format of `path`: .npy by its magic bytes, else by the extension (.key; .csv or .txt).
// Throws Error for an unreadable file or an unknown extension.
DescriptorFileFormat descriptor_file_format(const std::string& path);

// The number of descriptors in `path`, cheaply: .npy from its header (and the file's size
// checked against it), .key from its header line, CSV by scanning the lines.
std::int64_t count_descriptors(const std::string& path);

// Every descriptor of `path`, checked as above.
DescriptorSet read_descriptors(const std::string& path);

// Rows [first, first + count) of `path` (first + count ≤ count_descriptors(path); count 0 gives
// an empty set). .npy seeks to the rows and reads only them; text formats scan past the rows
// before. The rows' values are checked as in read_descriptors.
DescriptorSet read_descriptor_rows(const std::string& path, std::int64_t first, int count);

enum class NpyValueType { u8, f32 };

// Writes `set` as a version 1.0 .npy file of shape (count, 128): uint8 ('|u1') or
// little-endian float32 ('<f4').
void write_descriptors_npy(const std::string& path, const DescriptorSet& set,
                           NpyValueType type = NpyValueType::u8);

// The matches of a nearest-two result as CSV: the header line
//   query,index,distance,second_index,second_distance,accepted
// then one line per query in query order. Indices are 0-based rows of the query and database
// files; distances are printed with 9 significant digits, so they read back as the same float;
// a query without a second neighbour (a one-row database) has second_index -1 and an empty
// second_distance; accepted is 1 when Lowe's ratio test with `ratio` passes, else 0.
void write_matches_csv(const std::string& path, const CemdResult& result, float ratio);

// The all-pairs distance matrix as CSV: one line per query, one column per database row, no
// header; values as in write_matches_csv.
void write_distance_matrix_csv(const std::string& path, const CemdResult& result);

}  // namespace kbench
