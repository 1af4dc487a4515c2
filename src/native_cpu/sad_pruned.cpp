// Native CPU sad-pruned (OpenMP), omp-simd-<level>: the GPU scheme on threads, its two
// inner loops compiled for each CPU level (one binary; cpu_features.hpp). Strip bounds for every
// window in parallel, a map row at a time in vectors of windows; the best-bounded window of each
// map row gives a candidate, and the smallest exact SAD among them the first E_guess; the
// survivors are then refined concurrently, each strip by strip (strip_order) against the shared,
// falling E_guess (one atomic key), leaving as soon as its bound exceeds it. A strip's SAD is
// packed-SAD instructions of the level (psadbw, vpsadbw). When too few windows are pruned, the same
// level's full search (the sad variant omp-simd-<level>) runs instead. The top k positions without
// separation: the same with a fixed limit, the candidates' k-th smallest exact key (at least k
// windows meet it, and every window within it has a bound within it), every survivor's key kept.
#include <algorithm>
#include <atomic>

#include "host_kernels/sad_pruned.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_sad_bytes.hpp"

namespace kbench {
namespace {

using host_pruned::Problem;

// SAD_k(y_i) in the level's packed SADs: each strip row's whole byte vectors summed in one vector
// accumulator, its last query_width mod kBytes bytes by the scalar row loop.
template <class Bytes>
std::uint32_t strip_sad(const Problem& p, int i, int j, int k) {
  const int width = p.s.query_width, whole = width / Bytes::kBytes * Bytes::kBytes;
  const std::size_t target_width = std::size_t(p.s.target_width);
  const std::uint8_t* target =
      p.input.target.data.data() + std::size_t(i + p.strips.begin(k)) * target_width + j;
  const std::uint8_t* query = p.input.query.data.data() + std::size_t(p.strips.begin(k)) * width;
  auto acc = Bytes::zero();
  std::int32_t tail = 0;
  for (int y = p.strips.begin(k); y < p.strips.end(k); ++y) {
    for (int x = 0; x < whole; x += Bytes::kBytes) {
      acc = Bytes::add_sad(acc, Bytes::load(query + x), Bytes::load(target + x));
    }
    tail += host_sad::row_sad(target + whole, query + whole, width - whole);
    target += target_width;
    query += width;
  }
  return Bytes::lane_sum(acc) + std::uint32_t(tail);
}

// One entry per level for each inner loop, its target attribute reaching the whole inlined loop
// (detail/cpu_sad_bytes.hpp).
struct GenericLevel {
  static constexpr CpuLevel level = CpuLevel::generic;
  [[gnu::flatten]] static std::uint64_t bounds(const Problem& p, int i, std::uint32_t* out) {
    return p.strip_bounds_row(i, out);
  }
  [[gnu::flatten]] static std::uint32_t sad(const Problem& p, int i, int j, int k) {
    return strip_sad<cpu_simd::GenericBytes<>>(p, i, j, k);
  }
};
#if defined(KBENCH_X86_PACKED_SAD)
struct Avx2Level {
  static constexpr CpuLevel level = CpuLevel::avx2;
  [[gnu::target(KBENCH_TARGET_AVX2), gnu::flatten]] static std::uint64_t bounds(
      const Problem& p, int i, std::uint32_t* out) {
    return p.strip_bounds_row(i, out);
  }
  [[gnu::target(KBENCH_TARGET_AVX2), gnu::flatten]] static std::uint32_t sad(const Problem& p,
                                                                             int i, int j, int k) {
    return strip_sad<cpu_simd::Avx2Bytes>(p, i, j, k);
  }
};
struct Avx512Level {
  static constexpr CpuLevel level = CpuLevel::avx512;
  [[gnu::target(KBENCH_TARGET_AVX512), gnu::flatten]] static std::uint64_t bounds(
      const Problem& p, int i, std::uint32_t* out) {
    return p.strip_bounds_row(i, out);
  }
  [[gnu::target(KBENCH_TARGET_AVX512), gnu::flatten]] static std::uint32_t sad(const Problem& p,
                                                                               int i, int j,
                                                                               int k) {
    return strip_sad<cpu_simd::Avx512Bytes>(p, i, j, k);
  }
};
#endif

void atomic_min(std::atomic<std::uint64_t>& target, std::uint64_t value) {
  std::uint64_t seen = target.load(std::memory_order_relaxed);
  while (value < seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// The keys ≤ limit of the level's full search (the sad variant of the same name), for inputs that
// prune too little: the argmin's, or the map's within the limit for the top k.
template <class Level>
std::vector<std::uint64_t> full_search(const Problem& p, std::uint64_t limit, PruneStats& stats) {
  stats.full_search = true;
  SadInput input{p.input.target, p.input.query, {}};
  input.params.want_map = p.top_k > 1;
  const auto runner = find_variant<Sad>(simd_variant_name(Level::level)).make(input);
  runner->compute();
  SadResult result;
  runner->download(result);
  if (p.top_k == 1) {
    return {
        sad_key(result.best.score, std::uint32_t(result.best.row) * std::uint32_t(p.s.map_width) +
                                       std::uint32_t(result.best.col))};
  }
  std::vector<std::uint64_t> keys;
  for (std::size_t w = 0; w < result.map.size(); ++w) {
    const std::uint64_t key = sad_key(result.map[w], std::uint32_t(w));
    if (key <= limit) keys.push_back(key);
  }
  return keys;
}

// The best key (top_k 1) or the top_k smallest keys, in order.
template <class Level>
std::vector<std::uint64_t> omp_pruned(const Problem& p, PruneStats& stats) {
  const SadShape& s = p.s;
  const int strips = p.strips.count;
  const auto exact_sad = [&](int i, int j) {
    std::uint32_t sum = 0;
    for (int k = 0; k < strips; ++k) sum += Level::sad(p, i, j, k);
    return sum;
  };
  // Written first by the bound pass's threads, row by row, as the later loops read it.
  const HostBuffer<std::uint32_t> bounds =
      allocate_untouched<std::uint32_t>(s.map_size(), "the strip bounds");
  std::vector<std::uint64_t> row_best(std::size_t(s.map_height), kNoSadKey);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    row_best[std::size_t(i)] = Level::bounds(p, i, bounds.get() + std::size_t(i) * s.map_width);
  }
  // The candidates' exact keys (one a map row) give the limit: their smallest, E_guess, which the
  // refinement lowers (the argmin), or, for the top k, the k-th smallest of theirs and of the
  // best candidate's neighbourhood (the candidates are apart; the k best are mostly beside the
  // best), fixed.
  const std::size_t top_k = p.top_k;
  std::vector<std::uint64_t> firsts(std::size_t(s.map_height));
#pragma omp parallel for schedule(dynamic, 4)
  for (int i = 0; i < s.map_height; ++i) {
    const std::uint32_t w = std::uint32_t(row_best[std::size_t(i)]);
    firsts[std::size_t(i)] = sad_key(std::int32_t(exact_sad(p.row_of(w), p.col_of(w))), w);
  }
  std::uint64_t first_limit = *std::min_element(firsts.begin(), firsts.end());
  if (top_k > 1) {
    const std::uint32_t centre = std::uint32_t(first_limit);
    std::vector<std::uint64_t> neighbours(std::size_t(kPrunePolishSide * kPrunePolishSide),
                                          kNoSadKey);
#pragma omp parallel for schedule(dynamic, 4)
    for (int e = 0; e < kPrunePolishSide * kPrunePolishSide; ++e) {
      std::uint32_t w;
      if (polish_window(centre, s.map_width, s.map_height, e, w)) {
        neighbours[std::size_t(e)] = sad_key(std::int32_t(exact_sad(p.row_of(w), p.col_of(w))), w);
      }
    }
    firsts.insert(firsts.end(), neighbours.begin(), neighbours.end());
    first_limit = top_k_limit(firsts, top_k);
  }
  std::atomic<std::uint64_t> guess{first_limit};
  // Survivors in index order: each map row's count, their running sum, then each row's windows.
  const std::uint32_t limit = std::uint32_t(first_limit >> 32);
  std::vector<std::size_t> row_start(std::size_t(s.map_height) + 1, 0);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    const std::uint32_t* row = bounds.get() + std::size_t(i) * s.map_width;
    std::size_t n = 0;
    for (int j = 0; j < s.map_width; ++j) n += row[j] <= limit;
    row_start[std::size_t(i) + 1] = n;
  }
  for (int i = 0; i < s.map_height; ++i) row_start[std::size_t(i) + 1] += row_start[std::size_t(i)];
  std::vector<std::uint32_t> survivors(row_start.back());
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    const std::size_t first = std::size_t(i) * s.map_width;
    std::uint32_t* out = survivors.data() + row_start[std::size_t(i)];
    for (int j = 0; j < s.map_width; ++j) {
      if (bounds[first + j] <= limit) *out++ = std::uint32_t(first + j);
    }
  }
  stats.after_bounds = survivors.size();
  std::vector<std::uint64_t> found;  // the top k: every survivor's key
  if (double(survivors.size()) > kPruneFullSearchFraction * double(s.map_size())) {
    found = full_search<Level>(p, first_limit, stats);
  } else {
    // Windows alive after each strip, counted per thread and added once.
    std::vector<std::atomic<std::uint64_t>> alive(static_cast<std::size_t>(strips));
    for (auto& a : alive) a = 0;
    const std::int64_t count = std::int64_t(survivors.size());
#pragma omp parallel
    {
      std::vector<std::uint64_t> mine(static_cast<std::size_t>(strips), 0), kept;
#pragma omp for schedule(dynamic, 16) nowait
      for (std::int64_t n = 0; n < count; ++n) {
        const std::uint32_t w = survivors[std::size_t(n)];
        const int i = p.row_of(w), j = p.col_of(w);
        std::uint32_t bound = bounds[w];
        for (int r = 0; r < strips; ++r) {
          const int k = p.order[std::size_t(r)];
          if (bound > std::uint32_t(guess.load(std::memory_order_relaxed) >> 32)) break;
          bound = bound - p.strip_term(i, j, k) + Level::sad(p, i, j, k);
          if (bound > std::uint32_t(guess.load(std::memory_order_relaxed) >> 32)) break;
          ++mine[std::size_t(r)];
          if (r + 1 < strips) continue;
          if (top_k == 1) {
            atomic_min(guess, sad_key(std::int32_t(bound), w));
          } else {
            kept.push_back(sad_key(std::int32_t(bound), w));
          }
        }
      }
      for (int r = 0; r < strips; ++r) alive[std::size_t(r)] += mine[std::size_t(r)];
#pragma omp critical
      found.insert(found.end(), kept.begin(), kept.end());
    }
    for (int r = 0; r < strips; ++r) {
      stats.after_strip[std::size_t(r)] = alive[std::size_t(r)].load();
    }
    if (top_k == 1) return {guess.load()};
  }
  const std::size_t k = std::min(top_k, found.size());
  std::partial_sort(found.begin(), found.begin() + std::ptrdiff_t(k), found.end());
  found.resize(k);
  return found;
}

}  // namespace

void register_sad_pruned_native_cpu(VariantList<SadPruned>& list) {
  const auto add = [&](const char* name, Variant<SadPruned>::Make make, CpuLevel level, int rank) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    [level](const SadInput&) { return cpu_supports(level); }, rank});
  };
  add("omp-simd-generic", make_runner<host_pruned::PrunedRunner<omp_pruned<GenericLevel>>>,
      CpuLevel::generic, 1);
#if defined(KBENCH_X86_PACKED_SAD)
  add("omp-simd-avx2", make_runner<host_pruned::PrunedRunner<omp_pruned<Avx2Level>>>,
      CpuLevel::avx2, 2);
  add("omp-simd-avx512", make_runner<host_pruned::PrunedRunner<omp_pruned<Avx512Level>>>,
      CpuLevel::avx512, 3);
#endif
}

}  // namespace kbench
