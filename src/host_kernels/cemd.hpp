#pragma once
// CEMD pieces shared by the sequential and native CPU layers: the runner, the loops over queries
// and the per-pair distances of the paper's CPU-FINAL form (median form, unrolled, cell masses
// precomputed once per descriptor).

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kbench/cemd.hpp"
#include "kbench/image.hpp"
#include "kbench/registry.hpp"

namespace kbench::host_cemd {

// Calls f(std::integral_constant<DescriptorDistance, d>) for the run-time distance d, so that
// kernels are compiled once per distance with no per-pair test.
template <class F>
void with_distance(DescriptorDistance distance, F&& f) {
  using D = DescriptorDistance;
  switch (distance) {
    case D::cemd_normalised:
      return f(std::integral_constant<D, D::cemd_normalised>());
    case D::cemd_raw:
      return f(std::integral_constant<D, D::cemd_raw>());
    case D::l2:
      return f(std::integral_constant<D, D::l2>());
  }
}

// A result shaped for the input: the matrix or one neighbour pair per query.
inline CemdResult sized_result(const CemdInput& input) {
  CemdResult r;
  r.queries = input.queries.count;
  r.database = input.database.count;
  if (input.params.all_pairs) {
    r.matrix = allocate_samples<float>(std::size_t(r.queries) * std::size_t(r.database),
                                       "the cemd distance matrix");
  } else {
    r.neighbours.resize(std::size_t(r.queries));
  }
  return r;
}

// Runs a Method, made from the input, whose run(input, result) fills a sized result.
template <class Method>
class HostRunner final : public Runner<Cemd> {
 public:
  explicit HostRunner(const CemdInput& input)
      : input_(input), method_((validate_cemd_input(input), input)), result_(sized_result(input)) {}
  void poison(std::uint8_t byte) override {
    std::fill_n(reinterpret_cast<std::uint8_t*>(result_.matrix.data()),
                result_.matrix.size() * sizeof(float), byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(result_.neighbours.data()),
                result_.neighbours.size() * sizeof(CemdNeighbours), byte);
  }
  void compute() override { method_.run(input_, result_); }
  void download(CemdResult& out) override { out = result_; }

 private:
  const CemdInput& input_;
  Method method_;
  CemdResult result_;
};

// Query q's row of the matrix, or its nearest two, from pair(j) = the distance to database row j.
template <class Pair>
void fill_query(const CemdInput& input, int q, const Pair& pair, CemdResult& out) {
  const int m = input.database.count;
  if (input.params.all_pairs) {
    float* row = out.matrix.data() + std::size_t(q) * std::size_t(m);
    for (int j = 0; j < m; ++j) row[j] = pair(j);
    return;
  }
  Top2 top;
  for (int j = 0; j < m; ++j) top2_insert(top, cemd_key(pair(j), std::uint32_t(j)));
  out.neighbours[std::size_t(q)] = neighbours_from(top);
}

// The 16 cell masses of every descriptor of a set, computed once per run.
class CellMasses {
 public:
  explicit CellMasses(const DescriptorSet& set) : masses_(std::size_t(set.count) * kCemdCells) {}
  void compute(const DescriptorSet& set) {
    for (int i = 0; i < set.count; ++i) {
      for (int c = 0; c < kCemdCells; ++c) {
        masses_[std::size_t(i) * kCemdCells + c] = cell_mass(set.row(i) + c * kCemdBins);
      }
    }
  }
  const int* of(int i) const { return masses_.data() + std::size_t(i) * kCemdCells; }

 private:
  std::vector<int> masses_;
};

// CPU-FINAL's distance of one pair: the median form per cell, cells unrolled, masses given.
template <DescriptorDistance kDistance>
inline float final_distance(const std::uint8_t* a, const std::uint8_t* b, const int* masses_a,
                            const int* masses_b) {
  if constexpr (kDistance == DescriptorDistance::l2) {
    return descriptor_distance(a, b, kDistance);
  } else if constexpr (kDistance == DescriptorDistance::cemd_raw) {
    std::uint32_t sum = 0;
    KBENCH_UNROLL
    for (int c = 0; c < kCemdCells; ++c) sum += cemd_cell_raw(a + c * kCemdBins, b + c * kCemdBins);
    return float(sum);
  } else {
    float sum = 0.0f;
    KBENCH_UNROLL
    for (int c = 0; c < kCemdCells; ++c) {
      const int mf = masses_a[c], mg = masses_b[c];
      sum += cemd_cell_quotient(cemd_cell_scaled(a + c * kCemdBins, b + c * kCemdBins, mf, mg), mf,
                                mg);
    }
    return sum;
  }
}

// CPU-FINAL for queries [begin, end): cell masses precomputed, then every pair in the median form.
struct FinalForm {
  explicit FinalForm(const CemdInput& input)
      : query_masses(input.queries), database_masses(input.database) {}
  void prepare(const CemdInput& input) {
    query_masses.compute(input.queries);
    database_masses.compute(input.database);
  }
  template <DescriptorDistance kDistance>
  void fill(const CemdInput& input, int q, CemdResult& out) const {
    const std::uint8_t* a = input.queries.row(q);
    const int* ma = query_masses.of(q);
    fill_query(
        input, q,
        [&](int j) {
          return final_distance<kDistance>(a, input.database.row(j), ma, database_masses.of(j));
        },
        out);
  }

  CellMasses query_masses, database_masses;
};

}  // namespace kbench::host_cemd
