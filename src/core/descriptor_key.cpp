// Lowe's / VLFeat .key descriptor files: a header "N 128", then per keypoint its geometry and
// 128 values, separated by any white space.
#include <cctype>
#include <cmath>
#include <cstdint>

#include "descriptor_readers.hpp"
#include "kbench/error.hpp"

namespace kbench::descriptor_readers {
namespace {

// The longest value of a .key file, which may hold any number of values on one line.
constexpr std::size_t kMaxTokenBytes = 1024;

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

}  // namespace

std::int64_t count_key_rows(InputFile& input) {
  input.skip_bom();
  TokenReader tokens(input);
  return read_key_header(input, tokens);
}

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

}  // namespace kbench::descriptor_readers
