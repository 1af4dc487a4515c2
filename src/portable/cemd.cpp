// Portable cemd: one Kokkos source for every execution space (Serial, OpenMP, CUDA).
// kokkos-mdrange is the idiomatic form on the bytes (descriptor_distance(), an MDRange over
// pairs). kokkos-team is the prefix form (detail/cemd_prefix.hpp) with database rows in vector
// lanes (ThreadVectorRange: SIMD lanes on hosts, threads on CUDA), the native omp-simd design.
// kokkos-tiled is cuda-final's design and per-chunk arithmetic (detail/cemd_prepared.hpp) without
// its cp.async staging; on CUDA it also runs on the caller's device views. kokkos-team and
// kokkos-tiled are registered twice, with Isa::tuned and Isa::plain (`-plain`). The top-2 rule is
// shared (cemd_key), and every value the prefix and prepared forms compute is an exact integer
// below 2^24 (or an exact quotient of two), so every variant gives the sequential variants' bits.
// The schedules in detail: docs/cemd.md#the-portable-schedules
#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>

#include "host_kernels/cemd.hpp"
#include "kbench/cemd.hpp"
#include "kbench/detail/cemd_prefix.hpp"
#include "kbench/detail/cemd_prepared.hpp"
#include "kbench/detail/cpu_vectors.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_cemd {

using host_cemd::with_distance;
using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

template <class Exec>
using Bytes = typename InputBuffer<std::uint8_t, Exec>::View;
template <class Exec>
using MatrixView = typename OutputBuffer<float, Exec>::View;
template <class Exec>
using TopsView = typename OutputBuffer<Top2, Exec>::View;

// What a method's run() reads and writes.
template <class Exec>
struct Buffers {
  Bytes<Exec> queries, database;
  MatrixView<Exec> matrix;  // all pairs
  TopsView<Exec> tops;      // nearest two: each query's top-2 keys
};

// A query's top-2 keys as a Kokkos reduction value: Kokkos 3.4's CUDA reductions copy values
// through volatile references.
struct Top2Value {
  std::uint64_t best, second;

  KOKKOS_INLINE_FUNCTION void operator=(const Top2Value& other) {
    best = other.best;
    second = other.second;
  }
  KOKKOS_INLINE_FUNCTION void operator=(const volatile Top2Value& other) volatile {
    best = other.best;
    second = other.second;
  }
};

KOKKOS_INLINE_FUNCTION void offer(Top2Value& value, float distance, std::uint32_t index) {
  Top2 t{value.best, value.second};
  top2_offer(t, distance, index);
  value.best = t.best;
  value.second = t.second;
}

// The two smallest keys of a reduction (Kokkos' reducer concept).
struct Top2Reducer {
  using reducer = Top2Reducer;
  using value_type = Top2Value;
  using result_view_type =
      Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  KOKKOS_INLINE_FUNCTION explicit Top2Reducer(value_type& value) : value_(&value) {}

  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const {
    const Top2 merged = top2_merge(Top2{dest.best, dest.second}, Top2{src.best, src.second});
    dest.best = merged.best;
    dest.second = merged.second;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest,
                                   const volatile value_type& src) const {
    const Top2 merged = top2_merge(Top2{dest.best, dest.second}, Top2{src.best, src.second});
    dest.best = merged.best;
    dest.second = merged.second;
  }
  KOKKOS_INLINE_FUNCTION void init(value_type& value) const {
    value.best = kNoCemdKey;
    value.second = kNoCemdKey;
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value_.data(); }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return value_; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }

 private:
  result_view_type value_;
};

template <class Exec>
struct MDRangeMethod {
  static constexpr const char* name = "kokkos-mdrange";
  static constexpr Isa isa = Isa::plain;
  static constexpr bool simple = true;

  explicit MDRangeMethod(const CemdInput&) {}

  void run(const CemdInput& input, const Buffers<Exec>& b) const {
    const int n = input.queries.count, m = input.database.count;
    const DescriptorDistance distance = input.params.distance;
    const auto queries = b.queries;
    const auto database = b.database;
    if (input.params.all_pairs) {
      using Policy =
          Kokkos::MDRangePolicy<Exec,
                                Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
      const auto matrix = b.matrix;
      Kokkos::parallel_for(
          "cemd_mdrange", Policy({0, 0}, {m, n}, {32, 4}), KOKKOS_LAMBDA(int j, int q) {
            matrix(std::size_t(q) * m + j) =
                descriptor_distance(queries.data() + std::size_t(q) * kDescriptorBytes,
                                    database.data() + std::size_t(j) * kDescriptorBytes, distance);
          });
      return;
    }
    using Policy = Kokkos::TeamPolicy<Exec>;
    const auto tops = b.tops;
    Kokkos::parallel_for(
        "cemd_mdrange_nearest", Policy(n, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& team) {
          const int q = team.league_rank();
          const std::uint8_t* query = queries.data() + std::size_t(q) * kDescriptorBytes;
          Top2Value best;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, m),
              [&](int j, Top2Value& partial) {
                offer(partial,
                      descriptor_distance(
                          query, database.data() + std::size_t(j) * kDescriptorBytes, distance),
                      std::uint32_t(j));
              },
              Top2Reducer(best));
          Kokkos::single(Kokkos::PerTeam(team), [&]() { tops(q) = Top2{best.best, best.second}; });
        });
  }
};

// Inserts a team's top-2 of a query into its global top-2, concurrently with other teams: a key
// that takes the best place pushes the one it displaced into second, a key that does not is
// pushed itself, so second ends as the second smallest of all (keys are distinct).
KOKKOS_INLINE_FUNCTION void atomic_top2_insert(Top2& global, std::uint64_t key) {
  using Word = unsigned long long;  // the type of Kokkos' native 64-bit atomic minimum
  static_assert(sizeof(Word) == sizeof(std::uint64_t), "64-bit keys");
  if (key == kNoCemdKey) return;
  Word* const slots = reinterpret_cast<Word*>(&global.best);
  const Word displaced = Kokkos::atomic_fetch_min(slots, Word(key));
  Kokkos::atomic_fetch_min(slots + 1, Word(key) < displaced ? displaced : Word(key));
}

// --- kokkos-team: the prefix form, database rows in vector lanes ----------------------------

// Database rows per value-major block: the vector lanes of one pass over a block (a CUDA warp;
// whole vectors of every host level).
constexpr int kBlockRows = 32;
// Queries per team, and blocks per cache tile: a tile (256 KB of prefix sums) stays in a host
// core's L2, or a multiprocessor's L1, while every query of the team passes over it.
constexpr int kQueryTile = 16;
constexpr int kTileBlocks = 16;
// Team threads (each a query at a time, its vector lanes the rows of a block): warps of a CUDA
// block; one on hosts, whose teams are their threads.
constexpr int kCudaTeamWarps = 4;
// Teams a CUDA multiprocessor keeps resident, for the database split (its registers allow more).
constexpr int kCudaTeamsPerMultiprocessor = 8;

template <class Exec>
constexpr int team_threads() {
  return backend_of<Exec>() == Backend::cuda ? kCudaTeamWarps : 1;
}

// One float per lane: Isa::plain, device code and nvcc's host pass (its device pass refuses
// vector types in host-device code), for the compiler to widen where it can.
struct ScalarLanes {
  static constexpr int kLanes = 1;
  using Floats = float;
  KOKKOS_INLINE_FUNCTION static Floats zero() { return 0.0f; }
  KOKKOS_INLINE_FUNCTION static Floats broadcast(float v) { return v; }
  KOKKOS_INLINE_FUNCTION static Floats load(const float* p) { return *p; }
  KOKKOS_INLINE_FUNCTION static void store(float* p, Floats v) { *p = v; }
};

// The lanes one iteration of a pass computes: with Isa::tuned on hosts, a vector of the level the
// file is compiled for (simd::Compiled); one float otherwise.
#if defined(__CUDACC__)
template <Isa>
using TeamLanes = ScalarLanes;
#else
template <Isa kIsa>
using TeamLanes = std::conditional_t<kIsa == Isa::tuned, simd::Compiled, ScalarLanes>;
#endif

// The cell terms' sums, from 0 in cell order as descriptor_distance() adds them, of one query
// (its 128 prefix floats) with Lanes::kLanes rows of a block, `lanes` pointing at the first one's
// value 0 (value v lies v · kBlockRows floats on).
template <DescriptorDistance kDistance, Isa kIsa, class Lanes>
KOKKOS_FORCEINLINE_FUNCTION typename Lanes::Floats term_sums(const float* query,
                                                             const float* lanes) {
  using Floats = typename Lanes::Floats;
  Floats sum = Lanes::zero();
  KBENCH_UNROLL
  for (int c = 0; c < kCemdCells; ++c) {
    Floats f[kCemdBins], g[kCemdBins];
    KBENCH_UNROLL
    for (int k = 0; k < kCemdBins; ++k) {
      f[k] = Lanes::broadcast(query[c * kCemdBins + k]);
      g[k] = Lanes::load(lanes + (c * kCemdBins + k) * kBlockRows);
    }
    sum += prefix_cell_term<kDistance, kIsa>(f, g);
  }
  return sum;
}

struct TeamGeometry {
  int n, m;
  int blocks, query_tiles;
  int blocks_per_split, splits;  // a multiple of kTileBlocks, and the teams per query tile
};

template <class Exec>
TeamGeometry team_geometry(int n, int m) {
  TeamGeometry g{n, m, (m + kBlockRows - 1) / kBlockRows, (n + kQueryTile - 1) / kQueryTile, 0, 0};
  const long long teams = backend_of<Exec>() == Backend::cuda
                              ? portable::resident_items<Exec>(1, kCudaTeamsPerMultiprocessor)
                              : portable::resident_items<Exec>(1, 1);
  const SplitPlan plan = plan_splits(g.query_tiles, g.blocks, kTileBlocks, teams);
  g.blocks_per_split = plan.rows_per_split;
  g.splits = plan.splits;
  return g;
}

template <class Exec>
using Table = Kokkos::View<float*, typename Exec::memory_space>;

template <class Exec>
Table<Exec> allocate_table(const char* label, std::size_t count) {
  try {
    return Table<Exec>(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), count);
  } catch (const std::exception& e) {
    throw OutOfMemory(std::string("cannot allocate ") + std::to_string(count * sizeof(float)) +
                      " bytes for " + label + " in " + Exec::name() + " memory: " + e.what());
  }
}

// The pre-pass, one launch for both sets: query q's prefix floats at q · 128; the database in
// blocks, block b's value v of lane l at (b · 128 + v) · kBlockRows + l, zero past the last row.
// In nearest-two mode it also clears the queries' global top-2s.
template <class Exec, DescriptorDistance kDistance>
void fill_tables(const TeamGeometry& g, const Buffers<Exec>& b, bool clear_tops,
                 const Table<Exec>& query_table, const Table<Exec>& database_table) {
  const auto queries = b.queries;
  const auto database = b.database;
  const auto tops = b.tops;
  Kokkos::parallel_for(
      "cemd_prefix_tables", Kokkos::RangePolicy<Exec>(0, g.n + g.blocks * kBlockRows),
      KOKKOS_LAMBDA(int item) {
        const bool query_role = item < g.n;
        const int i = query_role ? item : item - g.n;
        const bool present = query_role || i < g.m;
        const Bytes<Exec>& values = query_role ? queries : database;
        for (int c = 0; c < kCemdCells; ++c) {
          std::uint8_t bins[kCemdBins] = {};
          if (present) {
            for (int k = 0; k < kCemdBins; ++k) {
              bins[k] = values(std::size_t(i) * kDescriptorBytes + c * kCemdBins + k);
            }
          }
          float cell[kCemdBins];
          prefix_cell<kDistance>(bins, cell);
          for (int k = 0; k < kCemdBins; ++k) {
            const std::size_t v = c * kCemdBins + k;
            if (query_role) {
              query_table(std::size_t(i) * kDescriptorBytes + v) = cell[k];
            } else {
              database_table((std::size_t(i / kBlockRows) * kDescriptorBytes + v) * kBlockRows +
                             i % kBlockRows) = cell[k];
            }
          }
        }
        if (clear_tops && query_role) tops(i) = Top2();
      });
}

// A team owns a tile of queries and a split of the database, which it walks in cache tiles. A
// team thread takes a query at a time through every block of a cache tile: a pass of vector
// lanes writes the block's sums to scratch (Lanes::kLanes rows an iteration), then a lane per
// row writes the matrix or offers the distance to the query's top-2 (a lane reduction). The
// query's top-2 stays in scratch between cache tiles; the team inserts it into the global one.
template <class Exec, DescriptorDistance kDistance, bool kAllPairs, Isa kIsa>
void team_match(const TeamGeometry& g, const Table<Exec>& queries, const Table<Exec>& database,
                const MatrixView<Exec>& matrix, const TopsView<Exec>& tops) {
  using Lanes = TeamLanes<kIsa>;
  // Dynamic: host threads that other work slows take fewer tiles.
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using Space = typename Exec::scratch_memory_space;
  using Floats = Kokkos::View<float*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Tops = Kokkos::View<Top2*, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static_assert(kBlockRows % Lanes::kLanes == 0, "a block holds whole vectors");
  constexpr int kPasses = kBlockRows / Lanes::kLanes;
  constexpr int kThreads = team_threads<Exec>();
  constexpr int kTops = kAllPairs ? 0 : kQueryTile;
  const auto kernel = KOKKOS_LAMBDA(const Team& team) {
    Floats sums(team.team_scratch(0), kThreads * kBlockRows);
    Tops tile_tops(team.team_scratch(0), kTops);
    float* const sum = sums.data() + team.team_rank() * kBlockRows;
    const int q0 = (team.league_rank() % g.query_tiles) * kQueryTile;
    const int tile_queries = g.n - q0 < kQueryTile ? g.n - q0 : kQueryTile;
    const int first = (team.league_rank() / g.query_tiles) * g.blocks_per_split;
    const int end = g.blocks - first < g.blocks_per_split ? g.blocks : first + g.blocks_per_split;
    if (!kAllPairs) {  // not constexpr: extended lambdas may not first-capture inside one
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile_queries), [&](int i) {
        Kokkos::single(Kokkos::PerThread(team), [&]() { tile_tops(i) = Top2(); });
      });
    }
    for (int tile = first; tile < end; tile += kTileBlocks) {
      const int tile_end = end - tile < kTileBlocks ? end : tile + kTileBlocks;
      team.team_barrier();  // the previous tile's top-2s are in scratch
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile_queries), [&](int i) {
        const int q = q0 + i;
        const float* const query = queries.data() + std::size_t(q) * kDescriptorBytes;
        Top2 top;
        if (!kAllPairs) top = tile_tops(i);
        for (int block = tile; block < tile_end; ++block) {
          const float* const rows =
              database.data() + std::size_t(block) * kDescriptorBytes * kBlockRows;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, kPasses), [&](int pass) {
            const int lane = pass * Lanes::kLanes;
            Lanes::store(sum + lane, term_sums<kDistance, kIsa, Lanes>(query, rows + lane));
          });
          const int r0 = block * kBlockRows;
          const int present = g.m - r0 < kBlockRows ? g.m - r0 : kBlockRows;
          if (kAllPairs) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, present), [&](int r) {
              matrix(std::size_t(q) * g.m + r0 + r) = prefix_distance_from_sum<kDistance>(sum[r]);
            });
          } else {
            // Rows farther than the second so far cannot enter.
            const float bound = cemd_key_distance(top.second);
            Top2Value found;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, present),
                [&](int r, Top2Value& partial) {
                  const float d = prefix_distance_from_sum<kDistance>(sum[r]);
                  if (!(d > bound)) offer(partial, d, std::uint32_t(r0 + r));
                },
                Top2Reducer(found));
            top = top2_merge(top, Top2{found.best, found.second});
          }
        }
        if (!kAllPairs) Kokkos::single(Kokkos::PerThread(team), [&]() { tile_tops(i) = top; });
      });
    }
    if (!kAllPairs) {
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile_queries), [&](int i) {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          atomic_top2_insert(tops(q0 + i), tile_tops(i).best);
          atomic_top2_insert(tops(q0 + i), tile_tops(i).second);
        });
      });
    }
  };
  const std::size_t scratch = Floats::shmem_size(kThreads * kBlockRows) + Tops::shmem_size(kTops);
  Kokkos::parallel_for(kAllPairs ? "cemd_team_all_pairs" : "cemd_team_nearest",
                       Policy(g.query_tiles * g.splits, kThreads, kBlockRows)
                           .set_scratch_size(0, Kokkos::PerTeam(scratch)),
                       kernel);
}

template <class Exec, Isa kIsa>
struct TeamMethod {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-team" : "kokkos-team-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;

  explicit TeamMethod(const CemdInput& input)
      : g(team_geometry<Exec>(input.queries.count, input.database.count)),
        query_table(
            allocate_table<Exec>("cemd query prefix table", std::size_t(kDescriptorBytes) * g.n)),
        database_table(allocate_table<Exec>(
            "cemd database prefix blocks", std::size_t(kDescriptorBytes) * g.blocks * kBlockRows)) {
  }

  void run(const CemdInput& input, const Buffers<Exec>& b) const {
    with_distance(input.params.distance, [&](auto distance) {
      constexpr DescriptorDistance kDistance = decltype(distance)::value;
      const bool all_pairs = input.params.all_pairs;
      fill_tables<Exec, kDistance>(g, b, !all_pairs, query_table, database_table);
      if (all_pairs) {
        team_match<Exec, kDistance, true, kIsa>(g, query_table, database_table, b.matrix, b.tops);
      } else {
        team_match<Exec, kDistance, false, kIsa>(g, query_table, database_table, b.matrix, b.tops);
      }
    });
  }

  TeamGeometry g;
  Table<Exec> query_table, database_table;
};

// --- kokkos-tiled: cuda-final's design, written once -----------------------------------------

// A team's work: kQueryGroups groups of kRowLanes slots; a slot (a register tile) compares
// kSlotQueries queries of its group with slot_rows() rows of each staged tile (rows row_lane,
// row_lane + kRowLanes, …). On CUDA a slot is a thread and a team a block of 8 warps; on hosts one
// thread runs a team's slots in turn.
constexpr int kRowLanes = 8;
constexpr int kQueryGroups = 32;
constexpr int kSlotQueries = 2;
constexpr int kTeamSlots = kQueryGroups * kRowLanes;
constexpr int kTeamQueries = kQueryGroups * kSlotQueries;

template <class Exec>
constexpr int slots_per_thread() {
  return backend_of<Exec>() == Backend::cuda ? 1 : kTeamSlots;
}
// A slot's rows: the metric's on CUDA, as cuda-final's tiles take them; 4 on hosts.
template <class Exec, class Metric>
constexpr int slot_rows() {
  return backend_of<Exec>() == Backend::cuda ? Metric::kCudaRowsPerThread : 4;
}
template <class Exec, class Metric>
constexpr int tile_rows() {
  return kRowLanes * slot_rows<Exec, Metric>();
}

using portable::Bytes16;
template <class Exec>
using Prepared = Kokkos::View<Bytes16*, typename Exec::memory_space>;

// A prepared row in 16-byte units; staged rows an odd number of units apart, so that the 8 rows
// a quarter-warp reads at once (one 16-byte load each) fall in different banks.
template <class Metric>
constexpr int kRowUnits = Metric::kRowWords / 4;
template <class Metric>
constexpr int kStagedUnits = kRowUnits<Metric> | 1;
// Two staged tiles: the one being compared and the one being filled; then the slots' bounds.
template <class Exec, class Metric>
constexpr std::size_t tiled_tiles_bytes() {
  return 2 * tile_rows<Exec, Metric>() * kStagedUnits<Metric> * sizeof(Bytes16);
}
// Each slot's second nearest distance per query (+inf while it has none), written after a tile
// and read after the next barrier: the least of a query's row lanes is a bound above which a row
// has two nearer ones and need not be offered. Stored as bits, read as words four at a time. Two
// copies, by tile parity, so that a tile's reads and the next tile's writes never meet;
// [copy][query group][query][row lane], so that a query's lanes are two 16-byte units.
constexpr int kBoundsPerCopy = kTeamSlots * kSlotQueries;
template <class Exec, class Metric>
constexpr std::size_t tiled_scratch_bytes() {
  return tiled_tiles_bytes<Exec, Metric>() + 2 * kBoundsPerCopy * sizeof(std::uint32_t);
}
KOKKOS_INLINE_FUNCTION int bound_at(int copy, int group, int j, int row_lane) {
  return ((copy * kQueryGroups + group) * kSlotQueries + j) * kRowLanes + row_lane;
}
KOKKOS_INLINE_FUNCTION float second_distance(const Top2& t) {
  return t.second == kNoCemdKey ? INFINITY : cemd_key_distance(t.second);
}
// The least second of query j's row lanes in group `group`, from copy `copy`.
template <Isa kIsa>
KOKKOS_INLINE_FUNCTION float lanes_bound(const std::uint32_t* bounds, int copy, int group, int j) {
  const Bytes16* const lanes =
      reinterpret_cast<const Bytes16*>(bounds + bound_at(copy, group, j, 0));
  float least = INFINITY;
  KBENCH_UNROLL
  for (int u = 0; u < kRowLanes / 4; ++u) {
    const Bytes16 four = lanes[u];
    KBENCH_UNROLL
    for (int w = 0; w < 4; ++w) least = float_min<kIsa>(least, float_from_bits(four.word[w]));
  }
  return least;
}

KOKKOS_INLINE_FUNCTION PreparedChunk load_chunk(const Bytes16* at) {
  const Bytes16 lo = at[0], hi = at[1];
  return {{lo.word[0], lo.word[1], lo.word[2], lo.word[3], hi.word[0], hi.word[1], hi.word[2],
           hi.word[3]}};
}

struct TiledGeometry {
  int n, m;
  int query_tiles;
  SplitPlan plan;
  int matrix_columns;  // all pairs: elements from one query's matrix row to the next
};

template <class Exec, class Metric>
TiledGeometry tiled_geometry(int n, int m) {
  constexpr int kTeamThreads = kTeamSlots / slots_per_thread<Exec>();
  TiledGeometry g{n, m, (n + kTeamQueries - 1) / kTeamQueries, {}, m};
  g.plan =
      plan_splits(g.query_tiles, m, tile_rows<Exec, Metric>(),
                  portable::resident_items<Exec>(kTeamThreads, Metric::kMinBlocks) / kTeamThreads);
  return g;
}

// The pre-pass, one launch for both sets: each descriptor's prepared row (one work item per
// descriptor, queries first), and in nearest-two mode the queries' global top-2s cleared.
template <class Exec, class Metric, Isa kIsa>
void prepare_sets(const Exec& exec, const Buffers<Exec>& b, int n, int m, bool clear_tops,
                  const Prepared<Exec>& query_rows, const Prepared<Exec>& database_rows) {
  const auto queries = b.queries;
  const auto database = b.database;
  const auto tops = b.tops;
  Kokkos::parallel_for(
      "cemd_prepare", Kokkos::RangePolicy<Exec>(exec, 0, std::int64_t(n) + m),
      KOKKOS_LAMBDA(std::int64_t item) {
        const bool query_role = item < n;
        const std::int64_t i = query_role ? item : item - n;
        const Bytes<Exec>& values = query_role ? queries : database;
        DescriptorWords words;
        for (int w = 0; w < kDescriptorBytes / 4; ++w) {
          std::uint32_t word = 0;
          for (int k = 0; k < 4; ++k) {
            word |= std::uint32_t(values(std::size_t(i) * kDescriptorBytes + 4 * w + k)) << (8 * k);
          }
          words[w] = word;
        }
        std::uint32_t row[Metric::kRowWords];
        Metric::template prepare<kIsa>(words, query_role, row);
        const Prepared<Exec>& out = query_role ? query_rows : database_rows;
        for (int u = 0; u < kRowUnits<Metric>; ++u) {
          out(std::size_t(i) * kRowUnits<Metric> + u) =
              Bytes16{{row[4 * u], row[4 * u + 1], row[4 * u + 2], row[4 * u + 3]}};
        }
        if (clear_tops && query_role) tops(i) = Top2();
      });
}

// What a slot reads and writes.
struct SlotArgs {
  const Bytes16* queries;  // prepared
  int n, m;
  int matrix_columns;  // all pairs
  float* matrix;       // all pairs
};

// One slot's comparisons against a staged tile whose first row is database row `tile`, and
// the nearest-two offers or matrix writes they make.
template <class Metric, int kR, bool kAllPairs, Isa kIsa>
KOKKOS_INLINE_FUNCTION void compare_slot(const SlotArgs& a, const Bytes16* rows, int tile, int end,
                                         int q0, int slot, Top2 (&top)[kSlotQueries],
                                         const float (&bound)[kSlotQueries]) {
  constexpr int kQ = kSlotQueries, kUnits = kRowUnits<Metric>;
  constexpr int kStaged = kStagedUnits<Metric>;
  const int row_lane = slot % kRowLanes, group = slot / kRowLanes;
  int query[kQ];
  const Bytes16* query_row[kQ];
  KBENCH_UNROLL
  for (int j = 0; j < kQ; ++j) {
    query[j] = q0 + group * kQ + j;
    // The last team's missing queries compare with the last query; their results are dropped.
    query_row[j] = a.queries + std::size_t(query[j] < a.n ? query[j] : a.n - 1) * kUnits;
  }
  typename Metric::Acc acc[kQ][kR];
  KBENCH_UNROLL
  for (int j = 0; j < kQ; ++j) {
    KBENCH_UNROLL
    for (int k = 0; k < kR; ++k) acc[j][k] = Metric::start();
  }
  KBENCH_NO_UNROLL
  for (int c = 0; c < Metric::kChunks; ++c) {
    const int unit = c * (kPreparedChunkWords / 4);
    PreparedChunk qc[kQ], rc[kR];
    KBENCH_UNROLL
    for (int j = 0; j < kQ; ++j) qc[j] = load_chunk(query_row[j] + unit);
    KBENCH_UNROLL
    for (int k = 0; k < kR; ++k)
      rc[k] = load_chunk(rows + (row_lane + k * kRowLanes) * kStaged + unit);
    KBENCH_UNROLL
    for (int j = 0; j < kQ; ++j) {
      KBENCH_UNROLL
      for (int k = 0; k < kR; ++k) Metric::template accumulate<kIsa>(acc[j][k], qc[j], rc[k]);
    }
  }

  constexpr int kExtraWord = Metric::kExtraWord >= 0 ? Metric::kExtraWord : 0;
  std::uint32_t query_extra[kQ];
  KBENCH_UNROLL
  for (int j = 0; j < kQ; ++j) {
    query_extra[j] =
        Metric::kExtraWord >= 0 ? query_row[j][kExtraWord / 4].word[kExtraWord % 4] : 0;
  }
  // The distances, absent for rows past the end; a tile that ends before `end` (all but a
  // split's last) skips the test.
  using Distance = typename Metric::Distance;
  Distance distance[kQ][kR];
  const auto finish_tile = [&](auto whole_tile) {
    KBENCH_UNROLL
    for (int k = 0; k < kR; ++k) {
      const int local = row_lane + k * kRowLanes;
      const bool present = decltype(whole_tile)::value || tile + local < end;
      const std::uint32_t row_extra =
          Metric::kExtraWord >= 0 ? rows[local * kStaged + kExtraWord / 4].word[kExtraWord % 4] : 0;
      KBENCH_UNROLL
      for (int j = 0; j < kQ; ++j) {
        distance[j][k] = present ? Metric::finish(acc[j][k], query_extra[j], row_extra)
                                 : absent_distance<Distance>();
        if constexpr (kAllPairs) {
          if (present && query[j] < a.n)
            a.matrix[std::size_t(query[j]) * a.matrix_columns + tile + local] =
                float(distance[j][k]);
        }
      }
    }
  };
  if (tile + kR * kRowLanes <= end) {
    finish_tile(std::true_type{});
  } else {
    finish_tile(std::false_type{});
  }
  if constexpr (!kAllPairs) {
    // Most tiles bring nothing within the bound; rows past the end are skipped.
    KBENCH_UNROLL
    for (int j = 0; j < kQ; ++j) {
      Distance lowest = distance[j][0];
      KBENCH_UNROLL
      for (int k = 1; k < kR; ++k) lowest = distance_min<kIsa>(lowest, distance[j][k]);
      if (!(float(lowest) > bound[j])) {
        KBENCH_UNROLL
        for (int k = 0; k < kR; ++k) {
          const int row = tile + row_lane + k * kRowLanes;
          if (row < end) top2_offer(top[j], float(distance[j][k]), std::uint32_t(row));
        }
      }
    }
  }
}

template <class Exec, class Metric, bool kAllPairs, Isa kIsa>
void tiled_match(const Exec& exec, const TiledGeometry& g, const Prepared<Exec>& queries,
                 const Prepared<Exec>& database, const MatrixView<Exec>& matrix,
                 const TopsView<Exec>& tops) {
  constexpr int kSlotsPerThread = slots_per_thread<Exec>();
  constexpr int kUnits = kRowUnits<Metric>, kStaged = kStagedUnits<Metric>;
  constexpr int kPad = kStaged - kUnits;
  constexpr int kSlotRows = slot_rows<Exec, Metric>(), kTile = tile_rows<Exec, Metric>();
  constexpr std::size_t kScratch = tiled_scratch_bytes<Exec, Metric>();
  constexpr std::size_t kTilesBytes = tiled_tiles_bytes<Exec, Metric>();
  static_assert(kTeamSlots * kSlotQueries * sizeof(Top2) <= kTilesBytes,
                "the slots' top-2s fit where the tiles were");
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<kTeamSlots, Metric::kMinBlocks>>;
  using Team = typename Policy::member_type;
  const SlotArgs args{queries.data(), g.n, g.m, g.matrix_columns,
                      kAllPairs ? matrix.data() : nullptr};
  const Bytes16* const rows_in = database.data();
  const auto kernel = KOKKOS_LAMBDA(const Team& team) {
    Bytes16* const staged =
        static_cast<Bytes16*>(team.team_scratch(0).get_shmem_aligned(kScratch, alignof(Bytes16)));
    const int q0 = (team.league_rank() % g.query_tiles) * kTeamQueries;
    const int begin = (team.league_rank() / g.query_tiles) * g.plan.rows_per_split;
    const int end = g.m - begin < g.plan.rows_per_split ? g.m : begin + g.plan.rows_per_split;
    // Copies rows first .. first + kTile − 1 (zeros past the end) into tile buffer b.
    const auto stage = [&](int b, int first) {
      Bytes16* const to = staged + b * kTile * kStaged;
      const int present = (end - first < kTile ? end - first : kTile) * kUnits;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTile * kUnits), [&](int e) {
        to[e + e / kUnits * kPad] =
            e < present ? rows_in[std::size_t(first) * kUnits + e] : Bytes16{{0, 0, 0, 0}};
      });
    };
    std::uint32_t* const bounds =
        reinterpret_cast<std::uint32_t*>(reinterpret_cast<char*>(staged) + kTilesBytes);
    Top2 top[kSlotsPerThread][kSlotQueries];
    for (int s = 0; s < kSlotsPerThread; ++s) {  // the copy the first tile reads
      const int slot = team.team_rank() * kSlotsPerThread + s;
      for (int j = 0; j < kSlotQueries; ++j) {
        bounds[bound_at(1, slot / kRowLanes, j, slot % kRowLanes)] = bits_of(INFINITY);
      }
    }
    if (begin < end) stage(0, begin);
    team.team_barrier();
    int buffer = 0;
    for (int tile = begin; tile < end; tile += kTile, buffer ^= 1) {
      // One barrier per tile: the next tile fills the buffer that the previous one was read from.
      if (tile + kTile < end) stage(buffer ^ 1, tile + kTile);
      const Bytes16* const rows = staged + buffer * kTile * kStaged;
      for (int s = 0; s < kSlotsPerThread; ++s) {
        const int slot = team.team_rank() * kSlotsPerThread + s, group = slot / kRowLanes;
        // The query's lanes' bound after the tile before; this slot's after this tile.
        float bound[kSlotQueries] = {};
        KBENCH_UNROLL
        for (int j = 0; j < kSlotQueries; ++j) {
          if (!kAllPairs) bound[j] = lanes_bound<kIsa>(bounds, buffer ^ 1, group, j);
        }
        compare_slot<Metric, kSlotRows, kAllPairs, kIsa>(args, rows, tile, end, q0, slot, top[s],
                                                         bound);
        KBENCH_UNROLL
        for (int j = 0; j < kSlotQueries; ++j) {
          if (!kAllPairs) {
            bounds[bound_at(buffer, group, j, slot % kRowLanes)] =
                bits_of(second_distance(top[s][j]));
          }
        }
      }
      team.team_barrier();
    }
    if (!kAllPairs) {  // not constexpr: extended lambdas may not first-capture inside one
      // The row lanes' top-2s of each query meet in scratch; one work item per query merges them.
      Top2* const slot_tops = reinterpret_cast<Top2*>(staged);
      for (int s = 0; s < kSlotsPerThread; ++s) {
        for (int j = 0; j < kSlotQueries; ++j) {
          slot_tops[(team.team_rank() * kSlotsPerThread + s) * kSlotQueries + j] = top[s][j];
        }
      }
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTeamQueries), [&](int i) {
        if (q0 + i >= g.n) return;
        const int group = i / kSlotQueries, j = i % kSlotQueries;
        Top2 t;
        for (int lane = 0; lane < kRowLanes; ++lane) {
          t = top2_merge(t, slot_tops[(group * kRowLanes + lane) * kSlotQueries + j]);
        }
        atomic_top2_insert(tops(q0 + i), t.best);
        atomic_top2_insert(tops(q0 + i), t.second);
      });
    }
  };
  Kokkos::parallel_for(kAllPairs ? "cemd_tiled_all_pairs" : "cemd_tiled_nearest",
                       Policy(exec, g.query_tiles * g.plan.splits, kTeamSlots / kSlotsPerThread)
                           .set_scratch_size(0, Kokkos::PerTeam(kScratch + alignof(Bytes16))),
                       kernel);
}

// The pre-pass and the match of one call on `exec`: a runner's compute() or a call on views.
template <class Exec, class Metric, Isa kIsa>
void tiled_run(const Exec& exec, const TiledGeometry& g, bool all_pairs, const Buffers<Exec>& b,
               const Prepared<Exec>& query_rows, const Prepared<Exec>& database_rows) {
  prepare_sets<Exec, Metric, kIsa>(exec, b, g.n, g.m, !all_pairs, query_rows, database_rows);
  if (all_pairs) {
    tiled_match<Exec, Metric, true, kIsa>(exec, g, query_rows, database_rows, b.matrix, b.tops);
  } else {
    tiled_match<Exec, Metric, false, kIsa>(exec, g, query_rows, database_rows, b.matrix, b.tops);
  }
}

template <class Exec, Isa kIsa>
struct TiledMethod {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-tiled" : "kokkos-tiled-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;

  explicit TiledMethod(const CemdInput& input) {
    with_distance(input.params.distance, [&](auto distance) {
      using Metric = PreparedMetric<decltype(distance)::value>;
      g = tiled_geometry<Exec, Metric>(input.queries.count, input.database.count);
      query_rows = allocate_prepared("cemd prepared queries",
                                     std::size_t(input.queries.count) * kRowUnits<Metric>);
      database_rows = allocate_prepared("cemd prepared database",
                                        std::size_t(input.database.count) * kRowUnits<Metric>);
    });
  }

  void run(const CemdInput& input, const Buffers<Exec>& b) const {
    with_distance(input.params.distance, [&](auto distance) {
      using Metric = PreparedMetric<decltype(distance)::value>;
      tiled_run<Exec, Metric, kIsa>(Exec(), g, input.params.all_pairs, b, query_rows,
                                    database_rows);
    });
  }

  static Prepared<Exec> allocate_prepared(const char* label, std::size_t units) {
    try {
      return Prepared<Exec>(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing),
                            units);
    } catch (const std::exception& e) {
      throw OutOfMemory(std::string("cannot allocate ") + std::to_string(units * sizeof(Bytes16)) +
                        " bytes for " + label + " in " + Exec::name() + " memory: " + e.what());
    }
  }

  TiledGeometry g{};
  Prepared<Exec> query_rows, database_rows;
};

template <class Exec, class Method>
class KokkosCemdRunner final : public Runner<Cemd> {
 public:
  explicit KokkosCemdRunner(const CemdInput& input)
      : input_((validate_cemd_input(input), input)),
        queries_(input.queries.values.data(), input.queries.values.size(), "cemd queries"),
        database_(input.database.values.data(), input.database.values.size(), "cemd database"),
        method_(input),
        matrix_(input.params.all_pairs
                    ? std::size_t(input.queries.count) * std::size_t(input.database.count)
                    : 0,
                "cemd distance matrix"),
        tops_(input.params.all_pairs ? 0 : std::size_t(input.queries.count), "cemd top-2") {}

  void poison(std::uint8_t byte) override {
    matrix_.poison(byte);
    tops_.poison(byte);
  }
  void upload() override {
    queries_.upload();
    database_.upload();
  }
  void compute() override {
    method_.run(input_, {queries_.view(), database_.view(), matrix_.view(), tops_.view()});
  }
  void sync() override { Exec{}.fence(); }
  void download(CemdResult& out) override {
    const int n = input_.queries.count;
    out.queries = n;
    out.database = input_.database.count;
    out.neighbours.clear();
    out.matrix.clear();
    if (input_.params.all_pairs) {
      out.matrix = allocate_samples<float>(matrix_.view().size(), "the cemd distance matrix");
      matrix_.download(out.matrix.data());
      return;
    }
    std::vector<Top2> tops(static_cast<std::size_t>(n));
    tops_.download(tops.data());
    out.neighbours.resize(std::size_t(n));
    for (int q = 0; q < n; ++q)
      out.neighbours[std::size_t(q)] = neighbours_from(tops[std::size_t(q)]);
  }

 private:
  const CemdInput& input_;
  InputBuffer<std::uint8_t, Exec> queries_, database_;
  Method method_;
  OutputBuffer<float, Exec> matrix_;
  OutputBuffer<Top2, Exec> tops_;
};

// --- kokkos-tiled on device views ----------------------------------------------------------

// The geometry of a call on views: the last shape's is kept per metric, so a call of a repeated
// shape skips the split plan's search.
template <class Exec, class Metric>
TiledGeometry view_geometry(int n, int m) {
  static std::mutex mutex;
  static TiledGeometry last{};  // n == 0 until the first call
  const std::lock_guard<std::mutex> lock(mutex);
  if (last.n != n || last.m != m) last = tiled_geometry<Exec, Metric>(n, m);
  return last;
}

// The kernels' matrix row stride in elements: the caller's, which the geometry holds as an int.
inline int matrix_columns(const CemdViewCall& call) {
  const std::size_t columns = call.matrix_stride / sizeof(float);
  if (columns > std::size_t(std::numeric_limits<int>::max())) {
    throw Error("a cemd matrix row stride of " + std::to_string(call.matrix_stride) +
                " bytes is more than the kokkos-tiled kernels take");
  }
  return int(columns);
}

// kokkos-tiled's call on device views (Variant::on_views): a runner's compute() on unmanaged
// views of the caller's memory, queued on an instance for the caller's stream. The prepared rows
// live in the context's scratch memory; the pre-pass clears the caller's keys (Top2 is their
// {best, second} pair) and the kernel writes the matrix rows at the caller's stride.
template <class Exec, Isa kIsa>
void tiled_views(const CemdViewCall& call) {
  static_assert(sizeof(Top2) == 2 * sizeof(std::uint64_t) && std::is_standard_layout<Top2>::value,
                "a query's two keys are one Top2");
  const Exec exec = portable::stream_instance<Exec>(call.work.stream);
  const int n = call.query_rows, m = call.database_rows;
  const bool all_pairs = call.matrix != nullptr;
  with_distance(call.distance, [&](auto distance) {
    using Metric = PreparedMetric<decltype(distance)::value>;
    TiledGeometry g = view_geometry<Exec, Metric>(n, m);
    if (all_pairs) g.matrix_columns = matrix_columns(call);
    const auto prepared = [&](const char* name, int rows) {
      const std::size_t units = std::size_t(rows) * kRowUnits<Metric>;
      return Prepared<Exec>(
          static_cast<Bytes16*>(call.work.scratch->bytes(name, units * sizeof(Bytes16))), units);
    };
    const std::size_t matrix_elements =
        all_pairs ? std::size_t(n - 1) * std::size_t(g.matrix_columns) + std::size_t(m) : 0;
    const Buffers<Exec> b{Bytes<Exec>(call.queries, std::size_t(n) * kDescriptorBytes),
                          Bytes<Exec>(call.database, std::size_t(m) * kDescriptorBytes),
                          MatrixView<Exec>(call.matrix, matrix_elements),
                          TopsView<Exec>(all_pairs ? nullptr : reinterpret_cast<Top2*>(call.keys),
                                         all_pairs ? 0 : std::size_t(n))};
    tiled_run<Exec, Metric, kIsa>(exec, g, all_pairs, b,
                                  prepared("portable cemd prepared queries", n),
                                  prepared("portable cemd prepared database", m));
  });
}

// The variant's call on device views: kokkos-tiled on CUDA; none elsewhere.
template <class Exec, class Method>
std::function<void(const CemdViewCall&)> on_views() {
  if constexpr (backend_of<Exec>() == Backend::cuda &&
                std::is_same<Method, TiledMethod<Exec, Method::isa>>::value) {
    return tiled_views<Exec, Method::isa>;
  } else {
    return {};
  }
}

template <class Exec, class Method>
void add_variant(VariantList<Cemd>& list, int rank) {
  list.push_back({std::string(Method::name) + "-" + to_string(backend_of<Exec>()),
                  Layer::portable,
                  backend_of<Exec>(),
                  false,
                  make_runner<KokkosCemdRunner<Exec, Method>>,
                  {},
                  rank,
                  Method::isa,
                  Method::simple,
                  on_views<Exec, Method>()});
}

}  // namespace kbench::portable_cemd

namespace kbench {

void register_cemd_portable(VariantList<Cemd>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable_cemd::add_variant<Exec, portable_cemd::MDRangeMethod<Exec>>(list, 0);
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      // kokkos-team is the schedule for host CPUs, kokkos-tiled the one for GPUs.
      portable_cemd::add_variant<Exec, portable_cemd::TeamMethod<Exec, kIsa>>(
          list, portable::backend_of<Exec>() == Backend::cuda ? 1 : 3);
      portable_cemd::add_variant<Exec, portable_cemd::TiledMethod<Exec, kIsa>>(list, 2);
    });
  });
}

}  // namespace kbench
