// Native CPU lbp: OpenMP over rows, and over pixels with collapse(2); each thread counts into its
// own copy of the histogram through an array-section reduction, merged once at the end. The SIMD
// variants (one per x86 level, kbench/detail/cpu_vectors.hpp, chosen at run time) code a row's
// inside pixels a vector at a time and count plain codes into per-thread sub-histograms.
#include <omp.h>

#include <vector>

#include "host_kernels/lbp.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/lbp_rows.hpp"

namespace kbench {
namespace {

using namespace host_lbp;

void walk_rows(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out) {
  const std::uint8_t* in = input.gray.data.data();
  const Rect inner = inside(g);
  std::uint32_t* hist = out.histogram.data();
  const int bins = t.bins;
  std::uint8_t* codes = out.codes.data.data();
#pragma omp parallel for schedule(static) reduction(+ : hist[:bins])
  for (int y = 0; y < g.out_height; ++y) {
    code_row(in, g, inner, t, y, codes + std::size_t(y) * g.out_width, hist);
  }
}

void walk_collapse2(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out) {
  const std::uint8_t* in = input.gray.data.data();
  const Rect inner = inside(g);
  std::uint32_t* hist = out.histogram.data();
  const int bins = t.bins;
  std::uint8_t* codes = out.codes.data.data();
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : hist[:bins])
  for (int y = 0; y < g.out_height; ++y) {
    for (int x = 0; x < g.out_width; ++x) {
      emit(t, code_at(in, g, inner, x, y), codes + std::size_t(y) * g.out_width + x, hist);
    }
  }
}

// ---- SIMD variants: each thread codes a contiguous band of output rows. ----

// What every thread's band reads and writes.
struct BandJob {
  const std::uint8_t* in;
  std::uint8_t* codes;
  Geometry geometry;
  Rect inner;
  // The mapping's output values; null for the plain mapping, whose values are the codes.
  const std::uint8_t* value;
};

// Output rows [y0, y1): the frame through clamped reads, the inside a vector at a time. Rows are
// coded into the output, or for a mapping into a row buffer first, then counted (and mapped) while
// they are in L1.
template <class Ops>
void code_band(const BandJob& job, int y0, int y1, lbp_rows::CodeCounts& counts) {
  const Geometry& g = job.geometry;
  const Rect& inner = job.inner;
  const std::size_t width = std::size_t(g.out_width);
  std::vector<std::uint8_t> row_codes(job.value ? width : 0);
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* out_row = job.codes + std::size_t(y) * width;
    std::uint8_t* codes = job.value ? row_codes.data() : out_row;
    const bool inside_row = y >= inner.y0 && y < inner.y1;
    const int x0 = inside_row ? inner.x0 : g.out_width;
    const int x1 = inside_row ? inner.x1 : g.out_width;
    for (int x = 0; x < x0; ++x) codes[x] = code_clamped(job.in, g, x, y);
    if (x0 < x1) {
      const std::uint8_t* centres = job.in + std::size_t(y + g.shift) * g.in_width + g.shift + x0;
      const std::size_t count = std::size_t(x1 - x0);
      if (count >= std::size_t(Ops::kBytes)) {
        lbp_rows::code_run<Ops>(centres, g.in_width, count, codes + x0);
      } else {
        for (std::size_t x = 0; x < count; ++x)
          codes[x0 + x] = code_inside(centres + x, g.in_width);
      }
    }
    for (int x = x1; x < g.out_width; ++x) codes[x] = code_clamped(job.in, g, x, y);
    if (job.value) {
      lbp_rows::count_and_map(codes, width, job.value, counts, out_row);
    } else {
      lbp_rows::count_codes(codes, width, counts);
    }
  }
}

// One entry per level, its target attribute reaching the whole inlined band
// (detail/cpu_vectors.hpp).
[[gnu::flatten]] void code_band_generic(const BandJob& job, int y0, int y1,
                                        lbp_rows::CodeCounts& counts) {
  code_band<simd::Generic>(job, y0, y1, counts);
}
#if KBENCH_X86_SIMD
[[KBENCH_CPU_TARGET_AVX2, gnu::flatten]] void code_band_avx2(const BandJob& job, int y0, int y1,
                                                             lbp_rows::CodeCounts& counts) {
  code_band<simd::Avx2>(job, y0, y1, counts);
}
[[KBENCH_CPU_TARGET_AVX512, gnu::flatten]] void code_band_avx512(const BandJob& job, int y0, int y1,
                                                                 lbp_rows::CodeCounts& counts) {
  code_band<simd::Avx512>(job, y0, y1, counts);
}
#endif

using BandCoder = void (*)(const BandJob&, int, int, lbp_rows::CodeCounts&);

template <BandCoder kBand>
void walk_simd(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out) {
  const bool plain = input.params.mapping == LbpMapping::plain;
  const BandJob job{input.gray.data.data(), out.codes.data.data(), g, inside(g),
                    plain ? nullptr : t.value};
  std::uint32_t totals[kLbpCodes] = {};
#pragma omp parallel
  {
    const int bands = omp_get_num_threads(), band = omp_get_thread_num();
    const int y0 = int(std::int64_t(g.out_height) * band / bands);
    const int y1 = int(std::int64_t(g.out_height) * (band + 1) / bands);
    lbp_rows::CodeCounts counts{};
    if (y0 < y1) kBand(job, y0, y1, counts);
    for (int code = 0; code < kLbpCodes; ++code) {
      const std::uint32_t total = lbp_rows::code_total(counts, code);
      if (total == 0) continue;
#pragma omp atomic
      totals[code] += total;
    }
  }
  for (int code = 0; code < kLbpCodes; ++code) out.histogram[t.bin[code]] += totals[code];
}

}  // namespace

void register_lbp_native_cpu(VariantList<Lbp>& list) {
  // Ranks: the SIMD variants first, the highest level this CPU has; then whole rows, which keep
  // the interior loop free of per-pixel border tests.
  const auto add = [&](const char* name, Variant<Lbp>::Make make,
                       std::function<bool(const LbpInput&)> supports, int rank) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    std::move(supports), rank});
  };
  add("omp-rows", make_runner<HostRunner<walk_rows>>, {}, 2);
  add("omp-collapse2", make_runner<HostRunner<walk_collapse2>>, {}, 1);
  add("omp-simd-generic", make_runner<HostRunner<walk_simd<code_band_generic>>>,
      supports_level(CpuLevel::generic), 3);
#if KBENCH_X86_SIMD
  add("omp-simd-avx2", make_runner<HostRunner<walk_simd<code_band_avx2>>>,
      supports_level(CpuLevel::avx2), 4);
  add("omp-simd-avx512", make_runner<HostRunner<walk_simd<code_band_avx512>>>,
      supports_level(CpuLevel::avx512), 5);
#endif
}

}  // namespace kbench
