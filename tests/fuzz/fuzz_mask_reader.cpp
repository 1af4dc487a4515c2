// libFuzzer target: arbitrary bytes through the mask parser, as load_mask hands it a file of at
// most max_mask_file_bytes. A refusal (kbench::Error, one line) is the expected answer to most
// inputs; a crash, a sanitizer report, any other exception or a mask that is not an odd N×N
// square of finite weights with N <= kMaxMaskSize is a finding.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kbench::max_mask_file_bytes) return 0;  // load_mask refuses these unparsed
  try {
    const kbench::Mask mask =
        kbench::parse_mask(std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
    bool ok = mask.size >= 1 && mask.size % 2 == 1 && mask.size <= kbench::kMaxMaskSize &&
              mask.weights.size() == std::size_t(mask.size) * std::size_t(mask.size);
    for (const float weight : mask.weights) ok = ok && std::isfinite(weight);
    if (!ok) __builtin_trap();
  } catch (const kbench::Error& error) {
    if (std::strchr(error.what(), '\n') != nullptr) __builtin_trap();
  }
  return 0;
}
