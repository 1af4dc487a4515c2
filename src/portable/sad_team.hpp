#pragma once
// The portable sad team kernel (kokkos-team, kokkos-fused), shared with sad-pruned, whose
// adaptive switch falls back to the fused full search. Teams own a tile of map positions; each
// chunk of query rows and the target strip below the tile are staged in team scratch as packed
// words, and every work item sums 4·kWords neighbouring positions in registers
// (accumulate_sad_row, whose sad4 is one vabsdiff4 on CUDA devices with Isa::tuned and four byte
// differences with Isa::plain).

#include <memory>
#include <string>
#include <vector>

#include "kbench/detail/sad_words.hpp"
#include "kbench/error.hpp"
#include "kbench/sad.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_sad {

using portable::InputBuffer;
using portable::OutputBuffer;

template <class Exec>
using MapView = typename OutputBuffer<std::int32_t, Exec>::View;

// Team tiling: kTileRows map rows × kGroups work items of 4·kWords positions each.
constexpr int kWords = 8;
constexpr int kPositions = 4 * kWords;
// 8 × 32 positions (256 columns) per tile row keep the idle columns of the last tile few.
constexpr int kTileRows = 16;
constexpr int kGroups = 8;
constexpr int kItems = kTileRows * kGroups;
constexpr int kMaxChunkRows = 16;
static_assert(32 % kWords == 0, "a work item's words never straddle a skew step");

// Staged target rows skip one word every 32, so the kGroups work items of a tile row, kWords
// words apart, read distinct shared-memory banks; a row stride of 2 mod kWords words puts the
// next tile rows (the rest of a CUDA warp) on other banks.
KOKKOS_INLINE_FUNCTION int skewed(int x) {
  return x + x / 32;
}

struct TeamGeometry {
  SadShape s;
  int query_words;  // packed words per query row
  int tiles_x, tiles_y;
  int strip_words;  // target words a tile row reads: its items' positions plus the query width
  int row_stride;   // staged words per target row, skew included
  int pitch_words;  // packed words per target row on the device (every tile's strip in bounds)
  int chunk_rows;   // query rows staged at once; 0 when even one does not fit in scratch
};

template <class Exec>
using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Team scratch for the sums of a tile, `rows` query rows and the target rows they meet.
template <class Exec>
std::size_t team_scratch_bytes(const TeamGeometry& g, int rows) {
  return Scratch<Exec>::shmem_size(kItems * kPositions) +
         Scratch<Exec>::shmem_size(std::size_t(rows) * g.query_words) +
         Scratch<Exec>::shmem_size(std::size_t(kTileRows + rows - 1) * g.row_stride);
}

template <class Exec>
TeamGeometry team_geometry(const SadShape& s) {
  TeamGeometry g{s, words_for(s.query_width), 0, 0, 0, 0, 0, 0};
  const int tile_words = kGroups * kWords;
  g.tiles_x = (s.map_width + kPositions * kGroups - 1) / (kPositions * kGroups);
  g.tiles_y = (s.map_height + kTileRows - 1) / kTileRows;
  g.strip_words = tile_words + (g.query_words + kWords - 1) / kWords * kWords + kWords;
  const int staged = skewed(g.strip_words - 1) + 1;
  g.row_stride = staged + (kWords + 2 - staged % kWords) % kWords;
  g.pitch_words = (g.tiles_x - 1) * tile_words + g.strip_words;
  const std::size_t limit = std::size_t(Kokkos::TeamPolicy<Exec>::scratch_size_max(0));
  for (int rows = std::min(kMaxChunkRows, s.query_height); rows >= 1; --rows) {
    if (team_scratch_bytes<Exec>(g, rows) <= limit) {
      g.chunk_rows = rows;
      break;
    }
  }
  return g;
}

template <class View>
struct StagedTarget {
  View words;
  int row_offset;  // first staged word of the target row
  int first;       // the work item's first word in the row
  KOKKOS_INLINE_FUNCTION void load(int x, std::uint32_t (&out)[kWords]) const {
    for (int q = 0; q < kWords; ++q) out[q] = words(row_offset + skewed(first + x + q));
  }
};

template <class View>
struct StagedQuery {
  View words;
  int row_offset;
  KOKKOS_INLINE_FUNCTION std::uint32_t operator()(int w) const { return words(row_offset + w); }
};

// One team's tile (of tiles()): its positions' SADs (into the map when kWriteMap), and its
// smallest sad_key, which every thread of the team returns.
template <class Exec, bool kWriteMap, Isa kIsa>
struct TileSad {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = portable_sad::Scratch<Exec>;

  TeamGeometry g;
  typename InputBuffer<std::uint32_t, Exec>::View target, query;
  MapView<Exec> map;
  // Map elements from one row's start to the next; 0: map_width (a packed map).
  std::size_t map_pitch = 0;

  std::size_t scratch_bytes() const { return team_scratch_bytes<Exec>(g, g.chunk_rows); }
  int tiles() const { return g.tiles_x * g.tiles_y; }

  // The team's scratch, taken once per team (a team taking several tiles reuses it).
  struct Staging {
    Scratch sums, query_rows, target_rows;
  };
  KOKKOS_INLINE_FUNCTION Staging staging(const Team& team) const {
    const int chunk = g.chunk_rows;
    return {Scratch(team.team_scratch(0), kItems * kPositions),  // [position][item]
            Scratch(team.team_scratch(0), std::size_t(chunk) * g.query_words),
            Scratch(team.team_scratch(0), std::size_t(kTileRows + chunk - 1) * g.row_stride)};
  }

  KOKKOS_INLINE_FUNCTION std::uint64_t operator()(const Team& team, int tile,
                                                  const Staging& staged) const {
    const int chunk = g.chunk_rows;
    const Scratch& sums = staged.sums;
    const Scratch& query_rows = staged.query_rows;
    const Scratch& target_rows = staged.target_rows;
    const int i0 = (tile / g.tiles_x) * kTileRows;
    const int x0 = (tile % g.tiles_x) * kGroups * kWords;  // tile's first word
    const int rows = g.s.map_height - i0 < kTileRows ? g.s.map_height - i0 : kTileRows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kItems * kPositions),
                         [&](int e) { sums(e) = 0; });
    for (int k0 = 0; k0 < g.s.query_height; k0 += chunk) {
      const int chunk_rows = g.s.query_height - k0 < chunk ? g.s.query_height - k0 : chunk;
      team.team_barrier();  // the previous chunk is done with the staged rows
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, chunk_rows * g.query_words), [&](int e) {
        query_rows(e) = query(std::size_t(k0) * g.query_words + e);
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (rows + chunk_rows - 1) * g.strip_words),
                           [&](int e) {
                             const int row = e / g.strip_words, x = e % g.strip_words;
                             target_rows(row * g.row_stride + skewed(x)) =
                                 target(std::size_t(i0 + k0 + row) * g.pitch_words + x0 + x);
                           });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kItems), [&](int item) {
        const int tr = item / kGroups, group = item % kGroups;
        if (tr >= rows || (x0 + group * kWords) * 4 >= g.s.map_width) return;
        std::uint32_t acc[kPositions];
        for (int p = 0; p < kPositions; ++p) acc[p] = sums(p * kItems + item);
        for (int kk = 0; kk < chunk_rows; ++kk) {
          accumulate_sad_row<kWords, kIsa>(
              StagedTarget<Scratch>{target_rows, (tr + kk) * g.row_stride, group * kWords},
              StagedQuery<Scratch>{query_rows, kk * g.query_words}, g.s.query_width, acc);
        }
        for (int p = 0; p < kPositions; ++p) sums(p * kItems + item) = acc[p];
      });
    }
    team.team_barrier();
    std::uint64_t team_best = kNoSadKey;
    const std::size_t map_row_elements = map_pitch ? map_pitch : std::size_t(g.s.map_width);
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, kItems),
        [&](int item, std::uint64_t& partial) {
          const int i = i0 + item / kGroups;
          const int j0 = (x0 + (item % kGroups) * kWords) * 4;
          if (i >= g.s.map_height) return;
          for (int p = 0; p < kPositions && j0 + p < g.s.map_width; ++p) {
            const std::int32_t score = std::int32_t(sums(p * kItems + item));
            // Keys index the map row-major whatever its pitch (the shared tie rule).
            const std::size_t index = std::size_t(i) * g.s.map_width + j0 + p;
            if (kWriteMap) map(std::size_t(i) * map_row_elements + j0 + p) = score;
            partial = sad_min(partial, sad_key(score, std::uint32_t(index)));
          }
        },
        Kokkos::Min<std::uint64_t>(team_best));
    return team_best;
  }
};

// The team size for `kernel` with `scratch` bytes of team scratch: kItems, or fewer where the
// kernel's registers allow fewer.
template <class Policy, class Kernel, class... Tag>
int tile_team_size(std::size_t scratch, const Kernel& kernel, const Tag&... tag) {
  return std::min(
      kItems,
      Policy(1, 1).set_scratch_size(0, Kokkos::PerTeam(scratch)).team_size_max(kernel, tag...));
}

// A team per tile, its smallest sad_key into the reduction. A named functor: both sad and
// sad-pruned instantiate team_sad alike (see portable::RepitchRows for why no lambda).
template <class Exec, bool kWriteMap, Isa kIsa>
struct TileSearch {
  TileSad<Exec, kWriteMap, kIsa> tile;
  KOKKOS_INLINE_FUNCTION void operator()(const typename TileSad<Exec, kWriteMap, kIsa>::Team& team,
                                         std::uint64_t& best) const {
    best = sad_min(best, tile(team, team.league_rank(), tile.staging(team)));
  }
};

// The whole search, its smallest sad_key returned to the host.
template <class Exec, bool kWriteMap, Isa kIsa>
std::uint64_t team_sad(const TileSad<Exec, kWriteMap, kIsa>& tile) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const TileSearch<Exec, kWriteMap, kIsa> kernel{tile};
  std::uint64_t best = kNoSadKey;
  const Kokkos::Min<std::uint64_t> reducer(best);
  const std::size_t scratch = tile.scratch_bytes();
  Kokkos::parallel_reduce(kWriteMap ? "sad_team" : "sad_fused",
                          Policy(tile.tiles(), tile_team_size<Policy>(scratch, kernel, reducer,
                                                                      Kokkos::ParallelReduceTag()))
                              .set_scratch_size(0, Kokkos::PerTeam(scratch)),
                          kernel, reducer);
  return best;
}

// The whole search, enqueued only: its smallest sad_key lowers keys(0) (an atomic min), and
// nothing runs when gate() is false. For callers that decide on the device whether the search
// is needed (sad-pruned's adaptive switch), so as few teams as run at once take the tiles in
// turn: the skipped search is one wave of teams that return at once. `launch` enqueues it
// (portable::StreamLaunch or GraphLaunch).
template <class Exec, Isa kIsa, class Launch, class Gate, class Keys>
void team_sad_gated(Launch& launch, const TileSad<Exec, false, kIsa>& tile, const Gate& gate,
                    const Keys& keys) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const int tiles = tile.tiles();
  const auto kernel = KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    if (!gate()) return;
    const auto staged = tile.staging(team);
    std::uint64_t best = kNoSadKey;
    for (int t = team.league_rank(); t < tiles; t += team.league_size()) {
      best = sad_min(best, tile(team, t, staged));
      team.team_barrier();  // the tile's sums are read before the next tile clears them
    }
    Kokkos::single(Kokkos::PerTeam(team),
                   [&] { Kokkos::atomic_fetch_min(&keys(0), typename Keys::value_type(best)); });
  };
  const std::size_t scratch = tile.scratch_bytes();
  const int team_size = tile_team_size<Policy>(scratch, kernel, Kokkos::ParallelForTag());
  const long long teams =
      std::min<long long>(tiles, portable::resident_teams<Exec>(team_size, scratch));
  launch.parallel_for("sad_fused_gated",
                      Policy(int(teams), team_size).set_scratch_size(0, Kokkos::PerTeam(scratch)),
                      kernel);
}

template <class Exec, bool kWriteMap, Isa kIsa = Isa::tuned>
struct TeamMethod {
  static constexpr const char* name =
      kWriteMap ? (kIsa == Isa::tuned ? "kokkos-team" : "kokkos-team-plain")
                : (kIsa == Isa::tuned ? "kokkos-fused" : "kokkos-fused-plain");
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  static constexpr bool writes_map = kWriteMap;
  static bool fits(const SadShape& s) { return team_geometry<Exec>(s).chunk_rows > 0; }

  TeamMethod(const SadInput& input, const SadShape& s)
      : g(team_geometry<Exec>(s)),
        packed_target(pack_rows(input.target, g.pitch_words, s.target_height)),
        packed_query(pack_rows(input.query, g.query_words, s.query_height)),
        target(packed_target.data(), packed_target.size(), "sad packed target"),
        query(packed_query.data(), packed_query.size(), "sad packed query") {
    if (g.chunk_rows == 0)
      throw Error(std::string(name) + ": the query is too wide for team scratch");
  }
  void upload() {
    target.upload();
    query.upload();
  }
  TileSad<Exec, kWriteMap, kIsa> tile(const MapView<Exec>& map = {}) const {
    return {g, target.view(), query.view(), map};
  }
  std::uint64_t run(const SadShape&, const MapView<Exec>& map) const { return team_sad(tile(map)); }

  TeamGeometry g;
  std::vector<std::uint32_t> packed_target, packed_query;
  InputBuffer<std::uint32_t, Exec> target, query;
};

}  // namespace kbench::portable_sad
