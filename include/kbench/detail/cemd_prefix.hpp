#pragma once
// The prefix form of the cemd distances, for the fast variants of every layer: a cell as the
// running sums of its bins in float, F(i) = Σ_{j≤i} f(j) (so F(7) = |f|), which turns the 8
// running additions per cell and pair into work done once per descriptor. Every value the cell
// terms below form from them is an integer below 2^24, so float arithmetic is exact (with or
// without FMA contraction, in any order of the additions) and the terms equal the integer forms
// of kbench/cemd.hpp bit for bit; the bounds: docs/cemd.md#the-prefix-and-prepared-forms.
// The helpers below take an Isa: Isa::plain gives up CUDA's min/max, fused multiply-add and
// division fast path for their standard C++ forms, with the same bits. Their values are of a type
// T: float, or a GCC vector of floats (the SIMD CPU variants: each lane one pair, the same
// operations lane by lane, so the same bits).

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kbench/cemd.hpp"
#include "kbench/host_device.hpp"
#include "kbench/isa.hpp"

namespace kbench {

// The smaller and the larger of two floats that are not NaN: one min/max instruction on CUDA
// devices (a select's NaN rule would cost a compare and two selects per comparator there), a
// select elsewhere (minss/maxss on x86; std::fmin would be a library call). On hosts the smaller
// compares its operands the other way round (the same value: no operand here is a negative zero),
// so that the compiler does not share one comparison between a comparator's min and max, which
// x86 would turn into a compare, a blend and a masked move instead of a min and a max; device
// code keeps the shared comparison (with Isa::plain one compare for both selects).
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T float_min(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return fminf(a, b);
  return a < b ? a : b;
#else
  return b < a ? b : a;
#endif
}
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T float_max(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return fmaxf(a, b);
#endif
  return a < b ? b : a;
}

// a·b − c·d for exact products and an exact difference (the prefix form's values): one multiply
// and one fused multiply-add on CUDA devices, whatever the contraction setting.
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T exact_product_difference(T a, T b, T c, T d) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return fmaf(a, b, -(c * d));
#endif
  return a * b - c * d;
}

// |x|: the sign bit cleared (std::fabs for a float).
template <class T>
KBENCH_HOST_DEVICE T float_abs(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return std::fabs(x);
  } else {
    using Bits = decltype(x < x);  // the integer vector of the same lanes
    return T(Bits(x) & 0x7FFFFFFF);
  }
}

// Σ_i |d(i) − median(d)| of 8 values = (sum of the 4 largest) − (sum of the 4 smallest). With
// each half sorted (a and b), the half-cleaner pairs a(i) with b(3 − i), whose larger members are
// the 4 largest values, so the difference is Σ_i |a(i) − b(3 − i)|; a half sorts with 5
// comparators, 10 instead of the 19 of a full sort. On CUDA devices, where |x| is free in an
// addition and min/max take the busier ALU pipe, each half's last comparator is left out: its
// middle two stay unordered, and the middle terms |a(1) − b(2)| + |a(2) − b(1)|, which pair
// opposite orders and so maximise a sum of |x − y|, are the larger of the two pairings' sums of
// the unordered middles (one maximum and additions for four min/max). Every value is exact, so
// both forms and any order of the additions give the same bits. With kPairsOrdered the caller has
// ordered each pair d(2i) ≤ d(2i + 1) itself and those comparators are left out.
template <Isa kIsa, bool kPairsOrdered = false, class T>
KBENCH_HOST_DEVICE T median_deviation_sum(T (&d)[kCemdBins]) {
  const auto cx = [&](int i, int j) {
    const T lo = float_min<kIsa>(d[i], d[j]);
    const T hi = float_max<kIsa>(d[i], d[j]);
    d[i] = lo;
    d[j] = hi;
  };
  const auto pair_sum = [](T x0, T y0, T x1, T y1) {
    return float_abs(x0 - y0) + float_abs(x1 - y1);
  };
  if constexpr (!kPairsOrdered) cx(0, 1), cx(2, 3), cx(4, 5), cx(6, 7);
  cx(0, 2), cx(1, 3), cx(4, 6), cx(5, 7);  // each half's least and greatest; middles 1, 2 and 5, 6
#if defined(__CUDA_ARCH__)
  const T middle =
      float_max<kIsa>(pair_sum(d[1], d[5], d[2], d[6]), pair_sum(d[1], d[6], d[2], d[5]));
#else
  cx(1, 2), cx(5, 6);
  const T middle = pair_sum(d[1], d[6], d[2], d[5]);
#endif
  return pair_sum(d[0], d[7], d[3], d[4]) + middle;
}

// Normalised-mode numerator CEMD(f·|g|, g·|f|) from the prefix sums f = F(0..7), g = G(0..7).
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T cemd_prefix_scaled(const T (&f)[kCemdBins], const T (&g)[kCemdBins]) {
  const T mass_f = f[kCemdBins - 1], mass_g = g[kCemdBins - 1];
  T d[kCemdBins];
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins - 1; ++i)
    d[i] = exact_product_difference<kIsa>(f[i], mass_g, g[i], mass_f);
  d[kCemdBins - 1] = T{};
  return median_deviation_sum<kIsa>(d);
}

// n / d, correctly rounded, for the normalised quotient's operands: integers with 0 ≤ n ≤ 4·d
// (a cell term is at most 4) and d = a·b or 2·a·b with 1 ≤ a, b ≤ 2040 (or 0 over the empty
// cell's divisor). On CUDA devices this is the division's own fast path (approximate reciprocal,
// one Newton step, one residual correction), correctly rounded for such normal operands, without
// the range check in front of it: that check sends a zero dividend to the slow path, and a fifth
// of SIFT cell pairs have one (an empty cell), so nearly every warp took it. The Newton step is
// needed: without it a few of these operands round wrongly. The suite checks every one of them
// against IEEE division on the device it runs on (cemd_quotient_check.cu). `/` elsewhere and with
// Isa::plain.
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T quotient_of_small_integers(T n, T d) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    r = fmaf(r, fmaf(-d, r, 1.0f), r);
    const float q = n * r;
    return fmaf(r, fmaf(-d, q, n), q);
  }
#endif
  return n / d;
}

// The normalised quotient's divisor on CUDA devices is |f|·|g| + kEmptyCellDivisor, rounded: that
// is |f|·|g| for every nonzero product (≥ 1, so 2^-30 is below half its ulp), and for an empty
// cell 2^-30 (a normal float), whose reciprocal is finite and whose quotient is 0.
constexpr float kEmptyCellDivisor = 0x1p-30f;

// The normalised cell term: numerator / (|f|·|g|), 0 when either cell is empty (the numerator is
// then 0) — cemd_cell_quotient's bits. The divisor of an empty cell must keep the quotient finite:
// max(|f|·|g|, 1) on hosts and with Isa::plain; on CUDA devices fma(|f|, |g|, kEmptyCellDivisor),
// one instruction on the FMA pipe instead of a multiply and an ALU max.
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T cemd_prefix_quotient(T numerator, T mass_f, T mass_g) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) {
    return quotient_of_small_integers<kIsa>(numerator, fmaf(mass_f, mass_g, kEmptyCellDivisor));
  }
#endif
  return quotient_of_small_integers<kIsa>(numerator, float_max<kIsa>(mass_f * mass_g, T{} + 1.0f));
}

// Raw-mode cell term from the prefix sums.
template <Isa kIsa, class T>
KBENCH_HOST_DEVICE T cemd_prefix_raw(const T (&f)[kCemdBins], const T (&g)[kCemdBins]) {
  T d[kCemdBins];
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins; ++i) d[i] = f[i] - g[i];
  return median_deviation_sum<kIsa>(d);
}

// One cell's contribution to a pair's distance in the prefix form: `f`, `g` the cell's prefix
// sums (cemd modes) or its values (l2, whose contribution is the sum of squared differences).
// Summed over the cells in cell order from 0.0f, it gives descriptor_distance() before the l2
// square root.
template <DescriptorDistance kDistance, Isa kIsa = Isa::tuned, class T>
KBENCH_HOST_DEVICE T prefix_cell_term(const T (&f)[kCemdBins], const T (&g)[kCemdBins]) {
  if constexpr (kDistance == DescriptorDistance::cemd_normalised) {
    return cemd_prefix_quotient<kIsa>(cemd_prefix_scaled<kIsa>(f, g), f[kCemdBins - 1],
                                      g[kCemdBins - 1]);
  } else if constexpr (kDistance == DescriptorDistance::cemd_raw) {
    return cemd_prefix_raw<kIsa>(f, g);
  } else {
    T sum{};
    KBENCH_UNROLL
    for (int i = 0; i < kCemdBins; ++i) {
      const T d = f[i] - g[i];
      sum += d * d;
    }
    return sum;
  }
}

// The distance from the cell terms' sum: the square root for l2, the sum itself otherwise.
template <DescriptorDistance kDistance>
KBENCH_HOST_DEVICE float prefix_distance_from_sum(float sum) {
  if constexpr (kDistance == DescriptorDistance::l2) {
    return std::sqrt(sum);
  } else {
    return sum;
  }
}

// The 8 floats a descriptor cell contributes to prefix_cell_term: running sums for the cemd
// modes, the values themselves for l2.
template <DescriptorDistance kDistance>
KBENCH_HOST_DEVICE void prefix_cell(const std::uint8_t* cell, float (&out)[kCemdBins]) {
  float running = 0.0f;
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins; ++i) {
    running = kDistance == DescriptorDistance::l2 ? float(cell[i]) : running + float(cell[i]);
    out[i] = running;
  }
}

}  // namespace kbench
