// Sequential sad-pruned: the paper's flow on one core (its Figs. 3-5: InitBounds,
// FindBestInitMatch, prune, refine), and the same flow with Tombari et al.'s strip bound from the
// start instead of the whole-window norm bound, its survivors refined best bound first.
#include <algorithm>

#include "host_kernels/sad_pruned.hpp"

namespace kbench {
namespace {

using host_pruned::Problem;

enum class FirstBound { norm, strips };

// Survivors whose exact SAD seq-strips takes before the rounds.
constexpr std::size_t kBestFirst = 32;

struct Survivor {
  std::uint32_t index;
  std::uint32_t exact;  // Σ of the strips' exact SADs so far
  std::uint32_t rest;   // Σ of the remaining strips' norm terms
};

template <FirstBound kFirst>
std::uint64_t paper_flow(const Problem& p, PruneStats& stats) {
  const SadShape& s = p.s;
  // InitBounds (strip bounds a map row at a time, strip by strip: the same sums in an order
  // that a compiler vectorises), and with each row FindBestInitMatch's smallest bound (ties to the
  // smallest index).
  std::vector<std::uint32_t> bounds = allocate_samples<std::uint32_t>(s.map_size(), "bounds");
  std::uint64_t smallest = kNoSadKey;
  for (int i = 0; i < s.map_height; ++i) {
    const std::size_t row_first = std::size_t(i) * s.map_width;
    std::uint32_t* row = bounds.data() + row_first;
    if (kFirst == FirstBound::strips) {
      smallest = sad_min(smallest, p.strip_bounds_row(i, row));
    } else {
      for (int j = 0; j < s.map_width; ++j) {
        row[j] = p.norm_bound(i, j);
        smallest = sad_min(smallest, sad_key(std::int32_t(row[j]), std::uint32_t(row_first + j)));
      }
    }
  }
  // FindBestInitMatch's exact SAD: the first E_guess.
  const std::uint32_t first = std::uint32_t(smallest);
  std::uint64_t guess = sad_key(std::int32_t(p.exact_sad(p.row_of(first), p.col_of(first))), first);
  const auto limit = [&] { return std::uint32_t(guess >> 32); };
  // Prune: windows whose bound exceeds E_guess leave; equal ones stay (ties).
  std::vector<Survivor> survivors;
  for (std::size_t index = 0; index < bounds.size(); ++index) {
    if (bounds[index] > limit()) continue;
    const std::uint32_t w = std::uint32_t(index);
    survivors.push_back(
        {w, 0,
         kFirst == FirstBound::strips ? bounds[index] : p.strip_bound(p.row_of(w), p.col_of(w))});
  }
  stats.after_bounds = survivors.size();
  // With strip bounds, the kBestFirst survivors of smallest bound get their exact SAD first: the
  // windows most likely to lower E_guess, so that the rounds start from a tight one.
  if (kFirst == FirstBound::strips) {
    const std::size_t first = std::min(survivors.size(), kBestFirst);
    std::partial_sort(survivors.begin(), survivors.begin() + first, survivors.end(),
                      [](const Survivor& a, const Survivor& b) {
                        return a.rest != b.rest ? a.rest < b.rest : a.index < b.index;
                      });
    for (std::size_t e = 0; e < first; ++e) {
      const std::uint32_t w = survivors[e].index;
      guess = sad_min(guess, sad_key(std::int32_t(p.exact_sad(p.row_of(w), p.col_of(w))), w));
    }
  }
  // Refine strip by strip (in strip_order): l = exact + rest grows towards the SAD; a finished
  // window lowers E_guess at once.
  const int strips = p.strips.count;
  for (int r = 0; r < strips; ++r) {
    const int k = p.order[std::size_t(r)];
    std::size_t kept = 0;
    for (Survivor w : survivors) {
      if (w.exact + w.rest > limit()) continue;
      const int i = p.row_of(w.index), j = p.col_of(w.index);
      w.exact += p.strip_sad(i, j, k);
      w.rest -= p.strip_term(i, j, k);
      if (w.exact + w.rest > limit()) continue;
      if (r + 1 == strips) guess = sad_min(guess, sad_key(std::int32_t(w.exact), w.index));
      survivors[kept++] = w;
    }
    survivors.resize(kept);
    stats.after_strip[std::size_t(r)] = kept;
  }
  return guess;
}

}  // namespace

void register_sad_pruned_sequential(VariantList<SadPruned>& list) {
  using host_pruned::PrunedRunner;
  list.push_back({"seq-paper", Layer::sequential, Backend::serial, false,
                  make_runner<PrunedRunner<paper_flow<FirstBound::norm>>>, sad_pruned_argmin});
  list.push_back({"seq-strips", Layer::sequential, Backend::serial, false,
                  make_runner<PrunedRunner<paper_flow<FirstBound::strips>>>, sad_pruned_argmin, 1});
}

}  // namespace kbench
