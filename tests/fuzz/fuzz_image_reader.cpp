// libFuzzer target: arbitrary bytes through the public image reader. A refusal (kbench::Error) is
// the expected answer to most inputs; a crash, a sanitizer report, any other exception or a
// decoded image whose shape does not match its buffer is a finding.

#include <cstddef>
#include <cstdint>

#include "kbench/error.hpp"
#include "kbench/image_io.hpp"

// A lower limit than the reader's 1 GiB keeps each run fast: the fuzzer then explores the
// decoders rather than filling a gigabyte for every crafted header. (A 276-byte progressive JPEG
// of 65291 x 255 RGB pixels, 50 MB, took 2.4 s to decode under the sanitizers, and over the
// 10 s hang limit on a loaded machine.)
constexpr std::size_t fuzz_max_image_bytes = std::size_t(16) << 20;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const kbench::ImageU8 image =
        kbench::read_image_from_memory(data, size, "fuzz input", fuzz_max_image_bytes);
    const bool shape_ok =
        image.width > 0 && image.height > 0 && image.channels >= 1 && image.channels <= 4 &&
        image.data.size() ==
            std::size_t(image.width) * std::size_t(image.height) * std::size_t(image.channels) &&
        image.data.size() <= fuzz_max_image_bytes;
    if (!shape_ok) __builtin_trap();
  } catch (const kbench::Error&) {
  }
  return 0;
}
