#pragma once
// What the sequential and native CPU sad-pruned variants share: the problem's precomputed sums,
// the bounds of one window, and the exact SAD of one strip.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "host_kernels/sad.hpp"
#include "kbench/sad_pruned.hpp"

namespace kbench::host_pruned {

class Problem {
 public:
  explicit Problem(const SadInput& input)
      : input(input),
        s(validate_sad_pruned_input(input)),
        strips(strip_layout(s)),
        query_strips(query_strip_sums(input.query, strips)),
        order(strip_order(input.query, strips)),
        integral(integral_image(input.target)),
        pitch(std::size_t(s.target_width) + 1) {
    for (const std::uint32_t x : query_strips) query_sum += x;
  }

  // |y_{i,k}|₁: the target's sum under strip k of the window at (i, j).
  std::uint32_t strip_sum(int i, int j, int k) const {
    return box_sum(integral.data(), pitch, i + strips.begin(k), j, i + strips.end(k),
                   j + s.query_width);
  }
  // The paper's InitBounds: | |x|₁ − |y_i|₁ |.
  std::uint32_t norm_bound(int i, int j) const {
    return abs_difference(
        query_sum, box_sum(integral.data(), pitch, i, j, i + s.query_height, j + s.query_width));
  }
  // Tombari's bound before any strip is exact: Σ_k | |x_k|₁ − |y_{i,k}|₁ | (≥ norm_bound).
  std::uint32_t strip_bound(int i, int j) const {
    std::uint32_t bound = 0;
    for (int k = 0; k < strips.count; ++k) bound += strip_term(i, j, k);
    return bound;
  }
  std::uint32_t strip_term(int i, int j, int k) const {
    return abs_difference(query_strips[std::size_t(k)], strip_sum(i, j, k));
  }
  // strip_bound of every window of map row i into `bounds`, strip by strip over the whole row so
  // that the windows' terms form vectors (the compiler's, at the caller's target); returns the
  // row's smallest bound key. The loop is strip_term's arithmetic with the two integral rows
  // hoisted: written as strip_term(i, j, k) it does not vectorise, and seq-strips runs several
  // times slower (perf/notes/sad-pruned.md).
  [[gnu::always_inline]] inline std::uint64_t strip_bounds_row(int i, std::uint32_t* bounds) const {
    const int width = s.map_width, span = s.query_width;
    std::fill_n(bounds, width, 0u);
    for (int k = 0; k < strips.count; ++k) {
      const std::uint32_t* top = integral.data() + std::size_t(i + strips.begin(k)) * pitch;
      const std::uint32_t* bottom = integral.data() + std::size_t(i + strips.end(k)) * pitch;
      const std::uint32_t query = query_strips[std::size_t(k)];
      for (int j = 0; j < width; ++j) {
        const std::uint32_t sum = bottom[j + span] - bottom[j] - top[j + span] + top[j];
        bounds[j] += abs_difference(query, sum);
      }
    }
    std::uint32_t lowest = ~0u;
    for (int j = 0; j < width; ++j) lowest = std::min(lowest, bounds[j]);
    int first = 0;
    while (bounds[first] != lowest) ++first;
    return sad_key(std::int32_t(lowest), std::uint32_t(std::size_t(i) * width + first));
  }
  // SAD_k(y_i): the exact SAD of strip k.
  std::uint32_t strip_sad(int i, int j, int k) const {
    const std::uint8_t* target = input.target.data.data();
    const std::uint8_t* query = input.query.data.data();
    std::int32_t sum = 0;
    for (int y = strips.begin(k); y < strips.end(k); ++y) {
      sum += host_sad::row_sad(target + std::size_t(i + y) * s.target_width + j,
                               query + std::size_t(y) * s.query_width, s.query_width);
    }
    return std::uint32_t(sum);
  }
  std::uint32_t exact_sad(int i, int j) const {
    return std::uint32_t(host_sad::sad_at(input, s, i, j));
  }
  int row_of(std::uint32_t index) const { return int(index / std::uint32_t(s.map_width)); }
  int col_of(std::uint32_t index) const { return int(index % std::uint32_t(s.map_width)); }

  const SadInput& input;
  SadShape s;
  std::size_t top_k = std::size_t(input.params.top_k);  // 1: the argmin
  StripLayout strips;
  std::vector<std::uint32_t> query_strips;
  std::vector<int> order;  // strip_order
  std::uint32_t query_sum = 0;
  std::vector<std::uint32_t> integral;
  std::size_t pitch;
};

// Runs a search and hands back its result: `Search(problem, stats)` returns the best key (an
// argmin-only search; the runner refuses top-k inputs) or the top_k smallest keys in order.
template <auto Search>
class PrunedRunner final : public Runner<SadPruned> {
  static constexpr bool kArgminOnly =
      std::is_same_v<decltype(Search(std::declval<const Problem&>(), std::declval<PruneStats&>())),
                     std::uint64_t>;

 public:
  explicit PrunedRunner(const SadInput& input) : problem_(input) {
    if constexpr (kArgminOnly) validate_sad_pruned_argmin(input);
  }
  void poison(std::uint8_t byte) override {
    keys_.assign(problem_.top_k, ~std::uint64_t(0) / 0xFF * byte);
    stats_ = PruneStats{};
    stats_.windows = stats_.after_bounds = ~std::uint64_t(0) / 0xFF * byte;
  }
  void compute() override {
    stats_ = PruneStats{};
    stats_.windows = problem_.s.map_size();
    stats_.after_strip.assign(std::size_t(problem_.strips.count), 0);
    if constexpr (kArgminOnly) {
      keys_.assign(1, Search(problem_, stats_));
    } else {
      keys_ = Search(problem_, stats_);
    }
  }
  void download(SadPrunedResult& out) override {
    out.best = match_from_key(keys_.front(), problem_.s.map_width);  // a map has one position
    out.stats = stats_;
    out.top.clear();
    if (problem_.top_k > 1) {
      for (const std::uint64_t key : keys_)
        out.top.push_back(match_from_key(key, problem_.s.map_width));
    }
  }

 private:
  Problem problem_;
  std::vector<std::uint64_t> keys_;
  PruneStats stats_;
};

}  // namespace kbench::host_pruned
