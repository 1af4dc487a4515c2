#pragma once
// LBP codes of runs of pixels over the byte vectors of one CPU level
// (kbench/detail/cpu_vectors.hpp), and the counting of codes into sub-histograms: the arithmetic
// of the SIMD CPU variants.
//
// A vector holds Ops::kBytes consecutive centres; each of the 8 neighbours is the same vector
// loaded at the neighbour's offset, compared with the centres (lbp_bit_set, unsigned) and its
// bit set where it holds. Codes are counted before they are mapped: a thread counts plain codes
// into kSubHistograms histograms in turn (consecutive equal codes then update different
// counters instead of waiting on each other's stores), and the mapping's bins are summed from
// them once at the end.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kbench/detail/cpu_vectors.hpp"
#include "kbench/detail/lbp_codes.hpp"
#include "kbench/host_device.hpp"
#include "kbench/lbp.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kbench::lbp_rows {

// codes[x] = the LBP code of centres[x], x < count, for count >= Ops::kBytes centres whose
// neighbours all lie inside the image (`stride` bytes between rows). The last vector overlaps the
// one before it when count is no multiple of kBytes; it writes the same codes again.
template <class Ops>
void code_run(const std::uint8_t* centres, std::ptrdiff_t stride, std::size_t count,
              std::uint8_t* codes) {
  using Bytes = typename Ops::Bytes;
  constexpr std::size_t kBytes = Ops::kBytes;
  constexpr int kNeighbours = 8;
  Bytes bits[kNeighbours];
  std::ptrdiff_t offsets[kNeighbours];
  KBENCH_UNROLL
  for (int k = 0; k < kNeighbours; ++k) {
    bits[k] = Ops::splat_byte(std::uint8_t(1u << k));
    offsets[k] = std::ptrdiff_t(lbp_dy(k)) * stride + lbp_dx(k);
  }
  const Bytes none = Ops::splat_byte(0);
  for (std::size_t x = 0;; x += kBytes) {
    const std::size_t at = x + kBytes <= count ? x : count - kBytes;
    const std::uint8_t* centre = centres + at;
    const Bytes c = Ops::load_bytes(centre);
    Bytes code = none;
    KBENCH_UNROLL
    for (int k = 0; k < kNeighbours; ++k) {
      code = Ops::or_bit_if_ge(code, Ops::load_bytes(centre + offsets[k]), c, bits[k]);
    }
    Ops::store_bytes(codes + at, code);
    if (at + kBytes == count) break;
  }
}

constexpr int kSubHistograms = 4;
// Codes read at once: one 64-bit word.
constexpr std::size_t kWordCodes = 8;

// One thread's counts of plain codes.
struct CodeCounts {
  std::uint32_t count[kSubHistograms][kLbpCodes];
};

// Counts codes[0 .. n).
inline void count_codes(const std::uint8_t* codes, std::size_t n, CodeCounts& counts) {
  std::size_t x = 0;
  for (; x + kWordCodes <= n; x += kWordCodes) {
    std::uint64_t word;
    std::memcpy(&word, codes + x, sizeof word);
    KBENCH_UNROLL
    for (std::size_t b = 0; b < kWordCodes; ++b) {
      ++counts.count[b % kSubHistograms][(word >> (8 * b)) & 0xFFu];
    }
  }
  for (; x < n; ++x) ++counts.count[x % kSubHistograms][codes[x]];
}

// Counts codes[0 .. n) and writes their mapped values value[code] to out.
inline void count_and_map(const std::uint8_t* codes, std::size_t n, const std::uint8_t* value,
                          CodeCounts& counts, std::uint8_t* out) {
  std::size_t x = 0;
  for (; x + kWordCodes <= n; x += kWordCodes) {
    std::uint64_t word;
    std::memcpy(&word, codes + x, sizeof word);
    std::uint64_t mapped = 0;
    KBENCH_UNROLL
    for (std::size_t b = 0; b < kWordCodes; ++b) {
      const unsigned code = (word >> (8 * b)) & 0xFFu;
      ++counts.count[b % kSubHistograms][code];
      mapped |= std::uint64_t(value[code]) << (8 * b);
    }
    std::memcpy(out + x, &mapped, sizeof mapped);
  }
  for (; x < n; ++x) {
    ++counts.count[x % kSubHistograms][codes[x]];
    out[x] = value[codes[x]];
  }
}

// The total of every code over the sub-histograms.
inline std::uint32_t code_total(const CodeCounts& counts, int code) {
  std::uint32_t total = 0;
  for (int h = 0; h < kSubHistograms; ++h) total += counts.count[h][code];
  return total;
}

}  // namespace kbench::lbp_rows

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
