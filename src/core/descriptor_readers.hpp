#pragma once
// The readers behind kbench/descriptor_io.hpp, a file per concern: the input and the messages
// (descriptor_input.cpp), one file per format (descriptor_npy.cpp, descriptor_csv.cpp,
// descriptor_key.cpp); descriptor_io.cpp tells the format and calls them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kbench/cemd.hpp"
#include "kbench/descriptor_io.hpp"

namespace kbench::descriptor_readers {

// --- The input and the messages (descriptor_input.cpp) --------------------------------------

std::string quoted(const std::string& path);
// Whether `path` names standard input ("-", read_descriptors only).
bool is_standard_input(const std::string& path);
// How messages name an input: its quoted path, or "standard input".
std::string shown(const std::string& path);

// Whether `path` is standard input or a file that is not regular (a pipe, a device): such an
// input can be read only once, front to back.
bool read_once_only(const std::string& path);
// A file counted and then read by row ranges is opened more than once.
void require_regular_file(const std::string& path);

// A file or standard input read front to back through a buffer, whose next bytes can be looked
// at before they are read: the format is told from the same bytes that are then parsed, as a
// pipe cannot be opened twice. A regular file opened by name also has a size and can seek.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  std::string name() const { return shown(path_); }
  // Whether size() is known and seek() works.
  bool sized() const { return sized_; }
  std::int64_t size() const { return size_; }

  // Up to `bytes` next bytes (fewer only at the end), left unread.
  std::string_view peek(std::size_t bytes);
  // Skips a UTF-8 byte order mark (EF BB BF) at the current place; true when there was one.
  bool skip_bom();
  // The buffered unread bytes; refill() adds some when there are none, false at the end.
  const char* buffered_data() const { return buffer_.data() + begin_; }
  std::size_t buffered() const { return end_ - begin_; }
  void consume(std::size_t bytes) { begin_ += bytes; }
  bool refill() { return fill(buffered() + 1); }

  // The next byte, -1 at the end.
  int get();
  // Reads up to `bytes` bytes, fewer only at the end; returns how many.
  std::size_t read(void* into, std::size_t bytes);
  // Reads exactly `bytes` bytes; a short read is a truncated file.
  void read_exactly(void* into, std::size_t bytes, const std::string& detail = "");
  void seek(std::int64_t offset);

 private:
  std::size_t read_some(char* into, std::size_t bytes);
  // Buffers at least `bytes` unread bytes; false when the input ends first.
  bool fill(std::size_t bytes);

  std::string path_;
  int fd_ = -1;
  bool owned_ = false, sized_ = false;
  std::int64_t size_ = 0;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
};

std::string number_text(double value);
// `text` fit to quote in a one-line message: control bytes (C1 controls and byte order marks
// too) and bytes that are not valid UTF-8 as \xNN, and cut after its first 40 characters with
// "...".
std::string printable(const std::string& text);
// A field of a text file as a message shows it: quoted and printable, or "empty".
std::string shown_field(const std::string& field);
std::string place(const std::string& path, std::int64_t row, int column);
// A descriptor value from a number read as float or text.
std::uint8_t checked_value(double value, const std::string& path, std::int64_t row, int column);
// Parses a whole token as a number; false when it is not one.
bool parse_number(const std::string& token, double* value);
void check_row_range(const std::string& path, std::int64_t first, int count, std::int64_t rows);
std::int64_t checked_count(const std::string& path, std::int64_t rows);

// The longest line a text descriptor file may hold: a CSV line of 128 values needs under 2 KiB
// and a .key line less, so a longer one is not descriptor data (a binary file, a device) and
// reading stops there instead of filling memory.
constexpr std::size_t kMaxLineBytes = 64 * 1024;

// --- NumPy .npy (descriptor_npy.cpp) --------------------------------------------------------

struct NpyHeader {
  NpyValueType type = NpyValueType::u8;
  std::int64_t rows = 0;
  std::int64_t data_offset = 0;
  std::size_t value_bytes() const { return type == NpyValueType::u8 ? 1 : 4; }
  std::int64_t row_bytes() const { return std::int64_t(value_bytes()) * kDescriptorBytes; }
};

bool has_npy_magic(InputFile& input);
// Reads and checks the header; the input is left at the data. A regular file's size must match
// the header's shape; a stream is checked against it while its data is read.
NpyHeader read_npy_header(InputFile& input);
// Rows [first, first + count) from the input placed at row `first`, read in bounded chunks so a
// stream that ends early never has its promised size allocated. A stream read to its last row
// must end there.
DescriptorSet read_npy_rows(InputFile& input, const NpyHeader& header, std::int64_t first,
                            int count);
// Rows [first, first + count) of a regular file placed at row `first`, into `into` (count ×
// kDescriptorBytes bytes), its size already checked against the header.
void read_npy_rows_into(InputFile& input, const NpyHeader& header, std::int64_t first, int count,
                        std::uint8_t* into);

// --- CSV (descriptor_csv.cpp) ---------------------------------------------------------------

// Reads up to the first data row: `notes` gets the byte order mark and the header skipped.
void read_csv_notes(InputFile& input, DescriptorFileNotes& notes);
std::int64_t count_csv_rows(InputFile& input);
// Rows [first, first + count) of a CSV input, every row from `first` on when count < 0. The
// input's rows must reach the range's end.
DescriptorSet read_csv_rows(InputFile& input, std::int64_t first, std::int64_t count,
                            DescriptorFileNotes& notes);

// --- Lowe's / VLFeat .key (descriptor_key.cpp) ----------------------------------------------

// The keypoint count of the header line, a byte order mark before it skipped.
std::int64_t count_key_rows(InputFile& input);
// Rows [first, first + count) of a .key input, every row from `first` on when count < 0; values
// after the last keypoint are refused when the range reaches it.
DescriptorSet read_key_rows(InputFile& input, std::int64_t first, std::int64_t count,
                            DescriptorFileNotes& notes);

}  // namespace kbench::descriptor_readers
