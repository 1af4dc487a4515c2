// Native CPU sad-pruned (OpenMP): the GPU scheme on threads. Strip bounds for every window in
// parallel; the best-bounded window of each map row gives a candidate, and the smallest exact
// SAD among them the first E_guess; the survivors are then refined concurrently, each strip by
// strip against the shared, falling E_guess (one atomic key), leaving as soon as its bound
// exceeds it. When too few windows are pruned the cache-blocked full search runs instead.
#include <atomic>

#include "sequential/sad_pruned_host.hpp"

namespace kbench {
namespace {

using host_pruned::Problem;

void atomic_min(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t seen = target.load(std::memory_order_relaxed);
  while (value < seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

std::uint64_t full_search(const Problem& p, PruneStats& stats) {
  stats.full_search = true;
  std::vector<std::int32_t> map = allocate_samples<std::int32_t>(p.s.map_size(), "the SAD map");
  host_sad::blocked_map(p.input, p.s, map.data());
  const SadMatch best = host_sad::omp_argmin(map.data(), p.s);
  return sad_key(best.score, std::uint32_t(best.row) * std::uint32_t(p.s.map_width) + best.col);
}

std::uint64_t omp_pruned(const Problem& p, PruneStats& stats) {
  const SadShape& s = p.s;
  std::vector<std::uint32_t> bounds = allocate_samples<std::uint32_t>(s.map_size(), "bounds");
  std::vector<std::uint64_t> row_best(std::size_t(s.map_height), kNoSadKey);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    std::uint64_t best = kNoSadKey;
    for (int j = 0; j < s.map_width; ++j) {
      const std::size_t index = std::size_t(i) * s.map_width + j;
      bounds[index] = p.strip_bound(i, j);
      best = sad_min(best, sad_key(std::int32_t(bounds[index]), std::uint32_t(index)));
    }
    row_best[std::size_t(i)] = best;
  }
  std::atomic<std::uint64_t> guess{kNoSadKey};
#pragma omp parallel for schedule(dynamic, 4)
  for (int i = 0; i < s.map_height; ++i) {
    const std::uint32_t w = std::uint32_t(row_best[std::size_t(i)]);
    atomic_min(guess, sad_key(std::int32_t(p.exact_sad(p.row_of(w), p.col_of(w))), w));
  }
  // Survivors in index order: each thread collects a contiguous range of rows.
  const std::uint32_t limit = std::uint32_t(guess.load() >> 32);
  std::vector<std::uint32_t> survivors;
#pragma omp parallel
  {
    std::vector<std::uint32_t> mine;
#pragma omp for schedule(static) ordered
    for (int i = 0; i < s.map_height; ++i) {
      for (int j = 0; j < s.map_width; ++j) {
        const std::size_t index = std::size_t(i) * s.map_width + j;
        if (bounds[index] <= limit) mine.push_back(std::uint32_t(index));
      }
#pragma omp ordered
      {
        survivors.insert(survivors.end(), mine.begin(), mine.end());
        mine.clear();
      }
    }
  }
  stats.after_bounds = survivors.size();
  if (double(survivors.size()) > kPruneFullSearchFraction * double(s.map_size())) {
    return full_search(p, stats);
  }
  const int strips = p.strips.count;
  std::vector<std::atomic<std::uint64_t>> alive(static_cast<std::size_t>(strips));
  for (auto& a : alive) a = 0;
  const std::int64_t count = std::int64_t(survivors.size());
#pragma omp parallel for schedule(dynamic, 16)
  for (std::int64_t n = 0; n < count; ++n) {
    const std::uint32_t w = survivors[std::size_t(n)];
    const int i = p.row_of(w), j = p.col_of(w);
    std::uint32_t bound = bounds[w];
    for (int k = 0; k < strips; ++k) {
      if (bound > std::uint32_t(guess.load(std::memory_order_relaxed) >> 32)) break;
      bound = bound - p.strip_term(i, j, k) + p.strip_sad(i, j, k);
      if (bound > std::uint32_t(guess.load(std::memory_order_relaxed) >> 32)) break;
      alive[std::size_t(k)].fetch_add(1, std::memory_order_relaxed);
      if (k + 1 == strips) atomic_min(guess, sad_key(std::int32_t(bound), w));
    }
  }
  for (int k = 0; k < strips; ++k) stats.after_strip[std::size_t(k)] = alive[std::size_t(k)].load();
  return guess.load();
}

}  // namespace

void register_sad_pruned_native_cpu(VariantList<SadPruned>& list) {
  list.push_back({"omp-pruned",
                  Layer::native_cpu,
                  Backend::openmp,
                  false,
                  make_runner<host_pruned::PrunedRunner<omp_pruned>>,
                  {},
                  10});
}

}  // namespace kbench
