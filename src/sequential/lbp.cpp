// Sequential lbp: the plain reference and a single-core variant that reads interior pixels
// without clamping.
#include "host_kernels/lbp.hpp"

namespace kbench {
namespace host_lbp {

// The reference: every output pixel, every neighbour through clamped coordinates, in the order
// the header documents.
void walk_plain(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out) {
  const std::uint8_t* in = input.gray.data.data();
  for (int y = 0; y < g.out_height; ++y) {
    for (int x = 0; x < g.out_width; ++x) {
      emit(t, code_clamped(in, g, x, y), &out.codes.at(x, y, 0), out.histogram.data());
    }
  }
}

}  // namespace host_lbp

namespace {

using namespace host_lbp;

void walk_rows(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out) {
  const Rect inner = inside(g);
  for (int y = 0; y < g.out_height; ++y) {
    code_row(input.gray.data.data(), g, inner, t, y, &out.codes.at(0, y, 0), out.histogram.data());
  }
}

}  // namespace

void register_lbp_sequential(VariantList<Lbp>& list) {
  const auto add = [&](const char* name, Variant<Lbp>::Make make) {
    list.push_back({name, Layer::sequential, Backend::serial, false, std::move(make), {}});
  };
  add("seq-plain", make_runner<HostRunner<walk_plain>>);
  add("seq-rows", make_runner<HostRunner<walk_rows>>);
}

}  // namespace kbench
