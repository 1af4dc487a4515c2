// The descriptor files as inputs, and the messages that name their places and values.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "descriptor_readers.hpp"
#include "kbench/error.hpp"

namespace kbench::descriptor_readers {
namespace {

// stat() of `path`, refusing a folder; false when it cannot be stat'ed (opening it then says why).
bool stat_input(const std::string& path, struct stat* info) {
  if (::stat(path.c_str(), info) != 0) return false;
  if (S_ISDIR(info->st_mode)) throw Error(quoted(path) + " is a folder, not a descriptor file");
  return true;
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

}  // namespace

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

bool is_standard_input(const std::string& path) {
  return path == "-";
}

std::string shown(const std::string& path) {
  return is_standard_input(path) ? "standard input" : quoted(path);
}

bool read_once_only(const std::string& path) {
  struct stat info;
  return is_standard_input(path) || (stat_input(path, &info) && !S_ISREG(info.st_mode));
}

void require_regular_file(const std::string& path) {
  if (read_once_only(path)) {
    throw Error(shown(path) + " is not a regular file; a descriptor file read in parts (such as " +
                "a database) must be a regular file, not a pipe, a device or standard input");
  }
}

InputFile::InputFile(const std::string& path) : path_(path) {
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

InputFile::~InputFile() {
  if (owned_) ::close(fd_);
}

std::string_view InputFile::peek(std::size_t bytes) {
  fill(bytes);
  return std::string_view(buffer_.data() + begin_, std::min(bytes, end_ - begin_));
}

bool InputFile::skip_bom() {
  if (peek(3) != "\xEF\xBB\xBF") return false;
  begin_ += 3;
  return true;
}

int InputFile::get() {
  if (begin_ == end_ && !fill(1)) return -1;
  return static_cast<unsigned char>(buffer_[begin_++]);
}

std::size_t InputFile::read(void* into, std::size_t bytes) {
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

void InputFile::read_exactly(void* into, std::size_t bytes, const std::string& detail) {
  if (read(into, bytes) != bytes) throw Error(name() + " is truncated" + detail);
}

void InputFile::seek(std::int64_t offset) {
  if (::lseek(fd_, off_t(offset), SEEK_SET) < 0) {
    throw Error("cannot seek in " + name() + ": " + std::strerror(errno));
  }
  begin_ = end_ = 0;
}

std::size_t InputFile::read_some(char* into, std::size_t bytes) {
  while (true) {
    const ssize_t got = ::read(fd_, into, bytes);
    if (got >= 0) return std::size_t(got);
    if (errno != EINTR) throw Error("cannot read " + name() + ": " + std::strerror(errno));
  }
}

bool InputFile::fill(std::size_t bytes) {
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

std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

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

std::string shown_field(const std::string& field) {
  return field.empty() ? "empty" : "'" + printable(field) + "'";
}

std::string place(const std::string& path, std::int64_t row, int column) {
  return shown(path) + ": row " + std::to_string(row) + ", column " + std::to_string(column);
}

std::uint8_t checked_value(double value, const std::string& path, std::int64_t row, int column) {
  constexpr double kLargest = 255.0;
  if (!(value >= 0.0 && value <= kLargest && value == std::floor(value))) {
    throw Error(place(path, row, column) + " (0-based) holds " + number_text(value) +
                "; descriptor values must be whole numbers from 0 to 255, as SIFT gives");
  }
  return std::uint8_t(value);
}

bool parse_number(const std::string& token, double* value) {
  if (token.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(token.c_str(), &end);
  return end == token.c_str() + token.size();
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

}  // namespace kbench::descriptor_readers
