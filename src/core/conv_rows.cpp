// The row helpers of each CPU level behind pointers (conv_rows::row_kernels), for band walks in
// kernels that carry no target attribute.
#include "kbench/detail/conv_rows.hpp"

#include "kbench/cpu_features.hpp"

namespace kbench::conv_rows {
namespace {

// Each level's helpers, compiled for the level (its target attribute reaching the inlined code).
[[gnu::flatten]] void widen_generic(const BandJob& job, const std::uint8_t* row,
                                    std::ptrdiff_t begin, std::ptrdiff_t end, float* dst) {
  LevelRows<simd::Generic, 0>{}.widen(job, row, begin, end, dst);
}
template <int kN>
[[gnu::flatten]] void convolve_generic(const BandJob& job, const float* const* rows,
                                       std::size_t count, std::uint8_t* out) {
  LevelRows<simd::Generic, kN>{}.convolve(job, rows, count, out);
}
#if KBENCH_X86_SIMD
[[KBENCH_CPU_TARGET_AVX2, gnu::flatten]] void widen_avx2(const BandJob& job,
                                                         const std::uint8_t* row,
                                                         std::ptrdiff_t begin, std::ptrdiff_t end,
                                                         float* dst) {
  LevelRows<simd::Avx2, 0>{}.widen(job, row, begin, end, dst);
}
template <int kN>
[[KBENCH_CPU_TARGET_AVX2, gnu::flatten]] void convolve_avx2(const BandJob& job,
                                                            const float* const* rows,
                                                            std::size_t count, std::uint8_t* out) {
  LevelRows<simd::Avx2, kN>{}.convolve(job, rows, count, out);
}
[[KBENCH_CPU_TARGET_AVX512, gnu::flatten]] void widen_avx512(const BandJob& job,
                                                             const std::uint8_t* row,
                                                             std::ptrdiff_t begin,
                                                             std::ptrdiff_t end, float* dst) {
  LevelRows<simd::Avx512, 0>{}.widen(job, row, begin, end, dst);
}
template <int kN>
[[KBENCH_CPU_TARGET_AVX512, gnu::flatten]] void convolve_avx512(const BandJob& job,
                                                                const float* const* rows,
                                                                std::size_t count,
                                                                std::uint8_t* out) {
  LevelRows<simd::Avx512, kN>{}.convolve(job, rows, count, out);
}
#endif

using Convolve = void (*)(const BandJob&, const float* const*, std::size_t, std::uint8_t*);

// The unrolled sizes, else the run-time loop.
template <Convolve k3, Convolve k5, Convolve kAny>
Convolve by_size(int mask_size) {
  return mask_size == 3 ? k3 : mask_size == 5 ? k5 : kAny;
}

}  // namespace

RowKernels row_kernels(int mask_size) {
#if KBENCH_X86_SIMD
  switch (cpu_level()) {
    case CpuLevel::avx512:
      return {block_samples<simd::Avx512>(), widen_avx512,
              by_size<convolve_avx512<3>, convolve_avx512<5>, convolve_avx512<0>>(mask_size)};
    case CpuLevel::avx2:
      return {block_samples<simd::Avx2>(), widen_avx2,
              by_size<convolve_avx2<3>, convolve_avx2<5>, convolve_avx2<0>>(mask_size)};
    case CpuLevel::generic:
      break;
  }
#endif
  return {block_samples<simd::Generic>(), widen_generic,
          by_size<convolve_generic<3>, convolve_generic<5>, convolve_generic<0>>(mask_size)};
}

}  // namespace kbench::conv_rows
