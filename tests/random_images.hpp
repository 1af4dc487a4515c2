#pragma once
// Seeded random test images shared by the test files.

#include <cstdint>

#include "kbench/image.hpp"
#include "kbench/random.hpp"

namespace kbench::test {

// A gray image of uniformly random samples in 0 .. levels − 1 (few levels give many ties).
inline ImageU8 random_gray(int w, int h, std::uint64_t seed, int levels = 256) {
  ImageU8 image(w, h, 1);
  SplitMix64 random(seed);
  for (auto& v : image.data) v = std::uint8_t(random.next() % std::uint64_t(levels));
  return image;
}

}  // namespace kbench::test
