// Native CPU lbp: OpenMP over rows, and over pixels with collapse(2); each thread counts into its
// own copy of the histogram through an array-section reduction, merged once at the end.
#include "sequential/lbp_host.hpp"

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

}  // namespace

void register_lbp_native_cpu(VariantList<Lbp>& list) {
  // Preferences: whole rows keep the interior loop free of per-pixel border tests.
  const auto add = [&](const char* name, Variant<Lbp>::Make make, int preference) {
    list.push_back(
        {name, Layer::native_cpu, Backend::openmp, false, std::move(make), {}, preference});
  };
  add("omp-rows", make_runner<HostRunner<walk_rows>>, 11);
  add("omp-collapse2", make_runner<HostRunner<walk_collapse2>>, 10);
}

}  // namespace kbench
