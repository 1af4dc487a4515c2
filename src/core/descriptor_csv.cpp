// CSV descriptor files: one descriptor of 128 comma-separated values per line, after an optional
// header line.
#include <cstring>
#include <functional>

#include "descriptor_readers.hpp"
#include "kbench/error.hpp"

namespace kbench::descriptor_readers {
namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

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

}  // namespace

void read_csv_notes(InputFile& input, DescriptorFileNotes& notes) {
  for_each_csv_row(input, notes, [](std::int64_t, const std::string&, std::int64_t) {
    return false;  // the first data row: the header, if any, is behind
  });
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

}  // namespace kbench::descriptor_readers
