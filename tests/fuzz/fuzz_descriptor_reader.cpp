// libFuzzer target: arbitrary bytes as a descriptor file (.npy, .key or .csv, chosen by the first
// byte) through count_descriptors, read_descriptors and read_descriptor_rows. A refusal
// (kbench::Error) is expected for most inputs; a crash, a sanitizer report, any other exception
// or readers that disagree with each other is a finding.

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kbench/descriptor_io.hpp"
#include "kbench/error.hpp"

namespace {

const char* const extensions[] = {".npy", ".key", ".csv"};

// The readers take paths, so each input is written to a file in a directory of this process,
// removed when the run ends.
const std::string& scratch_directory() {
  static const std::string directory = [] {
    char pattern[] = "/tmp/kbench-fuzz-XXXXXX";
    if (!mkdtemp(pattern)) __builtin_trap();
    return std::string(pattern);
  }();
  static const bool removed_at_exit = [] {
    return std::atexit([] {
             for (const char* extension : extensions) {
               std::remove((scratch_directory() + "/input" + extension).c_str());
             }
             rmdir(scratch_directory().c_str());
           }) == 0;
  }();
  (void)removed_at_exit;
  return directory;
}

std::string write_input(const char* extension, const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_directory() + "/input" + extension;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string path = write_input(extensions[data[0] % 3], data + 1, size - 1);
  try {
    const std::int64_t count = kbench::count_descriptors(path);
    const kbench::DescriptorSet all = kbench::read_descriptors(path);
    if (all.count != count ||
        all.values.size() != std::size_t(all.count) * kbench::kDescriptorBytes) {
      __builtin_trap();
    }
    // The last few rows read alone are the same as in the whole set.
    const int tail = int(count < 3 ? count : 3);
    const kbench::DescriptorSet rows = kbench::read_descriptor_rows(path, count - tail, tail);
    if (rows.count != tail || std::memcmp(rows.values.data(), all.row(int(count - tail)),
                                          std::size_t(tail) * kbench::kDescriptorBytes) != 0) {
      __builtin_trap();
    }
  } catch (const kbench::Error&) {
  }
  return 0;
}
