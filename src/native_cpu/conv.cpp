// Native CPU conv: the report's OpenMP variants (collapse(2), static schedule, unrolled bodies,
// omp simd over a row), and the SIMD variants of issue 13, one per x86 level (kbench/cpu_simd.hpp),
// chosen at run time.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kbench/conv_rows.hpp"
#include "kbench/cpu_features.hpp"
#include "sequential/conv_host.hpp"

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

// ---- SIMD variants: each thread walks a band of output rows, strip by strip. ----
//
// A strip is a run of a row's samples whose N rows of floats stay in the core's cache while the
// walk goes down the band: each input row's strip is turned into floats once, used by
// the N output rows it feeds, and left behind. Bands are contiguous (a static schedule), one per
// thread.

// Bytes of floats a strip's N rows may take: about half the L2 cache of one core, so a 3×3 mask
// takes whole rows up to 4K RGB. (Strips of L1 size were slower: walking down the rows of a narrow
// strip, the hardware prefetchers restart on every row.)
constexpr std::size_t kStripRowsBytes = 256 * 1024;

// What every thread's band walk reads.
struct BandJob {
  const std::uint8_t* in;
  std::uint8_t* out;
  const float* weights;
  int mask_size, channels, in_height, out_height, shift;
  std::ptrdiff_t in_row_samples;  // input samples per row
  std::size_t out_row_samples;    // output samples per row
  std::ptrdiff_t pad;             // padded samples before and after an input row
};

BandJob band_job(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const int r = input.mask.radius();
  return {input.image.data.data(),
          out.data.data(),
          input.mask.weights.data(),
          input.mask.size,
          g.channels,
          g.in_height,
          g.out_height,
          g.shift,
          std::ptrdiff_t(g.in_width) * g.channels,
          std::size_t(g.out_width) * g.channels,
          input.border == Border::clamp ? std::ptrdiff_t(r) * g.channels : 0};
}

// Output samples per strip: a whole number of blocks, as many as kStripRowsBytes allows.
template <class Ops>
std::size_t strip_samples(const BandJob& job) {
  const std::size_t block = conv_rows::block_samples<Ops>();
  const std::size_t fit = kStripRowsBytes / (sizeof(float) * std::size_t(job.mask_size));
  const std::size_t blocks = std::max<std::size_t>(1, fit / block);
  return std::min(blocks * block, job.out_row_samples);
}

// Output rows [y0, y1). Padded input row v (row v of the unclamped row numbering, v >= −r) lives
// in ring slot (v + r) mod N while the N output rows that read it are computed.
template <class Ops, int kN>
void convolve_band(const BandJob& job, int y0, int y1) {
  const int n = job.mask_size, r = n / 2;
  const std::size_t strip = strip_samples<Ops>(job);
  const std::size_t stride = conv_rows::row_floats<Ops>(strip, n, job.channels);
  // Zeroed: the floats past a strip's last taps that a last block reads are finite.
  std::vector<float> ring(stride * std::size_t(n));
  std::vector<const float*> rows(std::size_t(n), nullptr);
  const auto slot = [&](int v) { return ring.data() + std::size_t((v + r) % n) * stride; };
  for (std::size_t s0 = 0; s0 < job.out_row_samples; s0 += strip) {
    const std::size_t count = std::min(strip, job.out_row_samples - s0);
    const std::ptrdiff_t end = std::ptrdiff_t(s0 + count) + std::ptrdiff_t(n - 1) * job.channels;
    const auto load = [&](int v) {
      const std::uint8_t* row =
          job.in + std::size_t(clamp_coordinate(v, job.in_height)) * job.in_row_samples;
      conv_rows::widen_padded<Ops>(row, job.in_row_samples, job.channels, job.pad,
                                   std::ptrdiff_t(s0), end, slot(v));
    };
    const int first = y0 + job.shift - r;  // the first input row of the band
    for (int v = first; v < first + n - 1; ++v) load(v);
    for (int y = y0; y < y1; ++y) {
      load(y + job.shift + r);
      for (int j = 0; j < n; ++j) rows[j] = slot(y + job.shift - r + j);
      conv_rows::convolve_row<Ops, kN>(rows.data(), job.weights, n, job.channels, count,
                                       job.out + std::size_t(y) * job.out_row_samples + s0);
    }
  }
}

// The common mask sizes with their taps unrolled, the others through the run-time loop.
template <class Ops>
void convolve_band_any(const BandJob& job, int y0, int y1) {
  switch (job.mask_size) {
    case 3:
      return convolve_band<Ops, 3>(job, y0, y1);
    case 5:
      return convolve_band<Ops, 5>(job, y0, y1);
    default:
      return convolve_band<Ops, 0>(job, y0, y1);
  }
}

// One entry per level, its target attribute reaching the whole inlined walk (cpu_simd.hpp).
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
  // Preferences: the SIMD variants first, the highest level this CPU has; then the unrolled AoS
  // body, the fastest of the report's paths for 3×3 RGB; the generic one serves every input. All
  // stay below the CUDA variants' (16 and up), which user calls take when a GPU is present.
  const auto add = [&](const char* name, Variant<Conv>::Make make,
                       std::function<bool(const ConvInput&)> supports, int preference) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    std::move(supports), preference});
  };
  add("omp-aos", make_runner<AosRunner<walk_aos>>, {}, 10);
  add("omp-aos-unrolled3", make_runner<AosRunner<walk_aos_rgb3x3>>, is_rgb3x3, 12);
  add("omp-soa-unrolled3", make_runner<SoaRunner<walk_soa3x3>>, is_3x3, 11);
  // The SIMD variants take every input; each runs where the CPU has its level.
  const auto level = [](CpuLevel l) { return [l](const ConvInput&) { return cpu_supports(l); }; };
  add("omp-simd-generic", make_runner<AosRunner<walk_simd<convolve_band_generic>>>,
      level(CpuLevel::generic), 13);
#if KBENCH_X86_SIMD
  add("omp-simd-avx2", make_runner<AosRunner<walk_simd<convolve_band_avx2>>>, level(CpuLevel::avx2),
      14);
  add("omp-simd-avx512", make_runner<AosRunner<walk_simd<convolve_band_avx512>>>,
      level(CpuLevel::avx512), 15);
#endif
}

}  // namespace kbench
