// Sequential cemd: the paper's two single-core forms.
// - seq-initial (CPU-INITIAL): per cell the literal minimum over the 8 rotations k of
//   Σ_i |D(i) − D(k)|; the plain reference every other variant is checked against.
// - seq-final (CPU-FINAL): the median form through a sorting network, cells unrolled, cell masses
//   computed once per descriptor instead of once per pair.
// Both produce the float distances every variant must: the same integer numerators (the literal
// minimum equals the median form), cemd_cell_quotient, and float sums in cell order.
#include <climits>

#include "host_kernels/cemd.hpp"

namespace kbench {
namespace {

using namespace host_cemd;

// min_k Σ_i |D(i) − D(k)|.
std::uint32_t literal_numerator(const int (&d)[kCemdBins]) {
  int best = INT_MAX;
  for (int k = 0; k < kCemdBins; ++k) {
    int sum = 0;
    for (int i = 0; i < kCemdBins; ++i) sum += std::abs(d[i] - d[k]);
    best = std::min(best, sum);
  }
  return std::uint32_t(best);
}

float literal_distance(const std::uint8_t* a, const std::uint8_t* b, DescriptorDistance distance) {
  if (distance == DescriptorDistance::l2) return descriptor_distance(a, b, distance);
  const bool scaled = distance == DescriptorDistance::cemd_normalised;
  std::uint32_t raw_sum = 0;
  float scaled_sum = 0.0f;
  for (int c = 0; c < kCemdCells; ++c) {
    const std::uint8_t* f = a + c * kCemdBins;
    const std::uint8_t* g = b + c * kCemdBins;
    const int mf = cell_mass(f), mg = cell_mass(g);
    int d[kCemdBins];
    int running = 0;
    for (int i = 0; i < kCemdBins; ++i) {
      running += scaled ? int(f[i]) * mg - int(g[i]) * mf : int(f[i]) - int(g[i]);
      d[i] = running;
    }
    const std::uint32_t numerator = literal_numerator(d);
    if (scaled) {
      scaled_sum += cemd_cell_quotient(numerator, mf, mg);
    } else {
      raw_sum += numerator;
    }
  }
  return scaled ? scaled_sum : float(raw_sum);
}

struct InitialForm {
  explicit InitialForm(const CemdInput&) {}
  void run(const CemdInput& input, CemdResult& out) {
    for (int q = 0; q < input.queries.count; ++q) {
      const std::uint8_t* a = input.queries.row(q);
      fill_query(
          input, q,
          [&](int j) { return literal_distance(a, input.database.row(j), input.params.distance); },
          out);
    }
  }
};

struct SequentialFinal {
  explicit SequentialFinal(const CemdInput& input) : form(input) {}
  void run(const CemdInput& input, CemdResult& out) {
    form.prepare(input);
    with_distance(input.params.distance, [&](auto distance) {
      for (int q = 0; q < input.queries.count; ++q) form.fill<distance.value>(input, q, out);
    });
  }

  FinalForm form;
};

}  // namespace

void register_cemd_sequential(VariantList<Cemd>& list) {
  list.push_back({"seq-initial",
                  Layer::sequential,
                  Backend::serial,
                  false,
                  make_runner<HostRunner<InitialForm>>,
                  {}});
  list.push_back({"seq-final",
                  Layer::sequential,
                  Backend::serial,
                  false,
                  make_runner<HostRunner<SequentialFinal>>,
                  {},
                  1});
}

}  // namespace kbench
