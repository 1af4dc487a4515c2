// Descriptor files (.npy, .key, CSV) read from hand-written bytes, every kind of bad input, row
// ranges, the .npy writer and the atomic writing of match results.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kbench/descriptor_io.hpp"
#include "kbench/error.hpp"

using namespace kbench;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/kbench-descriptors-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Names of the folder's entries, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Value (row, column) of the small sets below: every value 0..255 appears.
std::uint8_t pattern_value(int row, int column) {
  return std::uint8_t((row * 131 + column) % 256);
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
  std::ifstream in(dir.file("d.csv"));
  std::string line;
  std::vector<float> back;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    std::stringstream fields(line);
    std::string field;
    while (std::getline(fields, field, ',')) back.push_back(std::strtof(field.c_str(), nullptr));
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
                    Catch::Contains("cannot create") && Catch::Contains("missing/m.csv"));
  CHECK_THROWS_AS(write_descriptors_npy(dir.file("missing/a.npy"), pattern_set(1)), Error);
  // A folder in the way: the temporary file is written, the rename fails, and the temporary
  // file is removed.
  fs::create_directory(dir.file("taken.csv"));
  CHECK_THROWS_WITH(write_matches_csv(dir.file("taken.csv"), result, 0.8f),
                    Catch::Contains("cannot rename"));
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
