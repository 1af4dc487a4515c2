#pragma once
// Reading descriptor sets: one SIFT descriptor of 128 values per row, from NumPy .npy, Lowe's
// .key or CSV files (the formats: DescriptorFileFormat below; the writers:
// kbench/descriptor_write.hpp).
//
// Every value must be a whole number from 0 to 255 (what OpenCV's and VLFeat's SIFT give, also
// as float32); anything else (NaN, negative, over 255, fractional) is refused with a message that
// names the file, the row and the column (both 0-based). Rows are counted from 0 in the file's
// descriptor order, headers and blank lines not counted. Empty sets are refused. Messages show
// text from the file with control bytes and bytes that are not UTF-8 as \xNN, cut after 40
// characters.

#include <cstdint>
#include <string>

#include "kbench/cemd.hpp"

namespace kbench {

// The value types of .npy descriptor files.
enum class NpyValueType { u8, f32 };

// The descriptor file formats:
// - npy: NumPy .npy (format versions 1.0, 2.0 and 3.0), dtype uint8 or little-endian float32,
//   shape (N, 128), C order; recognised by its magic bytes, whatever the file's name.
// - key: Lowe's / VLFeat text .key: a header line "N 128", then per keypoint 4 numbers (row,
//   column, scale, orientation) and 128 integers, separated by any white space.
// - csv (.csv, .txt): one descriptor per line, 128 comma-separated values; blank lines skipped,
//   CRLF line ends accepted. The first non-blank line is a header, and skipped, when none of its
//   fields is a number (names), or when every field equals its own 0-based column number
//   (0,1,...,127, as pandas' to_csv(index=False) writes it; so a first descriptor row that is
//   literally that is taken as a header). A first line that mixes numbers and text is refused (a
//   typo in the first row must not turn it into a header).
// Text files may begin with a UTF-8 byte order mark, which is skipped. A line over 64 KiB (CSV)
// or a value over 1 KiB (.key) is refused at once (naming the file, the line and the limit), so a
// device or binary file given as text cannot fill memory.
enum class DescriptorFileFormat { npy, key, csv };
const char* to_string(DescriptorFileFormat format);

// The format of `path`: .npy by its magic bytes, else by the extension (.key; .csv or .txt). A
// pipe or device is judged by its extension only, as looking at its bytes would consume them.
// Throws Error for an unreadable file, an unknown extension or standard input ("-").
DescriptorFileFormat descriptor_file_format(const std::string& path);

// What a reader found at the start of a descriptor file, for tools that explain their input
// (e.g. cemd-match --verbose).
struct DescriptorFileNotes {
  DescriptorFileFormat format = DescriptorFileFormat::npy;
  bool bom_skipped = false;     // a UTF-8 byte order mark began the text file
  bool header_skipped = false;  // a CSV header line was skipped
  // Why that line is a header: "its fields are the column numbers 0..127" or
  // "none of its fields is a number".
  std::string header_reason;
  std::int64_t header_line = 0;  // the header's 1-based line number, 0 when none
};

// The notes as one line, e.g. "csv, line 1 skipped as a header (its fields are the column
// numbers 0..127)".
std::string to_string(const DescriptorFileNotes& notes);

// The notes of a regular file, cheaply: .npy and .key from their first bytes, CSV up to its
// first data row. A pipe, a device or standard input is refused (reading it consumes it); pass
// `notes` to read_descriptors instead.
DescriptorFileNotes describe_descriptor_file(const std::string& path);

// The number of descriptors in `path`, a regular file, cheaply: .npy from its header (and the
// file's size checked against it), .key from its header line, CSV by scanning the lines. It and
// read_descriptor_rows open a file more than once, so they refuse anything but a regular file.
std::int64_t count_descriptors(const std::string& path);

// Every descriptor of `path` ("-": standard input), checked as above, in one pass; `notes`, when
// given, gets what the reader found. The file is read once, front to back, so pipes, devices and
// standard input (called "standard input" in messages) work too; standard input is .npy when it
// begins with the magic bytes, else a CSV when its first non-blank line holds a comma, else a
// .key file.
DescriptorSet read_descriptors(const std::string& path, DescriptorFileNotes* notes = nullptr);

// Rows [first, first + count) of `path`, a regular file (first + count ≤
// count_descriptors(path); count 0 gives an empty set). .npy seeks to the rows and reads only them;
// text formats scan past the rows before. The rows' values are checked as in read_descriptors.
DescriptorSet read_descriptor_rows(const std::string& path, std::int64_t first, int count);

// As read_descriptor_rows, into `into` (count × kDescriptorBytes bytes, the caller's). A .npy file
// is read by byte range: each call opens the file and reads the rows' bytes only, so calls on
// disjoint rows may run at once on several threads. descriptor_rows_by_range says whether a
// file is read so; the text formats are scanned from their start to the rows.
void read_descriptor_rows_into(const std::string& path, std::int64_t first, int count,
                               std::uint8_t* into);
bool descriptor_rows_by_range(DescriptorFileFormat format);

// A 64-bit digest of a set's count and bytes, for processes to tell whether their copies of a
// file agree (not against forgery: against another file). Fixed slices of the bytes are hashed
// on the usable cores, then their digests in order, so it is the same for any thread count.
std::uint64_t descriptor_digest(const DescriptorSet& set);

}  // namespace kbench
