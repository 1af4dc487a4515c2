// NumPy .npy descriptor files: the header's dictionary, then uint8 or float32 rows.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "descriptor_readers.hpp"
#include "kbench/error.hpp"

namespace kbench::descriptor_readers {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicBytes = 6;

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
        throw corrupt("unknown header key '" + printable(key) + "'");
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
    return Error(shown(path_) + " is not a valid .npy file (" + why + ")");
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

}  // namespace

bool has_npy_magic(InputFile& input) {
  return input.peek(kNpyMagicBytes) == std::string_view(kNpyMagic, kNpyMagicBytes);
}

NpyHeader read_npy_header(InputFile& input) {
  const std::string& path = input.path();
  const std::string name = input.name();
  if (input.sized() && input.size() == 0) throw Error(name + " is empty");
  constexpr std::size_t kPrefixBytes = kNpyMagicBytes + 2;  // magic, major and minor version
  unsigned char prefix[kPrefixBytes];
  const std::size_t prefix_read = input.read(prefix, kPrefixBytes);
  if (prefix_read == 0) throw Error(name + " is empty");
  if (prefix_read < kPrefixBytes) throw Error(name + " is truncated");
  if (std::memcmp(prefix, kNpyMagic, kNpyMagicBytes) != 0) {
    throw Error(name + " is not a .npy file (no NumPy magic bytes)");
  }
  const int major = prefix[kNpyMagicBytes], minor = prefix[kNpyMagicBytes + 1];
  if (major < 1 || major > 3 || minor != 0) {
    throw Error(name + " has .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + "; versions 1.0, 2.0 and 3.0 are supported");
  }
  // Version 1.0 stores the header's length in 2 bytes, later versions in 4 (little-endian).
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  unsigned char length_field[4] = {0, 0, 0, 0};
  input.read_exactly(length_field, length_bytes);
  std::size_t header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) header_length = header_length << 8 | length_field[i];
  if (input.sized() && std::int64_t(kPrefixBytes + length_bytes + header_length) > input.size()) {
    throw Error(name + " is truncated (its header is incomplete)");
  }
  // A descriptor file's header needs about a hundred bytes; a longer one (up to 4 GiB in
  // versions 2.0 and 3.0) is not read into memory.
  constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
  if (header_length > kMaxHeaderBytes) {
    throw Error(name + " has a .npy header of " + std::to_string(header_length) +
                " bytes; descriptor files' headers are at most " + std::to_string(kMaxHeaderBytes) +
                " bytes");
  }
  std::string text(header_length, '\0');
  input.read_exactly(text.data(), header_length, " (its header is incomplete)");

  const NpyDictParser::Fields fields = NpyDictParser(path, text).parse();
  NpyHeader header;
  const std::string& descr = fields.descr;
  const bool byte_order_free = descr.size() == 3 && std::strchr("|<>=", descr[0]);
  if (descr == "u1" || (byte_order_free && descr.compare(1, 2, "u1") == 0)) {
    header.type = NpyValueType::u8;
  } else if (descr == "<f4") {
    header.type = NpyValueType::f32;
  } else if (descr == ">f4") {
    throw Error(name + " holds big-endian float32 values; save them little-endian " +
                "(numpy: a.astype('<f4'))");
  } else {
    throw Error(name + " holds values of NumPy type '" + printable(descr) +
                "'; descriptors must be uint8 ('|u1') or little-endian float32 ('<f4')");
  }
  if (fields.fortran_order) {
    throw Error(name + " is stored in Fortran (column-major) order; save it in C order " +
                "(numpy: np.ascontiguousarray(a))");
  }
  if (fields.shape.size() != 2 || fields.shape[1] != kDescriptorBytes) {
    throw Error(name + " has shape " + shape_text(fields.shape) +
                "; descriptor files need shape (N, 128)");
  }
  header.rows = checked_count(path, fields.shape[0]);
  header.data_offset = std::int64_t(kPrefixBytes + length_bytes + header_length);
  if (input.sized()) {
    const std::int64_t data_bytes = header.rows * header.row_bytes();
    const std::int64_t present = input.size() - header.data_offset;
    if (present < data_bytes) {
      throw Error(name + " is truncated: its header promises " + std::to_string(header.rows) +
                  " descriptors (" + std::to_string(data_bytes) + " bytes of data), the file " +
                  "holds " + std::to_string(present) + " bytes");
    }
    if (present > data_bytes) {
      throw Error(name + " has " + std::to_string(present - data_bytes) +
                  " bytes after the data its header describes; it is not a valid .npy file");
    }
  }
  return header;
}

namespace {

Error truncated_npy(const InputFile& input, const NpyHeader& header, std::int64_t present) {
  return Error(input.name() + " is truncated: its header promises " + std::to_string(header.rows) +
               " descriptors (" + std::to_string(header.rows * header.row_bytes()) +
               " bytes of data), the file holds " + std::to_string(present) + " bytes");
}

// Rows of a float32 file converted to bytes: the values at `raw` (little-endian, `rows` rows from
// row `first` of the file) checked and written to `into`.
void convert_f32_rows(const InputFile& input, const unsigned char* raw, std::int64_t first,
                      int rows, std::uint8_t* into) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < kDescriptorBytes; ++c) {
      const unsigned char* p = &raw[(std::size_t(r) * kDescriptorBytes + c) * 4];
      const std::uint32_t bits = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 |
                                 std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
      float value;
      std::memcpy(&value, &bits, sizeof value);
      into[std::size_t(r) * kDescriptorBytes + c] =
          checked_value(value, input.path(), first + r, c);
    }
  }
}

// The rows a float32 file is read in at a time, through a buffer of their raw values.
constexpr int kChunkRows = 4096;

// Reads `rows` rows, row `first` of the file the first, from the input placed at them into
// `into`: uint8 values as they are, float32 ones through `scratch` (kChunkRows rows of them).
void read_npy_chunk(InputFile& input, const NpyHeader& header, std::int64_t first, int rows,
                    std::uint8_t* into, std::vector<unsigned char>& scratch) {
  const std::size_t bytes = std::size_t(rows) * std::size_t(header.row_bytes());
  unsigned char* raw = header.type == NpyValueType::u8 ? into : scratch.data();
  const std::size_t got = input.read(raw, bytes);
  if (got != bytes)
    throw truncated_npy(input, header, first * header.row_bytes() + std::int64_t(got));
  if (header.type == NpyValueType::f32) convert_f32_rows(input, raw, first, rows, into);
}

std::vector<unsigned char> f32_scratch(const NpyHeader& header) {
  return std::vector<unsigned char>(
      header.type == NpyValueType::f32 ? kChunkRows * std::size_t(header.row_bytes()) : 0);
}

}  // namespace

DescriptorSet read_npy_rows(InputFile& input, const NpyHeader& header, std::int64_t first,
                            int count) {
  DescriptorSet set;
  if (input.sized()) set.values.reserve(std::size_t(count) * kDescriptorBytes);
  std::vector<unsigned char> scratch = f32_scratch(header);
  for (int done = 0; done < count; done += kChunkRows) {
    const int rows = std::min(kChunkRows, count - done);
    const std::size_t at = set.values.size();
    set.values.resize(at + std::size_t(rows) * kDescriptorBytes);
    read_npy_chunk(input, header, first + done, rows, set.values.data() + at, scratch);
  }
  set.count = count;
  unsigned char extra;
  if (!input.sized() && first + count == header.rows && input.read(&extra, 1) == 1) {
    throw Error(input.name() + " has bytes after the data its header describes; it is not a " +
                "valid .npy file");
  }
  return set;
}

void read_npy_rows_into(InputFile& input, const NpyHeader& header, std::int64_t first, int count,
                        std::uint8_t* into) {
  // uint8 rows in one read, straight to their place; float32 ones a chunk at a time.
  const int chunk_rows = header.type == NpyValueType::u8 ? std::max(count, 1) : kChunkRows;
  std::vector<unsigned char> scratch = f32_scratch(header);
  for (int done = 0; done < count; done += chunk_rows) {
    const int rows = std::min(chunk_rows, count - done);
    read_npy_chunk(input, header, first + done, rows, into + std::size_t(done) * kDescriptorBytes,
                   scratch);
  }
}

}  // namespace kbench::descriptor_readers
