// Descriptor files (.npy, .key, CSV) read from hand-written bytes, every kind of bad input, row
// ranges, the .npy writer and the atomic writing of match results.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <thread>

#include "kbench/descriptor_io.hpp"
#include "kbench/descriptor_write.hpp"
#include "kbench/error.hpp"
#include "temp_files.hpp"

using namespace kbench;
using namespace kbench::testing;
namespace fs = std::filesystem;

namespace {

// Value (row, column) of the small sets below: every value 0..255 appears, and row 0 is not
// 0,1,...,127, which a CSV reader takes as pandas' header line.
std::uint8_t pattern_value(int row, int column) {
  return std::uint8_t((row * 131 + column + 7) % 256);
}

DescriptorSet pattern_set(int rows) {
  DescriptorSet set;
  set.count = rows;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < kDescriptorBytes; ++c) set.values.push_back(pattern_value(r, c));
  }
  return set;
}

DescriptorSet rows_of(const DescriptorSet& set, int first, int count) {
  DescriptorSet part;
  part.count = count;
  part.values.assign(set.values.begin() + std::size_t(first) * kDescriptorBytes,
                     set.values.begin() + std::size_t(first + count) * kDescriptorBytes);
  return part;
}

bool same(const DescriptorSet& a, const DescriptorSet& b) {
  return a.count == b.count && a.values == b.values;
}

// An .npy file written byte by byte: magic, version, header length (2 bytes for 1.0, 4 for
// 2.0/3.0), the dict, then `data`.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const std::size_t prefix = 8 + (major == 1 ? 2 : 4);
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += char(major);
  bytes += char(0);
  const std::size_t n = header.size();
  bytes += char(n & 0xff);
  bytes += char((n >> 8) & 0xff);
  if (major != 1) bytes += std::string(2, '\0');
  return bytes + header + data;
}

std::string dict(const char* descr, const std::string& shape, bool fortran = false) {
  return std::string("{'descr': '") + descr +
         "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

std::string u8_data(const DescriptorSet& set) {
  return std::string(set.values.begin(), set.values.end());
}

std::string f32_data(const std::vector<float>& values) {
  std::string data(values.size() * 4, '\0');
  std::memcpy(data.data(), values.data(), data.size());  // the test machine is little-endian
  return data;
}

std::vector<float> as_floats(const DescriptorSet& set) {
  return std::vector<float>(set.values.begin(), set.values.end());
}

// A value to write as given text instead of the set's number.
struct Replaced {
  int row = -1, column = -1;
  std::string text;
};

std::string value_text(const DescriptorSet& set, int r, int c, const Replaced& replaced) {
  return r == replaced.row && c == replaced.column ? replaced.text
                                                   : std::to_string(int(set.row(r)[c]));
}

// Lowe's layout: "N 128", then per keypoint its geometry on one line and the 128 values on
// lines of 20.
std::string key_text(const DescriptorSet& set, const Replaced& replaced = {}) {
  std::ostringstream out;
  out << set.count << " 128\n";
  for (int r = 0; r < set.count; ++r) {
    out << 10.5 + r << ' ' << 20.25 << ' ' << 1.5 << ' ' << -0.75 << '\n';
    for (int c = 0; c < kDescriptorBytes; ++c) {
      out << ' ' << value_text(set, r, c, replaced)
          << ((c % 20 == 19 || c == kDescriptorBytes - 1) ? "\n" : "");
    }
  }
  return out.str();
}

std::string csv_line(const DescriptorSet& set, int r, const char* separator = ",",
                     const Replaced& replaced = {}) {
  std::string line;
  for (int c = 0; c < kDescriptorBytes; ++c) {
    line += (c ? separator : "") + value_text(set, r, c, replaced);
  }
  return line;
}

std::string csv_text(const DescriptorSet& set, bool header) {
  std::string text;
  if (header) {
    for (int c = 0; c < kDescriptorBytes; ++c) text += (c ? ",d" : "d") + std::to_string(c);
    text += "\n";
  }
  for (int r = 0; r < set.count; ++r) text += csv_line(set, r) + "\n";
  return text;
}

}  // namespace

TEST_CASE("hand-written .npy files of uint8 and float32 read exactly", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(5);
  write_bytes(dir.file("u8.npy"), npy_bytes(dict("|u1", "(5, 128)"), u8_data(set)));
  write_bytes(dir.file("f32.npy"), npy_bytes(dict("<f4", "(5, 128)"), f32_data(as_floats(set))));
  // Other spellings NumPy and others write: '<u1', double quotes, Python 2's 5L, no trailing
  // comma, versions 2.0 and 3.0.
  write_bytes(dir.file("u8-v2.npy"),
              npy_bytes("{\"descr\": \"<u1\", \"fortran_order\": False, \"shape\": (5L, 128L)}",
                        u8_data(set), 2));
  write_bytes(dir.file("f32-v3.npy"),
              npy_bytes(dict("<f4", "(5, 128)"), f32_data(as_floats(set)), 3));
  for (const char* name : {"u8.npy", "f32.npy", "u8-v2.npy", "f32-v3.npy"}) {
    INFO(name);
    CHECK(descriptor_file_format(dir.file(name)) == DescriptorFileFormat::npy);
    CHECK(count_descriptors(dir.file(name)) == 5);
    CHECK(same(read_descriptors(dir.file(name)), set));
  }
  // The magic bytes decide, not the name.
  write_bytes(dir.file("named.csv"), npy_bytes(dict("|u1", "(5, 128)"), u8_data(set)));
  CHECK(same(read_descriptors(dir.file("named.csv")), set));
}

TEST_CASE("hand-written .key and CSV files read exactly", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(4);
  write_bytes(dir.file("a.key"), key_text(set));
  CHECK(descriptor_file_format(dir.file("a.key")) == DescriptorFileFormat::key);
  CHECK(count_descriptors(dir.file("a.key")) == 4);
  CHECK(same(read_descriptors(dir.file("a.key")), set));

  write_bytes(dir.file("plain.csv"), csv_text(set, false));
  write_bytes(dir.file("header.csv"), csv_text(set, true));
  // CRLF line ends, spaces around values, blank lines, values written as floats.
  std::string messy = "\r\n";
  for (int r = 0; r < set.count; ++r) {
    std::string line = csv_line(set, r, " , ");
    if (r == 1) line = "12.0" + line.substr(line.find(' '));
    messy += line + "\r\n\r\n";
  }
  write_bytes(dir.file("messy.txt"), messy);
  DescriptorSet messy_set = set;
  messy_set.values[kDescriptorBytes] = 12;
  for (const char* name : {"plain.csv", "header.csv", "messy.txt"}) {
    INFO(name);
    CHECK(descriptor_file_format(dir.file(name)) == DescriptorFileFormat::csv);
    CHECK(count_descriptors(dir.file(name)) == 4);
    CHECK(
        same(read_descriptors(dir.file(name)), std::string(name) == "messy.txt" ? messy_set : set));
  }
}

TEST_CASE(".npy files of the wrong kind are refused with the reason", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(3);
  const std::string data = u8_data(set);
  const std::string floats = f32_data(as_floats(set));
  struct Bad {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {"fortran.npy", npy_bytes(dict("|u1", "(3, 128)", true), data), "Fortran"},
      {"f64.npy",
       npy_bytes(dict("<f8", "(3, 128)"), data + data + data + data + data + data + data + data),
       "'<f8'"},
      {"i4.npy", npy_bytes(dict("<i4", "(3, 128)"), floats), "'<i4'"},
      {"big.npy", npy_bytes(dict(">f4", "(3, 128)"), floats), "big-endian"},
      {"width.npy", npy_bytes(dict("|u1", "(6, 64)"), data), "shape (6, 64)"},
      {"flat.npy", npy_bytes(dict("|u1", "(384,)"), data), "shape (384,)"},
      {"cube.npy", npy_bytes(dict("|u1", "(3, 128, 1)"), data), "shape (3, 128, 1)"},
      {"empty-set.npy", npy_bytes(dict("|u1", "(0, 128)"), ""), "holds no descriptors"},
      {"short.npy", npy_bytes(dict("|u1", "(3, 128)"), data.substr(0, 300)), "truncated"},
      {"short-f32.npy", npy_bytes(dict("<f4", "(3, 128)"), floats.substr(0, 1535)), "truncated"},
      {"long.npy", npy_bytes(dict("|u1", "(3, 128)"), data + "x"), "after the data"},
      {"version.npy", npy_bytes(dict("|u1", "(3, 128)"), data, 4), "version 4.0"},
      {"dict.npy", npy_bytes("{'descr': '|u1', 'shape': (3, 128)", data), "not a valid .npy"},
      {"nokey.npy", npy_bytes("{'descr': '|u1', 'shape': (3, 128), }", data), "lacks"},
      {"header.npy", npy_bytes(dict("|u1", "(3, 128)"), "").substr(0, 40), "truncated"},
      {"empty.npy", "", "is empty"},
      {"noise.npy", std::string(200, 'x'), "not a .npy file"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.name);
    write_bytes(dir.file(bad.name), bad.bytes);
    CHECK_THROWS_WITH(read_descriptors(dir.file(bad.name)),
                      Catch::Contains(bad.message) && Catch::Contains(bad.name));
    CHECK_THROWS_AS(count_descriptors(dir.file(bad.name)), Error);
    CHECK_THROWS_AS(read_descriptor_rows(dir.file(bad.name), 0, 1), Error);
  }
}

TEST_CASE("float values that are not whole numbers 0..255 are refused where they are",
          "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(3);
  struct Bad {
    float value;
    const char* shown;
  };
  const Bad cases[] = {{std::nanf(""), "NaN"}, {-1.0f, "-1"},     {256.0f, "256"},
                       {12.5f, "12.5"},        {INFINITY, "inf"}, {-0.25f, "-0.25"}};
  for (const Bad& bad : cases) {
    INFO(bad.shown);
    std::vector<float> values = as_floats(set);
    values[2 * kDescriptorBytes + 17] = bad.value;  // row 2, column 17
    write_bytes(dir.file("bad.npy"), npy_bytes(dict("<f4", "(3, 128)"), f32_data(values)));
    CHECK_THROWS_WITH(read_descriptors(dir.file("bad.npy")),
                      Catch::Contains("bad.npy") && Catch::Contains("row 2, column 17") &&
                          Catch::Contains(std::string("holds ") + bad.shown));
  }
  // 0 and 255 themselves are fine, and -0.0 is 0.
  std::vector<float> edges = as_floats(set);
  edges[0] = 255.0f;
  edges[1] = -0.0f;
  write_bytes(dir.file("edges.npy"), npy_bytes(dict("<f4", "(3, 128)"), f32_data(edges)));
  const DescriptorSet read = read_descriptors(dir.file("edges.npy"));
  CHECK(read.values[0] == 255);
  CHECK(read.values[1] == 0);
}

TEST_CASE("bad .key files are refused with the reason", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(3);
  const std::string good = key_text(set);
  std::string word = good;
  word.replace(word.find("20.25"), 5, "north");
  const struct {
    const char* name;
    std::string text;
    const char* message;
  } cases[] = {
      {"length.key", "3 64\n" + good.substr(good.find('\n') + 1), "length 64"},
      {"header.key", "three 128\n" + good.substr(good.find('\n') + 1), "must begin"},
      {"none.key", "0 128\n", "holds no descriptors"},
      {"short.key", good.substr(0, good.size() - 40), "truncated"},
      {"long.key", good + "1 2 3\n", "after the 3 keypoints"},
      {"over.key", key_text(set, {2, 127, "300"}), "row 2, column 127 (0-based) holds 300"},
      {"fraction.key", key_text(set, {1, 5, "7.5"}), "row 1, column 5 (0-based) holds 7.5"},
      {"word.key", word, "'north', not a number"},
      {"empty.key", "", "must begin"},
      // Found by fuzz_descriptor_reader: the reader allocated the promised 68 GB first.
      {"huge.key", "532434233 128\n10 0.2 ", "promises 532434233 keypoints, which need at least"},
  };
  for (const auto& bad : cases) {
    INFO(bad.name);
    write_bytes(dir.file(bad.name), bad.text);
    CHECK_THROWS_WITH(read_descriptors(dir.file(bad.name)),
                      Catch::Contains(bad.message) && Catch::Contains(bad.name));
  }
}

TEST_CASE("bad CSV files are refused with the reason", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(3);
  const std::string row0 = csv_line(set, 0), row1 = csv_line(set, 1);
  const auto row1_with = [&](int column, const std::string& text) {
    return row0 + "\n" + csv_line(set, 1, ",", {1, column, text}) + "\n";
  };
  const auto row0_with = [&](int column, const std::string& text) {
    return csv_line(set, 0, ",", {0, column, text}) + "\n";
  };
  const struct {
    const char* name;
    std::string text;
    const char* message;
  } cases[] = {
      {"short.csv", row0 + "\n" + row1.substr(0, row1.rfind(',')) + "\n",
       "line 2 (row 1) has 127 values"},
      {"long.csv", row0 + ",7\n", "has 129 values"},
      {"word.csv", row1_with(0, "5x"), "row 1, column 0 (0-based, line 2) is '5x', not a number"},
      {"gap.csv", row1_with(1, ""), "row 1, column 1 (0-based, line 2) is empty"},
      {"over.csv", row1_with(0, "256"), "row 1, column 0 (0-based) holds 256"},
      {"nan.csv", row0_with(0, "nan"), "row 0, column 0 (0-based) holds NaN"},
      {"minus.csv", row0_with(9, "-3"), "row 0, column 9 (0-based) holds -3"},
      {"fraction.csv", row1_with(127, "0.5"), "row 1, column 127 (0-based) holds 0.5"},
      {"empty.csv", "", "holds no descriptors"},
      {"only-header.csv", "a,b,c\n\n", "holds no descriptors"},
  };
  for (const auto& bad : cases) {
    INFO(bad.name);
    write_bytes(dir.file(bad.name), bad.text);
    CHECK_THROWS_WITH(read_descriptors(dir.file(bad.name)),
                      Catch::Contains(bad.message) && Catch::Contains(bad.name));
  }
}

TEST_CASE("missing files, folders and unknown types give clear errors", "[descriptor_io]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_descriptors(dir.file("none.npy")),
                    Catch::Contains("cannot open") && Catch::Contains("none.npy"));
  fs::create_directory(dir.file("folder.npy"));
  CHECK_THROWS_WITH(read_descriptors(dir.file("folder.npy")), Catch::Contains("is a folder"));
  write_bytes(dir.file("a.sift"), csv_text(pattern_set(1), false));
  CHECK_THROWS_WITH(read_descriptors(dir.file("a.sift")),
                    Catch::Contains("unknown descriptor file type"));
}

TEST_CASE("row ranges read only their rows, in every format", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(7);
  std::vector<float> floats = as_floats(set);
  // Invalid values outside the range read show that the other rows are not read (.npy seeks).
  floats[0] = std::nanf("");
  floats[6 * kDescriptorBytes + 3] = 300.0f;
  write_bytes(dir.file("u8.npy"), npy_bytes(dict("|u1", "(7, 128)"), u8_data(set)));
  write_bytes(dir.file("f32.npy"), npy_bytes(dict("<f4", "(7, 128)"), f32_data(floats)));
  write_bytes(dir.file("a.key"), key_text(set));
  write_bytes(dir.file("a.csv"), csv_text(set, true));
  for (const char* name : {"u8.npy", "f32.npy", "a.key", "a.csv"}) {
    INFO(name);
    const std::string path = dir.file(name);
    CHECK(count_descriptors(path) == 7);
    CHECK(same(read_descriptor_rows(path, 1, 5), rows_of(set, 1, 5)));
    CHECK(same(read_descriptor_rows(path, 3, 1), rows_of(set, 3, 1)));
    CHECK(read_descriptor_rows(path, 4, 0).count == 0);
    CHECK(read_descriptor_rows(path, 7, 0).count == 0);
    CHECK_THROWS_WITH(read_descriptor_rows(path, 5, 3), Catch::Contains("out of range"));
    CHECK_THROWS_WITH(read_descriptor_rows(path, 8, 0), Catch::Contains("out of range"));
    CHECK_THROWS_AS(read_descriptor_rows(path, -1, 2), Error);
  }
  CHECK_THROWS_WITH(read_descriptor_rows(dir.file("f32.npy"), 0, 2), Catch::Contains("row 0"));
  CHECK_THROWS_WITH(read_descriptor_rows(dir.file("f32.npy"), 5, 2),
                    Catch::Contains("row 6, column 3"));
  CHECK_THROWS_WITH(read_descriptors(dir.file("f32.npy")), Catch::Contains("row 0, column 0"));
}

TEST_CASE("rows read into the caller's memory equal the rows read as a set, in every format",
          "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(7);
  std::vector<float> floats = as_floats(set);
  floats[6 * kDescriptorBytes + 3] = 300.0f;
  write_bytes(dir.file("u8.npy"), npy_bytes(dict("|u1", "(7, 128)"), u8_data(set)));
  write_bytes(dir.file("f32.npy"), npy_bytes(dict("<f4", "(7, 128)"), f32_data(floats)));
  write_bytes(dir.file("a.key"), key_text(set));
  write_bytes(dir.file("a.csv"), csv_text(set, true));
  const auto read_into = [](const std::string& path, std::int64_t first, int count) {
    DescriptorSet rows;
    rows.count = count;
    rows.values.assign(std::size_t(count) * kDescriptorBytes + 1, 0xAB);  // one byte past the end
    read_descriptor_rows_into(path, first, count, rows.values.data());
    CHECK(rows.values.back() == 0xAB);
    rows.values.pop_back();
    return rows;
  };
  for (const char* name : {"u8.npy", "f32.npy", "a.key", "a.csv"}) {
    INFO(name);
    const std::string path = dir.file(name);
    CHECK(descriptor_rows_by_range(descriptor_file_format(path)) ==
          (descriptor_file_format(path) == DescriptorFileFormat::npy));
    CHECK(same(read_into(path, 1, 5), rows_of(set, 1, 5)));
    CHECK(same(read_into(path, 0, 1), rows_of(set, 0, 1)));
    CHECK(same(read_into(path, 7, 0), rows_of(set, 7, 0)));
    std::uint8_t unused[kDescriptorBytes];
    CHECK_THROWS_WITH(read_descriptor_rows_into(path, 5, 3, unused),
                      Catch::Contains("out of range"));
    CHECK_THROWS_AS(read_descriptor_rows_into(path, -1, 1, unused), Error);
  }
  std::vector<std::uint8_t> two(2 * kDescriptorBytes);
  CHECK_THROWS_WITH(read_descriptor_rows_into(dir.file("f32.npy"), 5, 2, two.data()),
                    Catch::Contains("row 6, column 3"));
  // A pipe cannot be read by range.
  CHECK_THROWS_WITH(read_descriptor_rows_into("-", 0, 1, two.data()),
                    Catch::Contains("is not a regular file"));
}

TEST_CASE("a .npy file read by range on several threads at once gives its rows",
          "[descriptor_io]") {
  TempDir dir;
  // More rows than a float32 chunk, and a count that no thread count below divides.
  const int rows = 10007;
  const DescriptorSet set = generated_descriptors(rows, 17);
  write_bytes(dir.file("u8.npy"), npy_bytes(dict("|u1", "(10007, 128)"), u8_data(set)));
  write_bytes(dir.file("f32.npy"),
              npy_bytes(dict("<f4", "(10007, 128)"), f32_data(as_floats(set))));
  for (const char* name : {"u8.npy", "f32.npy"}) {
    for (const int threads : {1, 2, 3, 8}) {
      INFO(name << ", " << threads << " threads");
      std::vector<std::uint8_t> values(std::size_t(rows - 5) * kDescriptorBytes);
      std::vector<std::thread> readers;
      for (int t = 0; t < threads; ++t) {
        readers.emplace_back([&, t] {
          const std::int64_t first = std::int64_t(rows - 5) * t / threads;
          const std::int64_t end = std::int64_t(rows - 5) * (t + 1) / threads;
          read_descriptor_rows_into(dir.file(name), 5 + first, int(end - first),
                                    values.data() + first * kDescriptorBytes);
        });
      }
      for (auto& r : readers) r.join();
      CHECK(values == rows_of(set, 5, rows - 5).values);
    }
  }
}

TEST_CASE("a whole .npy file is read on several threads as one read gives it, errors included",
          "[descriptor_io]") {
  TempDir dir;
  // Enough rows for a slice per core on a machine with several (8192 rows a slice at least).
  const int rows = 40009;
  const DescriptorSet set = generated_descriptors(rows, 19);
  const std::string shape = "(40009, 128)";
  write_bytes(dir.file("u8.npy"), npy_bytes(dict("|u1", shape), u8_data(set)));
  std::vector<float> values = as_floats(set);
  write_bytes(dir.file("f32.npy"), npy_bytes(dict("<f4", shape), f32_data(values)));
  for (const char* name : {"u8.npy", "f32.npy"}) {
    INFO(name);
    const DescriptorSet read = read_descriptors(dir.file(name));
    CHECK(read.count == rows);
    CHECK(read.values == set.values);
  }
  // Bad values early and late: the first one is named, as a front-to-back read names it.
  values[std::size_t(12001) * kDescriptorBytes + 3] = 0.5f;
  values[std::size_t(39000) * kDescriptorBytes + 9] = -2.0f;
  write_bytes(dir.file("bad.npy"), npy_bytes(dict("<f4", shape), f32_data(values)));
  CHECK_THROWS_WITH(read_descriptors(dir.file("bad.npy")),
                    Catch::Contains("row 12001, column 3") && Catch::Contains("holds 0.5"));
}

TEST_CASE("a set's digest tells its copies from other sets, on any number of threads",
          "[descriptor_io]") {
  // Three 1 MiB slices of the digest and part of a fourth.
  const int rows = 3 * 8192 + 5;
  const DescriptorSet set = generated_descriptors(rows, 23);
  const std::uint64_t digest = descriptor_digest(set);
  CHECK(descriptor_digest(DescriptorSet(set)) == digest);
  // One bit flipped at the start, inside a later slice, at the very end.
  for (const std::size_t at : {std::size_t(0), std::size_t(2 << 20) + 77, set.values.size() - 1}) {
    INFO("byte " << at);
    DescriptorSet changed = set;
    changed.values[at] ^= 1;
    CHECK(descriptor_digest(changed) != digest);
  }
  DescriptorSet swapped = set;
  std::swap_ranges(swapped.values.begin(), swapped.values.begin() + kDescriptorBytes,
                   swapped.values.begin() + kDescriptorBytes);
  CHECK(descriptor_digest(swapped) != digest);
  DescriptorSet longer = set;
  longer.count += 1;
  longer.values.resize(longer.values.size() + kDescriptorBytes);  // a row of zeros
  CHECK(descriptor_digest(longer) != digest);
  CHECK(descriptor_digest(rows_of(set, 0, rows - 1)) != digest);
  CHECK(descriptor_digest(DescriptorSet{}) != descriptor_digest(rows_of(set, 0, 1)));
  // On one core (its slices on one thread) as on all of them.
  cpu_set_t all, one;
  REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &all)) continue;
    CPU_SET(cpu, &one);
    break;
  }
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const std::uint64_t on_one_core = descriptor_digest(set);
  REQUIRE(sched_setaffinity(0, sizeof all, &all) == 0);
  CHECK(on_one_core == digest);
}

TEST_CASE("the .npy writer round-trips uint8 and float32 and writes NumPy's layout",
          "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(9);
  write_descriptors_npy(dir.file("u8.npy"), set);
  write_descriptors_npy(dir.file("f32.npy"), set, NpyValueType::f32);
  CHECK(same(read_descriptors(dir.file("u8.npy")), set));
  CHECK(same(read_descriptors(dir.file("f32.npy")), set));
  CHECK(same(read_descriptor_rows(dir.file("f32.npy"), 2, 4), rows_of(set, 2, 4)));
  // The same bytes as the hand-written file: a 64-byte-aligned version 1.0 header.
  CHECK(read_bytes(dir.file("u8.npy")) == npy_bytes(dict("|u1", "(9, 128)"), u8_data(set)));
  CHECK(read_bytes(dir.file("f32.npy")) ==
        npy_bytes(dict("<f4", "(9, 128)"), f32_data(as_floats(set))));
  CHECK(dir.entries() == std::vector<std::string>{"f32.npy", "u8.npy"});
  DescriptorSet broken = set;
  broken.values.pop_back();
  CHECK_THROWS_WITH(write_descriptors_npy(dir.file("broken.npy"), broken),
                    Catch::Contains("count x 128"));
  CHECK(!fs::exists(dir.file("broken.npy")));
}

TEST_CASE(
    "a matches CSV of many blocks, with the widest values, holds every line as printf "
    "writes it",
    "[descriptor_io]") {
  TempDir dir;
  CemdResult result;
  result.queries = 3 * 4096 + 5;  // several blocks of queries, whatever the cores
  result.database = std::numeric_limits<std::int32_t>::max();
  const float widest[] = {std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          -1.17549435e-38f,
                          123456.789f,
                          0.0f};
  std::string expected = "query,index,distance,second_index,second_distance,accepted\n";
  for (int q = 0; q < result.queries; ++q) {
    CemdNeighbours n;
    n.best_index = q % 3 == 0 ? std::numeric_limits<std::int32_t>::max() : q / 2;
    n.best_distance = q % 7 < 6 ? widest[q % 7] : std::sqrt(float(q));
    n.second_index = q % 5 == 0 ? -1 : std::numeric_limits<std::int32_t>::max() - q;
    n.second_distance = q % 5 == 0 ? INFINITY : n.best_distance * 2.0f + float(q % 11);
    result.neighbours.push_back(n);
    char line[160];
    std::snprintf(line, sizeof line, "%d,%d,%.9g,%d,", q, n.best_index, double(n.best_distance),
                  n.second_index);
    expected += line;
    if (n.second_index >= 0) {
      std::snprintf(line, sizeof line, "%.9g", double(n.second_distance));
      expected += line;
    }
    expected += ratio_accepted(n, 0.8f) ? ",1\n" : ",0\n";
  }
  write_matches_csv(dir.file("m.csv"), result, 0.8f);
  CHECK(read_bytes(dir.file("m.csv")) == expected);
}

TEST_CASE("match and matrix CSV files hold exact, round-tripping values", "[descriptor_io]") {
  TempDir dir;
  CemdResult result;
  result.queries = 3;
  result.database = 2;
  const float third = 1.0f / 3.0f;
  result.neighbours = {{1, 0.5f, 0, 1.0f}, {0, third, 1, 0.4f}, {1, 7.0f, -1, INFINITY}};
  write_matches_csv(dir.file("m.csv"), result, 0.8f);
  CHECK(read_bytes(dir.file("m.csv")) ==
        "query,index,distance,second_index,second_distance,accepted\n"
        "0,1,0.5,0,1,1\n"
        "1,0,0.333333343,1,0.400000006,0\n"
        "2,1,7,-1,,0\n");
  CHECK(std::strtof("0.333333343", nullptr) == third);

  result.matrix = {0.1f, 2.0f, third, 1e-20f, 123456.789f, 0.0f};
  write_distance_matrix_csv(dir.file("d.csv"), result);
  CHECK(read_bytes(dir.file("d.csv")) ==
        "query,0,1\n"
        "0,0.100000001,2\n"
        "1,0.333333343,9.99999968e-21\n"
        "2,123456.789,0\n");
  // Read back as a reader of the file would: the header names the database rows, the first
  // column the query rows.
  std::ifstream in(dir.file("d.csv"));
  std::string line;
  std::getline(in, line);
  CHECK(line == "query,0,1");
  std::vector<float> back;
  int lines = 0;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string field;
    std::getline(fields, field, ',');
    CHECK(field == std::to_string(lines));
    while (std::getline(fields, field, ',')) back.push_back(std::strtof(field.c_str(), nullptr));
    ++lines;
  }
  CHECK(lines == 3);
  CHECK(back == result.matrix);
}

TEST_CASE("failed writes leave no file and keep an older one", "[descriptor_io]") {
  TempDir dir;
  CemdResult result;
  result.queries = 1;
  result.database = 1;
  result.neighbours = {{0, 1.0f, -1, INFINITY}};
  // A missing folder: nothing can be created.
  CHECK_THROWS_WITH(write_matches_csv(dir.file("missing/m.csv"), result, 0.8f),
                    Catch::Contains("cannot write") && Catch::Contains("missing/m.csv"));
  CHECK_THROWS_AS(write_descriptors_npy(dir.file("missing/a.npy"), pattern_set(1)), Error);
  // A folder in the way: refused before anything is written.
  fs::create_directory(dir.file("taken.csv"));
  CHECK_THROWS_WITH(write_matches_csv(dir.file("taken.csv"), result, 0.8f),
                    Catch::Contains("is a folder"));
  CHECK(dir.entries() == std::vector<std::string>{"taken.csv"});
  // A result that does not hold what it claims: refused before anything is written, and an
  // older file of that name stays as it was.
  write_bytes(dir.file("old.csv"), "old\n");
  CemdResult inconsistent = result;
  inconsistent.queries = 2;
  CHECK_THROWS_AS(write_matches_csv(dir.file("old.csv"), inconsistent, 0.8f), Error);
  CHECK_THROWS_AS(write_distance_matrix_csv(dir.file("old.csv"), result), Error);
  CHECK(read_bytes(dir.file("old.csv")) == "old\n");
  CHECK(dir.entries() == std::vector<std::string>{"old.csv", "taken.csv"});
  // A successful write replaces it.
  write_matches_csv(dir.file("old.csv"), result, 0.8f);
  CHECK(read_bytes(dir.file("old.csv")) ==
        "query,index,distance,second_index,second_distance,accepted\n0,0,1,-1,,0\n");
}

TEST_CASE("the fuzzer's descriptor findings stay refused", "[descriptor_io]") {
  // tests/fuzz/corpus/descriptor_reader/finding-*: reproducers of fixed findings, whose first byte
  // picks the extension as in fuzz_descriptor_reader (0 .npy, 1 .key, 2 .csv).
  TempDir dir;
  int findings = 0;
  for (const auto& entry : fs::directory_iterator(KBENCH_FUZZ_CORPUS "/descriptor_reader")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("finding-", 0) != 0) continue;
    INFO(name);
    const std::string bytes = read_bytes(entry.path().string());
    REQUIRE_FALSE(bytes.empty());
    const char* extensions[] = {".npy", ".key", ".csv"};
    const std::string path =
        dir.file("input" + std::string(extensions[static_cast<unsigned char>(bytes[0]) % 3]));
    write_bytes(path, bytes.substr(1));
    CHECK_THROWS_AS(read_descriptors(path), Error);
    ++findings;
  }
  CHECK(findings >= 1);
}

namespace {

// What pandas.DataFrame(d).to_csv(index=False) writes: the column numbers as a header line.
std::string pandas_header(const char* line_end = "\n") {
  std::string line;
  for (int c = 0; c < kDescriptorBytes; ++c) line += (c ? "," : "") + std::to_string(c);
  return line + line_end;
}

std::string csv_rows(const DescriptorSet& set, const char* line_end = "\n") {
  std::string text;
  for (int r = 0; r < set.count; ++r) text += csv_line(set, r) + line_end;
  return text;
}

const std::string kBom = "\xEF\xBB\xBF";

// Writes `bytes` into `fd` from another thread and closes it, so a reader of the other end sees
// a pipe filled while it reads. SIGPIPE is ignored meanwhile: a reader that stops early makes
// the write fail instead of ending the test.
class PipeWriter {
 public:
  PipeWriter(std::string bytes, std::function<int()> open_fd)
      : old_(std::signal(SIGPIPE, SIG_IGN)), thread_([bytes = std::move(bytes), open_fd] {
          const int fd = open_fd();
          if (fd < 0) return;
          for (std::size_t at = 0; at < bytes.size();) {
            const ssize_t done = ::write(fd, bytes.data() + at, bytes.size() - at);
            if (done <= 0) break;
            at += std::size_t(done);
          }
          ::close(fd);
        }) {}
  ~PipeWriter() {
    thread_.join();
    std::signal(SIGPIPE, old_);
  }

 private:
  void (*old_)(int);
  std::thread thread_;
};

// A FIFO at `path` holding `bytes`, written while it is read.
struct FifoWriter : PipeWriter {
  FifoWriter(const std::string& path, std::string bytes)
      : PipeWriter(std::move(bytes), [path] { return ::open(path.c_str(), O_WRONLY); }) {}
};

std::string make_fifo(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// Standard input replaced by a pipe holding `bytes` for the object's life.
class StandardInputFrom {
 public:
  explicit StandardInputFrom(std::string bytes) : saved_(::dup(STDIN_FILENO)) {
    int ends[2];
    REQUIRE(::pipe(ends) == 0);
    ::dup2(ends[0], STDIN_FILENO);
    ::close(ends[0]);
    writer_ = std::make_unique<PipeWriter>(std::move(bytes), [fd = ends[1]] { return fd; });
  }
  ~StandardInputFrom() {
    ::close(STDIN_FILENO);  // a reader that stopped early: the writer's next write fails
    writer_.reset();
    ::dup2(saved_, STDIN_FILENO);
    ::close(saved_);
  }

 private:
  int saved_;
  std::unique_ptr<PipeWriter> writer_;
};

}  // namespace

TEST_CASE("a pandas header of column numbers is skipped and the rows keep their indices",
          "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(5);
  const std::string path = dir.file("pandas.csv");
  write_bytes(path, pandas_header() + csv_rows(set));
  CHECK(count_descriptors(path) == 5);
  CHECK(same(read_descriptors(path), set));
  CHECK(same(read_descriptor_rows(path, 0, 1), rows_of(set, 0, 1)));
  CHECK(same(read_descriptor_rows(path, 3, 2), rows_of(set, 3, 2)));
  // A value error names the row counted without the header, and the file's line.
  write_bytes(path, pandas_header() + csv_line(set, 0) + "\n" +
                        csv_line(set, 1, ",", {1, 4, "300"}) + "\n");
  CHECK_THROWS_WITH(read_descriptors(path), Catch::Contains("row 1, column 4 (0-based) holds 300"));
  write_bytes(
      path, pandas_header() + csv_line(set, 0) + "\n" + csv_line(set, 1, ",", {1, 4, "x"}) + "\n");
  CHECK_THROWS_WITH(read_descriptors(path), Catch::Contains("row 1, column 4 (0-based, line 3)"));
  // The same numbers written as floats are the column numbers too.
  std::string floats;
  for (int c = 0; c < kDescriptorBytes; ++c) floats += (c ? "," : "") + std::to_string(c) + ".0";
  write_bytes(path, floats + "\n" + csv_rows(set));
  CHECK(same(read_descriptors(path), set));
  // A first row that differs from the column numbers anywhere is data.
  DescriptorSet almost;
  almost.count = 1;
  for (int c = 0; c < kDescriptorBytes; ++c) almost.values.push_back(std::uint8_t(c));
  almost.values.back() = 0;
  write_bytes(path, csv_rows(almost) + csv_rows(set));
  CHECK(count_descriptors(path) == 6);
  CHECK(same(read_descriptor_rows(path, 0, 1), almost));
  // As documented, a first row that is exactly 0..127 is taken as a header.
  almost.values.back() = 127;
  write_bytes(path, csv_rows(almost) + csv_rows(set));
  CHECK(same(read_descriptors(path), set));
  write_bytes(path, csv_rows(almost));
  CHECK_THROWS_WITH(read_descriptors(path), Catch::Contains("holds no descriptors"));
}

TEST_CASE("named headers, byte order marks and CRLF line ends are read right", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(4);
  const struct {
    const char* name;
    std::string text;
  } cases[] = {
      {"named.csv", csv_text(set, true)},
      {"bom.csv", kBom + csv_rows(set)},
      {"bom-named.csv", kBom + csv_text(set, true)},
      {"bom-pandas.csv", kBom + pandas_header() + csv_rows(set)},
      {"crlf.csv", csv_rows(set, "\r\n")},
      {"crlf-pandas.csv", pandas_header("\r\n") + csv_rows(set, "\r\n")},
      {"bom-crlf-pandas.txt", kBom + "\r\n" + pandas_header("\r\n") + csv_rows(set, "\r\n")},
      {"bom.key", kBom + key_text(set)},
  };
  for (const auto& file : cases) {
    INFO(file.name);
    const std::string path = dir.file(file.name);
    write_bytes(path, file.text);
    CHECK(count_descriptors(path) == 4);
    CHECK(same(read_descriptors(path), set));
    CHECK(same(read_descriptor_rows(path, 2, 2), rows_of(set, 2, 2)));
  }
  std::string crlf_key = key_text(set);
  for (std::size_t at = 0; (at = crlf_key.find('\n', at)) != std::string::npos; at += 2) {
    crlf_key.insert(at, "\r");
  }
  // A first line of numbers with one word among them (a typo in the first row, or a header
  // beside numbers) is neither a header nor a row: refused, naming the word.
  std::string mixed = pandas_header();
  mixed.replace(mixed.find(",3,"), 3, ",x,");
  write_bytes(dir.file("mixed.csv"), mixed + csv_rows(set));
  CHECK_THROWS_WITH(
      read_descriptors(dir.file("mixed.csv")),
      Catch::Contains("line 1 mixes numbers and text (field 3, 'x', is not a number)"));
  CHECK_THROWS_WITH(count_descriptors(dir.file("mixed.csv")), Catch::Contains("mixes numbers"));
  std::string typo = csv_rows(set);
  typo.replace(typo.find(','), 1, "x,");
  write_bytes(dir.file("typo.csv"), typo);
  CHECK_THROWS_WITH(read_descriptors(dir.file("typo.csv")), Catch::Contains("mixes numbers"));
  write_bytes(dir.file("crlf.key"), kBom + crlf_key);
  CHECK(same(read_descriptors(dir.file("crlf.key")), set));
  // A byte order mark is skipped only at the start of the file.
  write_bytes(dir.file("late-bom.csv"), csv_line(set, 0) + "\n" + kBom + csv_line(set, 1) + "\n");
  CHECK_THROWS_WITH(read_descriptors(dir.file("late-bom.csv")),
                    Catch::Contains("row 1, column 0 (0-based, line 2) is '\\xef\\xbb\\xbf138'"));
}

TEST_CASE("messages show control bytes and invalid UTF-8 as \\xNN and cut long fields",
          "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(2);
  const auto with = [&](const std::string& text) {
    return csv_line(set, 0) + "\n" + csv_line(set, 1, ",", {1, 2, text}) + "\n";
  };
  const struct {
    const char* name;
    std::string text;
    std::string shown;
  } cases[] = {
      {"control.csv", with(std::string("1\x01") + '\0' + "\x7f"), "is '1\\x01\\x00\\x7f', not"},
      {"latin1.csv", with("caf\xe9"), "is 'caf\\xe9', not"},
      {"utf8.csv", with("caf\xc3\xa9"), "is 'caf\xc3\xa9', not"},
      {"c1.csv", with("\xc2\x85x"), "is '\\xc2\\x85x', not"},
      {"overlong.csv", with("\xc0\xaf"), "is '\\xc0\\xaf', not"},
      {"cut-utf8.csv", with("\xe2\x82"), "is '\\xe2\\x82', not"},
      {"long.csv", with(std::string(39, 'a') + "bcdefgh"),
       "is '" + std::string(39, 'a') + "b...', not"},
      {"exact.csv", with(std::string(40, 'a')), "is '" + std::string(40, 'a') + "', not"},
  };
  for (const auto& bad : cases) {
    INFO(bad.name);
    write_bytes(dir.file(bad.name), bad.text);
    CHECK_THROWS_WITH(read_descriptors(dir.file(bad.name)),
                      Catch::Contains("row 1, column 2 (0-based, line 2) " + bad.shown));
  }
  write_bytes(dir.file("bad.key"), key_text(set, {1, 7, "\x1b[31m"}));
  CHECK_THROWS_WITH(read_descriptors(dir.file("bad.key")),
                    Catch::Contains("holds '\\x1b[31m', not a number"));
  // The word a refused first line names is printable too.
  std::string header = pandas_header();
  header.replace(0, 1, "\x02");
  write_bytes(dir.file("header.csv"), header + csv_rows(set));
  CHECK_THROWS_WITH(describe_descriptor_file(dir.file("header.csv")),
                    Catch::Contains("(field 0, '\\x02', is not a number)"));
}

TEST_CASE("endless lines and devices are refused at once, by a stated limit", "[descriptor_io]") {
  TempDir dir;
  const auto started = std::chrono::steady_clock::now();
  for (const char* name : {"zero.csv", "zero.txt", "zero.key", "zero.npy"}) {
    fs::create_symlink("/dev/zero", dir.file(name));
  }
  CHECK_THROWS_WITH(read_descriptors(dir.file("zero.csv")),
                    Catch::Contains("'" + dir.file("zero.csv") + "': line 1 is longer than 65536 " +
                                    "bytes, the most a line of a descriptor file may hold"));
  CHECK_THROWS_WITH(read_descriptors(dir.file("zero.txt")),
                    Catch::Contains("line 1 is longer than 65536 bytes"));
  CHECK_THROWS_WITH(read_descriptors(dir.file("zero.key")),
                    Catch::Contains("zero.key': line 1 holds a value longer than 1024 bytes"));
  CHECK_THROWS_WITH(read_descriptors(dir.file("zero.npy")),
                    Catch::Contains("zero.npy' is not a .npy file (no NumPy magic bytes)"));
  // Devices cannot be read in parts.
  for (const char* name : {"zero.csv", "zero.key", "zero.npy"}) {
    INFO(name);
    CHECK_THROWS_WITH(count_descriptors(dir.file(name)), Catch::Contains("is not a regular file"));
    CHECK_THROWS_WITH(read_descriptor_rows(dir.file(name), 0, 1),
                      Catch::Contains("is not a regular file"));
  }
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));

  // The same limits in regular files: the line or value that is too long is named.
  const DescriptorSet set = pattern_set(2);
  write_bytes(dir.file("long-line.csv"),
              csv_text(set, true) + std::string(65537, ' ') + "\n" + csv_line(set, 1) + "\n");
  CHECK_THROWS_WITH(read_descriptors(dir.file("long-line.csv")),
                    Catch::Contains("long-line.csv': line 4 is longer than 65536 bytes"));
  CHECK_THROWS_WITH(count_descriptors(dir.file("long-line.csv")),
                    Catch::Contains("line 4 is longer than 65536 bytes"));
  write_bytes(dir.file("fits.csv"), std::string(65536 - 1, ' ') + "\n" + csv_rows(set));
  CHECK(same(read_descriptors(dir.file("fits.csv")), set));
  std::string long_value = key_text(set);
  long_value.insert(long_value.find("20.25"), std::string(1025, '7'));
  write_bytes(dir.file("long-value.key"), long_value);
  CHECK_THROWS_WITH(read_descriptors(dir.file("long-value.key")),
                    Catch::Contains("line 2 holds a value longer than 1024 bytes"));
  // A .key file with every value on one line is fine: values are bounded, not lines.
  std::string one_line = key_text(pattern_set(300));
  std::replace(one_line.begin() + one_line.find('\n') + 1, one_line.end(), '\n', ' ');
  REQUIRE(one_line.size() > 65536 * 2);
  write_bytes(dir.file("one-line.key"), one_line);
  CHECK(same(read_descriptors(dir.file("one-line.key")), pattern_set(300)));
}

TEST_CASE("pipes are read in one pass in every format", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(4100);  // more than one chunk of .npy rows
  // by_name: what descriptor_file_format says without reading, as reading would consume bytes;
  // read_descriptors tells .npy by its magic bytes.
  const struct {
    const char* name;
    std::string bytes;
    DescriptorFileFormat by_name, read;
  } cases[] = {
      {"u8.npy", npy_bytes(dict("|u1", "(4100, 128)"), u8_data(set)), DescriptorFileFormat::npy,
       DescriptorFileFormat::npy},
      {"f32.npy", npy_bytes(dict("<f4", "(4100, 128)"), f32_data(as_floats(set)), 2),
       DescriptorFileFormat::npy, DescriptorFileFormat::npy},
      {"npy-named.csv", npy_bytes(dict("|u1", "(4100, 128)"), u8_data(set)),
       DescriptorFileFormat::csv, DescriptorFileFormat::npy},
      {"a.key", kBom + key_text(set), DescriptorFileFormat::key, DescriptorFileFormat::key},
      {"a.csv", kBom + pandas_header("\r\n") + csv_rows(set, "\r\n"), DescriptorFileFormat::csv,
       DescriptorFileFormat::csv},
  };
  for (const auto& file : cases) {
    INFO(file.name);
    const std::string path = make_fifo(dir, file.name);
    CHECK(descriptor_file_format(path) == file.by_name);  // returns without a writer
    DescriptorFileNotes notes;
    {
      FifoWriter writer(path, file.bytes);
      CHECK(same(read_descriptors(path, &notes), set));
    }
    CHECK(notes.format == file.read);
    CHECK(notes.bom_skipped == (file.bytes.compare(0, 3, kBom) == 0));
    CHECK(notes.header_skipped == (std::string(file.name) == "a.csv"));
    // Read in parts, a pipe is refused before it is opened (no writer needed).
    CHECK_THROWS_WITH(count_descriptors(path),
                      Catch::Contains("'" + path + "' is not a regular file") &&
                          Catch::Contains("must be a regular file"));
    CHECK_THROWS_WITH(read_descriptor_rows(path, 0, 1), Catch::Contains("is not a regular file"));
    CHECK_THROWS_WITH(describe_descriptor_file(path), Catch::Contains("is not a regular file"));
    fs::remove(path);
  }
}

TEST_CASE("a .npy stream is checked against its header as it is read", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(3);
  const std::string floats = f32_data(as_floats(set));
  const struct {
    const char* name;
    std::string bytes;
    const char* message;
  } cases[] = {
      {"short.npy", npy_bytes(dict("|u1", "(3, 128)"), u8_data(set).substr(0, 300)),
       "is truncated: its header promises 3 descriptors (384 bytes of data), the file holds 300"},
      {"short-f32.npy", npy_bytes(dict("<f4", "(3, 128)"), floats.substr(0, 1535)),
       "(1536 bytes of data), the file holds 1535 bytes"},
      {"long.npy", npy_bytes(dict("|u1", "(3, 128)"), u8_data(set) + "x"),
       "has bytes after the data its header describes"},
      {"huge.npy", npy_bytes(dict("|u1", "(2000000000, 128)"), u8_data(set)),
       "promises 2000000000 descriptors"},
      {"header.npy", npy_bytes(dict("|u1", "(3, 128)"), "").substr(0, 40),
       "is truncated (its header is incomplete)"},
      {"empty.npy", "", "is empty"},
  };
  for (const auto& bad : cases) {
    INFO(bad.name);
    const std::string path = make_fifo(dir, bad.name);
    {
      FifoWriter writer(path, bad.bytes);
      CHECK_THROWS_WITH(read_descriptors(path),
                        Catch::Contains(bad.message) && Catch::Contains(bad.name));
    }
    fs::remove(path);
  }
}

TEST_CASE("standard input is read as \"-\", its format told from its content", "[descriptor_io]") {
  const DescriptorSet set = pattern_set(3);
  const struct {
    const char* name;
    std::string bytes;
    DescriptorFileFormat format;
  } cases[] = {
      {"npy", npy_bytes(dict("<f4", "(3, 128)"), f32_data(as_floats(set))),
       DescriptorFileFormat::npy},
      {"csv", csv_rows(set), DescriptorFileFormat::csv},
      {"csv after a BOM, blank lines and a header",
       kBom + "\r\n  \n" + pandas_header("\r\n") + csv_rows(set, "\r\n"),
       DescriptorFileFormat::csv},
      {"key", key_text(set), DescriptorFileFormat::key},
      {"key after a BOM", kBom + "\n" + key_text(set), DescriptorFileFormat::key},
  };
  for (const auto& input : cases) {
    INFO(input.name);
    DescriptorFileNotes notes;
    {
      StandardInputFrom in(input.bytes);
      CHECK(same(read_descriptors("-", &notes), set));
    }
    CHECK(notes.format == input.format);
  }
  {
    StandardInputFrom in(csv_line(set, 0, ",", {0, 5, "-1"}) + "\n");
    CHECK_THROWS_WITH(read_descriptors("-"),
                      Catch::StartsWith("standard input: row 0, column 5 (0-based) holds -1"));
  }
  {
    StandardInputFrom in("");
    CHECK_THROWS_WITH(read_descriptors("-"), Catch::Equals("standard input holds no descriptors"));
  }
  CHECK_THROWS_WITH(count_descriptors("-"),
                    Catch::StartsWith("standard input is not a regular file"));
  CHECK_THROWS_WITH(read_descriptor_rows("-", 0, 1),
                    Catch::StartsWith("standard input is not a regular file"));
  CHECK_THROWS_WITH(describe_descriptor_file("-"), Catch::Contains("standard input"));
  CHECK_THROWS_WITH(descriptor_file_format("-"), Catch::Contains("standard input"));
}

TEST_CASE("describe_descriptor_file says what the reader skipped", "[descriptor_io]") {
  TempDir dir;
  const DescriptorSet set = pattern_set(2);
  write_bytes(dir.file("a.npy"), npy_bytes(dict("|u1", "(2, 128)"), u8_data(set)));
  write_bytes(dir.file("a.key"), kBom + key_text(set));
  write_bytes(dir.file("plain.csv"), csv_rows(set));
  write_bytes(dir.file("named.csv"), csv_text(set, true));
  write_bytes(dir.file("pandas.csv"), kBom + "\n\n" + pandas_header() + csv_rows(set));

  const DescriptorFileNotes npy = describe_descriptor_file(dir.file("a.npy"));
  CHECK(npy.format == DescriptorFileFormat::npy);
  CHECK_FALSE(npy.bom_skipped);
  CHECK_FALSE(npy.header_skipped);
  CHECK(to_string(npy) == "npy");

  const DescriptorFileNotes key = describe_descriptor_file(dir.file("a.key"));
  CHECK(key.format == DescriptorFileFormat::key);
  CHECK(key.bom_skipped);
  CHECK(to_string(key) == "key, UTF-8 byte order mark skipped");

  const DescriptorFileNotes plain = describe_descriptor_file(dir.file("plain.csv"));
  CHECK(plain.format == DescriptorFileFormat::csv);
  CHECK_FALSE(plain.header_skipped);
  CHECK(plain.header_line == 0);
  CHECK(plain.header_reason.empty());

  const DescriptorFileNotes named = describe_descriptor_file(dir.file("named.csv"));
  CHECK(named.header_skipped);
  CHECK(named.header_line == 1);
  CHECK(named.header_reason == "none of its fields is a number");

  const DescriptorFileNotes pandas = describe_descriptor_file(dir.file("pandas.csv"));
  CHECK(pandas.bom_skipped);
  CHECK(pandas.header_skipped);
  CHECK(pandas.header_line == 3);
  CHECK(pandas.header_reason == "its fields are the column numbers 0..127");
  CHECK(to_string(pandas) ==
        "csv, UTF-8 byte order mark skipped, line 3 skipped as a header (its fields are the "
        "column numbers 0..127)");
  // read_descriptors gives the same notes.
  DescriptorFileNotes read_notes;
  read_descriptors(dir.file("pandas.csv"), &read_notes);
  CHECK(read_notes.header_line == 3);
  CHECK(read_notes.header_reason == pandas.header_reason);
  CHECK(read_notes.bom_skipped);
}
