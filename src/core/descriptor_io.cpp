#include "kbench/descriptor_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <vector>

#include "kbench/error.hpp"

namespace kbench {
namespace {

// --- Files ----------------------------------------------------------------------------------

using FileHandle = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

FileHandle open_for_reading(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw Error(quoted(path) + " is a folder, not a descriptor file");
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw Error("cannot open " + quoted(path) + ": " + std::strerror(errno));
  return FileHandle(file, &std::fclose);
}

std::int64_t file_size(const std::string& path, std::FILE* file) {
  struct stat info;
  if (::fstat(::fileno(file), &info) != 0) {
    throw Error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  }
  return std::int64_t(info.st_size);
}

// Reads exactly `bytes` bytes; a short read is a truncated file.
void read_exactly(const std::string& path, std::FILE* file, void* into, std::size_t bytes) {
  if (std::fread(into, 1, bytes, file) == bytes) return;
  if (std::ferror(file)) throw Error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  throw Error(quoted(path) + " is truncated");
}

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

// A file written under a temporary name in the target's folder (so the rename cannot cross file
// systems) and renamed over the target by commit(); destroyed uncommitted, it removes the
// temporary file.
class AtomicOutputFile {
 public:
  explicit AtomicOutputFile(const std::string& path) : path_(path) {
    // The process id keeps concurrent writers (e.g. two jobs) apart; O_EXCL never reuses a file.
    constexpr int kAttempts = 100;
    for (int attempt = 0; attempt < kAttempts && !file_; ++attempt) {
      temporary_ = path + ".partial-" + std::to_string(::getpid()) +
                   (attempt ? "-" + std::to_string(attempt) : "");
      const int fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd < 0) throw Error("cannot create " + quoted(temporary_) + ": " + std::strerror(errno));
      file_ = ::fdopen(fd, "wb");
      if (!file_) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        std::remove(temporary_.c_str());
        throw Error("cannot write " + quoted(temporary_) + ": " + reason);
      }
    }
    if (!file_) throw Error("cannot find a free temporary name next to " + quoted(path));
  }
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;
  ~AtomicOutputFile() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(temporary_.c_str());
  }

  void write(const void* data, std::size_t bytes) {
    if (std::fwrite(data, 1, bytes, file_) != bytes) fail();
  }
  void write(const std::string& text) { write(text.data(), text.size()); }

  // Flushes and closes the temporary file, then renames it to the target.
  void commit() {
    if (std::fflush(file_) != 0 || std::ferror(file_)) fail();
    std::FILE* file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0) fail();
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
      throw Error("cannot rename " + quoted(temporary_) + " to " + quoted(path_) + ": " +
                  std::strerror(errno));
    }
    committed_ = true;
  }

 private:
  [[noreturn]] void fail() const {
    throw Error("cannot write " + quoted(temporary_) + ": " + std::strerror(errno));
  }

  std::string path_, temporary_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// --- Values ---------------------------------------------------------------------------------

std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string place(const std::string& path, std::int64_t row, int column) {
  return quoted(path) + ": row " + std::to_string(row) + ", column " + std::to_string(column);
}

// A descriptor value from a number read as float or text.
std::uint8_t checked_value(double value, const std::string& path, std::int64_t row, int column) {
  constexpr double kLargest = 255.0;
  if (!(value >= 0.0 && value <= kLargest && value == std::floor(value))) {
    throw Error(place(path, row, column) + " (0-based) holds " + number_text(value) +
                "; descriptor values must be whole numbers from 0 to 255, as SIFT gives");
  }
  return std::uint8_t(value);
}

// Parses a whole token as a number; false when it is not one.
bool parse_number(const std::string& token, double* value) {
  if (token.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size();
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

void check_row_range(const std::string& path, std::int64_t first, int count, std::int64_t rows) {
  if (first < 0 || count < 0 || first > rows - count) {
    throw Error(quoted(path) + " has " + std::to_string(rows) + " descriptors; rows " +
                std::to_string(first) + " to " + std::to_string(first + count) +
                " (exclusive) are out of range");
  }
}

DescriptorSet empty_rows(int count) {
  DescriptorSet set;
  set.count = count;
  set.values.resize(std::size_t(count) * kDescriptorBytes);
  return set;
}

std::int64_t checked_count(const std::string& path, std::int64_t rows) {
  if (rows == 0) throw Error(quoted(path) + " holds no descriptors");
  if (rows > INT_MAX) {
    throw Error(quoted(path) + " holds " + std::to_string(rows) + " descriptors; at most " +
                std::to_string(INT_MAX) + " are supported");
  }
  return rows;
}

// --- NumPy .npy -----------------------------------------------------------------------------

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicBytes = 6;

struct NpyHeader {
  NpyValueType type = NpyValueType::u8;
  std::int64_t rows = 0;
  std::int64_t data_offset = 0;
  std::size_t value_bytes() const { return type == NpyValueType::u8 ? 1 : 4; }
  std::int64_t row_bytes() const { return std::int64_t(value_bytes()) * kDescriptorBytes; }
};

// The header's Python dict literal, e.g. {'descr': '|u1', 'fortran_order': False,
// 'shape': (10, 128), }: string keys; string, True/False and tuple-of-integer values.
class NpyDictParser {
 public:
  NpyDictParser(const std::string& path, std::string text) : path_(path), text_(std::move(text)) {}

  struct Fields {
    std::string descr;
    bool has_descr = false, has_order = false, has_shape = false;
    bool fortran_order = false;
    std::vector<std::int64_t> shape;
  };

  Fields parse() {
    Fields fields;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        fields.descr = string_literal();
        fields.has_descr = true;
      } else if (key == "fortran_order") {
        fields.fortran_order = boolean();
        fields.has_order = true;
      } else if (key == "shape") {
        fields.shape = tuple();
        fields.has_shape = true;
      } else {
        throw corrupt("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++at_;
    }
    ++at_;
    skip_space();
    if (at_ != text_.size()) throw corrupt("text after the header's dictionary");
    if (!fields.has_descr || !fields.has_order || !fields.has_shape) {
      throw corrupt("the header lacks 'descr', 'fortran_order' or 'shape'");
    }
    return fields;
  }

 private:
  Error corrupt(const std::string& why) const {
    return Error(quoted(path_) + " is not a valid .npy file (" + why + ")");
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) throw corrupt(std::string("expected '") + c + "' in the header");
    ++at_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') throw corrupt("expected a quoted string in the header");
    const auto end = text_.find(quote, at_ + 1);
    if (end == std::string::npos) throw corrupt("unterminated string in the header");
    std::string value = text_.substr(at_ + 1, end - at_ - 1);
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    for (const char* word : {"True", "False"}) {
      if (text_.compare(at_, std::strlen(word), word) == 0) {
        at_ += std::strlen(word);
        return word[0] == 'T';
      }
    }
    throw corrupt("expected True or False for 'fortran_order'");
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> values;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        throw corrupt("expected a non-negative integer in 'shape'");
      }
      std::int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (INT64_MAX - 9) / 10) throw corrupt("a dimension in 'shape' is too large");
        value = value * 10 + (text_[at_++] - '0');
      }
      if (peek() == 'L') ++at_;  // Python 2's long integers
      values.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++at_;
      } else if (peek() != ')') {
        throw corrupt("expected ',' or ')' in 'shape'");
      }
    }
    ++at_;
    return values;
  }

  std::string path_;
  std::string text_;
  std::size_t at_ = 0;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

bool has_npy_magic(const std::string& path) {
  FileHandle file = open_for_reading(path);
  char magic[kNpyMagicBytes];
  return std::fread(magic, 1, kNpyMagicBytes, file.get()) == kNpyMagicBytes &&
         std::memcmp(magic, kNpyMagic, kNpyMagicBytes) == 0;
}

// Reads and checks the header; the file is left positioned at the data. The file's size must
// match the header's shape.
NpyHeader read_npy_header(const std::string& path, std::FILE* file) {
  const std::int64_t size = file_size(path, file);
  if (size == 0) throw Error(quoted(path) + " is empty");
  constexpr std::size_t kPrefixBytes = kNpyMagicBytes + 2;  // magic, major and minor version
  unsigned char prefix[kPrefixBytes];
  read_exactly(path, file, prefix, kPrefixBytes);
  if (std::memcmp(prefix, kNpyMagic, kNpyMagicBytes) != 0) {
    throw Error(quoted(path) + " is not a .npy file (no NumPy magic bytes)");
  }
  const int major = prefix[kNpyMagicBytes], minor = prefix[kNpyMagicBytes + 1];
  if (major < 1 || major > 3 || minor != 0) {
    throw Error(quoted(path) + " has .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + "; versions 1.0, 2.0 and 3.0 are supported");
  }
  // Version 1.0 stores the header's length in 2 bytes, later versions in 4 (little-endian).
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  unsigned char length_field[4] = {0, 0, 0, 0};
  read_exactly(path, file, length_field, length_bytes);
  std::size_t header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) header_length = header_length << 8 | length_field[i];
  if (std::int64_t(kPrefixBytes + length_bytes + header_length) > size) {
    throw Error(quoted(path) + " is truncated (its header is incomplete)");
  }
  std::string text(header_length, '\0');
  read_exactly(path, file, text.data(), header_length);

  const NpyDictParser::Fields fields = NpyDictParser(path, text).parse();
  NpyHeader header;
  const std::string& descr = fields.descr;
  const bool byte_order_free = descr.size() == 3 && std::strchr("|<>=", descr[0]);
  if (descr == "u1" || (byte_order_free && descr.compare(1, 2, "u1") == 0)) {
    header.type = NpyValueType::u8;
  } else if (descr == "<f4") {
    header.type = NpyValueType::f32;
  } else if (descr == ">f4") {
    throw Error(quoted(path) + " holds big-endian float32 values; save them little-endian " +
                "(numpy: a.astype('<f4'))");
  } else {
    throw Error(quoted(path) + " holds values of NumPy type '" + descr +
                "'; descriptors must be uint8 ('|u1') or little-endian float32 ('<f4')");
  }
  if (fields.fortran_order) {
    throw Error(quoted(path) + " is stored in Fortran (column-major) order; save it in C order " +
                "(numpy: np.ascontiguousarray(a))");
  }
  if (fields.shape.size() != 2 || fields.shape[1] != kDescriptorBytes) {
    throw Error(quoted(path) + " has shape " + shape_text(fields.shape) +
                "; descriptor files need shape (N, 128)");
  }
  header.rows = checked_count(path, fields.shape[0]);
  header.data_offset = std::int64_t(kPrefixBytes + length_bytes + header_length);
  const std::int64_t data_bytes = header.rows * header.row_bytes();
  const std::int64_t present = size - header.data_offset;
  if (present < data_bytes) {
    throw Error(quoted(path) + " is truncated: its header promises " + std::to_string(header.rows) +
                " descriptors (" + std::to_string(data_bytes) + " bytes of data), the file holds " +
                std::to_string(present) + " bytes");
  }
  if (present > data_bytes) {
    throw Error(quoted(path) + " has " + std::to_string(present - data_bytes) +
                " bytes after the data its header describes; it is not a valid .npy file");
  }
  return header;
}

DescriptorSet read_npy_rows(const std::string& path, std::FILE* file, const NpyHeader& header,
                            std::int64_t first, int count) {
  DescriptorSet set = empty_rows(count);
  if (count == 0) return set;
  if (::fseeko(file, off_t(header.data_offset + first * header.row_bytes()), SEEK_SET) != 0) {
    throw Error("cannot seek in " + quoted(path) + ": " + std::strerror(errno));
  }
  if (header.type == NpyValueType::u8) {
    read_exactly(path, file, set.values.data(), set.values.size());
    return set;
  }
  // float32 in bounded chunks, so a large file needs no second full-size buffer.
  constexpr int kChunkRows = 4096;
  std::vector<unsigned char> chunk(std::size_t(kChunkRows) * header.row_bytes());
  for (int done = 0; done < count; done += kChunkRows) {
    const int rows = std::min(kChunkRows, count - done);
    read_exactly(path, file, chunk.data(), std::size_t(rows) * header.row_bytes());
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < kDescriptorBytes; ++c) {
        const unsigned char* p = &chunk[(std::size_t(r) * kDescriptorBytes + c) * 4];
        const std::uint32_t bits = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 |
                                   std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
        float value;
        std::memcpy(&value, &bits, sizeof value);
        set.values[(std::size_t(done) + r) * kDescriptorBytes + c] =
            checked_value(value, path, first + done + r, c);
      }
    }
  }
  return set;
}

// --- Text formats ---------------------------------------------------------------------------

class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    open_for_reading(path);  // a clear message for folders and missing files
    if (!in_) throw Error("cannot open " + quoted(path) + ": " + std::strerror(errno));
  }
  // The next line, false at the end of the file.
  bool next(std::string* line) {
    if (!std::getline(in_, *line)) {
      if (in_.bad()) throw Error("cannot read " + quoted(path_) + ": " + std::strerror(errno));
      return false;
    }
    ++number_;
    return true;
  }
  // 1-based number of the line last returned.
  std::int64_t line_number() const { return number_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::int64_t number_ = 0;
};

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(trimmed(line.substr(start, comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

bool is_blank(const std::string& line) {
  return trimmed(line).empty();
}

// Calls visit(row, line) for every data row of a CSV file, in order, until it returns false.
void for_each_csv_row(LineReader& reader,
                      const std::function<bool(std::int64_t, const std::string&)>& visit) {
  std::string line;
  std::int64_t row = 0;
  bool first_content = true;
  while (reader.next(&line)) {
    if (is_blank(line)) continue;
    if (first_content) {
      first_content = false;
      const auto fields = split_fields(line);
      double value;
      if (std::none_of(fields.begin(), fields.end(),
                       [&](const std::string& f) { return parse_number(f, &value); })) {
        continue;  // a header line
      }
    }
    if (!visit(row++, line)) return;
  }
}

void parse_csv_row(const std::string& path, const std::string& line, std::int64_t row,
                   std::int64_t line_number, std::uint8_t* out) {
  const auto fields = split_fields(line);
  if (fields.size() != std::size_t(kDescriptorBytes)) {
    throw Error(quoted(path) + ": line " + std::to_string(line_number) + " (row " +
                std::to_string(row) + ") has " + std::to_string(fields.size()) +
                " values; a descriptor has 128");
  }
  for (int c = 0; c < kDescriptorBytes; ++c) {
    double value;
    if (!parse_number(fields[c], &value)) {
      throw Error(place(path, row, c) + " (0-based, line " + std::to_string(line_number) + ") is " +
                  (fields[c].empty() ? "empty" : "'" + fields[c] + "'") + ", not a number");
    }
    out[c] = checked_value(value, path, row, c);
  }
}

std::int64_t count_csv_rows(const std::string& path) {
  LineReader reader(path);
  std::int64_t rows = 0;
  for_each_csv_row(reader, [&](std::int64_t, const std::string&) {
    ++rows;
    return true;
  });
  return rows;
}

// Rows [first, first + count) of a CSV file, every row from `first` on when count < 0. The
// file's rows must reach the range's end.
DescriptorSet read_csv_rows(const std::string& path, std::int64_t first, std::int64_t count) {
  LineReader reader(path);
  DescriptorSet set;
  const bool to_end = count < 0;
  std::int64_t rows_seen = 0;
  for_each_csv_row(reader, [&](std::int64_t row, const std::string& line) {
    rows_seen = row + 1;
    if (row < first) return true;
    if (!to_end && row >= first + count) return false;
    set.values.resize(set.values.size() + kDescriptorBytes);
    parse_csv_row(path, line, row, reader.line_number(),
                  set.values.data() + set.values.size() - kDescriptorBytes);
    ++set.count;
    return true;
  });
  if (!to_end) check_row_range(path, first, int(count), rows_seen);
  return set;
}

// White-space separated tokens of a text file, with the line each came from.
class TokenReader {
 public:
  explicit TokenReader(const std::string& path) : path_(path), lines_(path) {}
  bool next(std::string* token) {
    while (true) {
      while (at_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[at_]))) ++at_;
      if (at_ < line_.size()) {
        const std::size_t start = at_;
        while (at_ < line_.size() && !std::isspace(static_cast<unsigned char>(line_[at_]))) ++at_;
        *token = line_.substr(start, at_ - start);
        return true;
      }
      if (!lines_.next(&line_)) return false;
      at_ = 0;
    }
  }
  std::int64_t line_number() const { return lines_.line_number(); }

 private:
  std::string path_;
  LineReader lines_;
  std::string line_;
  std::size_t at_ = 0;
};

// Lowe's keypoint geometry: row, column, scale, orientation.
constexpr int kKeyGeometryFields = 4;

std::int64_t read_key_header(const std::string& path, TokenReader& tokens) {
  std::string count_token, length_token;
  double count, length;
  if (!tokens.next(&count_token) || !tokens.next(&length_token) ||
      !parse_number(count_token, &count) || !parse_number(length_token, &length) ||
      count != std::floor(count) || count < 0 || length != std::floor(length)) {
    throw Error(quoted(path) + " is not a .key file: it must begin with the line \"N 128\" " +
                "(keypoint count and descriptor length)");
  }
  if (length != kDescriptorBytes) {
    throw Error(quoted(path) + " holds descriptors of length " + number_text(length) +
                "; only 128 (SIFT) is supported");
  }
  if (count > double(INT64_MAX / 2)) throw Error(quoted(path) + ": keypoint count too large");
  return checked_count(path, std::int64_t(count));
}

// Rows [first, first + count) of a .key file, every row from `first` on when count < 0; values
// after the last keypoint are refused when the range reaches it.
DescriptorSet read_key_rows(const std::string& path, std::int64_t first, std::int64_t count) {
  TokenReader tokens(path);
  const std::int64_t rows = read_key_header(path, tokens);
  if (count < 0) count = rows - first;
  check_row_range(path, first, int(count), rows);
  constexpr int kTokensPerRow = kKeyGeometryFields + kDescriptorBytes;
  // Each keypoint takes at least 132 one-character numbers, each followed by a separator, so a
  // header that promises more keypoints than the file can hold is refused before the rows are
  // allocated (fuzz_descriptor_reader: a 24-byte file promising 532 million keypoints asked for
  // 68 GB).
  struct stat info;
  const std::int64_t least_bytes = (first + count) * kTokensPerRow * 2;
  if (::stat(path.c_str(), &info) == 0 && std::int64_t(info.st_size) < least_bytes) {
    throw Error(quoted(path) + " is truncated: its header promises " + std::to_string(rows) +
                " keypoints, which need at least " + std::to_string(least_bytes) +
                " bytes, but the file has " + std::to_string(info.st_size));
  }
  DescriptorSet set = empty_rows(count);
  std::string token;
  const auto truncated = [&](std::int64_t row) {
    return Error(quoted(path) + " is truncated: its header promises " + std::to_string(rows) +
                 " keypoints, the file ends inside keypoint " + std::to_string(row) + " (0-based)");
  };
  for (std::int64_t row = 0; row < first + count; ++row) {
    for (int t = 0; t < kTokensPerRow; ++t) {
      if (!tokens.next(&token)) throw truncated(row);
      if (row < first) continue;
      double value;
      if (!parse_number(token, &value)) {
        throw Error(quoted(path) + ": line " + std::to_string(tokens.line_number()) + " (row " +
                    std::to_string(row) + ") holds '" + token + "', not a number");
      }
      if (t >= kKeyGeometryFields) {
        const int column = t - kKeyGeometryFields;
        set.values[std::size_t(row - first) * kDescriptorBytes + column] =
            checked_value(value, path, row, column);
      }
    }
  }
  if (first + count == rows && tokens.next(&token)) {
    throw Error(quoted(path) + ": line " + std::to_string(tokens.line_number()) +
                " holds values after the " + std::to_string(rows) +
                " keypoints its header announces");
  }
  return set;
}

// --- Writing --------------------------------------------------------------------------------

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

// Appends `value` to `line` so that it reads back as the same float.
void append_distance(std::string& line, float value) {
  char text[32];
  const int length = std::snprintf(text, sizeof text, "%.9g", double(value));
  line.append(text, std::size_t(length));
}

}  // namespace

const char* to_string(DescriptorFileFormat format) {
  switch (format) {
    case DescriptorFileFormat::npy:
      return "npy";
    case DescriptorFileFormat::key:
      return "key";
    case DescriptorFileFormat::csv:
      return "csv";
  }
  return "?";
}

DescriptorFileFormat descriptor_file_format(const std::string& path) {
  if (has_npy_magic(path)) return DescriptorFileFormat::npy;
  const std::string ext = lower_extension(path);
  if (ext == "npy") return DescriptorFileFormat::npy;  // its header check gives the reason
  if (ext == "key") return DescriptorFileFormat::key;
  if (ext == "csv" || ext == "txt") return DescriptorFileFormat::csv;
  throw Error(quoted(path) + ": unknown descriptor file type; use .npy, .key or .csv");
}

std::int64_t count_descriptors(const std::string& path) {
  switch (descriptor_file_format(path)) {
    case DescriptorFileFormat::npy: {
      FileHandle file = open_for_reading(path);
      return read_npy_header(path, file.get()).rows;
    }
    case DescriptorFileFormat::key: {
      TokenReader tokens(path);
      return read_key_header(path, tokens);
    }
    case DescriptorFileFormat::csv:
      return checked_count(path, count_csv_rows(path));
  }
  return 0;
}

DescriptorSet read_descriptors(const std::string& path) {
  switch (descriptor_file_format(path)) {
    case DescriptorFileFormat::npy: {
      FileHandle file = open_for_reading(path);
      const NpyHeader header = read_npy_header(path, file.get());
      return read_npy_rows(path, file.get(), header, 0, int(header.rows));
    }
    case DescriptorFileFormat::key:
      return read_key_rows(path, 0, -1);
    case DescriptorFileFormat::csv: {
      DescriptorSet set = read_csv_rows(path, 0, -1);
      checked_count(path, set.count);
      return set;
    }
  }
  return {};
}

DescriptorSet read_descriptor_rows(const std::string& path, std::int64_t first, int count) {
  switch (descriptor_file_format(path)) {
    case DescriptorFileFormat::npy: {
      FileHandle file = open_for_reading(path);
      const NpyHeader header = read_npy_header(path, file.get());
      check_row_range(path, first, count, header.rows);
      return read_npy_rows(path, file.get(), header, first, count);
    }
    case DescriptorFileFormat::key:
      return read_key_rows(path, first, count);
    case DescriptorFileFormat::csv:
      return read_csv_rows(path, first, count);
  }
  return {};
}

void write_descriptors_npy(const std::string& path, const DescriptorSet& set, NpyValueType type) {
  if (set.count < 0 || set.values.size() != std::size_t(set.count) * kDescriptorBytes) {
    throw Error("cannot write " + quoted(path) + ": the set's value count is not count x 128");
  }
  AtomicOutputFile out(path);
  out.write(npy_header(type == NpyValueType::u8 ? "|u1" : "<f4", set.count));
  if (type == NpyValueType::u8) {
    out.write(set.values.data(), set.values.size());
  } else {
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
  out.commit();
}

void write_matches_csv(const std::string& path, const CemdResult& result, float ratio) {
  check_result_shape(result, false);
  AtomicOutputFile out(path);
  out.write("query,index,distance,second_index,second_distance,accepted\n");
  std::string line;
  for (int q = 0; q < result.queries; ++q) {
    const CemdNeighbours& n = result.neighbours[q];
    line = std::to_string(q) + ',' + std::to_string(n.best_index) + ',';
    append_distance(line, n.best_distance);
    line += ',' + std::to_string(n.second_index) + ',';
    if (n.second_index >= 0) append_distance(line, n.second_distance);
    line += ratio_accepted(n, ratio) ? ",1\n" : ",0\n";
    out.write(line);
  }
  out.commit();
}

void write_distance_matrix_csv(const std::string& path, const CemdResult& result) {
  check_result_shape(result, true);
  AtomicOutputFile out(path);
  std::string line;
  for (int q = 0; q < result.queries; ++q) {
    line.clear();
    for (int d = 0; d < result.database; ++d) {
      if (d) line += ',';
      append_distance(line, result.matrix[std::size_t(q) * result.database + d]);
    }
    line += '\n';
    out.write(line);
  }
  out.commit();
}

}  // namespace kbench
