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
#include <functional>
#include <string_view>
#include <vector>

#include "kbench/error.hpp"
#include "kbench/file_io.hpp"

namespace kbench {
namespace {

// --- Files ----------------------------------------------------------------------------------

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

// The path that names standard input (read_descriptors only).
constexpr const char* kStandardInput = "-";

bool is_standard_input(const std::string& path) {
  return path == kStandardInput;
}

// How messages name an input: its quoted path, or "standard input".
std::string shown(const std::string& path) {
  return is_standard_input(path) ? "standard input" : quoted(path);
}

// stat() of `path`, refusing a folder; false when it cannot be stat'ed (opening it then says why).
bool stat_input(const std::string& path, struct stat* info) {
  if (::stat(path.c_str(), info) != 0) return false;
  if (S_ISDIR(info->st_mode)) throw Error(quoted(path) + " is a folder, not a descriptor file");
  return true;
}

// Whether `path` is standard input or a file that is not regular (a pipe, a device): such an
// input can be read only once, front to back.
bool read_once_only(const std::string& path) {
  struct stat info;
  return is_standard_input(path) || (stat_input(path, &info) && !S_ISREG(info.st_mode));
}

// A file counted and then read by row ranges is opened more than once.
void require_regular_file(const std::string& path) {
  if (read_once_only(path)) {
    throw Error(shown(path) + " is not a regular file; a descriptor file read in parts (such as " +
                "a database) must be a regular file, not a pipe, a device or standard input");
  }
}

// A file or standard input read front to back through a buffer, whose next bytes can be looked
// at before they are read: the format is told from the same bytes that are then parsed, as a
// pipe cannot be opened twice. A regular file opened by name also has a size and can seek.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    struct stat info;
    if (is_standard_input(path)) {
      fd_ = STDIN_FILENO;
    } else {
      stat_input(path, &info);
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw Error("cannot open " + quoted(path) + ": " + std::strerror(errno));
      owned_ = true;
    }
    if (::fstat(fd_, &info) != 0) {
      const std::string reason = std::strerror(errno);
      if (owned_) ::close(fd_);
      throw Error("cannot read " + name() + ": " + reason);
    }
    sized_ = owned_ && S_ISREG(info.st_mode);
    size_ = std::int64_t(info.st_size);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    if (owned_) ::close(fd_);
  }

  const std::string& path() const { return path_; }
  std::string name() const { return shown(path_); }
  // Whether size() is known and seek() works.
  bool sized() const { return sized_; }
  std::int64_t size() const { return size_; }

  // Up to `bytes` next bytes (fewer only at the end), left unread.
  std::string_view peek(std::size_t bytes) {
    fill(bytes);
    return std::string_view(buffer_.data() + begin_, std::min(bytes, end_ - begin_));
  }
  // Skips a UTF-8 byte order mark (EF BB BF) at the current place; true when there was one.
  bool skip_bom() {
    if (peek(3) != "\xEF\xBB\xBF") return false;
    begin_ += 3;
    return true;
  }
  // The buffered unread bytes; refill() adds some when there are none, false at the end.
  const char* buffered_data() const { return buffer_.data() + begin_; }
  std::size_t buffered() const { return end_ - begin_; }
  void consume(std::size_t bytes) { begin_ += bytes; }
  bool refill() { return fill(buffered() + 1); }

  // The next byte, -1 at the end.
  int get() {
    if (begin_ == end_ && !fill(1)) return -1;
    return static_cast<unsigned char>(buffer_[begin_++]);
  }
  // Reads up to `bytes` bytes, fewer only at the end; returns how many.
  std::size_t read(void* into, std::size_t bytes) {
    char* out = static_cast<char*>(into);
    const std::size_t from_buffer = std::min(bytes, buffered());
    if (from_buffer) std::memcpy(out, buffered_data(), from_buffer);
    begin_ += from_buffer;
    std::size_t done = from_buffer;
    while (done < bytes) {
      const std::size_t got = read_some(out + done, bytes - done);
      if (got == 0) break;
      done += got;
    }
    return done;
  }
  // Reads exactly `bytes` bytes; a short read is a truncated file.
  void read_exactly(void* into, std::size_t bytes, const std::string& detail = "") {
    if (read(into, bytes) != bytes) throw Error(name() + " is truncated" + detail);
  }
  void seek(std::int64_t offset) {
    if (::lseek(fd_, off_t(offset), SEEK_SET) < 0) {
      throw Error("cannot seek in " + name() + ": " + std::strerror(errno));
    }
    begin_ = end_ = 0;
  }

 private:
  std::size_t read_some(char* into, std::size_t bytes) {
    while (true) {
      const ssize_t got = ::read(fd_, into, bytes);
      if (got >= 0) return std::size_t(got);
      if (errno != EINTR) throw Error("cannot read " + name() + ": " + std::strerror(errno));
    }
  }
  // Buffers at least `bytes` unread bytes; false when the input ends first.
  bool fill(std::size_t bytes) {
    if (end_ - begin_ >= bytes) return true;
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    constexpr std::size_t kChunkBytes = 64 * 1024;
    if (buffer_.size() < bytes) buffer_.resize(std::max(bytes, kChunkBytes));
    while (end_ < bytes) {
      const std::size_t got = read_some(buffer_.data() + end_, buffer_.size() - end_);
      if (got == 0) return false;
      end_ += got;
    }
    return true;
  }

  std::string path_;
  int fd_ = -1;
  bool owned_ = false, sized_ = false;
  std::int64_t size_ = 0;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
};

// --- Values and messages --------------------------------------------------------------------

std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// The length of the valid UTF-8 sequence of 2 to 4 bytes at text[at], 0 when there is none.
std::size_t utf8_sequence_length(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) {
    return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u;
  };
  const unsigned lead = byte(at);
  std::size_t length = 0;
  unsigned low = 0x80, high = 0xBF;  // the second byte's range: no overlong forms, no surrogates
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  }
  return length;
}

// Whether the valid UTF-8 sequence at text[at] shows nothing: a C1 control (U+0080 to U+009F)
// or a byte order mark (U+FEFF) away from the start of a file.
bool invisible_utf8(const std::string& text, std::size_t at) {
  return (text[at] == '\xC2' && static_cast<unsigned char>(text[at + 1]) < 0xA0) ||
         text.compare(at, 3, "\xEF\xBB\xBF") == 0;
}

// `text` fit to quote in a one-line message: control bytes (C1 controls and byte order marks
// too) and bytes that are not valid UTF-8 as \xNN, and cut after its first 40 characters with
// "...".
std::string printable(const std::string& text) {
  constexpr int kShownCharacters = 40;
  std::string shown_text;
  int characters = 0;
  for (std::size_t at = 0; at < text.size(); ++characters) {
    if (characters == kShownCharacters) return shown_text + "...";
    const unsigned char c = static_cast<unsigned char>(text[at]);
    const std::size_t length = c >= 0x20 && c < 0x7F ? 1 : utf8_sequence_length(text, at);
    if (length == 1 || (length > 1 && !invisible_utf8(text, at))) {
      shown_text.append(text, at, length);
      at += length;
      continue;
    }
    // Escaped: an invisible sequence whole, else the one byte.
    for (const std::size_t end = at + std::max<std::size_t>(length, 1); at < end; ++at) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[at]));
      shown_text += escaped;
    }
  }
  return shown_text;
}

// A field of a text file as a message shows it: quoted and printable, or "empty".
std::string shown_field(const std::string& field) {
  return field.empty() ? "empty" : "'" + printable(field) + "'";
}

std::string place(const std::string& path, std::int64_t row, int column) {
  return shown(path) + ": row " + std::to_string(row) + ", column " + std::to_string(column);
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
    throw Error(shown(path) + " has " + std::to_string(rows) + " descriptors; rows " +
                std::to_string(first) + " to " + std::to_string(first + count) +
                " (exclusive) are out of range");
  }
}

std::int64_t checked_count(const std::string& path, std::int64_t rows) {
  if (rows == 0) throw Error(shown(path) + " holds no descriptors");
  if (rows > INT_MAX) {
    throw Error(shown(path) + " holds " + std::to_string(rows) + " descriptors; at most " +
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

bool has_npy_magic(InputFile& input) {
  return input.peek(kNpyMagicBytes) == std::string_view(kNpyMagic, kNpyMagicBytes);
}

// Reads and checks the header; the input is left at the data. A regular file's size must match
// the header's shape; a stream is checked against it while its data is read.
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

// Rows [first, first + count) from the input placed at row `first`, read in bounded chunks so a
// stream that ends early never has its promised size allocated. A stream read to its last row
// must end there.
DescriptorSet read_npy_rows(InputFile& input, const NpyHeader& header, std::int64_t first,
                            int count) {
  constexpr int kChunkRows = 4096;
  const std::size_t row_bytes = std::size_t(header.row_bytes());
  DescriptorSet set;
  if (input.sized()) set.values.reserve(std::size_t(count) * kDescriptorBytes);
  std::vector<unsigned char> chunk(header.type == NpyValueType::f32 ? kChunkRows * row_bytes : 0);
  for (int done = 0; done < count; done += kChunkRows) {
    const int rows = std::min(kChunkRows, count - done);
    const std::size_t at = set.values.size();
    set.values.resize(at + std::size_t(rows) * kDescriptorBytes);
    unsigned char* into = header.type == NpyValueType::u8 ? set.values.data() + at : chunk.data();
    const std::size_t got = input.read(into, std::size_t(rows) * row_bytes);
    if (got != std::size_t(rows) * row_bytes) {
      const std::int64_t data_bytes = header.rows * header.row_bytes();
      const std::int64_t present = (first + done) * header.row_bytes() + std::int64_t(got);
      throw Error(input.name() + " is truncated: its header promises " +
                  std::to_string(header.rows) + " descriptors (" + std::to_string(data_bytes) +
                  " bytes of data), the file holds " + std::to_string(present) + " bytes");
    }
    if (header.type == NpyValueType::u8) continue;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < kDescriptorBytes; ++c) {
        const unsigned char* p = &chunk[(std::size_t(r) * kDescriptorBytes + c) * 4];
        const std::uint32_t bits = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 |
                                   std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
        float value;
        std::memcpy(&value, &bits, sizeof value);
        set.values[at + std::size_t(r) * kDescriptorBytes + c] =
            checked_value(value, input.path(), first + done + r, c);
      }
    }
  }
  set.count = count;
  unsigned char extra;
  if (!input.sized() && first + count == header.rows && input.read(&extra, 1) == 1) {
    throw Error(input.name() + " has bytes after the data its header describes; it is not a " +
                "valid .npy file");
  }
  return set;
}

// --- Text formats ---------------------------------------------------------------------------

// The longest line a text descriptor file may hold: a CSV line of 128 values needs under 2 KiB
// and a .key line less, so a longer one is not descriptor data (a binary file, a device) and
// reading stops there instead of filling memory.
constexpr std::size_t kMaxLineBytes = 64 * 1024;
// The longest value of a .key file, which may hold any number of values on one line.
constexpr std::size_t kMaxTokenBytes = 1024;

class LineReader {
 public:
  explicit LineReader(InputFile& input) : input_(input) {}
  // The next line without its '\n', false at the end of the input.
  bool next(std::string* line) {
    line->clear();
    bool any = false;
    while (input_.buffered() > 0 || input_.refill()) {
      any = true;
      const char* data = input_.buffered_data();
      const char* newline = static_cast<const char*>(std::memchr(data, '\n', input_.buffered()));
      const std::size_t length = newline ? std::size_t(newline - data) : input_.buffered();
      if (line->size() + length > kMaxLineBytes) {
        throw Error(input_.name() + ": line " + std::to_string(number_ + 1) + " is longer than " +
                    std::to_string(kMaxLineBytes) +
                    " bytes, the most a line of a descriptor file may hold");
      }
      line->append(data, length);
      input_.consume(newline ? length + 1 : length);
      if (newline) break;
    }
    if (!any) return false;
    ++number_;
    return true;
  }
  // 1-based number of the line last returned.
  std::int64_t line_number() const { return number_; }

 private:
  InputFile& input_;
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

// Whether `line`, the first non-blank line of a CSV file, is a header, and why: fields none of
// which is a number (names), or fields that are all their own 0-based column numbers (pandas'
// default). A line that mixes numbers and text is neither, and is refused: taking a first row
// with a typo for a header would shift every index by one without a word.
bool is_csv_header(const InputFile& input, const std::string& line, std::int64_t line_number,
                   std::string* reason) {
  const auto fields = split_fields(line);
  std::vector<double> values(fields.size());
  std::size_t text_fields = 0, first_text = 0;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (!parse_number(fields[i], &values[i]) && text_fields++ == 0) first_text = i;
  }
  if (text_fields == fields.size()) {
    *reason = "none of its fields is a number";
    return true;
  }
  if (text_fields > 0) {
    throw Error(input.name() + ": line " + std::to_string(line_number) +
                " mixes numbers and text (field " + std::to_string(first_text) + ", " +
                shown_field(fields[first_text]) +
                ", is not a number): it is neither a header of names nor a descriptor");
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (values[i] != double(i)) return false;
  }
  *reason = "its fields are the column numbers 0.." + std::to_string(fields.size() - 1);
  return true;
}

// Calls visit(row, line) for every data row of a CSV input, in order, until it returns false;
// `notes` gets the byte order mark and the header skipped.
void for_each_csv_row(
    InputFile& input, DescriptorFileNotes& notes,
    const std::function<bool(std::int64_t, const std::string&, std::int64_t line_number)>& visit) {
  notes.format = DescriptorFileFormat::csv;
  notes.bom_skipped = input.skip_bom();
  LineReader reader(input);
  std::string line;
  std::int64_t row = 0;
  bool first_content = true;
  while (reader.next(&line)) {
    if (is_blank(line)) continue;
    if (first_content) {
      first_content = false;
      if (is_csv_header(input, line, reader.line_number(), &notes.header_reason)) {
        notes.header_skipped = true;
        notes.header_line = reader.line_number();
        continue;
      }
    }
    if (!visit(row++, line, reader.line_number())) return;
  }
}

void parse_csv_row(const std::string& path, const std::string& line, std::int64_t row,
                   std::int64_t line_number, std::uint8_t* out) {
  const auto fields = split_fields(line);
  if (fields.size() != std::size_t(kDescriptorBytes)) {
    throw Error(shown(path) + ": line " + std::to_string(line_number) + " (row " +
                std::to_string(row) + ") has " + std::to_string(fields.size()) +
                " values; a descriptor has 128");
  }
  for (int c = 0; c < kDescriptorBytes; ++c) {
    double value;
    if (!parse_number(fields[c], &value)) {
      throw Error(place(path, row, c) + " (0-based, line " + std::to_string(line_number) + ") is " +
                  shown_field(fields[c]) + ", not a number");
    }
    out[c] = checked_value(value, path, row, c);
  }
}

std::int64_t count_csv_rows(InputFile& input) {
  DescriptorFileNotes notes;
  std::int64_t rows = 0;
  for_each_csv_row(input, notes, [&](std::int64_t, const std::string&, std::int64_t) {
    ++rows;
    return true;
  });
  return rows;
}

// Rows [first, first + count) of a CSV input, every row from `first` on when count < 0. The
// input's rows must reach the range's end.
DescriptorSet read_csv_rows(InputFile& input, std::int64_t first, std::int64_t count,
                            DescriptorFileNotes& notes) {
  DescriptorSet set;
  const bool to_end = count < 0;
  std::int64_t rows_seen = 0;
  for_each_csv_row(input, notes,
                   [&](std::int64_t row, const std::string& line, std::int64_t line_number) {
                     rows_seen = row + 1;
                     if (row < first) return true;
                     if (!to_end && row >= first + count) return false;
                     set.values.resize(set.values.size() + kDescriptorBytes);
                     parse_csv_row(input.path(), line, row, line_number,
                                   set.values.data() + set.values.size() - kDescriptorBytes);
                     ++set.count;
                     return true;
                   });
  if (!to_end) check_row_range(input.path(), first, int(count), rows_seen);
  return set;
}

// White-space separated tokens of a .key input, with the line each is on. Tokens, not lines,
// are bounded, as a .key file may hold all its values on one line.
class TokenReader {
 public:
  explicit TokenReader(InputFile& input) : input_(input) {}
  bool next(std::string* token) {
    int c = input_.get();
    for (; c >= 0 && std::isspace(c); c = input_.get()) {
      if (c == '\n') ++line_;
    }
    if (c < 0) return false;
    token->clear();
    token_line_ = line_;
    for (; c >= 0 && !std::isspace(c); c = input_.get()) {
      if (token->size() == kMaxTokenBytes) {
        throw Error(input_.name() + ": line " + std::to_string(line_) +
                    " holds a value longer than " + std::to_string(kMaxTokenBytes) +
                    " bytes, the most a value of a .key file may hold");
      }
      token->push_back(char(c));
    }
    if (c == '\n') ++line_;
    return true;
  }
  // 1-based number of the line of the token last returned.
  std::int64_t line_number() const { return token_line_; }

 private:
  InputFile& input_;
  std::int64_t line_ = 1, token_line_ = 0;
};

// Lowe's keypoint geometry: row, column, scale, orientation.
constexpr int kKeyGeometryFields = 4;

std::int64_t read_key_header(InputFile& input, TokenReader& tokens) {
  std::string count_token, length_token;
  double count, length;
  if (!tokens.next(&count_token) || !tokens.next(&length_token) ||
      !parse_number(count_token, &count) || !parse_number(length_token, &length) ||
      count != std::floor(count) || count < 0 || length != std::floor(length)) {
    throw Error(input.name() + " is not a .key file: it must begin with the line \"N 128\" " +
                "(keypoint count and descriptor length)");
  }
  if (length != kDescriptorBytes) {
    throw Error(input.name() + " holds descriptors of length " + number_text(length) +
                "; only 128 (SIFT) is supported");
  }
  if (count > double(INT64_MAX / 2)) throw Error(input.name() + ": keypoint count too large");
  return checked_count(input.path(), std::int64_t(count));
}

// Rows [first, first + count) of a .key input, every row from `first` on when count < 0; values
// after the last keypoint are refused when the range reaches it.
DescriptorSet read_key_rows(InputFile& input, std::int64_t first, std::int64_t count,
                            DescriptorFileNotes& notes) {
  notes.format = DescriptorFileFormat::key;
  notes.bom_skipped = input.skip_bom();
  TokenReader tokens(input);
  const std::string name = input.name();
  const std::int64_t rows = read_key_header(input, tokens);
  if (count < 0) count = rows - first;
  check_row_range(input.path(), first, int(count), rows);
  constexpr int kTokensPerRow = kKeyGeometryFields + kDescriptorBytes;
  // Each keypoint takes at least 132 one-character numbers, each followed by a separator, so a
  // header that promises more keypoints than a file can hold is refused before the rows are
  // allocated; a stream's rows grow as they are read.
  DescriptorSet set;
  if (input.sized()) {
    const std::int64_t least_bytes = (first + count) * kTokensPerRow * 2;
    if (input.size() < least_bytes) {
      throw Error(name + " is truncated: its header promises " + std::to_string(rows) +
                  " keypoints, which need at least " + std::to_string(least_bytes) +
                  " bytes, but the file has " + std::to_string(input.size()));
    }
    set.values.reserve(std::size_t(count) * kDescriptorBytes);
  }
  std::string token;
  const auto truncated = [&](std::int64_t row) {
    return Error(name + " is truncated: its header promises " + std::to_string(rows) +
                 " keypoints, the file ends inside keypoint " + std::to_string(row) + " (0-based)");
  };
  for (std::int64_t row = 0; row < first + count; ++row) {
    if (row >= first) set.values.resize(set.values.size() + kDescriptorBytes);
    for (int t = 0; t < kTokensPerRow; ++t) {
      if (!tokens.next(&token)) throw truncated(row);
      if (row < first) continue;
      double value;
      if (!parse_number(token, &value)) {
        throw Error(name + ": line " + std::to_string(tokens.line_number()) + " (row " +
                    std::to_string(row) + ") holds " + shown_field(token) + ", not a number");
      }
      if (t >= kKeyGeometryFields) {
        const int column = t - kKeyGeometryFields;
        set.values[std::size_t(row - first) * kDescriptorBytes + column] =
            checked_value(value, input.path(), row, column);
      }
    }
  }
  set.count = int(count);
  if (first + count == rows && tokens.next(&token)) {
    throw Error(name + ": line " + std::to_string(tokens.line_number()) +
                " holds values after the " + std::to_string(rows) +
                " keypoints its header announces");
  }
  return set;
}

// --- Formats --------------------------------------------------------------------------------

DescriptorFileFormat format_by_extension(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == "npy") return DescriptorFileFormat::npy;  // its header check gives the reason
  if (ext == "key") return DescriptorFileFormat::key;
  if (ext == "csv" || ext == "txt") return DescriptorFileFormat::csv;
  throw Error(quoted(path) + ": unknown descriptor file type; use .npy, .key or .csv");
}

// Standard input without the .npy magic: a CSV when its first non-blank line (after a byte order
// mark) holds a comma, else a .key file. Looks at no more than two lines' limit.
DescriptorFileFormat standard_input_text_format(InputFile& input) {
  constexpr std::size_t kMostLookedAt = 2 * kMaxLineBytes;
  for (std::size_t want = 4096;; want *= 2) {
    const std::string_view start = input.peek(want);
    const bool all_seen = start.size() < want || want >= kMostLookedAt;
    std::size_t at = start.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    while (true) {
      const std::size_t end = start.find('\n', at);
      if (end == std::string_view::npos && !all_seen) break;  // the line goes on: look further
      const std::string_view line =
          start.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
      if (line.find_first_not_of(" \t\r\v\f") != std::string_view::npos) {
        return line.find(',') != std::string_view::npos ? DescriptorFileFormat::csv
                                                        : DescriptorFileFormat::key;
      }
      if (end == std::string_view::npos) return DescriptorFileFormat::csv;  // nothing but blanks
      at = end + 1;
    }
  }
}

// The format of an opened input: .npy by its magic bytes, else by the extension (standard input:
// by its first line).
DescriptorFileFormat detect_format(InputFile& input) {
  if (has_npy_magic(input)) return DescriptorFileFormat::npy;
  if (is_standard_input(input.path())) return standard_input_text_format(input);
  return format_by_extension(input.path());
}

// --- Writing --------------------------------------------------------------------------------

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

std::string to_string(const DescriptorFileNotes& notes) {
  std::string text = to_string(notes.format);
  if (notes.bom_skipped) text += ", UTF-8 byte order mark skipped";
  if (notes.header_skipped) {
    text += ", line " + std::to_string(notes.header_line) + " skipped as a header (" +
            notes.header_reason + ")";
  }
  return text;
}

DescriptorFileFormat descriptor_file_format(const std::string& path) {
  if (is_standard_input(path)) {
    throw Error("the format of standard input is known only once it is read");
  }
  // Looking at a pipe's or a device's first bytes would take them from the reader.
  if (read_once_only(path)) return format_by_extension(path);
  InputFile input(path);
  return detect_format(input);
}

DescriptorFileNotes describe_descriptor_file(const std::string& path) {
  if (read_once_only(path)) {
    throw Error(shown(path) + " is not a regular file, so it cannot be looked at before it is " +
                "read; its notes come from reading it");
  }
  InputFile input(path);
  DescriptorFileNotes notes;
  notes.format = detect_format(input);
  if (notes.format == DescriptorFileFormat::key) notes.bom_skipped = input.skip_bom();
  if (notes.format == DescriptorFileFormat::csv) {
    for_each_csv_row(input, notes, [](std::int64_t, const std::string&, std::int64_t) {
      return false;  // the first data row: the header, if any, is behind
    });
  }
  return notes;
}

std::int64_t count_descriptors(const std::string& path) {
  require_regular_file(path);
  InputFile input(path);
  switch (detect_format(input)) {
    case DescriptorFileFormat::npy:
      return read_npy_header(input).rows;
    case DescriptorFileFormat::key: {
      input.skip_bom();
      TokenReader tokens(input);
      return read_key_header(input, tokens);
    }
    case DescriptorFileFormat::csv:
      return checked_count(path, count_csv_rows(input));
  }
  return 0;
}

DescriptorSet read_descriptors(const std::string& path, DescriptorFileNotes* notes) {
  InputFile input(path);
  DescriptorFileNotes found;
  found.format = detect_format(input);
  DescriptorSet set;
  switch (found.format) {
    case DescriptorFileFormat::npy: {
      const NpyHeader header = read_npy_header(input);
      set = read_npy_rows(input, header, 0, int(header.rows));
      break;
    }
    case DescriptorFileFormat::key:
      set = read_key_rows(input, 0, -1, found);
      break;
    case DescriptorFileFormat::csv:
      set = read_csv_rows(input, 0, -1, found);
      checked_count(path, set.count);
      break;
  }
  if (notes) *notes = found;
  return set;
}

DescriptorSet read_descriptor_rows(const std::string& path, std::int64_t first, int count) {
  require_regular_file(path);
  InputFile input(path);
  DescriptorFileNotes notes;
  switch (detect_format(input)) {
    case DescriptorFileFormat::npy: {
      const NpyHeader header = read_npy_header(input);
      check_row_range(path, first, count, header.rows);
      input.seek(header.data_offset + first * header.row_bytes());
      return read_npy_rows(input, header, first, count);
    }
    case DescriptorFileFormat::key:
      return read_key_rows(input, first, count, notes);
    case DescriptorFileFormat::csv:
      return read_csv_rows(input, first, count, notes);
  }
  return {};
}

}  // namespace kbench
