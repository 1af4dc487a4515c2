// Native CPU conv: the report's OpenMP variants (collapse(2), static schedule, unrolled bodies,
// omp simd over a row), and the SIMD variants, one per x86 level (kbench/detail/cpu_vectors.hpp),
// chosen at run time.
#include <omp.h>

#include "host_kernels/conv.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/conv_rows.hpp"

namespace kbench {
namespace {

using namespace host_conv;

void walk_aos(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::uint8_t* in = input.image.data.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int y = 0; y < g.out_height; ++y) {
    for (int x = 0; x < g.out_width; ++x) pixel_aos(in, g, input.mask, x, y, &out.at(x, y, 0));
  }
}

void walk_aos_rgb3x3(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::uint8_t* in = input.image.data.data();
  const float* m = input.mask.weights.data();
  const int stride = g.in_width * 3;
  const Rect inner = interior3(g);
  std::uint8_t* dst = out.data.data();
#pragma omp parallel
  {
#pragma omp for collapse(2) schedule(static) nowait
    for (int y = inner.y0; y < inner.y1; ++y) {
      for (int x = inner.x0; x < inner.x1; ++x) {
        const std::uint8_t* centre = in + (std::size_t(y + g.shift) * g.in_width + x + g.shift) * 3;
        pixel_aos_rgb3x3(centre, stride, m, dst + (std::size_t(y) * g.out_width + x) * 3);
      }
    }
#pragma omp single
    for_each_border_pixel(
        g, inner, [&](int x, int y) { pixel_aos(in, g, input.mask, x, y, &out.at(x, y, 0)); });
  }
}

void walk_soa3x3(const PlanarImageU8& in, const Mask& mask, const Geometry& g, PlanarImageU8& out) {
  const Rect inner = interior3(g);
  const float* m = mask.weights.data();
#pragma omp parallel
  {
    for (int c = 0; c < g.channels; ++c) {
      const std::uint8_t* plane = in.plane(c);
      std::uint8_t* dst = out.plane(c);
#pragma omp for schedule(static) nowait
      for (int y = inner.y0; y < inner.y1; ++y) {
        const std::uint8_t* row = plane + std::size_t(y + g.shift) * g.in_width + g.shift;
        std::uint8_t* out_row = dst + std::size_t(y) * g.out_width;
#pragma omp simd
        for (int x = inner.x0; x < inner.x1; ++x) {
          out_row[x] = pixel_plane3x3(row + x, g.in_width, m);
        }
      }
    }
#pragma omp single
    for (int c = 0; c < g.channels; ++c) {
      for_each_border_pixel(g, inner, [&](int x, int y) {
        out.at(x, y, c) = pixel_plane(in.plane(c), g, mask, x, y);
      });
    }
  }
}

// ---- SIMD variants: each thread walks a band of output rows (conv_rows::convolve_band). ----
// Bands are contiguous (a static schedule), one per thread.

using conv_rows::BandJob;
using conv_rows::LevelRows;

BandJob band_job(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::size_t in_row = std::size_t(g.in_width) * g.channels;
  const std::size_t out_row = std::size_t(g.out_width) * g.channels;
  return {input.image.data.data(),
          in_row,
          out.data.data(),
          out_row,
          input.mask.weights.data(),
          input.mask.size,
          g.channels,
          g.in_height,
          g.shift,
          std::ptrdiff_t(in_row),
          out_row,
          input.border == Border::clamp ? std::ptrdiff_t(input.mask.radius()) * g.channels : 0};
}

// The common mask sizes with their taps unrolled, the others through the run-time loop.
template <class Ops>
void convolve_band_any(const BandJob& job, int y0, int y1) {
  switch (job.mask_size) {
    case 3:
      return conv_rows::convolve_band(job, y0, y1, LevelRows<Ops, 3>{});
    case 5:
      return conv_rows::convolve_band(job, y0, y1, LevelRows<Ops, 5>{});
    default:
      return conv_rows::convolve_band(job, y0, y1, LevelRows<Ops, 0>{});
  }
}

// One entry per level, its target attribute reaching the whole inlined walk
// (detail/cpu_vectors.hpp).
[[gnu::flatten]] void convolve_band_generic(const BandJob& job, int y0, int y1) {
  convolve_band_any<simd::Generic>(job, y0, y1);
}
#if KBENCH_X86_SIMD
[[KBENCH_CPU_TARGET_AVX2, gnu::flatten]] void convolve_band_avx2(const BandJob& job, int y0,
                                                                 int y1) {
  convolve_band_any<simd::Avx2>(job, y0, y1);
}
[[KBENCH_CPU_TARGET_AVX512, gnu::flatten]] void convolve_band_avx512(const BandJob& job, int y0,
                                                                     int y1) {
  convolve_band_any<simd::Avx512>(job, y0, y1);
}
#endif

using BandWalk = void (*)(const BandJob&, int, int);

template <BandWalk kBand>
void walk_simd(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const BandJob job = band_job(input, g, out);
#pragma omp parallel
  {
    const int bands = omp_get_num_threads(), band = omp_get_thread_num();
    const int y0 = int(std::int64_t(g.out_height) * band / bands);
    const int y1 = int(std::int64_t(g.out_height) * (band + 1) / bands);
    if (y0 < y1) kBand(job, y0, y1);
  }
}

}  // namespace

void register_conv_native_cpu(VariantList<Conv>& list) {
  // Ranks: the SIMD variants first, the highest level this CPU has; then the unrolled AoS body,
  // the fastest of the report's paths for 3×3 RGB; the generic one serves every input.
  const auto add = [&](const char* name, Variant<Conv>::Make make,
                       std::function<bool(const ConvInput&)> supports, int rank) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    std::move(supports), rank});
  };
  add("omp-aos", make_runner<AosRunner<walk_aos>>, {}, 1);
  add("omp-aos-unrolled3", make_runner<AosRunner<walk_aos_rgb3x3>>, is_rgb3x3, 3);
  add("omp-soa-unrolled3", make_runner<SoaRunner<walk_soa3x3>>, is_3x3, 2);
  // The SIMD variants take every input; each runs where the CPU has its level.
  add("omp-simd-generic", make_runner<AosRunner<walk_simd<convolve_band_generic>>>,
      supports_level(CpuLevel::generic), 4);
#if KBENCH_X86_SIMD
  add("omp-simd-avx2", make_runner<AosRunner<walk_simd<convolve_band_avx2>>>,
      supports_level(CpuLevel::avx2), 5);
  add("omp-simd-avx512", make_runner<AosRunner<walk_simd<convolve_band_avx512>>>,
      supports_level(CpuLevel::avx512), 6);
#endif
}

}  // namespace kbench
