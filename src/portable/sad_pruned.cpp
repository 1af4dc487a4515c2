// Portable sad-pruned: one Kokkos source for every execution space, the GPU scheme of the
// native layer.
//
// The target lives on the device once, as the fused full search's packed rows (kokkos-fused,
// the fallback), which every step reads.
//
// 1. Row sums H(y, x) = Σ_{l<c} T(y, x + l): a work item per run of kRunColumns outputs of a row
//    sums its first window's bytes, then slides along the row.
// 2. Strip bounds l_i = Σ_k | |x_k|₁ − |y_{i,k}|₁ | for every window: a team per tile of
//    kTileColumns columns × tile_rows window rows stacks H down its columns in scratch (a local
//    column prefix), so a strip's sum is two scratch reads; the tile's smallest (bound, index)
//    is its candidate.
// 3. A team per candidate refines it strip by strip (one reduction gives a strip's exact SAD and
//    its target sum together, the bound grows, the team leaves once it exceeds E_guess); the
//    finished ones lower E_guess with an atomic min on their sad_key: the first E_guess.
// 4. Units of kPruneUnitWindows neighbouring windows of a map row that hold a window with bound
//    ≤ E_guess are compacted with a parallel_scan, which counts those windows too.
// 5. A team thread per live unit sums its windows' SADs strip by strip with full search's row
//    routine (accumulate_sad_row), its vector lanes a row each in turn; a window leaves once its
//    SAD so far exceeds E_guess, the unit with its last window, and the survivors of the last
//    strip lower E_guess.
// When more than kPruneUnitFullSearchFraction of the units are live after step 4, the fused full
// search runs instead.
#include <algorithm>

#include "kbench/sad_pruned.hpp"
#include "portable/kokkos_support.hpp"
#include "portable/sad_team.hpp"

namespace kbench::portable_pruned {

using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

constexpr int kTileColumns = 32;    // windows across a bound tile
constexpr int kColumnSegments = 4;  // a tile's column prefix is built in this many row segments
constexpr int kMaxTileRows = 128;   // window rows per bound tile, at most
// A tile offers its best-bounded window per this many window rows as a candidate for the first
// E_guess: a tile's single best bound is often a window a pixel away from the match, whose SAD
// is far above the match's, and a loose first E_guess prunes little.
constexpr int kCandidateRows = 32;
// H values a row-sum work item slides along its row: few, so that neighbouring items store
// neighbouring words.
constexpr int kRunColumns = 4;
static_assert(kRunColumns % 4 == 0, "runs start on a packed word");
// Threads per refining team on a device: a 128 × 128 window is 4 K words, which one warp would
// walk serially.
constexpr int kDeviceTeam = 256;
constexpr int kDeviceTileTeam = kTileColumns * kColumnSegments;
// A unit's windows are summed by full search's row routine over kUnitWords packed words; its
// rows are padded for groups of kWords words, which cover groups of kUnitWords.
constexpr int kUnitWords = kPruneUnitWindows / 4;
static_assert(kPruneUnitWindows % 4 == 0 && portable_sad::kWords % kUnitWords == 0,
              "a unit's reads stay inside the padded rows");

template <class Exec>
using U32View = typename OutputBuffer<std::uint32_t, Exec>::View;
template <class Exec>
using WordsView = typename InputBuffer<std::uint32_t, Exec>::View;
template <class Exec>
using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Teams of one thread on host backends, GPU-sized teams on devices.
template <class Exec>
int team_threads(int device_threads) {
  return portable::reads_host_memory<Exec>() ? 1 : device_threads;
}

// Byte x of one packed row.
KOKKOS_INLINE_FUNCTION std::uint32_t byte_at(const std::uint32_t* row, int x) {
  return (row[x / 4] >> (8 * (x % 4))) & 0xFFu;
}

// Target bytes x .. x + 3 of one packed row, for any x.
KOKKOS_INLINE_FUNCTION std::uint32_t unaligned_word(const std::uint32_t* row, int x) {
  const std::uint32_t lo = row[x / 4];
  const int shift = 8 * (x % 4);
  return shift == 0 ? lo : (lo >> shift) | (row[x / 4 + 1] << (32 - shift));
}

struct Geometry {
  SadShape s;
  StripLayout strips;
  int query_words;
  int target_pitch_words;  // the fused full search's packed rows (room for every unit's reads)
  int tile_rows;           // window rows per bound tile; 0 when a tile does not fit in scratch
  int tiles_x, tiles_y;
  int candidates_per_tile;
  int unit_columns;  // units per map row

  int candidates() const { return tiles_x * tiles_y * candidates_per_tile; }
  std::int64_t units() const { return std::int64_t(s.map_height) * unit_columns; }
};

template <class Exec>
std::size_t tile_scratch_bytes(const Geometry& g, int tile_rows) {
  return Scratch<Exec>::shmem_size(std::size_t(tile_rows + g.s.query_height + 1) * kTileColumns) +
         Scratch<Exec>::shmem_size(kTileColumns * kColumnSegments);
}

template <class Exec>
Geometry geometry(const SadShape& s) {
  Geometry g{s,
             strip_layout(s),
             words_for(s.query_width),
             portable_sad::team_geometry<Exec>(s).pitch_words,
             0,
             0,
             0,
             0,
             (s.map_width + kPruneUnitWindows - 1) / kPruneUnitWindows};
  const std::size_t limit = std::size_t(Kokkos::TeamPolicy<Exec>::scratch_size_max(0));
  for (int rows = std::min(kMaxTileRows, s.map_height); rows >= 1; --rows) {
    if (tile_scratch_bytes<Exec>(g, rows) <= limit) {
      g.tile_rows = rows;
      break;
    }
  }
  if (g.tile_rows > 0) {
    g.tiles_x = (s.map_width + kTileColumns - 1) / kTileColumns;
    g.tiles_y = (s.map_height + g.tile_rows - 1) / g.tile_rows;
    g.candidates_per_tile = (g.tile_rows + kCandidateRows - 1) / kCandidateRows;
  }
  return g;
}

template <class Exec, Isa kIsa>
void row_sums(const Geometry& g, const WordsView<Exec>& target, const U32View<Exec>& sums) {
  const int width = g.s.map_width, c = g.s.query_width;
  const int words = c / 4;
  const std::uint32_t tail_mask = c % 4 ? (1u << (8 * (c % 4))) - 1u : 0u;
  const int runs = (width + kRunColumns - 1) / kRunColumns;
  Kokkos::parallel_for(
      "pruned_row_sums",
      Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(
          0, std::int64_t(g.s.target_height) * runs),
      KOKKOS_LAMBDA(std::int64_t e) {
        const int y = int(e / runs), x0 = int(e % runs) * kRunColumns;
        const std::uint32_t* row = target.data() + std::size_t(y) * g.target_pitch_words;
        // The run starts on a word: its first window is whole words and a masked tail.
        std::uint32_t sum = sad4<kIsa>(row[x0 / 4 + words] & tail_mask, 0u, 0u);
        for (int w = 0; w < words; ++w) sum = sad4<kIsa>(row[x0 / 4 + w], 0u, sum);
        std::uint32_t* out = sums.data() + std::size_t(y) * width;
        const int n = width - x0 < kRunColumns ? width - x0 : kRunColumns;
        for (int x = x0; x < x0 + n; ++x) {
          out[x] = sum;
          sum += byte_at(row, x + c) - byte_at(row, x);
        }
      });
}

// Strip bounds of every window into `bounds`; per kCandidateRows window rows of each tile, the
// smallest sad_key(bound, index) into `candidates`.
template <class Exec>
void strip_bounds(const Geometry& g, const U32View<Exec>& sums,
                  const typename InputBuffer<std::uint32_t, Exec>::View& query_strips,
                  const U32View<Exec>& bounds,
                  const typename OutputBuffer<std::uint64_t, Exec>::View& candidates) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  const int stack_rows = g.tile_rows + g.s.query_height;  // H rows a tile stacks
  const std::size_t scratch = tile_scratch_bytes<Exec>(g, g.tile_rows);
  Kokkos::parallel_for(
      "pruned_strip_bounds",
      Policy(g.tiles_x * g.tiles_y, team_threads<Exec>(kDeviceTileTeam))
          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
      KOKKOS_LAMBDA(const Team& team) {
        const int i0 = (team.league_rank() / g.tiles_x) * g.tile_rows;
        const int j0 = (team.league_rank() % g.tiles_x) * kTileColumns;
        const int rows = g.s.map_height - i0 < g.tile_rows ? g.s.map_height - i0 : g.tile_rows;
        const int stacked = rows + g.s.query_height - 1;
        const int segment = (stacked + kColumnSegments - 1) / kColumnSegments;
        // stack(t, col): Σ of H rows i0 .. i0 + t − 1 in column j0 + col.
        Scratch<Exec> stack(team.team_scratch(0), std::size_t(stack_rows + 1) * kTileColumns);
        Scratch<Exec> totals(team.team_scratch(0), kTileColumns * kColumnSegments);
        const auto at = [&](int t, int col) -> std::uint32_t& {
          return stack(std::size_t(t) * kTileColumns + col);
        };
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTileColumns * kColumnSegments),
                             [&](int e) {
                               const int col = e % kTileColumns, part = e / kTileColumns;
                               const int j = j0 + col < g.s.map_width ? j0 + col : j0;
                               const int t0 = part * segment;
                               const int t1 = t0 + segment < stacked ? t0 + segment : stacked;
                               std::uint32_t sum = 0;
                               if (part == 0) at(0, col) = 0;
                               for (int t = t0; t < t1; ++t) {
                                 sum += sums(std::size_t(i0 + t) * g.s.map_width + j);
                                 at(t + 1, col) = sum;
                               }
                               totals(e) = sum;
                             });
        team.team_barrier();
        // Each segment adds the totals of the segments above it.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTileColumns * kColumnSegments),
                             [&](int e) {
                               const int col = e % kTileColumns, part = e / kTileColumns;
                               std::uint32_t above = 0;
                               for (int q = 0; q < part; ++q)
                                 above += totals(q * kTileColumns + col);
                               const int t0 = part * segment;
                               const int t1 = t0 + segment < stacked ? t0 + segment : stacked;
                               for (int t = t0; t < t1; ++t) at(t + 1, col) += above;
                             });
        team.team_barrier();
        for (int group = 0; group < g.candidates_per_tile; ++group) {
          const int r0 = group * kCandidateRows;
          const int r1 = r0 + kCandidateRows < rows ? r0 + kCandidateRows : rows;
          std::uint64_t best = kNoSadKey;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, (r1 > r0 ? r1 - r0 : 0) * kTileColumns),
              [&](int e, std::uint64_t& partial) {
                const int r = r0 + e / kTileColumns, col = e % kTileColumns;
                if (j0 + col >= g.s.map_width) return;
                std::uint32_t bound = 0;
                for (int k = 0; k < g.strips.count; ++k) {
                  const std::uint32_t y =
                      at(r + g.strips.end(k), col) - at(r + g.strips.begin(k), col);
                  bound += abs_difference(query_strips(k), y);
                }
                const std::size_t index = std::size_t(i0 + r) * g.s.map_width + j0 + col;
                bounds(index) = bound;
                partial = sad_min(partial, sad_key(std::int32_t(bound), std::uint32_t(index)));
              },
              Kokkos::Min<std::uint64_t>(best));
          // A group past the map's last row repeats the tile's first window.
          if (best == kNoSadKey)
            best = sad_key(0, std::uint32_t(std::size_t(i0) * g.s.map_width + j0));
          Kokkos::single(Kokkos::PerTeam(team), [&] {
            candidates(std::size_t(team.league_rank()) * g.candidates_per_tile + group) = best;
          });
          // The next reduction reuses the team's reduction scratch (racecheck).
          team.team_barrier();
        }
        team.team_barrier();  // a block may run the next league rank in the same scratch
      });
}

// The score of the shared key as one thread of the team reads it, so that the whole team takes
// the same branch.
template <class Team, class View>
KOKKOS_INLINE_FUNCTION std::uint32_t limit_of(const Team& team, const View& guess) {
  std::uint64_t seen = Kokkos::volatile_load(guess.data());
  team.team_broadcast(seen, 0);
  return std::uint32_t(seen >> 32);
}

// Refines the windows list(0 .. count) (indices in the low 32 bits) from their bounds, strip by
// strip, against the shared key `guess`, a team per window.
template <class Exec, Isa kIsa, class List>
void refine_windows(const Geometry& g, const List& list, int count, const WordsView<Exec>& target,
                    const WordsView<Exec>& query, const WordsView<Exec>& query_strips,
                    const U32View<Exec>& bounds,
                    const typename OutputBuffer<std::uint64_t, Exec>::View& guess) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  if (count == 0) return;
  const int q_words = g.query_words;
  const std::uint32_t tail_mask =
      g.s.query_width % 4 ? (1u << (8 * (g.s.query_width % 4))) - 1u : ~0u;
  Kokkos::parallel_for(
      "pruned_refine_windows", Policy(count, team_threads<Exec>(kDeviceTeam)),
      KOKKOS_LAMBDA(const Team& team) {
        const std::uint32_t w = std::uint32_t(list(team.league_rank()));
        const int i = int(w / std::uint32_t(g.s.map_width));
        const int j = int(w % std::uint32_t(g.s.map_width));
        std::uint32_t bound = bounds(w);
        for (int k = 0; k < g.strips.count; ++k) {
          if (bound > limit_of(team, guess)) return;
          const int y0 = g.strips.begin(k);
          // SAD in the high word, target sum in the low one: neither reaches 2^32.
          std::uint64_t packed = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, (g.strips.end(k) - y0) * q_words),
              [&](int e, std::uint64_t& partial) {
                const int y = y0 + e / q_words, word = e % q_words;
                const std::uint32_t mask = word + 1 == q_words ? tail_mask : ~0u;
                const std::uint32_t t =
                    unaligned_word(target.data() + std::size_t(i + y) * g.target_pitch_words,
                                   j + 4 * word) &
                    mask;
                partial += (std::uint64_t(sad4<kIsa>(t, query(std::size_t(y) * q_words + word), 0))
                            << 32) +
                           sad4<kIsa>(t, 0, 0);
              },
              packed);
          bound = bound - abs_difference(query_strips(k), std::uint32_t(packed)) +
                  std::uint32_t(packed >> 32);
          if (bound > limit_of(team, guess)) return;
          if (k + 1 == g.strips.count) {
            Kokkos::single(Kokkos::PerTeam(team), [&] {
              Kokkos::atomic_fetch_min(&guess(0), sad_key(std::int32_t(bound), w));
            });
          }
          // The next strip's reduction and broadcast reuse the team's scratch.
          team.team_barrier();
        }
      });
}

// The units holding a window whose bound does not exceed E_guess, compacted in order into
// `live`. The scan's value counts units in its low half and those windows in its high half.
template <class Exec>
std::uint64_t live_units(const Geometry& g, const U32View<Exec>& bounds,
                         const typename OutputBuffer<std::uint64_t, Exec>::View& guess,
                         const U32View<Exec>& live) {
  const int columns = g.unit_columns, width = g.s.map_width;
  std::uint64_t total = 0;
  Kokkos::parallel_scan(
      "pruned_live_units", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0, g.units()),
      KOKKOS_LAMBDA(std::int64_t unit, std::uint64_t & offset, bool final) {
        const std::uint32_t limit = std::uint32_t(guess(0) >> 32);
        const int j0 = int(unit % columns) * kPruneUnitWindows;
        const std::size_t first = std::size_t(unit / columns) * width + j0;
        const int n = width - j0 < kPruneUnitWindows ? width - j0 : kPruneUnitWindows;
        std::uint32_t windows = 0;
        for (int p = 0; p < n; ++p) windows += bounds(first + p) <= limit;
        if (windows == 0) return;
        if (final) live(std::uint32_t(offset)) = std::uint32_t(unit);
        offset += (std::uint64_t(windows) << 32) + 1;
      },
      total);
  return total;
}

// Packed words of one row through plain loads, for accumulate_sad_row.
struct RowWords {
  const std::uint32_t* row;
  KOKKOS_INLINE_FUNCTION void load(int x, std::uint32_t (&out)[kUnitWords]) const {
    for (int q = 0; q < kUnitWords; ++q) out[q] = row[x + q];
  }
};
struct QueryWords {
  const std::uint32_t* row;
  KOKKOS_INLINE_FUNCTION std::uint32_t operator()(int w) const { return row[w]; }
};

KOKKOS_INLINE_FUNCTION std::uint32_t bit_count(std::uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

// A unit's sums over some rows, added up across a unit's vector lanes.
struct UnitSums {
  std::uint32_t v[kPruneUnitWindows] = {};

  KOKKOS_INLINE_FUNCTION UnitSums& operator+=(const UnitSums& other) {
    for (int p = 0; p < kPruneUnitWindows; ++p) v[p] += other.v[p];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile UnitSums& other) volatile {
    for (int p = 0; p < kPruneUnitWindows; ++p) v[p] += other.v[p];
  }
};

// Units per team on a device (the team's threads; each has kPruneUnitLanes vector lanes).
constexpr int kDeviceUnitsPerTeam = 16;

// A team thread per live unit, its vector lanes (kPruneUnitLanes on a device) each summing every
// lane-th row of a strip, strip by strip; after each strip the lanes' sums are reduced, a window
// whose SAD so far, a lower bound of its SAD, exceeds E_guess leaves (equal stays: ties), the
// unit with its last window; the last strip's survivors lower E_guess. alive(u, k) receives the
// windows of live unit u still in after strip k.
template <class Exec, Isa kIsa>
void refine_units(const Geometry& g, const U32View<Exec>& live, std::int64_t count,
                  const WordsView<Exec>& target, const WordsView<Exec>& query,
                  const U32View<Exec>& bounds,
                  const typename OutputBuffer<std::uint64_t, Exec>::View& guess,
                  const typename OutputBuffer<std::uint8_t, Exec>::View& alive_after) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  if (count == 0) return;
  const int columns = g.unit_columns, strips = g.strips.count;
  const bool host = portable::reads_host_memory<Exec>();
  const int units_per_team = host ? 1 : kDeviceUnitsPerTeam;
  const int lanes = host ? 1 : kPruneUnitLanes;
  const std::int64_t teams = (count + units_per_team - 1) / units_per_team;
  Kokkos::parallel_for(
      "pruned_refine_units", Policy(teams, units_per_team, lanes), KOKKOS_LAMBDA(const Team& team) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, units_per_team), [&](int t) {
          const std::int64_t u = std::int64_t(team.league_rank()) * units_per_team + t;
          if (u >= count) return;
          const std::uint32_t unit = live(u);
          const int i = int(unit / std::uint32_t(columns));
          const int group = int(unit % std::uint32_t(columns));
          const int j0 = group * kPruneUnitWindows;
          const std::size_t first = std::size_t(i) * g.s.map_width + j0;
          // One vector lane reads E_guess and the others take its value, so that the lanes
          // leave together.
          const auto limit_now = [&] {
            std::uint64_t seen = 0;
            Kokkos::single(
                Kokkos::PerThread(team),
                [&](std::uint64_t& value) { value = Kokkos::volatile_load(guess.data()); }, seen);
            return std::uint32_t(seen >> 32);
          };
          const std::uint32_t first_limit = limit_now();
          std::uint32_t alive = 0;
          for (int p = 0; p < kPruneUnitWindows; ++p) {
            if (j0 + p < g.s.map_width && bounds(first + p) <= first_limit) alive |= 1u << p;
          }
          UnitSums sad;
          const std::uint32_t* row =
              target.data() + std::size_t(i) * g.target_pitch_words + group * kUnitWords;
          std::uint8_t* counts = alive_after.data() + std::size_t(u) * strips;
          for (int k = 0; k < strips; ++k) {
            UnitSums strip;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, g.strips.begin(k), g.strips.end(k)),
                [&](int y, UnitSums& sums) {
                  accumulate_sad_row<kUnitWords, kIsa>(
                      RowWords{row + std::size_t(y) * g.target_pitch_words},
                      QueryWords{query.data() + std::size_t(y) * g.query_words}, g.s.query_width,
                      sums.v);
                },
                strip);
            sad += strip;
            const std::uint32_t limit = limit_now();
            for (int p = 0; p < kPruneUnitWindows; ++p) {
              if (sad.v[p] > limit) alive &= ~(1u << p);
            }
            Kokkos::single(Kokkos::PerThread(team),
                           [&] { counts[k] = std::uint8_t(bit_count(alive)); });
            if (alive == 0) {
              Kokkos::single(Kokkos::PerThread(team), [&] {
                for (int rest = k + 1; rest < strips; ++rest) counts[rest] = 0;
              });
              return;
            }
          }
          std::uint64_t key = kNoSadKey;
          for (int p = 0; p < kPruneUnitWindows; ++p) {
            if (alive & (1u << p)) {
              key = sad_min(key, sad_key(std::int32_t(sad.v[p]), std::uint32_t(first + p)));
            }
          }
          Kokkos::single(Kokkos::PerThread(team),
                         [&] { Kokkos::atomic_fetch_min(&guess(0), key); });
        });
      });
}

template <class Exec, Isa kIsa>
class PrunedRunner final : public Runner<SadPruned> {
 public:
  explicit PrunedRunner(const SadInput& input)
      : shape_(validate_sad_pruned_input(input)),
        g_(geometry<Exec>(shape_)),
        strip_sums_(query_strip_sums(input.query, g_.strips)),
        query_strips_(strip_sums_.data(), strip_sums_.size(), "pruned query strips"),
        sums_(std::size_t(shape_.target_height) * shape_.map_width, "pruned row sums"),
        bounds_(shape_.map_size(), "pruned bounds"),
        live_(std::size_t(g_.units()), "pruned live units"),
        candidates_(std::size_t(std::max(1, g_.candidates())), "pruned candidates"),
        guess_(1, "pruned guess"),
        alive_after_(std::size_t(g_.units()) * g_.strips.count, "pruned alive after strips"),
        full_search_(input, shape_) {
    if (g_.tile_rows == 0) throw Error("kokkos-pruned: the query is too large for team scratch");
  }

  void poison(std::uint8_t byte) override {
    guess_.poison(byte);
    alive_after_.poison(byte);
    stats_ = PruneStats{};
    stats_.windows = stats_.after_bounds = ~std::uint64_t(0) / 0xFF * byte;
  }
  void upload() override {
    query_strips_.upload();
    full_search_.upload();
  }
  void compute() override {
    stats_ = PruneStats{};
    stats_.windows = shape_.map_size();
    const auto guess = guess_.view();
    const auto target = full_search_.target.view();
    const auto query = full_search_.query.view();
    Kokkos::deep_copy(Exec{}, guess, kNoSadKey);
    row_sums<Exec, kIsa>(g_, target, sums_.view());
    strip_bounds<Exec>(g_, sums_.view(), query_strips_.view(), bounds_.view(), candidates_.view());
    refine_windows<Exec, kIsa>(g_, candidates_.view(), g_.candidates(), target, query,
                               query_strips_.view(), bounds_.view(), guess);
    const std::uint64_t live = live_units<Exec>(g_, bounds_.view(), guess, live_.view());
    live_count_ = std::int64_t(live & 0xFFFFFFFFu);
    stats_.after_bounds = live >> 32;
    if (double(live_count_) > kPruneUnitFullSearchFraction * double(g_.units())) {
      stats_.full_search = true;
      best_key_ = full_search_.run(shape_, {});
      return;
    }
    refine_units<Exec, kIsa>(g_, live_.view(), live_count_, target, query, bounds_.view(), guess,
                             alive_after_.view());
    Kokkos::deep_copy(best_key_, Kokkos::subview(guess, 0));
  }
  void sync() override { Exec{}.fence(); }
  void download(SadPrunedResult& out) override {
    out.best = match_from_key(best_key_, shape_.map_width);
    out.stats = stats_;
    if (stats_.full_search) return;
    const int strips = g_.strips.count;
    std::vector<std::uint8_t> alive(alive_after_.view().size());
    alive_after_.download(alive.data());
    out.stats.after_strip.assign(std::size_t(strips), 0);
    for (std::int64_t u = 0; u < live_count_; ++u) {
      for (int k = 0; k < strips; ++k)
        out.stats.after_strip[k] += alive[std::size_t(u) * strips + k];
    }
  }

 private:
  SadShape shape_;
  Geometry g_;
  std::vector<std::uint32_t> strip_sums_;
  InputBuffer<std::uint32_t, Exec> query_strips_;
  OutputBuffer<std::uint32_t, Exec> sums_, bounds_, live_;
  OutputBuffer<std::uint64_t, Exec> candidates_, guess_;
  OutputBuffer<std::uint8_t, Exec> alive_after_;
  portable_sad::TeamMethod<Exec, false, kIsa> full_search_;
  std::uint64_t best_key_ = kNoSadKey;
  std::int64_t live_count_ = 0;
  PruneStats stats_;
};

}  // namespace kbench::portable_pruned

namespace kbench {

void register_sad_pruned_portable(VariantList<SadPruned>& list) {
  using portable::backend_of;
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      const char* name = kIsa == Isa::tuned ? "kokkos-pruned-" : "kokkos-pruned-plain-";
      list.push_back({std::string(name) + to_string(backend_of<Exec>()), Layer::portable,
                      backend_of<Exec>(), false,
                      make_runner<portable_pruned::PrunedRunner<Exec, kIsa>>,
                      [](const SadInput& input) {
                        const SadShape s = validate_sad_pruned_input(input);
                        return portable_pruned::geometry<Exec>(s).tile_rows > 0 &&
                               portable_sad::TeamMethod<Exec, false, kIsa>::fits(s);
                      },
                      backend_of<Exec>() == Backend::cuda ? 25 : 5, kIsa, false});
    });
  });
}

}  // namespace kbench
