#include "kbench/descriptor_write.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/host_threads.hpp"
#include "kbench/error.hpp"

namespace kbench {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicBytes = 6;

std::string npy_header(const char* descr, int rows) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(rows) + ", " + std::to_string(kDescriptorBytes) + "), }";
  // Padded with spaces and a newline so the data starts on a 64-byte boundary, as NumPy does.
  constexpr std::size_t kAlignment = 64;
  constexpr std::size_t kPrefixBytes = kNpyMagicBytes + 2 + 2;
  const std::size_t unpadded = kPrefixBytes + dict.size() + 1;
  dict.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  dict += '\n';
  std::string header(kNpyMagic, kNpyMagicBytes);
  header += char(1);  // version 1.0
  header += char(0);
  header += char(dict.size() & 0xff);
  header += char(dict.size() >> 8);
  return header + dict;
}

void check_result_shape(const CemdResult& result, bool matrix) {
  if (result.queries < 0 || result.database < 0) throw Error("a result with negative sizes");
  if (matrix ? result.matrix.size() != std::size_t(result.queries) * std::size_t(result.database)
             : result.neighbours.size() != std::size_t(result.queries)) {
    throw Error(matrix ? "the result holds no all-pairs matrix of its size"
                       : "the result holds no neighbours for every query");
  }
}

// The most characters put_integer and put_distance write.
constexpr int kMostIntegerChars = 20;   // -9223372036854775808
constexpr int kMostDistanceChars = 16;  // -1.23456789e+38

// A distance as printf's "%.9g" writes it (to_chars with a precision is specified to give the
// same characters), without printf's format parsing, at `at`; returns the end.
char* put_distance(char* at, float value) {
  constexpr int kSignificantDigits = 9;  // enough to read every float back exactly
  return std::to_chars(at, at + kMostDistanceChars, value, std::chars_format::general,
                       kSignificantDigits)
      .ptr;
}

char* put_integer(char* at, long long value) {
  return std::to_chars(at, at + kMostIntegerChars, value).ptr;
}

void append_distance(std::string& line, float value) {
  char text[kMostDistanceChars];
  line.append(text, put_distance(text, value));
}

void append_integer(std::string& line, long long value) {
  char text[kMostIntegerChars];
  line.append(text, put_integer(text, value));
}

}  // namespace

void write_descriptors_npy(OutputFile& out, const DescriptorSet& set, NpyValueType type) {
  if (set.count < 0 || set.values.size() != std::size_t(set.count) * kDescriptorBytes) {
    throw Error("cannot write " + output_name(out.path()) +
                ": the set's value count is not count x 128");
  }
  out.write(npy_header(type == NpyValueType::u8 ? "|u1" : "<f4", set.count));
  if (type == NpyValueType::u8) {
    out.write(set.values.data(), set.values.size());
    return;
  }
  constexpr std::size_t kChunkValues = 1 << 16;
  std::vector<unsigned char> bytes;
  for (std::size_t start = 0; start < set.values.size(); start += kChunkValues) {
    const std::size_t n = std::min(kChunkValues, set.values.size() - start);
    bytes.resize(n * 4);
    for (std::size_t i = 0; i < n; ++i) {
      const float value = set.values[start + i];
      std::uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    out.write(bytes.data(), bytes.size());
  }
}

void write_matches_csv(OutputFile& out, const CemdResult& result, float ratio) {
  check_result_shape(result, false);
  out.write("query,index,distance,second_index,second_distance,accepted\n");
  // The lines are formatted in blocks of queries on the usable cores, each block straight into a
  // buffer sized for its longest lines, then written in order.
  constexpr int kLeastBlockQueries = 4096;
  constexpr int kMostLineChars = 3 * kMostIntegerChars + 2 * kMostDistanceChars + 7;
  const int blocks = std::clamp(result.queries / kLeastBlockQueries, 1, usable_cores());
  std::vector<std::unique_ptr<char[]>> text(static_cast<std::size_t>(blocks));
  std::vector<std::size_t> lengths(text.size());
  run_on_slices(result.queries, blocks, [&](int b, std::int64_t first, std::int64_t count) {
    text[std::size_t(b)].reset(new char[std::size_t(count) * kMostLineChars]);
    char* const begin = text[std::size_t(b)].get();
    char* at = begin;
    for (std::int64_t q = first; q < first + count; ++q) {
      const CemdNeighbours& n = result.neighbours[std::size_t(q)];
      at = put_integer(at, q);
      *at++ = ',';
      at = put_integer(at, n.best_index);
      *at++ = ',';
      at = put_distance(at, n.best_distance);
      *at++ = ',';
      at = put_integer(at, n.second_index);
      *at++ = ',';
      if (n.second_index >= 0) at = put_distance(at, n.second_distance);
      *at++ = ',';
      *at++ = ratio_accepted(n, ratio) ? '1' : '0';
      *at++ = '\n';
    }
    lengths[std::size_t(b)] = std::size_t(at - begin);
  });
  for (std::size_t b = 0; b < text.size(); ++b) out.write(text[b].get(), lengths[b]);
}

void write_distance_matrix_csv(OutputFile& out, const CemdResult& result,
                               const std::function<void(int)>& on_rows) {
  check_result_shape(result, true);
  std::string line = "query";
  for (int d = 0; d < result.database; ++d) {
    line += ',';
    append_integer(line, d);
  }
  line += '\n';
  out.write(line);
  for (int q = 0; q < result.queries; ++q) {
    line.clear();
    append_integer(line, q);
    for (int d = 0; d < result.database; ++d) {
      line += ',';
      append_distance(line, result.matrix[std::size_t(q) * result.database + d]);
    }
    line += '\n';
    out.write(line);
    if (on_rows) on_rows(1);
  }
}

void write_descriptors_npy(const std::string& path, const DescriptorSet& set, NpyValueType type) {
  OutputFile out(path);
  write_descriptors_npy(out, set, type);
  out.commit();
}

void write_matches_csv(const std::string& path, const CemdResult& result, float ratio) {
  OutputFile out(path);
  write_matches_csv(out, result, ratio);
  out.commit();
}

void write_distance_matrix_csv(const std::string& path, const CemdResult& result) {
  OutputFile out(path);
  write_distance_matrix_csv(out, result);
  out.commit();
}

std::uint64_t least_matrix_csv_bytes(std::int64_t queries, std::int64_t database) {
  return std::uint64_t(queries) * std::uint64_t(database) * 2;
}

}  // namespace kbench
