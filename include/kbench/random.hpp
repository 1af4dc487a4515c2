#pragma once
// A small seeded generator, so generated inputs are the same on every machine and compiler
// (std::uniform_*_distribution is not).

#include <cstdint>

namespace kbench {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += kIncrement);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Moves on as `count` calls of next() would, in one step.
  void skip(std::uint64_t count) { state_ += count * kIncrement; }
  // Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi].
  int between(int lo, int hi) { return lo + int(next() % std::uint64_t(hi - lo + 1)); }

 private:
  static constexpr std::uint64_t kIncrement = 0x9e3779b97f4a7c15ull;
  std::uint64_t state_;
};

}  // namespace kbench
