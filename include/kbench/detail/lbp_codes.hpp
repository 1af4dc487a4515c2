#pragma once
// The LBP arithmetic every layer shares: the neighbour order and comparison of lbp.hpp's
// definition, the mappings' bit counts, and four codes at once from 32-bit words (SWAR on hosts,
// fp16 pairs on CUDA devices) for kernels that load 4+ bytes at a time.

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kbench/host_device.hpp"
#include "kbench/isa.hpp"

namespace kbench {

// The output pixels whose neighbours all lie inside the input: x0 <= x < x1, y0 <= y < y1 (all of
// them for crop, whose output (x, y) is centred on input (x + 1, y + 1): shift 1; all but a
// one-pixel frame for clamp: shift 0).
struct LbpInside {
  int x0, x1, y0, y1;
};

inline LbpInside lbp_inside(int in_width, int in_height, int out_width, int out_height, int shift) {
  const int x0 = 1 - shift, y0 = 1 - shift;
  const int x1 = std::max(x0, in_width - 1 - shift);
  const int y1 = std::max(y0, in_height - 1 - shift);
  return {x0, std::min(x1, out_width), y0, std::min(y1, out_height)};
}

// Neighbour k's offset from the centre (the table in kbench/lbp.hpp).
KBENCH_HOST_DEVICE constexpr int lbp_dx(int k) {
  constexpr int dx[8] = {-1, 0, 1, 1, 1, 0, -1, -1};
  return dx[k];
}
KBENCH_HOST_DEVICE constexpr int lbp_dy(int k) {
  constexpr int dy[8] = {-1, -1, -1, 0, 1, 1, 1, 0};
  return dy[k];
}

// The one comparison: bit set when the neighbour is at least the centre.
KBENCH_HOST_DEVICE constexpr bool lbp_bit_set(std::uint8_t neighbour, std::uint8_t centre) {
  return neighbour >= centre;
}

template <int K, class Sample>
KBENCH_HOST_DEVICE unsigned lbp_bit(const Sample& sample, std::uint8_t centre) {
  constexpr int dx = lbp_dx(K), dy = lbp_dy(K);
  return unsigned(lbp_bit_set(sample(dx, dy), centre)) << K;
}

template <class Sample, int... K>
KBENCH_HOST_DEVICE std::uint8_t lbp_code(const Sample& sample, std::integer_sequence<int, K...>) {
  const std::uint8_t centre = sample(0, 0);
  return std::uint8_t((lbp_bit<K>(sample, centre) | ...));
}

// The code of one pixel; sample(dx, dy) returns the sample at offset (dx, dy) from the centre.
// The 8 comparisons are unrolled at compile time.
template <class Sample>
KBENCH_HOST_DEVICE std::uint8_t lbp_code(const Sample& sample) {
  return lbp_code(sample, std::make_integer_sequence<int, 8>{});
}

// Number of 0↔1 changes going once round the code's 8 bits.
KBENCH_HOST_DEVICE constexpr int lbp_transitions(unsigned code) {
  const unsigned rotated = ((code >> 1) | (code << 7)) & 0xFFu;
  int count = 0;
  for (unsigned diff = (code ^ rotated) & 0xFFu; diff; diff &= diff - 1) ++count;
  return count;
}

// The smallest of the code's 8 bit rotations.
KBENCH_HOST_DEVICE constexpr unsigned lbp_min_rotation(unsigned code) {
  unsigned best = code;
  for (int r = 1; r < 8; ++r) {
    const unsigned rotated = ((code >> r) | (code << (8 - r))) & 0xFFu;
    if (rotated < best) best = rotated;
  }
  return best;
}

// ---- Four codes at once in 32-bit words (SWAR), for kernels that load 4+ bytes at a time. ----
// Bytes are little-endian: byte i of a word is the sample at column (first column + i).

// The 4 bytes starting `bytes` (0..3) into the 8 bytes lo, hi.
KBENCH_HOST_DEVICE std::uint32_t lbp_bytes_at(std::uint32_t lo, std::uint32_t hi, int bytes) {
  return bytes == 0 ? lo : (lo >> (8 * bytes)) | (hi << (32 - 8 * bytes));
}

// 0x80 in each byte where n >= c, unsigned, else 0: lbp_bit_set on 4 bytes. The low 7 bits
// compare through a subtraction that cannot borrow across bytes; the top bits decide when they
// differ.
KBENCH_HOST_DEVICE std::uint32_t lbp_bytes_ge(std::uint32_t n, std::uint32_t c) {
  const std::uint32_t low_ge = (n | 0x80808080u) - (c & 0x7F7F7F7Fu);
  return ((n & ~c) | (~(n ^ c) & low_ge)) & 0x80808080u;
}

template <int K>
KBENCH_HOST_DEVICE std::uint32_t lbp_bit4(const std::uint32_t (&lo)[3],
                                          const std::uint32_t (&hi)[3], std::uint32_t centre) {
  constexpr int dx = lbp_dx(K), dy = lbp_dy(K);
  return lbp_bytes_ge(lbp_bytes_at(lo[dy + 1], hi[dy + 1], dx + 1), centre) >> (7 - K);
}

template <int... K>
KBENCH_HOST_DEVICE std::uint32_t lbp_codes4(const std::uint32_t (&lo)[3],
                                            const std::uint32_t (&hi)[3],
                                            std::integer_sequence<int, K...>) {
  const std::uint32_t centre = lbp_bytes_at(lo[1], hi[1], 1);
  return (lbp_bit4<K>(lo, hi, centre) | ...);
}

#if defined(__CUDA_ARCH__)
// On GPUs the comparisons run as pairs of fp16 numbers, on the FMA pipe, which issues twice as
// fast as the integer pipe the SWAR comparisons above load. A sample b becomes the fp16 number
// 1024 + b (bits 0x64bb: exact, as is all the arithmetic below). Pixels 0-1 and 2-3 are pairs A
// and B; sample pair (i, i + 1) of a row is the fp16x2 word lbp_pair_*(i).

// fp16x2 1024 + byte i, 1024 + byte i + 1 of `word` (i = 0..2).
__device__ __forceinline__ std::uint32_t lbp_half_pair(std::uint32_t word, int i) {
  return __byte_perm(word, 0x64646464u, unsigned(i) | 4u << 4 | unsigned(i + 1) << 8 | 4u << 12);
}

// The five sample pairs of one row the two pixel pairs read: (0,1) … (4,5).
struct LbpRowPairs {
  std::uint32_t p[5];
};

__device__ __forceinline__ LbpRowPairs lbp_row_pairs(std::uint32_t lo, std::uint32_t hi) {
  const std::uint32_t mid = __funnelshift_r(lo, hi, 16);  // samples 2..5
  return {{lbp_half_pair(lo, 0), lbp_half_pair(lo, 1), lbp_half_pair(lo, 2), lbp_half_pair(mid, 1),
           lbp_half_pair(mid, 2)}};
}

// code + (neighbour ≥ centre ? 2^K : 0) for both pixels of a pair: neighbour + (1 − centre)
// saturated to [0, 1] is 1 exactly when the integer difference is at least 0.
template <int K>
__device__ __forceinline__ std::uint32_t lbp_add_bit2(std::uint32_t code, std::uint32_t neighbour,
                                                      std::uint32_t one_minus_centre) {
  constexpr std::uint32_t kWeight = 0x3C00u + (std::uint32_t(K) << 10);  // fp16 2^K
  std::uint32_t ge, sum;
  asm("add.sat.f16x2 %0, %1, %2;" : "=r"(ge) : "r"(neighbour), "r"(one_minus_centre));
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(sum)
      : "r"(ge), "r"(kWeight | kWeight << 16), "r"(code));
  return sum;
}

template <int... K>
__device__ __forceinline__ std::uint32_t lbp_codes4_half(const std::uint32_t (&lo)[3],
                                                         const std::uint32_t (&hi)[3],
                                                         std::integer_sequence<int, K...>) {
  const LbpRowPairs rows[3] = {lbp_row_pairs(lo[0], hi[0]), lbp_row_pairs(lo[1], hi[1]),
                               lbp_row_pairs(lo[2], hi[2])};
  // 1 − (1024 + c) for the centres, samples (1, 2) and (3, 4) of the middle row.
  constexpr std::uint32_t kOnes = 0x3C003C00u, kMinusOnes = 0xBC00BC00u;
  std::uint32_t one_minus_a, one_minus_b;
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(one_minus_a)
      : "r"(rows[1].p[1]), "r"(kMinusOnes), "r"(kOnes));
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(one_minus_b)
      : "r"(rows[1].p[3]), "r"(kMinusOnes), "r"(kOnes));
  // Codes start at 1024 (0x6400), so each half ends as 0x64cc.
  std::uint32_t code_a = 0x64006400u, code_b = 0x64006400u;
  ((code_a = lbp_add_bit2<K>(code_a, rows[lbp_dy(K) + 1].p[lbp_dx(K) + 1], one_minus_a),
    code_b = lbp_add_bit2<K>(code_b, rows[lbp_dy(K) + 1].p[lbp_dx(K) + 3], one_minus_b)),
   ...);
  return __byte_perm(code_a, code_b, 0x6420u);  // the low byte of each half
}
#endif

// Codes of 4 horizontally adjacent pixels, byte i = code of pixel i. Row r (0 above, 1 through,
// 2 below the centres) holds 8 samples in lo[r], hi[r], starting one column left of pixel 0.
// Isa::plain takes the SWAR comparisons on CUDA devices too.
template <Isa kIsa = Isa::tuned>
KBENCH_HOST_DEVICE std::uint32_t lbp_codes4(const std::uint32_t (&lo)[3],
                                            const std::uint32_t (&hi)[3]) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned)
    return lbp_codes4_half(lo, hi, std::make_integer_sequence<int, 8>{});
#endif
  return lbp_codes4(lo, hi, std::make_integer_sequence<int, 8>{});
}

}  // namespace kbench
