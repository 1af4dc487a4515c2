// Portable sad-pruned: one Kokkos source for every execution space, the GPU scheme of the
// native layer (src/native_cuda/sad_pruned.cu). The target lives on the device once, as the fused
// full search's packed rows (kokkos-fused, the fallback), which every step reads. The steps: strip
// bounds by the native column walk, with a candidate per tile (1-2); the seed, then the other
// candidates and the seed's polish neighbourhood in one launch (3); the live units, compacted in
// tile order (4); their refinement strip by strip, a team thread per unit (5). The switch to full
// search is taken on the device (both are enqueued, each gated on step 4's count), so a run never
// waits for the host. kokkos-pruned launches the steps one by one; kokkos-pruned-graph submits
// them as one Kokkos graph, built once. Host spaces take the same steps in a CPU-shaped form:
// bounds from the target's summed-area table, a map row's windows across vector lanes, and the
// windows' exact SADs in packed-SAD byte vectors, each survivor refined on its own against a
// bound that keeps its unrefined strips' terms. Each step:
// docs/sad-pruned.md#the-portable-schedule
#include <algorithm>
#include <iterator>
#include <optional>
#include <type_traits>

#include "kbench/detail/sad_words.hpp"
#if !defined(__CUDACC__)
#include "kbench/detail/cpu_sad_bytes.hpp"
#endif
#include "kbench/sad_pruned.hpp"
#include "portable/kokkos_support.hpp"
#include "portable/sad_team.hpp"

namespace kbench::portable_pruned {

using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

constexpr int kTileColumns = kPruneTileColumns;
constexpr int kStripRows = kPruneStripRows;
constexpr int kMaxPassStrips = kPrunePassStrips;
// The bound walk: target rows a team sums at once (a thread each on a device), which are also
// its candidates' tile rows; groups of kTileColumns threads prefix and bound them.
constexpr int kChunkRows = kPruneChunkRows;
constexpr int kRingSlots = 2 * kChunkRows;
constexpr int kRingMask = kRingSlots - 1;
// Words per ring slot, odd: a thread writing its row's columns and a thread reading its column's
// rows both hit different banks.
constexpr int kRingPitch = kTileColumns + 1;
static_assert(kChunkRows % kTileColumns == 0 && kTileColumns % kStripRows == 0,
              "whole strip blocks per row group");
static_assert((kRingSlots & kRingMask) == 0, "a power of two");
// A band's windows by residue modulo kStripRows: kBandBlocks windows each, a strip apart;
// kGroupResidues residues a group of kTileColumns threads.
constexpr int kBandBlocks = kChunkRows / kStripRows;
constexpr int kGroupResidues = kStripRows / (kChunkRows / kTileColumns);
static_assert(kStripRows % (kChunkRows / kTileColumns) == 0, "whole residues a group");
// The fused full search runs when more than this fraction of the windows survive the first
// bounds: past about this fraction the unit refinement measured slower than kokkos-fused on the
// H200. kokkos-fused is slower than the native full search, so the crossover comes later than
// native's (perf/notes/sad-pruned.md).
constexpr double kFullSearchFraction = 0.75;
// Threads per refining team on a device: a 128 × 128 window is 4 K words, which one warp would
// walk serially. Halved (refine_team_threads) while the teams would not run in one wave.
constexpr int kDeviceTeam = 256;
constexpr int kMinDeviceTeam = 64;
// Threads of the one team that seeds E_guess on a device: 512 measured faster than 1024 (two
// team reductions over fewer threads) and 256 (perf/notes/sad-pruned.md).
constexpr int kSeedTeam = 512;
// The live-unit compaction on a device: threads per team, vector lanes per thread (a warp, whose
// lanes place a chunk of units without a team barrier) and consecutive slots per lane; on a host,
// slots per lane (the bits of a word).
constexpr int kDeviceLiveTeam = 8;
constexpr int kDeviceLiveLanes = 32;
constexpr int kDeviceLiveRun = 2;
constexpr int kLiveRunBits = 32;
// Host spaces: bound tiles across a bound team (a band of kChunkRows map rows), so that a map
// row's strip sums of the team's windows run as one vector loop, and its target rows stay in the
// cache for the band.
constexpr int kHostBoundTiles = 8;
// Units across a bound tile.
constexpr int kTileUnits = kTileColumns / kPruneUnitWindows;
static_assert(kTileColumns % kPruneUnitWindows == 0, "a bound tile holds whole units");
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
using OrderView = typename InputBuffer<int, Exec>::View;
// sad_keys on the device (E_guess, the seed's in centre(0), the candidates): unsigned long long,
// for which Kokkos 3.4's atomic min is CUDA's atomicMin (for std::uint64_t, unsigned long, it is a
// compare-and-swap loop, which waits for its result).
using Key = unsigned long long;
static_assert(sizeof(Key) == sizeof(std::uint64_t), "a sad_key in one word");
template <class Exec>
using KeysView = typename OutputBuffer<Key, Exec>::View;
template <class Exec>
using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Host spaces take the CPU-shaped steps (a constant that device code may read).
template <class Exec>
constexpr bool kHostSchedule = portable::reads_host_memory<Exec>();

// Teams of one thread on host backends, GPU-sized teams on devices.
template <class Exec>
int team_threads(int device_threads) {
  return portable::reads_host_memory<Exec>() ? 1 : device_threads;
}

struct Geometry {
  SadShape s;
  StripLayout strips;
  int query_words;
  int target_pitch_words;  // the fused full search's packed rows (room for every unit's reads)
  int column_tiles;        // bound teams across the map
  int segments;            // and down it,
  int segment_rows;        // map rows each, whole chunks
  int bands;               // candidates' tile rows down the map, kChunkRows map rows each
  int unit_columns;        // units per map row
  int first_threads;       // threads per team refining the candidates and the polish windows

  // The windows refine_windows takes first: the candidates, then the polish neighbourhood.
  int first_windows() const { return candidates() + kPrunePolishSide * kPrunePolishSide; }

  int candidates() const { return column_tiles * bands; }
  std::int64_t units() const { return std::int64_t(s.map_height) * unit_columns; }
};

// The ring and the row groups' column totals.
template <class Exec>
std::size_t bound_scratch_bytes() {
  return Scratch<Exec>::shmem_size(kRingSlots * kRingPitch) + Scratch<Exec>::shmem_size(kChunkRows);
}

// Threads per team for `count` refining teams: kDeviceTeam, halved down to kMinDeviceTeam while
// fewer than `count` such teams are resident at once (a second, partial wave would wait for the
// first's slowest window).
template <class Exec>
int refine_team_threads(int count) {
  int threads = kDeviceTeam;
  while (threads > kMinDeviceTeam && portable::resident_teams<Exec>(threads, 0) < count) {
    threads /= 2;
  }
  return team_threads<Exec>(threads);
}

template <class Exec>
Geometry geometry(const SadShape& s) {
  Geometry g{s,
             strip_layout(s),
             words_for(s.query_width),
             portable_sad::team_geometry<Exec>(s).pitch_words,
             (s.map_width + kTileColumns - 1) / kTileColumns,
             1,
             s.map_height,
             prune_bands(s.map_height),
             (s.map_width + kPruneUnitWindows - 1) / kPruneUnitWindows,
             0};
  // As few segments as fill one wave of teams on a device (each sums a pass's rows before its
  // first window; a second, partial wave would add a quarter of the pass). Host spaces' bounds
  // take bands instead (host_strip_bounds).
  if constexpr (!kHostSchedule<Exec>) {
    const int teams = int(portable::resident_teams<Exec>(kChunkRows, bound_scratch_bytes<Exec>()));
    g.segment_rows = prune_segment_rows(s, g.column_tiles, teams);
    g.segments = (s.map_height + g.segment_rows - 1) / g.segment_rows;
  }
  g.first_threads = refine_team_threads<Exec>(g.first_windows());
  return g;
}

// 16 bytes of a packed row, one 16-byte load where the target has one.
struct alignas(16) Quad {
  std::uint32_t w[4];
};

// bytes shift/8 .. of lo:hi, the low word first.
KOKKOS_INLINE_FUNCTION std::uint32_t shifted_word(std::uint32_t lo, std::uint32_t hi, int shift) {
  return shift == 0 ? lo : (lo >> shift) | (hi << (32 - shift));
}

// Σ |T − Q| over bytes from .. to of one row, a byte at a time (which compilers widen into
// packed SADs where the target has them).
KOKKOS_INLINE_FUNCTION std::uint32_t row_sad_bytes(const std::uint8_t* target,
                                                   const std::uint8_t* query, int from, int to) {
  std::uint32_t sum = 0;
  for (int x = from; x < to; ++x) {
    const int d = int(target[x]) - int(query[x]);
    sum += std::uint32_t(d < 0 ? -d : d);
  }
  return sum;
}

// Host spaces: Σ |T − Q| over `rows` rows of `width` bytes. With Isa::tuned, in the packed-SAD
// byte vectors of the level the file is compiled for (cpu_simd::CompiledBytes), each row's last
// width mod kBytes bytes one at a time; with Isa::plain, and under nvcc (whose passes do not take
// the x86 vector types), the plain loop throughout.
template <Isa kIsa>
KOKKOS_INLINE_FUNCTION std::uint32_t rows_sad(const std::uint8_t* target, std::size_t target_pitch,
                                              const std::uint8_t* query, std::size_t query_pitch,
                                              int rows, int width) {
  std::uint32_t sum = 0;
#if !defined(__CUDACC__)
  if constexpr (kIsa == Isa::tuned) {
    using Bytes = cpu_simd::CompiledBytes<kIsa>;
    const int whole = width / Bytes::kBytes * Bytes::kBytes;
    auto acc = Bytes::zero();
    for (int y = 0; y < rows; ++y) {
      for (int x = 0; x < whole; x += Bytes::kBytes) {
        acc = Bytes::add_sad(acc, Bytes::load(query + x), Bytes::load(target + x));
      }
      sum += row_sad_bytes(target, query, whole, width);
      target += target_pitch;
      query += query_pitch;
    }
    return sum + Bytes::lane_sum(acc);
  }
#endif
  for (int y = 0; y < rows; ++y) {
    sum += row_sad_bytes(target, query, 0, width);
    target += target_pitch;
    query += query_pitch;
  }
  return sum;
}

// Host spaces read the packed rows as the image's bytes: pack_rows puts byte x of a row at bits
// 8·(x mod 4) of its word, the byte order of a little-endian host.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "packed rows are bytes in order");
KOKKOS_INLINE_FUNCTION const std::uint8_t* row_bytes(const std::uint32_t* words, int pitch_words,
                                                     int row) {
  return reinterpret_cast<const std::uint8_t*>(words + std::size_t(row) * pitch_words);
}

// Host spaces: the target's summed-area table (integral_image) and the query's strip sums, for
// a strip term at four reads.
template <class Exec>
struct StripSums {
  typename InputBuffer<std::uint32_t, Exec>::View integral, query;
  std::size_t pitch;  // target_width + 1

  // |x_k − |y_{i,k}|₁| of the window at (i, j) and strip k: its term of the strip bound.
  KOKKOS_INLINE_FUNCTION std::uint32_t term(const StripLayout& strips, int width, int i, int j,
                                            int k) const {
    const std::uint32_t* top = integral.data() + std::size_t(i + strips.begin(k)) * pitch + j;
    const std::uint32_t* bottom = integral.data() + std::size_t(i + strips.end(k)) * pitch + j;
    return strip_term(bottom[width] - bottom[0] - top[width] + top[0], query(k));
  }
};

// H(t, j0 + j) for j < kTileColumns into slot[j]: row t's sums across the tile, from its words
// (rows 16-byte aligned, j0 a multiple of 32 bytes). Rows outside the target (the ends of a
// walk, whose sums no window uses) give zeros.
template <Isa kIsa>
KOKKOS_INLINE_FUNCTION void sum_tile_row(const Geometry& g, const std::uint32_t* target, int t,
                                         int j0, std::uint32_t* slot) {
  constexpr int kQuads = kTileColumns / 16;
  const int c = g.s.query_width;
  Quad leaving[kQuads] = {}, entering[kQuads] = {};
  std::uint32_t sum = 0;
  if (t >= 0 && t < g.s.target_height) {
    const std::uint32_t* row = target + std::size_t(t) * g.target_pitch_words + j0 / 4;
    const Quad* row4 = reinterpret_cast<const Quad*>(row);
    const int quads = c / 16;
    for (int v = 0; v < kQuads; ++v) {
      leaving[v] = row4[v];
      for (int w = 0; w < 4; ++w) {
        if (v < quads) sum = sad4<kIsa>(leaving[v].w[w], 0u, sum);
      }
    }
    for (int v = kQuads; v < quads; ++v) {
      const Quad q = row4[v];
      for (int w = 0; w < 4; ++w) sum = sad4<kIsa>(q.w[w], 0u, sum);
    }
    for (int w = 4 * quads; w < c / 4; ++w) sum = sad4<kIsa>(row[w], 0u, sum);
    const int shift = 8 * (c % 4);
    if (shift) sum = sad4<kIsa>(row[c / 4] & ((1u << shift) - 1u), 0u, sum);
    if (c % 16 == 0) {
      for (int v = 0; v < kQuads; ++v) entering[v] = row4[quads + v];
    } else {
      // The bytes c .. c + 31 shifted into place (the word after them only when they straddle).
      const std::uint32_t* from = row + c / 4;
      for (int v = 0; v < kQuads; ++v) {
        for (int w = 0; w < 4; ++w) {
          const int at = 4 * v + w;
          const std::uint32_t hi = at + 1 < 4 * kQuads || shift ? from[at + 1] : 0u;
          entering[v].w[w] = shifted_word(from[at], hi, shift);
        }
      }
    }
  }
  for (int j = 0; j < kTileColumns; ++j) {
    slot[j] = sum;
    sum += byte_of<kIsa>(entering[j / 16].w[j / 4 % 4], j % 4) -
           byte_of<kIsa>(leaving[j / 16].w[j / 4 % 4], j % 4);
  }
}

// One pass of kStrips strips from first_strip: their terms of every window's bound, written
// (first pass) or added (later ones) to `bounds`; on the last pass each tile's smallest
// sad_key(bound, index) into `candidates`, and the smallest of all into best_candidate(0) by an
// atomic min (kNoSadKey before the run: seed_guess resets it).
template <class Exec, Isa kIsa, int kStrips, class Launch>
void bound_pass(Launch& launch, const Geometry& g, int first_strip, const WordsView<Exec>& target,
                const typename InputBuffer<std::uint32_t, Exec>::View& query_strips,
                const U32View<Exec>& bounds, const KeysView<Exec>& candidates,
                const KeysView<Exec>& best_candidate) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  const bool first_pass = first_strip == 0;
  const bool last_pass = first_strip + kStrips == g.strips.count;
  const int top = g.strips.begin(first_strip);
  const int span = g.strips.end(first_strip + kStrips - 1) - top;
  // Slot s holds the prefix through target row first_row + s. Window i_begin + ρ reads the slots
  // ρ + lead + kStripRows·k, k < kStrips, and ρ + lead + span, the last entering in the chunk
  // after ρ's band (lead + span ≤ kChunkRows); lead is whole strips, so a block of kStripRows
  // windows starts at a whole strip.
  const int lead = kChunkRows - (span + kStripRows - 1) / kStripRows * kStripRows;
  launch.parallel_for(
      "pruned_bound_pass",
      Policy(g.column_tiles * g.segments, team_threads<Exec>(kChunkRows))
          .set_scratch_size(0, Kokkos::PerTeam(bound_scratch_bytes<Exec>())),
      KOKKOS_LAMBDA(const Team& team) {
        const int j0 = (team.league_rank() % g.column_tiles) * kTileColumns;
        const int i_begin = (team.league_rank() / g.column_tiles) * g.segment_rows;
        const int windows =
            g.s.map_height - i_begin < g.segment_rows ? g.s.map_height - i_begin : g.segment_rows;
        const int first_row = i_begin + top - 1 - lead;
        Scratch<Exec> ring(team.team_scratch(0), kRingSlots * kRingPitch);
        Scratch<Exec> group_totals(team.team_scratch(0), kChunkRows);
        std::uint32_t x[kStrips];  // the pass's query strip sums
        for (int k = 0; k < kStrips; ++k) x[k] = query_strips(first_strip + k);
        const int chunks = (windows + kChunkRows - 1) / kChunkRows + 1;
        for (int chunk = 0; chunk < chunks; ++chunk) {
          const int s0 = chunk * kChunkRows;
          // Rows: a thread's row sums into its slot.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunkRows), [&](int r) {
            sum_tile_row<kIsa>(g, target.data(), first_row + s0 + r, j0,
                               &ring(std::size_t((s0 + r) & kRingMask) * kRingPitch));
          });
          team.team_barrier();
          // Prefix: the column total of each row group's kTileColumns slots, then each group's
          // running prefix from the previous chunk's last and the earlier groups' totals.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunkRows), [&](int t) {
            const int first = s0 + t / kTileColumns * kTileColumns, col = t % kTileColumns;
            std::uint32_t total = 0;
            KBENCH_UNROLL
            for (int r = 0; r < kTileColumns; ++r) {
              total += ring(std::size_t((first + r) & kRingMask) * kRingPitch + col);
            }
            group_totals(t) = total;
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kChunkRows), [&](int t) {
            const int group = t / kTileColumns, col = t % kTileColumns;
            const int first = s0 + group * kTileColumns;
            std::uint32_t prefix =
                chunk > 0 ? ring(std::size_t((s0 - 1) & kRingMask) * kRingPitch + col) : 0u;
            for (int w = 0; w < group; ++w) prefix += group_totals(w * kTileColumns + col);
            KBENCH_UNROLL
            for (int r = 0; r < kTileColumns; ++r) {
              const int slot = (first + r) & kRingMask;
              prefix += ring(std::size_t(slot) * kRingPitch + col);
              ring(std::size_t(slot) * kRingPitch + col) = prefix;
            }
          });
          team.team_barrier();
          if (chunk == 0) continue;  // its slots precede the segment's first window
          // Windows of the previous chunk's band, by residue modulo kStripRows: windows a strip
          // apart share all their slots but one, so a thread reads the slots of its residue once,
          // kBandReads of them for kBandBlocks windows (two reads a window instead of
          // kStrips + 1). A thread takes kGroupResidues residues of one column, unrolled, so that
          // the reads are immediate offsets from the band's addresses. The reduction is also the
          // barrier before the next chunk's rows overwrite the slots read.
          constexpr int kBandReads = kBandBlocks + kStrips;
          const int band_first = (chunk - 1) * kChunkRows;
          // Whole strips: the last strip's end is slot m + kStrips too; else it is read on its
          // own.
          const bool whole_strips = span == kStrips * kStripRows;
          std::uint64_t best = kNoSadKey;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, kChunkRows),
              [&](int t, std::uint64_t& smallest) {
                const int col = t % kTileColumns, j = j0 + col;
                const int first_residue = t / kTileColumns * kGroupResidues;
                const std::uint32_t* column = ring.data() + col;
                // The residue's slots m lie at row_of[m] + residue · kRingPitch: whole strips plus
                // less than a strip, which never wraps.
                const std::uint32_t* row_of[kBandReads];
                KBENCH_UNROLL
                for (int m = 0; m < kBandReads; ++m) {
                  row_of[m] =
                      column + std::size_t(((band_first + lead + kStripRows * m) & kRingMask) +
                                           first_residue) *
                                   kRingPitch;
                }
                KBENCH_UNROLL
                for (int r = 0; r < kGroupResidues; ++r) {
                  const int residue = first_residue + r;
                  std::uint32_t prefix[kBandReads];
                  KBENCH_UNROLL
                  for (int m = 0; m < kBandReads; ++m) prefix[m] = row_of[m][r * kRingPitch];
                  std::uint32_t* out = bounds.data() +
                                       std::size_t(i_begin + band_first + residue) * g.s.map_width +
                                       j;
                  KBENCH_UNROLL
                  for (int m = 0; m < kBandBlocks; ++m) {
                    const int rho = band_first + kStripRows * m + residue;
                    std::uint32_t bound = 0;
                    KBENCH_UNROLL
                    for (int k = 0; k < kStrips; ++k) {
                      std::uint32_t above = prefix[m + k + 1];
                      if (k + 1 == kStrips && !whole_strips) {
                        above = column[std::size_t((rho + lead + span) & kRingMask) * kRingPitch];
                      }
                      bound += strip_term(above - prefix[m + k], x[k]);
                    }
                    if (rho < windows && j < g.s.map_width) {
                      if (!first_pass) bound += *out;
                      *out = bound;
                      smallest = sad_min(smallest, sad_key(std::int32_t(bound),
                                                           std::uint32_t(i_begin + rho) *
                                                                   std::uint32_t(g.s.map_width) +
                                                               std::uint32_t(j)));
                    }
                    out += std::size_t(kStripRows) * g.s.map_width;
                  }
                }
              },
              Kokkos::Min<std::uint64_t>(best));
          if (last_pass) {
            const int tile_at = prune_tile_of(i_begin + band_first, j0, g.column_tiles);
            Kokkos::single(Kokkos::PerTeam(team), [&] {
              candidates(tile_at) = best;
              Kokkos::atomic_fetch_min(&best_candidate(0), Key(best));
            });
          }
        }
      });
}

// bound_pass<kStrips> for a run-time count of 1 .. kStrips strips.
template <class Exec, Isa kIsa, int kStrips = kMaxPassStrips, class Launch, class... Args>
void bound_pass_of(int strips, Launch& launch, const Args&... args) {
  if constexpr (kStrips > 1) {
    if (strips < kStrips) return bound_pass_of<Exec, kIsa, kStrips - 1>(strips, launch, args...);
  }
  bound_pass<Exec, kIsa, kStrips>(launch, args...);
}

// Host spaces' bound pass: a team of one thread per band of kChunkRows map rows × kHostBoundTiles
// tiles, map row by map row; each strip's terms of the row's windows from four summed-area reads
// in one loop across vector lanes (the native row pass), added into the row's bounds in place;
// then each tile's smallest bound, its first window the tile's candidate where it beats the rows
// above. The same bounds and candidates as bound_pass.
template <class Exec, class Launch>
void host_strip_bounds(Launch& launch, const Geometry& g, const StripSums<Exec>& sums,
                       const U32View<Exec>& bounds, const KeysView<Exec>& candidates,
                       const KeysView<Exec>& best_candidate) {
  // Teams taken in turn: the last band's are shorter.
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  const int blocks = (g.column_tiles + kHostBoundTiles - 1) / kHostBoundTiles;
  launch.parallel_for(
      "pruned_host_bounds", Policy(g.bands * blocks, 1), KOKKOS_LAMBDA(const Team& team) {
        const int width = g.s.map_width, c = g.s.query_width;
        const int tile0 = team.league_rank() % blocks * kHostBoundTiles;
        const int tiles =
            g.column_tiles - tile0 < kHostBoundTiles ? g.column_tiles - tile0 : kHostBoundTiles;
        const int j0 = tile0 * kTileColumns;
        const int n = width - j0 < tiles * kTileColumns ? width - j0 : tiles * kTileColumns;
        const int i_begin = team.league_rank() / blocks * kChunkRows;
        const int i_end =
            g.s.map_height - i_begin < kChunkRows ? g.s.map_height : i_begin + kChunkRows;
        std::uint64_t best[kHostBoundTiles];
        for (int t = 0; t < kHostBoundTiles; ++t) best[t] = kNoSadKey;
        for (int i = i_begin; i < i_end; ++i) {
          std::uint32_t* out = bounds.data() + std::size_t(i) * width + j0;
          for (int k = 0; k < g.strips.count; ++k) {
            const std::uint32_t* top =
                sums.integral.data() + std::size_t(i + g.strips.begin(k)) * sums.pitch + j0;
            const std::uint32_t* bottom =
                sums.integral.data() + std::size_t(i + g.strips.end(k)) * sums.pitch + j0;
            const std::uint32_t x = sums.query(k);
            const std::uint32_t keep = k == 0 ? 0u : ~0u;  // the first strip overwrites
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, n), [&](int j) {
              out[j] =
                  (out[j] & keep) + strip_term(bottom[j + c] - bottom[j] - top[j + c] + top[j], x);
            });
          }
          for (int t = 0; t < tiles; ++t) {
            const int first = t * kTileColumns;
            const int last = n - first < kTileColumns ? n : first + kTileColumns;
            std::uint32_t lowest = ~0u;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, first, last),
                [&](int j, std::uint32_t& m) { m = out[j] < m ? out[j] : m; },
                Kokkos::Min<std::uint32_t>(lowest));
            // A later row's equal bound has the larger index.
            if (lowest < std::uint32_t(best[t] >> 32) || best[t] == kNoSadKey) {
              int j = first;
              while (out[j] != lowest) ++j;
              best[t] = sad_key(std::int32_t(lowest),
                                std::uint32_t(i) * std::uint32_t(width) + std::uint32_t(j0 + j));
            }
          }
        }
        for (int t = 0; t < tiles; ++t) {
          candidates(prune_tile_of(i_begin, j0 + t * kTileColumns, g.column_tiles)) = best[t];
          Kokkos::atomic_fetch_min(&best_candidate(0), Key(best[t]));
        }
      });
}

// Every window's strip bound into `bounds`, a pass per kMaxPassStrips strips (host spaces: from
// the summed-area table at once); the candidates.
template <class Exec, Isa kIsa, class Launch>
void strip_bounds(Launch& launch, const Geometry& g, const WordsView<Exec>& target,
                  const StripSums<Exec>& sums, const U32View<Exec>& bounds,
                  const KeysView<Exec>& candidates, const KeysView<Exec>& best_candidate) {
  if constexpr (kHostSchedule<Exec>) {
    host_strip_bounds<Exec>(launch, g, sums, bounds, candidates, best_candidate);
  } else {
    for (int first = 0; first < g.strips.count; first += kMaxPassStrips) {
      bound_pass_of<Exec, kIsa>(std::min(kMaxPassStrips, g.strips.count - first), launch, g, first,
                                target, sums.query, bounds, candidates, best_candidate);
    }
  }
}

// The shared key as one thread of the team reads it, so that the whole team takes the same
// branch.
template <class Team, class View>
KOKKOS_INLINE_FUNCTION std::uint64_t key_seen(const Team& team, const View& guess) {
  std::uint64_t seen = Kokkos::volatile_load(guess.data());
  team.team_broadcast(seen, 0);
  return seen;
}

// Elements a refining thread loads at once.
constexpr int kRefineLoads = 4;

// The exact SAD of window w over a team of `threads` threads in one reduction: thread t takes the
// query's words t, t + threads, … (row after row, with running indices: no division per
// element), kRefineLoads of them loaded before any is used (a GPU thread issues in order: a load
// used at once would hold back the next one). The seed and steps 2 and 3 sum their windows this
// way, without the strip-by-strip exits of the unit refinement: a team reduction and a read of
// E_guess after every strip made each window a chain of eight (perf/notes/sad-pruned.md).
template <Isa kIsa, class Team, class Words>
KOKKOS_INLINE_FUNCTION std::uint32_t team_window_sad_on_device(const Team& team, int threads,
                                                               const Geometry& g,
                                                               const Words& target,
                                                               const Words& query,
                                                               std::uint32_t w) {
  const int q_words = g.query_words;
  const int pitch = g.target_pitch_words;
  const int elements = q_words * g.s.query_height;
  const std::uint32_t tail_mask = last_word_mask(g.s.query_width);
  const int i = int(w / std::uint32_t(g.s.map_width));
  const int j = int(w % std::uint32_t(g.s.map_width));
  const std::uint32_t* origin = target.data() + std::size_t(i) * pitch + j / 4;
  const int shift = 8 * (j % 4);
  const int step_rows = threads / q_words, step_words = threads % q_words;
  std::uint32_t sad = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(team, threads),
      [&](int t, std::uint32_t& partial) {
        int y = t / q_words, word = t % q_words;
        for (int first = t; first < elements; first += kRefineLoads * threads) {
          std::uint32_t lo[kRefineLoads], hi[kRefineLoads], q[kRefineLoads];
          std::uint32_t mask[kRefineLoads];
          for (int b = 0; b < kRefineLoads; ++b) {
            lo[b] = hi[b] = q[b] = mask[b] = 0u;  // past the query: adds nothing
            const int e = first + b * threads;
            if (e < elements) {
              const std::uint32_t* at = origin + std::size_t(y) * pitch + word;
              lo[b] = at[0];
              if (shift) hi[b] = at[1];
              q[b] = query(e);
              mask[b] = word + 1 == q_words ? tail_mask : ~0u;
              word += step_words;
              y += step_rows;
              if (word >= q_words) {
                word -= q_words;
                ++y;
              }
            }
          }
          for (int b = 0; b < kRefineLoads; ++b) {
            // A masked-out element is a zero target word against a zero query word.
            partial =
                sad4<kIsa>(shifted_word(lo[b], hi[b], shift) & mask[b], q[b] & mask[b], partial);
          }
        }
      },
      sad);
  return sad;
}

// The exact SAD of window w: on host spaces (teams of one thread) its rows in packed-SAD byte
// vectors, elsewhere team_window_sad_on_device.
template <class Exec, Isa kIsa, class Team, class Words>
KOKKOS_INLINE_FUNCTION std::uint32_t team_window_sad(const Team& team, int threads,
                                                     const Geometry& g, const Words& target,
                                                     const Words& query, std::uint32_t w) {
  if constexpr (kHostSchedule<Exec>) {
    const int i = int(w / std::uint32_t(g.s.map_width));
    const int j = int(w % std::uint32_t(g.s.map_width));
    return rows_sad<kIsa>(row_bytes(target.data(), g.target_pitch_words, i) + j,
                          std::size_t(g.target_pitch_words) * 4,
                          row_bytes(query.data(), g.query_words, 0), std::size_t(g.query_words) * 4,
                          g.s.query_height, g.s.query_width);
  } else {
    return team_window_sad_on_device<kIsa>(team, threads, g, target, query, w);
  }
}

// The live-unit totals, windows << 32 | units: unsigned long long, for which Kokkos 3.4's atomic
// add is CUDA's (for std::uint64_t, unsigned long, it is a compare-and-swap loop).
using LiveTotals = unsigned long long;
template <class Exec>
using LiveTotalsView = typename OutputBuffer<LiveTotals, Exec>::View;

// The first E_guess: one team takes the best candidate (the paper's FindBestInitMatch: the window
// with the smallest bound) and sums its window's whole SAD at once, into guess(0) and centre(0);
// best_candidate(0) is reset for the next run, and the run's counters for live_units and
// refine_units are zeroed.
template <class Exec, Isa kIsa, class Launch>
void seed_guess(Launch& launch, const Geometry& g, const KeysView<Exec>& best_candidate,
                const WordsView<Exec>& target, const WordsView<Exec>& query,
                const KeysView<Exec>& guess, const KeysView<Exec>& centre,
                const LiveTotalsView<Exec>& live_totals, const LiveTotalsView<Exec>& settled,
                const U32View<Exec>& cursor) {
  // The launch bounds let a team of kSeedTeam threads fit.
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<kSeedTeam, 1>>;
  using Team = typename Policy::member_type;
  const int threads = team_threads<Exec>(kSeedTeam);
  launch.parallel_for(
      "pruned_seed", Policy(1, threads), KOKKOS_LAMBDA(const Team& team) {
        const std::uint64_t best = best_candidate(0);
        std::uint64_t key = kNoSadKey;
        if (best != kNoSadKey) {
          const std::uint32_t w = std::uint32_t(best);
          key = sad_key(
              std::int32_t(team_window_sad<Exec, kIsa>(team, threads, g, target, query, w)), w);
        }
        Kokkos::single(Kokkos::PerTeam(team), [&] {
          guess(0) = centre(0) = key;
          best_candidate(0) = kNoSadKey;
          live_totals(0) = settled(0) = 0;
          cursor(0) = 0;
        });
      });
}

// Where refine_windows and refine_units put the exact keys they finish. LowerGuess (the argmin):
// a window's key, or a unit's smallest, lowers E_guess, and refine_windows skips the windows whose
// bound exceeds it. FirstKeys / FoundKeys (the top-k search, which leaves E_guess alone):
// refine_windows writes every listed window's key to keys(e), and E_guess's, the seed's, for
// entries without a window (the seed's key comes back with the others; copies are dropped);
// refine_units appends every survivor's key.
struct LowerGuess {};
template <class Exec>
struct FirstKeys {
  KeysView<Exec> keys;
};
template <class Exec>
struct FoundKeys {
  KeysView<Exec> keys;  // room for every window within E_guess after the bounds
  U32View<Exec> count;  // count(0): keys appended (zeroed before the launch)
};
KOKKOS_INLINE_FUNCTION constexpr bool refines_every(const LowerGuess&) {
  return false;
}
template <class Exec>
KOKKOS_INLINE_FUNCTION constexpr bool refines_every(const FirstKeys<Exec>&) {
  return true;
}
template <class Exec>
KOKKOS_INLINE_FUNCTION void take_key(const FoundKeys<Exec>& found, Key key) {
  found.keys(Kokkos::atomic_fetch_add(&found.count(0), 1u)) = key;
}
template <class Guess>
KOKKOS_INLINE_FUNCTION void take_window(const LowerGuess&, const Guess& guess, int, Key key) {
  Kokkos::atomic_fetch_min(&guess(0), key);
}
template <class Exec, class Guess>
KOKKOS_INLINE_FUNCTION void take_window(const FirstKeys<Exec>& first, const Guess&, int e,
                                        Key key) {
  first.keys(e) = key;
}

// Refines the windows list(0 .. count) (indices in the low 32 bits; kNoSadKey entries are
// skipped), a team of `threads` per window: a window whose bound is within the shared key
// `guess` gets its exact SAD, which lowers it (with FirstKeys, every window's key is kept).
template <class Exec, Isa kIsa, class Launch, class List, class Keys = LowerGuess>
void refine_windows(Launch& launch, const Geometry& g, const List& list, int count, int threads,
                    const WordsView<Exec>& target, const WordsView<Exec>& query,
                    const U32View<Exec>& bounds, const KeysView<Exec>& guess,
                    const Keys& keys = {}) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  if (count == 0) return;
  launch.parallel_for(
      "pruned_refine_windows", Policy(count, threads), KOKKOS_LAMBDA(const Team& team) {
        const int e = team.league_rank();
        const std::uint64_t entry = list(e);
        if (entry == kNoSadKey) {  // nothing to refine
          if (refines_every(keys)) {
            Kokkos::single(Kokkos::PerTeam(team), [&] { take_window(keys, guess, e, guess(0)); });
          }
          return;
        }
        const std::uint32_t w = std::uint32_t(entry);
        // Nor the window whose exact SAD E_guess is already (the best candidate's, once the other
        // candidates run).
        const std::uint64_t known = key_seen(team, guess);
        if (!refines_every(keys) &&
            (bounds(w) > std::uint32_t(known >> 32) || w == std::uint32_t(known))) {
          return;
        }
        const std::uint32_t sad = team_window_sad<Exec, kIsa>(team, threads, g, target, query, w);
        Kokkos::single(Kokkos::PerTeam(team),
                       [&] { take_window(keys, guess, e, Key(sad_key(std::int32_t(sad), w))); });
      });
}

// The windows refine_windows takes first, as its list: the candidates (entries e <
// count), then the polish neighbourhood of the seed's window, centre(0): its e-th
// window, kNoSadKey for the centre itself (its SAD is E_guess's first value) and positions off the
// map. Both in one launch: the polish windows need not wait for the candidates (the seed is the
// window with the smallest bound, at low noise the match or beside it), and a window refined
// before E_guess has its last value only costs a SAD.
template <class Exec>
struct FirstWindows {
  KeysView<Exec> candidates, centre;
  int count;  // candidates
  int map_width, map_height;

  KOKKOS_INLINE_FUNCTION std::uint64_t operator()(int e) const {
    if (e < count) return candidates(e);
    std::uint32_t index;
    const bool inside =
        polish_window(std::uint32_t(centre(0)), map_width, map_height, e - count, index);
    return inside && e - count != kPrunePolishCentre ? index : kNoSadKey;
  }
};

KOKKOS_INLINE_FUNCTION std::uint32_t bit_count(std::uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

// The windows of the unit whose first window is (i, j0) with a bound within limit, a bit each
// (polish_settled_windows gives those of them that the polish refinement settled).
template <class Bounds>
KOKKOS_INLINE_FUNCTION std::uint32_t windows_within(const Geometry& g, const Bounds& bounds, int i,
                                                    int j0, std::uint32_t limit) {
  const std::uint32_t* first = bounds.data() + std::size_t(i) * g.s.map_width + j0;
  return unit_windows_within(
      [&](int p) { return first[p]; },
      g.s.map_width - j0 < kPruneUnitWindows ? g.s.map_width - j0 : kPruneUnitWindows, limit);
}

// The units holding a window whose bound does not exceed E_guess (outside the settled ones) into
// live(0 .. units), and the count of those windows: totals(0) = windows << 32 | units (zeroed
// by seed_guess; the units, fewer than 2^32, never carry into the windows); the windows within
// E_guess that the polish refinement settled (they are left after the bounds) into settled(0),
// zeroed by seed_guess too.
// Units are taken tile by tile (a bound tile's kTileUnits units a row, row after row; slots past
// the map's edges hold none), in chunks of consecutive slots, a chunk per team thread at a time
// and `run` slots a lane apart per vector lane (kDeviceLiveRun on a device, so that the few live
// tiles at low noise spread over many lanes); a tile whose smallest bound (its candidate) exceeds
// E_guess has none of its bounds read. A chunk is placed without a team barrier: its lanes' live
// units are summed, one atomic add on the totals gives the chunk its place, and vector scans the
// units' places within it, in slot order (so in tile order: the refinement's neighbouring units
// then share most of their target rows); the chunks are placed in their own order, on which
// nothing depends.
template <class Exec, class Launch>
void live_units(Launch& launch, const Geometry& g, const U32View<Exec>& bounds,
                const KeysView<Exec>& tile_minima, const KeysView<Exec>& guess,
                const KeysView<Exec>& centre, const U32View<Exec>& live,
                const LiveTotalsView<Exec>& totals, const LiveTotalsView<Exec>& settled) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const bool host = portable::reads_host_memory<Exec>();
  const int threads = host ? 1 : kDeviceLiveTeam;
  const int lanes = host ? 1 : kDeviceLiveLanes;
  const std::uint32_t run = host ? kLiveRunBits : kDeviceLiveRun;
  const std::uint32_t tile_slots = std::uint32_t(kChunkRows) * kTileUnits;
  // Fewer than 2^32: about the map's units (validate_sad_input).
  const std::uint32_t slots = std::uint32_t(g.candidates()) * tile_slots;
  const std::uint32_t chunk_slots = std::uint32_t(lanes) * run;
  const std::uint32_t chunks = (slots + chunk_slots - 1) / chunk_slots;
  // A team thread each on a device; a few teams per thread on a host, for balance.
  const std::uint32_t team_chunks =
      host ? std::max(1u, chunks / std::uint32_t(4 * Exec().concurrency())) : threads;
  const std::size_t scratch = 3 * Scratch<Exec>::shmem_size(std::size_t(threads) * lanes);
  launch.parallel_for(
      "pruned_live_units",
      Policy(int((chunks + team_chunks - 1) / team_chunks), threads, lanes)
          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const std::uint32_t limit = std::uint32_t(guess(0) >> 32);
        const std::uint32_t centre_index = std::uint32_t(centre(0));
        // Per lane of each team thread: its live slots (bit r: slot r of its run), windows and
        // settled windows.
        Scratch<Exec> live_bits(team.team_scratch(0), std::size_t(threads) * lanes);
        Scratch<Exec> windows(team.team_scratch(0), std::size_t(threads) * lanes);
        Scratch<Exec> settled_windows(team.team_scratch(0), std::size_t(threads) * lanes);
        const int mine = team.team_rank() * lanes;
        // Slot → its unit (i, group), or false past the map's edges and in tiles whose smallest
        // bound exceeds the limit.
        const auto unit_of = [&](std::uint32_t slot, int& i, int& group) {
          const std::uint32_t tile = slot / tile_slots, rest = slot % tile_slots;
          i = int(tile / std::uint32_t(g.column_tiles)) * kChunkRows + int(rest / kTileUnits);
          group = int(tile % std::uint32_t(g.column_tiles)) * kTileUnits + int(rest % kTileUnits);
          return i < g.s.map_height && group < g.unit_columns &&
                 std::uint32_t(tile_minima(tile) >> 32) <= limit;
        };
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(team_chunks)), [&](int c) {
          const std::uint32_t chunk = std::uint32_t(team.league_rank()) * team_chunks + c;
          if (chunk >= chunks) return;
          // Lane e takes slots e, e + lanes, …: a warp's loads then span 16 rows of a tile
          // (one 128-byte line each) instead of 32.
          const auto slot_of = [&](int e, std::uint32_t r) {
            return chunk * chunk_slots + r * std::uint32_t(lanes) + std::uint32_t(e);
          };
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, lanes), [&](int e) {
            std::uint32_t bits = 0, within = 0, done = 0;
            for (std::uint32_t r = 0; r < run && slot_of(e, r) < slots; ++r) {
              int i, group;
              if (!unit_of(slot_of(e, r), i, group)) continue;
              const int j0 = group * kPruneUnitWindows;
              const std::uint32_t inside = windows_within(g, bounds, i, j0, limit);
              const std::uint32_t settled_here =
                  inside & polish_settled_windows(centre_index, g.s.map_width, i, j0);
              if ((inside & ~settled_here) != 0) bits |= 1u << r;
              within += bit_count(inside);
              done += bit_count(settled_here);
            }
            live_bits(mine + e) = bits;
            windows(mine + e) = within;
            settled_windows(mine + e) = done;
          });
          LiveTotals total = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, lanes),
              [&](int e, LiveTotals& sum) {
                sum += LiveTotals(windows(mine + e)) << 32 | bit_count(live_bits(mine + e));
              },
              total);
          if (total == 0) return;  // (settled windows are within E_guess: none either)
          LiveTotals chunk_settled = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, lanes),
              [&](int e, LiveTotals& sum) { sum += settled_windows(mine + e); }, chunk_settled);
          LiveTotals base = 0;
          Kokkos::single(
              Kokkos::PerThread(team),
              [&](LiveTotals& place) {
                place = Kokkos::atomic_fetch_add(&totals(0), total);
                if (chunk_settled != 0) Kokkos::atomic_add(&settled(0), chunk_settled);
              },
              base);
          // Slot by slot: the lanes' r-th slots, a scan over the lanes each.
          std::uint32_t placed = std::uint32_t(base);
          for (std::uint32_t r = 0; r < run; ++r) {
            std::uint32_t count = 0;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, lanes),
                [&](int e, std::uint32_t& n) { n += live_bits(mine + e) >> r & 1u; }, count);
            if (count == 0) continue;
            Kokkos::parallel_scan(
                Kokkos::ThreadVectorRange(team, lanes), [&](int e, std::uint32_t& at, bool final) {
                  const std::uint32_t bit = live_bits(mine + e) >> r & 1u;
                  if (final && bit != 0) {
                    int i, group;
                    unit_of(slot_of(e, r), i, group);
                    live(placed + at) =
                        std::uint32_t(i) * std::uint32_t(g.unit_columns) + std::uint32_t(group);
                  }
                  at += bit;
                });
            placed += count;
          }
        });
      });
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

// The adaptive switch, decided on the device from live_units' totals: true when more than
// `windows` windows are left after the bounds, and the fused full search runs instead of the
// unit refinement. Nothing waits for the host between the steps.
template <class Exec>
struct FullSearchSwitch {
  LiveTotalsView<Exec> totals;
  std::uint64_t windows;
  KOKKOS_INLINE_FUNCTION bool operator()() const { return (totals(0) >> 32) > windows; }
};

// A team thread per live unit, its vector lanes (kPruneUnitLanes on a device) each summing every
// lane-th row of a strip, strip by strip; after each strip the lanes' sums are reduced, a window
// whose SAD so far, a lower bound of its SAD, exceeds E_guess leaves (equal stays: ties), the
// unit with its last window; the last strip's survivors lower E_guess. Strips are taken in
// strip_order; alive(u, n) receives the windows of live unit u still in after the n + 1 first.
// The live count is read on the device (totals(0), from live_units), so the grid cannot be
// sized by it: about one wave of teams takes the units a team's worth (a batch) at a time, team
// r batch r first, as a grid sized for the count would (every batch from a counter instead
// measured slower: perf/notes/sad-pruned.md), then the next free batch from cursor(0) (zeroed by
// seed_guess). Nothing runs when full_search() holds. With FoundKeys (the top-k search, which
// never lowers E_guess), every survivor's key is appended instead of lowering E_guess.
template <class Guess>
KOKKOS_INLINE_FUNCTION void take_unit(const LowerGuess&, const Guess& guess, std::uint32_t alive,
                                      const std::uint32_t (&sad)[kPruneUnitWindows],
                                      std::size_t first) {
  std::uint64_t key = kNoSadKey;
  for (int p = 0; p < kPruneUnitWindows; ++p) {
    if (alive & (1u << p))
      key = sad_min(key, sad_key(std::int32_t(sad[p]), std::uint32_t(first + p)));
  }
  Kokkos::atomic_fetch_min(&guess(0), Key(key));
}
template <class Exec, class Guess>
KOKKOS_INLINE_FUNCTION void take_unit(const FoundKeys<Exec>& found, const Guess&,
                                      std::uint32_t alive,
                                      const std::uint32_t (&sad)[kPruneUnitWindows],
                                      std::size_t first) {
  for (int p = 0; p < kPruneUnitWindows; ++p) {
    if (alive & (1u << p)) take_key(found, sad_key(std::int32_t(sad[p]), std::uint32_t(first + p)));
  }
}
// Host spaces: live unit `unit` refined window by window, each window's strips in strip_order in
// packed-SAD byte vectors, its bound the exact SADs of the strips done plus the other strips'
// terms (the native refinement's), against E_guess read before and after each strip.
template <Isa kIsa, class Exec, class Survivors>
KOKKOS_INLINE_FUNCTION void refine_unit_on_host(
    const Geometry& g, std::uint32_t unit, const StripSums<Exec>& sums,
    const WordsView<Exec>& target, const WordsView<Exec>& query, const OrderView<Exec>& order,
    const U32View<Exec>& bounds, const KeysView<Exec>& guess, std::uint32_t centre,
    std::uint8_t* counts, const Survivors& survivors) {
  const int i = int(unit / std::uint32_t(g.unit_columns));
  const int j0 = int(unit % std::uint32_t(g.unit_columns)) * kPruneUnitWindows;
  const std::size_t first = std::size_t(i) * g.s.map_width + j0;
  const auto limit_now = [&] { return std::uint32_t(Kokkos::volatile_load(guess.data()) >> 32); };
  std::uint32_t alive = windows_within(g, bounds, i, j0, limit_now()) &
                        ~polish_settled_windows(centre, g.s.map_width, i, j0);
  std::uint32_t bound[kPruneUnitWindows];
  for (int p = 0; p < kPruneUnitWindows; ++p) bound[p] = alive >> p & 1u ? bounds(first + p) : 0u;
  const std::size_t target_pitch = std::size_t(g.target_pitch_words) * 4;
  const std::size_t query_pitch = std::size_t(g.query_words) * 4;
  const int strips = g.strips.count;
  for (int n = 0; n < strips; ++n) {
    const int k = order(n), top = g.strips.begin(k), rows = g.strips.end(k) - top;
    const std::uint8_t* target_rows = row_bytes(target.data(), g.target_pitch_words, i + top) + j0;
    const std::uint8_t* query_rows = row_bytes(query.data(), g.query_words, top);
    for (int p = 0; p < kPruneUnitWindows; ++p) {
      if (!(alive >> p & 1u)) continue;
      if (bound[p] <= limit_now()) {
        bound[p] += rows_sad<kIsa>(target_rows + p, target_pitch, query_rows, query_pitch, rows,
                                   g.s.query_width) -
                    sums.term(g.strips, g.s.query_width, i, j0 + p, k);
        if (bound[p] <= limit_now()) continue;
      }
      alive &= ~(1u << p);
    }
    counts[n] = std::uint8_t(bit_count(alive));
    if (alive == 0) {
      for (int rest = n + 1; rest < strips; ++rest) counts[rest] = 0;
      return;
    }
  }
  take_unit(survivors, guess, alive, bound, first);
}

template <class Exec, Isa kIsa, class Launch, class Survivors = LowerGuess>
void refine_units(Launch& launch, const Geometry& g, const U32View<Exec>& live,
                  const FullSearchSwitch<Exec>& full_search, const U32View<Exec>& cursor,
                  const WordsView<Exec>& target, const WordsView<Exec>& query,
                  const OrderView<Exec>& order, const U32View<Exec>& bounds,
                  const KeysView<Exec>& guess, const KeysView<Exec>& centre,
                  const typename OutputBuffer<std::uint8_t, Exec>::View& alive_after,
                  const StripSums<Exec>& strip_sums, const Survivors& survivors = {}) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  const int strips = g.strips.count;
  if constexpr (kHostSchedule<Exec>) {
    // A unit at a time per thread, a few threads' worth of teams each taking the next from
    // cursor(0) after its first.
    launch.parallel_for(
        "pruned_refine_units",
        Policy(int(std::min<long long>(4 * Exec().concurrency(), g.units())), 1),
        KOKKOS_LAMBDA(const Team& team) {
          if (full_search()) return;
          const std::int64_t count = std::uint32_t(full_search.totals(0));  // live units
          const std::uint32_t centre_index = std::uint32_t(centre(0));
          for (std::int64_t u = team.league_rank(); u < count;
               u = std::int64_t(team.league_size()) + Kokkos::atomic_fetch_add(&cursor(0), 1u)) {
            refine_unit_on_host<kIsa>(g, live(u), strip_sums, target, query, order, bounds, guess,
                                      centre_index, alive_after.data() + std::size_t(u) * strips,
                                      survivors);
          }
        });
  } else {
    const int columns = g.unit_columns;
    const int units_per_team = kDeviceUnitsPerTeam;
    const int lanes = kPruneUnitLanes;
    const long long teams =
        std::min<long long>(portable::resident_teams<Exec>(units_per_team * lanes, 0),
                            (g.units() + units_per_team - 1) / units_per_team);
    launch.parallel_for(
        "pruned_refine_units", Policy(int(teams), units_per_team, lanes),
        KOKKOS_LAMBDA(const Team& team) {
          if (full_search()) return;
          const std::int64_t count = std::uint32_t(full_search.totals(0));  // live units
          for (std::uint32_t batch = team.league_rank();;) {
            const std::int64_t first_unit = std::int64_t(batch) * units_per_team;
            if (first_unit >= count) return;
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, units_per_team), [&](int t) {
              const std::int64_t u = first_unit + t;
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
                    [&](std::uint64_t& value) { value = Kokkos::volatile_load(guess.data()); },
                    seen);
                return std::uint32_t(seen >> 32);
              };
              std::uint32_t alive =
                  windows_within(g, bounds, i, j0, limit_now()) &
                  ~polish_settled_windows(std::uint32_t(centre(0)), g.s.map_width, i, j0);
              UnitSums sad;
              const std::uint32_t* row =
                  target.data() + std::size_t(i) * g.target_pitch_words + group * kUnitWords;
              std::uint8_t* counts = alive_after.data() + std::size_t(u) * strips;
              for (int n = 0; n < strips; ++n) {
                const int k = order(n);
                UnitSums strip;
                Kokkos::parallel_reduce(
                    Kokkos::ThreadVectorRange(team, g.strips.begin(k), g.strips.end(k)),
                    [&](int y, UnitSums& sums) {
                      accumulate_sad_row<kUnitWords, kIsa>(
                          RowWords{row + std::size_t(y) * g.target_pitch_words},
                          QueryWords{query.data() + std::size_t(y) * g.query_words},
                          g.s.query_width, sums.v);
                    },
                    strip);
                sad += strip;
                const std::uint32_t limit = limit_now();
                for (int p = 0; p < kPruneUnitWindows; ++p) {
                  if (sad.v[p] > limit) alive &= ~(1u << p);
                }
                Kokkos::single(Kokkos::PerThread(team),
                               [&] { counts[n] = std::uint8_t(bit_count(alive)); });
                if (alive == 0) {
                  Kokkos::single(Kokkos::PerThread(team), [&] {
                    for (int rest = n + 1; rest < strips; ++rest) counts[rest] = 0;
                  });
                  return;
                }
              }
              Kokkos::single(Kokkos::PerThread(team),
                             [&] { take_unit(survivors, guess, alive, sad.v, first); });
            });
            Kokkos::single(
                Kokkos::PerTeam(team),
                [&](std::uint32_t& next) {
                  next =
                      std::uint32_t(team.league_size()) + Kokkos::atomic_fetch_add(&cursor(0), 1u);
                },
                batch);
          }
        });
  }
}

// The top-k search past the switch: the key of every window of the full search's map within the
// limit guess(0) appended to `found`.
template <class Exec>
void map_keys_within(const typename OutputBuffer<std::int32_t, Exec>::View& map,
                     const KeysView<Exec>& guess, const FoundKeys<Exec>& found) {
  Kokkos::parallel_for(
      "pruned_map_keys", Kokkos::RangePolicy<Exec>(0, map.size()), KOKKOS_LAMBDA(std::size_t i) {
        const Key key = sad_key(map(i), std::uint32_t(i));
        if (key <= guess(0)) take_key(found, key);
      });
}

// kGraph: the run's kernels are built once into a Kokkos graph and submitted whole each run
// (portable::GraphLaunch), instead of launched one by one.
template <class Exec, Isa kIsa, bool kGraph>
class PrunedRunner final : public Runner<SadPruned> {
 public:
  explicit PrunedRunner(const SadInput& input)
      : shape_(validate_sad_pruned_input(input)),
        g_(geometry<Exec>(shape_)),
        strip_sums_(query_strip_sums(input.query, g_.strips)),
        query_strips_(strip_sums_.data(), strip_sums_.size(), "pruned query strips"),
        order_(strip_order(input.query, g_.strips)),
        order_view_(order_.data(), order_.size(), "pruned strip order"),
        integral_(kHostSchedule<Exec> ? integral_image(input.target)
                                      : std::vector<std::uint32_t>{}),
        integral_view_(integral_.data(), integral_.size(), "pruned summed-area table"),
        bounds_(shape_.map_size(), "pruned bounds"),
        live_(std::size_t(g_.units()), "pruned live units"),
        live_totals_(1, "pruned live-unit totals"),
        cursor_(1, "pruned unit cursor"),
        candidates_(std::size_t(std::max(1, g_.candidates())), "pruned candidates"),
        best_candidate_(1, "pruned best candidate"),
        guess_(1, "pruned guess"),
        centre_(1, "pruned polish centre"),
        settled_(1, "pruned settled windows"),
        alive_after_(std::size_t(g_.units()) * g_.strips.count, "pruned alive after strips"),
        full_search_(input, shape_),
        top_k_(input.params.top_k) {
    // seed_guess resets it after each run.
    Kokkos::deep_copy(best_candidate_.view(), kNoSadKey);
    if (top_k_ > 1) top_.emplace(g_);
    if constexpr (kGraph) {
      if (top_) return;  // the top-k search waits for the host between its steps
      graph_ = Kokkos::Experimental::create_graph(Exec{}, [&](const auto& root) {
        portable::GraphLaunch<Exec> launch(root);
        enqueue_run(launch);
      });
    }
  }

  void poison(std::uint8_t byte) override {
    guess_.poison(byte);
    live_totals_.poison(byte);
    alive_after_.poison(byte);
    if (top_) top_->keys.assign(std::size_t(top_k_), ~Key(0) / 0xFF * byte);
  }
  void upload() override {
    query_strips_.upload();
    order_view_.upload();
    integral_view_.upload();
    full_search_.upload();
  }
  void compute() override {
    if (top_) {
      top_k_search();
    } else if constexpr (kGraph) {
      graph_->submit();
    } else {
      portable::StreamLaunch launch;
      enqueue_run(launch);
    }
  }
  void sync() override { Exec{}.fence(); }
  void download(SadPrunedResult& out) override {
    LiveTotals totals = 0;
    live_totals_.download(&totals);
    out.top.clear();
    if (top_) {
      for (const Key key : top_->keys) out.top.push_back(match_from_key(key, shape_.map_width));
      out.best = out.top.front();  // a map has one position at least
    } else {
      Key best_key = kNoSadKey;
      guess_.download(&best_key);
      out.best = match_from_key(best_key, shape_.map_width);
    }
    out.stats = PruneStats{};
    out.stats.windows = shape_.map_size();
    out.stats.after_bounds = totals >> 32;
    out.stats.full_search = out.stats.after_bounds > switch_windows();
    if (out.stats.full_search) return;
    const int strips = g_.strips.count;
    const std::uint32_t live_count = std::uint32_t(totals);
    std::vector<std::uint8_t> alive(alive_after_.view().size());
    alive_after_.download(alive.data());
    // The settled windows were refined by the polish step, before the strip rounds: counted in
    // each.
    LiveTotals settled = 0;
    settled_.download(&settled);
    out.stats.after_strip.assign(std::size_t(strips), settled);
    for (std::size_t u = 0; u < live_count; ++u) {
      for (int n = 0; n < strips; ++n) out.stats.after_strip[n] += alive[u * strips + n];
    }
  }

 private:
  // The adaptive switch: the fused full search runs when more windows than this are left after
  // the bounds.
  std::uint64_t switch_windows() const {
    return std::uint64_t(kFullSearchFraction * double(shape_.map_size()));
  }

  // Every run's first steps: the strip bounds with the tiles' candidates, then the seed.
  template <class Launch>
  void enqueue_seed(Launch& launch) const {
    const auto target = full_search_.target.view();
    strip_bounds<Exec, kIsa>(launch, g_, target, strip_sums(), bounds_.view(), candidates_.view(),
                             best_candidate_.view());
    seed_guess<Exec, kIsa>(launch, g_, best_candidate_.view(), target, full_search_.query.view(),
                           guess_.view(), centre_.view(), live_totals_.view(), settled_.view(),
                           cursor_.view());
  }
  StripSums<Exec> strip_sums() const {
    return {integral_view_.view(), query_strips_.view(), std::size_t(shape_.target_width) + 1};
  }
  FirstWindows<Exec> first_windows() const {
    return {candidates_.view(), centre_.view(), g_.candidates(), shape_.map_width,
            shape_.map_height};
  }

  // A run's kernels, in order.
  template <class Launch>
  void enqueue_run(Launch& launch) const {
    const auto guess = guess_.view();
    const auto target = full_search_.target.view();
    const auto query = full_search_.query.view();
    enqueue_seed(launch);
    refine_windows<Exec, kIsa>(launch, g_, first_windows(), g_.first_windows(), g_.first_threads,
                               target, query, bounds_.view(), guess);
    live_units<Exec>(launch, g_, bounds_.view(), candidates_.view(), guess, centre_.view(),
                     live_.view(), live_totals_.view(), settled_.view());
    const FullSearchSwitch<Exec> full_search{live_totals_.view(), switch_windows()};
    // The unit refinement and the full search exclude each other (each gated on the switch) and
    // only lower E_guess: the search needs live_units' count alone, so in a graph whichever of
    // the two is skipped returns beside the other instead of after it.
    auto beside = launch.branch();
    refine_units<Exec, kIsa>(launch, g_, live_.view(), full_search, cursor_.view(), target, query,
                             order_view_.view(), bounds_.view(), guess, centre_.view(),
                             alive_after_.view(), strip_sums());
    portable_sad::team_sad_gated(beside, full_search_.tile(), full_search, guess);
  }

  // The top_k best positions without separation (the top_k smallest keys), host-driven: the
  // candidates' and the seed's neighbourhood's exact keys give a limit, the top_k-th smallest of
  // them, that at least top_k windows meet; every other window whose key is within it has a bound
  // within it too, so live_units and the unit refinement, run against that fixed limit (E_guess
  // never lowered), collect all of them. When more windows than the switch allows are left after
  // the bounds, the full search writes the map and the keys within the limit are taken from it.
  // The host merges the first windows' keys with the collected ones (a partial sort: tens of
  // thousands are collected at σ 70, whose whole sort cost more than the kernels).
  void top_k_search() {
    TopK& top = *top_;
    const std::size_t k = std::size_t(top_k_);
    portable::StreamLaunch launch;
    const auto guess = guess_.view();
    const auto target = full_search_.target.view();
    const auto query = full_search_.query.view();
    enqueue_seed(launch);
    refine_windows<Exec, kIsa>(launch, g_, first_windows(), g_.first_windows(), g_.first_threads,
                               target, query, bounds_.view(), guess,
                               FirstKeys<Exec>{top.first.view()});
    std::vector<Key> first(std::size_t(g_.first_windows()));
    top.first.download(first.data());
    const Key limit = top_k_limit(first, k);
    Kokkos::deep_copy(Exec{}, guess, limit);
    live_units<Exec>(launch, g_, bounds_.view(), candidates_.view(), guess, centre_.view(),
                     live_.view(), live_totals_.view(), settled_.view());
    LiveTotals totals = 0;
    live_totals_.download(&totals);
    const std::uint64_t windows = totals >> 32;  // room for every key within the limit
    if (top.found.view().size() < windows)
      top.found = OutputBuffer<Key, Exec>(windows, "top-k keys");
    Kokkos::deep_copy(Exec{}, top.found_count.view(), 0u);
    const FoundKeys<Exec> found{top.found.view(), top.found_count.view()};
    if (windows > switch_windows()) {
      if (top.map.view().size() < shape_.map_size())
        top.map = OutputBuffer<std::int32_t, Exec>(shape_.map_size(), "top-k map");
      portable_sad::team_sad(
          portable_sad::TileSad<Exec, true, kIsa>{full_search_.g, target, query, top.map.view()});
      map_keys_within<Exec>(top.map.view(), guess, found);
    } else {
      refine_units<Exec, kIsa>(launch, g_, live_.view(),
                               FullSearchSwitch<Exec>{live_totals_.view(), switch_windows()},
                               cursor_.view(), target, query, order_view_.view(), bounds_.view(),
                               guess, centre_.view(), alive_after_.view(), strip_sums(), found);
    }
    std::uint32_t count = 0;
    top.found_count.download(&count);
    std::vector<Key> collected(count);
    Kokkos::deep_copy(
        portable::HostView<Key>(collected.data(), count),
        Kokkos::subview(top.found.view(), std::make_pair(std::size_t(0), std::size_t(count))));
    // Each list is free of copies (a window's unit is listed once); windows in both merge.
    const std::size_t kept = std::min(k, collected.size());
    std::partial_sort(collected.begin(), collected.begin() + kept, collected.end());
    top.keys.clear();
    std::set_union(first.begin(), first.begin() + std::min(k, first.size()), collected.begin(),
                   collected.begin() + kept, std::back_inserter(top.keys));
    top.keys.resize(std::min(k, top.keys.size()));
  }

  // What the top-k search keeps between runs.
  struct TopK {
    explicit TopK(const Geometry& g)
        : first(std::size_t(g.first_windows()), "top-k first keys"),
          found(1, "top-k keys"),
          found_count(1, "top-k key count"),
          map(1, "top-k map") {}
    OutputBuffer<Key, Exec> first, found;
    OutputBuffer<std::uint32_t, Exec> found_count;
    OutputBuffer<std::int32_t, Exec> map;  // the full search's, past the switch (sized then)
    std::vector<Key> keys;                 // the result: the top_k smallest, in order
  };

  SadShape shape_;
  Geometry g_;
  std::vector<std::uint32_t> strip_sums_;
  InputBuffer<std::uint32_t, Exec> query_strips_;
  std::vector<int> order_;
  InputBuffer<int, Exec> order_view_;
  std::vector<std::uint32_t> integral_;  // host spaces: the target's summed-area table
  InputBuffer<std::uint32_t, Exec> integral_view_;
  OutputBuffer<std::uint32_t, Exec> bounds_, live_;
  OutputBuffer<LiveTotals, Exec> live_totals_;
  OutputBuffer<std::uint32_t, Exec> cursor_;
  OutputBuffer<Key, Exec> candidates_, best_candidate_, guess_, centre_;
  OutputBuffer<LiveTotals, Exec> settled_;
  OutputBuffer<std::uint8_t, Exec> alive_after_;
  portable_sad::TeamMethod<Exec, false, kIsa> full_search_;
  int top_k_;
  std::optional<TopK> top_;                                 // top_k above 1
  std::optional<Kokkos::Experimental::Graph<Exec>> graph_;  // kGraph: the run, built once
};

}  // namespace kbench::portable_pruned

namespace kbench {

void register_sad_pruned_portable(VariantList<SadPruned>& list) {
  using portable::backend_of;
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    const auto add = [&](auto isa, auto graph, const char* name, int rank) {
      constexpr Isa kIsa = decltype(isa)::value;
      using Runner = portable_pruned::PrunedRunner<Exec, kIsa, decltype(graph)::value>;
      list.push_back({std::string(name) + to_string(backend_of<Exec>()), Layer::portable,
                      backend_of<Exec>(), false, make_runner<Runner>,
                      [](const SadInput& input) {
                        const SadShape s = validate_sad_pruned_input(input);
                        return portable_sad::TeamMethod<Exec, false, kIsa>::fits(s);
                      },
                      rank, kIsa, false});
    };
    portable::for_each_isa([&](auto isa) {
      const bool tuned = decltype(isa)::value == Isa::tuned;
      // The graph first for the user tools: on CUDA it takes launch time off the launched form
      // (perf/notes/sad-pruned.md), on a host the same kernels run in the same order. The launched
      // form stays registered to show what the graph buys.
      add(isa, std::true_type{}, tuned ? "kokkos-pruned-graph-" : "kokkos-pruned-graph-plain-", 2);
      add(isa, std::false_type{}, tuned ? "kokkos-pruned-" : "kokkos-pruned-plain-", 1);
    });
  });
}

}  // namespace kbench
