// kbench/descriptor_io.hpp: which format a descriptor file is, and its reader
// (descriptor_readers.hpp).
#include "kbench/descriptor_io.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/host_memory.hpp"
#include "core/host_threads.hpp"
#include "descriptor_readers.hpp"
#include "kbench/error.hpp"
#include "kbench/file_io.hpp"

namespace kbench {

using namespace descriptor_readers;

namespace {

// A regular .npy file's rows, read by range on up to one thread per usable core, each a slice of
// at least kLeastRowsPerThread rows (1 MiB of uint8 rows: less does not pay for a thread's start).
// A failure is the lowest slice's, so the first bad row's, as one front-to-back read gives it.
constexpr std::int64_t kLeastRowsPerThread = 8192;
DescriptorSet read_npy_on_threads(const std::string& path, const NpyHeader& header) {
  DescriptorSet set;
  set.count = int(header.rows);
  resize_on_huge_pages(set.values, std::size_t(set.count) * kDescriptorBytes);
  const int threads = int(std::min<std::int64_t>(set.count / kLeastRowsPerThread, usable_cores()));
  run_on_slices(set.count, threads, [&](int, std::int64_t first, std::int64_t count) {
    read_descriptor_rows_into(path, first, int(count),
                              set.values.data() + first * kDescriptorBytes);
  });
  return set;
}

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
  if (notes.format == DescriptorFileFormat::csv) read_csv_notes(input, notes);
  return notes;
}

std::int64_t count_descriptors(const std::string& path) {
  require_regular_file(path);
  InputFile input(path);
  switch (detect_format(input)) {
    case DescriptorFileFormat::npy:
      return read_npy_header(input).rows;
    case DescriptorFileFormat::key:
      return count_key_rows(input);
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
      set = input.sized() ? read_npy_on_threads(path, header)
                          : read_npy_rows(input, header, 0, int(header.rows));
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
  DescriptorSet set;
  set.count = count > 0 ? count : 0;
  resize_on_huge_pages(set.values, std::size_t(set.count) * kDescriptorBytes);
  read_descriptor_rows_into(path, first, count, set.values.data());
  return set;
}

void read_descriptor_rows_into(const std::string& path, std::int64_t first, int count,
                               std::uint8_t* into) {
  require_regular_file(path);
  InputFile input(path);
  DescriptorFileNotes notes;
  DescriptorSet set;
  switch (detect_format(input)) {
    case DescriptorFileFormat::npy: {
      const NpyHeader header = read_npy_header(input);
      check_row_range(path, first, count, header.rows);
      input.seek(header.data_offset + first * header.row_bytes());
      read_npy_rows_into(input, header, first, count, into);
      return;
    }
    case DescriptorFileFormat::key:
      set = read_key_rows(input, first, count, notes);
      break;
    case DescriptorFileFormat::csv:
      set = read_csv_rows(input, first, count, notes);
      break;
  }
  std::copy(set.values.begin(), set.values.end(), into);
}

bool descriptor_rows_by_range(DescriptorFileFormat format) {
  return format == DescriptorFileFormat::npy;
}

namespace {

// descriptor_digest's mixing: four multiply-xorshift lanes over 8-byte words, a slice at a time.
constexpr std::uint64_t kDigestMultiplier = 0x9E3779B97F4A7C15ull;  // odd: a bijection
constexpr int kDigestLanes = 4, kDigestShift = 29;
constexpr std::size_t kDigestSliceBytes = std::size_t(1) << 20;

std::uint64_t mix(std::uint64_t digest, std::uint64_t word) {
  digest = (digest ^ word) * kDigestMultiplier;
  return digest ^ (digest >> kDigestShift);
}

// One slice's digest; a last partial word counts as if padded with zeros.
std::uint64_t slice_digest(const std::uint8_t* bytes, std::size_t size) {
  std::uint64_t lanes[kDigestLanes] = {1, 2, 3, 4};
  const std::size_t words = size / sizeof(std::uint64_t);
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t word;
    std::memcpy(&word, bytes + w * sizeof word, sizeof word);
    lanes[w % kDigestLanes] = mix(lanes[w % kDigestLanes], word);
  }
  if (const std::size_t tail = size - words * sizeof(std::uint64_t); tail > 0) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes + words * sizeof word, tail);
    lanes[words % kDigestLanes] = mix(lanes[words % kDigestLanes], word);
  }
  std::uint64_t digest = size;
  for (const std::uint64_t lane : lanes) digest = mix(digest, lane);
  return digest;
}

}  // namespace

std::uint64_t descriptor_digest(const DescriptorSet& set) {
  const std::uint8_t* const bytes = set.values.data();
  const std::size_t size = set.values.size();
  std::vector<std::uint64_t> slices((size + kDigestSliceBytes - 1) / kDigestSliceBytes);
  run_on_slices(std::int64_t(slices.size()), usable_cores(),
                [&](int, std::int64_t first, std::int64_t count) {
                  for (std::int64_t s = first; s < first + count; ++s) {
                    const std::size_t at = std::size_t(s) * kDigestSliceBytes;
                    slices[std::size_t(s)] =
                        slice_digest(bytes + at, std::min(kDigestSliceBytes, size - at));
                  }
                });
  std::uint64_t digest = mix(std::uint64_t(set.count), size);
  for (const std::uint64_t slice : slices) digest = mix(digest, slice);
  return digest;
}

}  // namespace kbench
