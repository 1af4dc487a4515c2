// Native CUDA sad-pruned for sm_90 (cuda-pruned): the exact argmin of the SAD map found with
// bounds (kbench/sad_pruned.hpp). One run is seven kernels on the legacy default stream, with no
// round trip to the host: Tombari's strip bounds and a candidate per tile (bound_kernel), the
// seed and the other candidates (seed_kernel, refine_kernel), the seed's polish neighbourhood
// (refine_kernel), the live units (filter_kernel), their refinement strip by strip
// (unit_refine_kernel) and, gated on the device, full search instead. Steps 2–6 are programmatic
// dependent launches: a chain of short kernels whose launch latencies would otherwise add up.
// Exactness: E is always the key of a real window's exact SAD, and a window is dropped only when
// a lower bound of its key exceeds E. Each step, and why: see
// docs/sad-pruned.md#the-native-cuda-schedule
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "kbench/detail/sad_words.hpp"
#include "kbench/sad_pruned.hpp"
#include "native_cuda/cuda_support.hpp"
#include "native_cuda/sad_full_search.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;

using Key = unsigned long long;  // atomicMin's 64-bit type; holds a sad_key()
static_assert(sizeof(Key) == sizeof(std::uint64_t), "64-bit keys");

constexpr int kWarp = 32;
constexpr unsigned kAllLanes = 0xFFFFFFFFu;
static_assert(kPruneTileColumns == kWarp, "a bound block's lanes are its tile's columns");

// The run's device scalars (64-bit each), reset by the bound kernel.
constexpr int kBestSlot = 0;         // E
constexpr int kPolishSlot = 1;       // step 3's keys, merged into E by the unit refinement
constexpr int kWindowsLeftSlot = 2;  // windows left by the first bounds
constexpr int kLiveUnitsSlot = 3;    // units holding one of them
constexpr int kSettledSlot = 4;      // of those windows, the ones step 3 settled
constexpr int kFilterSlot = 5;       // the filter's limit (high word) and neighbourhood centre
constexpr int kAfterStripSlot = 6;   // S counters: windows alive after each strip
constexpr int kFixedSlots = 6;

// The full search runs when more than this fraction of the windows survive the first bounds:
// past about this fraction the unit refinement measured slower than full search on the H200
// (perf/notes/sad-pruned.md).
constexpr double kFullSearchFraction = 0.6;

// cuda::launch's after_previous for steps 2–6, each of which calls wait_for_previous_kernel()
// first: the dependent launches shorten a run (perf/notes/sad-pruned.md).
constexpr bool kAfterPrevious = true;

// Strips a run counts in shared memory, at most (queries up to 32768 rows).
constexpr int kMaxStrips = 2048;

__device__ __forceinline__ Key warp_min(Key key) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    key = sad_min(key, __shfl_xor_sync(kAllLanes, key, offset));
  }
  return key;
}

// --- 1. strip bounds ---------------------------------------------------------------------------

// A block of kBoundWarps warps walks down a tile of kWarp window columns through a segment of map
// rows, kChunkRows target rows (a chunk) at a time, sharing a ring of column prefixes in shared
// memory that holds two chunks: each lane sums a target row across the tile into its slot, lanes
// turn the chunk's columns into prefixes, and each warp takes some residues modulo kStripRows of
// the previous chunk's band of windows, a strip sum being the difference of two slots. A pass
// covers up to kMaxPassStrips strips; taller queries take several passes that add into the bound
// map. The walk in detail, and why one walk per segment: docs/sad-pruned.md#the-bound-pass
constexpr int kStripRows = kPruneStripRows;
constexpr int kMaxPassStrips = kPrunePassStrips;
constexpr int kBoundWarps = 4;
constexpr int kBoundThreads = kBoundWarps * kWarp;
constexpr int kChunkRows = kPruneChunkRows;  // a row a thread; also the candidates' tile rows
static_assert(kChunkRows == kBoundThreads, "a row a thread");
constexpr int kRingSlots = 2 * kChunkRows;
constexpr int kRingMask = kRingSlots - 1;
// Words per ring slot, odd: a lane writing its row's 32 columns and a lane reading its column of
// 32 rows both hit 32 different banks.
constexpr int kRingPitch = kWarp + 1;
static_assert(kChunkRows % kStripRows == 0 && kWarp % kStripRows == 0, "whole strip blocks");
static_assert((kRingSlots & kRingMask) == 0, "a power of two");
// A band's windows by residue modulo kStripRows: kBandBlocks windows each, which read
// kBandReads slots a strip apart; kWarpResidues residues a warp.
constexpr int kBandBlocks = kChunkRows / kStripRows;
template <int kStrips>
constexpr int kBandReads = kBandBlocks + kStrips;
constexpr int kWarpResidues = kStripRows / kBoundWarps;
static_assert(kStripRows % kBoundWarps == 0, "whole residues a warp");

struct BoundArgs {
  const std::uint32_t* target;  // SadFullSearch's packed rows
  int pitch_words;
  SadShape s;
  StripLayout strips;
  int first_strip;                  // this pass: strips first_strip .. + the kernel's kStrips − 1
  int segment_rows;                 // map rows a block walks, whole chunks
  bool first_pass, last_pass;       // the first writes the bound map, the last its candidates
  const std::uint32_t* strip_sums;  // x_k
  std::uint32_t* bounds;            // map-sized
  Key* candidates;                  // one per band of kChunkRows map rows and tile of the last pass
  Key* scalars;                     // reset by the first pass
  int scalar_count;
};

__device__ __forceinline__ std::uint32_t word_of(const uint4& words, int w) {
  return w == 0 ? words.x : w == 1 ? words.y : w == 2 ? words.z : words.w;
}

// The byte sum of 16 bytes, added to acc.
__device__ __forceinline__ std::uint32_t sad4x4(const uint4& words, std::uint32_t acc) {
  return sad4(words.w, 0u, sad4(words.z, 0u, sad4(words.y, 0u, sad4(words.x, 0u, acc))));
}

// Target row t: H(t, j0 + j) for j < kWarp into slot[j]. Rows outside the target (the ends of a
// walk, whose sums no window uses) give zeros. A lane reads its own row: 16-byte loads where the
// query width allows, each of them sixteen bytes of 32 rows.
__device__ __forceinline__ void sum_row(const BoundArgs& a, int t, int j0, std::uint32_t* slot) {
  constexpr int kQuads = kWarp / 16;  // 16-byte words holding the bytes that leave
  const int c = a.s.query_width;
  uint4 leaving[kQuads] = {}, entering[kQuads] = {};
  std::uint32_t sum = 0;
  if (unsigned(t) < unsigned(a.s.target_height)) {
    // Rows are 16-byte aligned and j0 a multiple of 32 bytes.
    const std::uint32_t* row = a.target + std::size_t(t) * a.pitch_words + j0 / 4;
    const uint4* row4 = reinterpret_cast<const uint4*>(row);
    const int quads = c / 16;
#pragma unroll
    for (int v = 0; v < kQuads; ++v) {
      leaving[v] = __ldg(row4 + v);
      if (v < quads) sum = sad4x4(leaving[v], sum);
    }
    // Σ of the first c bytes: 16 at a time, then words, then the tail.
    for (int v = kQuads; v < quads; ++v) sum = sad4x4(__ldg(row4 + v), sum);
    for (int w = 4 * quads; w < c / 4; ++w) sum = sad4(__ldg(row + w), 0u, sum);
    const int shift = 8 * (c % 4);
    if (shift) sum = sad4(__ldg(row + c / 4) & ((1u << shift) - 1u), 0u, sum);
    // The bytes c .. c + 31 from the row's start: aligned loads when c is a multiple of 16,
    // else words shifted into place (the word after them only when they straddle one).
    if (c % 16 == 0) {
#pragma unroll
      for (int v = 0; v < kQuads; ++v) entering[v] = __ldg(row4 + quads + v);
    } else {
      const std::uint32_t* from = row + c / 4;
      std::uint32_t raw[4 * kQuads + 1];
#pragma unroll
      for (int w = 0; w < 4 * kQuads; ++w) raw[w] = __ldg(from + w);
      raw[4 * kQuads] = shift ? __ldg(from + 4 * kQuads) : 0u;
#pragma unroll
      for (int v = 0; v < kQuads; ++v) {
        entering[v] = make_uint4(__funnelshift_r(raw[4 * v], raw[4 * v + 1], shift),
                                 __funnelshift_r(raw[4 * v + 1], raw[4 * v + 2], shift),
                                 __funnelshift_r(raw[4 * v + 2], raw[4 * v + 3], shift),
                                 __funnelshift_r(raw[4 * v + 3], raw[4 * v + 4], shift));
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kWarp; ++j) {
    slot[j] = sum;
    sum += byte_of<Isa::tuned>(word_of(entering[j / 16], j / 4 % 4), j % 4) -
           byte_of<Isa::tuned>(word_of(leaving[j / 16], j / 4 % 4), j % 4);
  }
}

// kStrips: the pass's strips (a template parameter, so that the ring reads and strip terms of a
// window are straight-line code).
template <int kStrips>
__global__ void __launch_bounds__(kBoundThreads) bound_kernel(BoundArgs a) {
  __shared__ std::uint32_t ring[kRingSlots * kRingPitch];
  __shared__ std::uint32_t warp_totals[kBoundWarps][kWarp];
  __shared__ Key warp_best[kBoundWarps];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (a.first_pass && blockIdx.x == 0 && blockIdx.y == 0) {
    // No kernel before this one reads the run's scalars; the refine kernels after it do.
    for (int e = threadIdx.x; e < a.scalar_count; e += kBoundThreads) {
      a.scalars[e] = e == kBestSlot || e == kPolishSlot ? Key(kNoSadKey) : Key(0);
    }
  }
  const int j0 = blockIdx.x * kWarp, j = j0 + lane;
  const int i_begin = blockIdx.y * a.segment_rows;
  const int windows = min(a.s.map_height - i_begin, a.segment_rows);  // rows of this segment
  // The pass: strips first_strip + k, k < kStrips, with x_k; its rows span query rows
  // top .. top + span − 1.
  const int top = a.strips.begin(a.first_strip);
  const int span = a.strips.end(a.first_strip + kStrips - 1) - top;
  std::uint32_t x[kStrips];
#pragma unroll
  for (int k = 0; k < kStrips; ++k) x[k] = __ldg(a.strip_sums + a.first_strip + k);
  // Slot s holds the prefix through target row first_row + s. Window i_begin + ρ reads the slots
  // ρ + lead + kStripRows·k, k < kStrips, and ρ + lead + span, the last entering in the chunk
  // after ρ's band (lead + span ≤ kChunkRows); lead is whole strips, so a block of kStripRows
  // windows starts at a whole strip.
  const int lead = kChunkRows - (span + kStripRows - 1) / kStripRows * kStripRows;
  const int first_row = i_begin + top - 1 - lead;
  std::uint32_t* const column = ring + lane;
  const int chunks = (windows + kChunkRows - 1) / kChunkRows + 1;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    const int s0 = chunk * kChunkRows, my_first = s0 + warp * kWarp;
    // Rows: this thread's row sums into its slot.
    sum_row(a, first_row + my_first + lane, j0,
            ring + ((my_first + lane) & kRingMask) * kRingPitch);
    __syncthreads();
    // Prefix: the column total of each warp's 32 slots, then each warp's running prefix from
    // the previous chunk's last and the earlier warps' totals.
    std::uint32_t total = 0;
#pragma unroll
    for (int r = 0; r < kWarp; ++r) total += column[((my_first + r) & kRingMask) * kRingPitch];
    warp_totals[warp][lane] = total;
    __syncthreads();
    std::uint32_t prefix = chunk > 0 ? column[((s0 - 1) & kRingMask) * kRingPitch] : 0u;
    for (int w = 0; w < warp; ++w) prefix += warp_totals[w][lane];
#pragma unroll
    for (int r = 0; r < kWarp; ++r) {
      const int slot = (my_first + r) & kRingMask;
      prefix += column[slot * kRingPitch];
      column[slot * kRingPitch] = prefix;
    }
    __syncthreads();
    if (chunk == 0) continue;  // its slots precede the segment's first window
    // Windows of the previous chunk's band, by residue modulo kStripRows: windows kStripRows rows
    // apart share all their slots but one, so a lane reads the slots of its residue once,
    // kBandBlocks + kStrips of them, for kBandBlocks windows (two reads a window instead of
    // kStrips + 1). Warp w takes residues kWarpResidues·w .. + kWarpResidues − 1.
    const int band_first = (chunk - 1) * kChunkRows;
    const int first_residue = warp * kWarpResidues;
    // The residue's slots m (m < kBandReads) lie at row_of[m] + residue · kRingPitch: whole strips
    // plus less than a strip, which never wraps.
    const std::uint32_t* row_of[kBandReads<kStrips>];
#pragma unroll
    for (int m = 0; m < kBandReads<kStrips>; ++m) {
      row_of[m] = column +
                  (((band_first + lead + kStripRows * m) & kRingMask) + first_residue) * kRingPitch;
    }
    // Whole strips: the last strip's end is slot m + kStrips too; else it is read on its own.
    const bool whole_strips = span == kStrips * kStripRows;
    Key best = kNoSadKey;
#pragma unroll
    for (int r = 0; r < kWarpResidues; ++r) {
      const int residue = first_residue + r;
      std::uint32_t prefix[kBandReads<kStrips>];
#pragma unroll
      for (int m = 0; m < kBandReads<kStrips>; ++m) prefix[m] = row_of[m][r * kRingPitch];
      std::uint32_t* bounds =
          a.bounds + std::size_t(i_begin + band_first + residue) * a.s.map_width + j;
#pragma unroll
      for (int m = 0; m < kBandBlocks; ++m) {
        const int rho = band_first + kStripRows * m + residue;
        std::uint32_t bound = 0;
#pragma unroll
        for (int k = 0; k < kStrips; ++k) {
          std::uint32_t above = prefix[m + k + 1];
          if (k + 1 == kStrips && !whole_strips) {
            above = column[((rho + lead + span) & kRingMask) * kRingPitch];
          }
          bound += strip_term(above - prefix[m + k], x[k]);
        }
        if (rho < windows && j < a.s.map_width) {
          if (!a.first_pass) bound += *bounds;
          *bounds = bound;
          best = sad_min(best, sad_key(std::int32_t(bound),
                                       std::uint32_t(i_begin + rho) * std::uint32_t(a.s.map_width) +
                                           std::uint32_t(j)));
        }
        bounds += std::size_t(kStripRows) * a.s.map_width;
      }
    }
    if (a.last_pass) {
      best = warp_min(best);
      if (lane == 0) warp_best[warp] = best;
    }
    __syncthreads();  // the band's reads are done before the next chunk's rows overwrite them
    if (a.last_pass && threadIdx.x == 0) {
      Key best = warp_best[0];
#pragma unroll
      for (int w = 1; w < kBoundWarps; ++w) best = sad_min(best, warp_best[w]);
      a.candidates[prune_tile_of(i_begin + band_first, j0, gridDim.x)] = best;
    }
  }
}

using BoundKernel = void (*)(BoundArgs);
// bound_kernel<k + 1>: a pass of k + 1 strips.
constexpr BoundKernel kBoundKernels[kMaxPassStrips] = {
    bound_kernel<1>, bound_kernel<2>, bound_kernel<3>, bound_kernel<4>,
    bound_kernel<5>, bound_kernel<6>, bound_kernel<7>, bound_kernel<8>};
static_assert(kMaxPassStrips == 8, "one kernel per pass size");

// --- 2, 3, 5. refinement -------------------------------------------------------------------------

constexpr int kRefineThreads = 256;
// Elements a refining thread loads at once (a 128 × 128 query is 16 a thread of 256).
constexpr int kRefineLoads = 4;

// What every refinement reads (steps 2, 3 and 5).
struct PackedSearch {
  const std::uint32_t* target;  // SadFullSearch's packed rows
  int pitch_words;
  const std::uint32_t* query;  // packed query rows
  int query_words;
  SadShape s;
  StripLayout strips;
};

struct RefineArgs : PackedSearch {
  Key* best;         // lowered by every finished window
  const Key* other;  // another bound on the minimum key, or null
};

// What a block shares while it sums a window: one slot per warp, and the limit.
template <int kThreads>
struct BlockShared {
  std::uint32_t warp_sads[kThreads / kWarp];
  Key limit;
};

__device__ __forceinline__ Key load_key(const Key* key) {
  return *static_cast<const volatile Key*>(key);
}

// The smallest key known now: thread 0 reads, the block agrees (so it leaves as one).
__device__ __forceinline__ Key current_limit(const RefineArgs& a, BlockShared<kRefineThreads>& sh) {
  if (threadIdx.x == 0) {
    Key limit = load_key(a.best);
    if (a.other) limit = sad_min(limit, load_key(a.other));
    sh.limit = limit;
  }
  __syncthreads();
  const Key limit = sh.limit;
  __syncthreads();  // the slot is written again by the next call
  return limit;
}

// The exact SAD of the window at map index `index`, summed by a whole block of kThreads threads
// in one reduction, on every thread: thread t takes the query's words t, t + kThreads, … (row
// after row), kLoads of them loaded before any is used (a thread issues in order: a load used at
// once would hold back the next one). Steps 2 and 3 refine a few thousand windows this way,
// without the strip-by-strip exits of step 5: a block reduction and a read of E after every
// strip made each window a chain of eight round trips (perf/notes/sad-pruned.md).
template <int kThreads, int kLoads>
__device__ std::uint32_t block_window_sad(const PackedSearch& a, std::uint32_t index,
                                          BlockShared<kThreads>& sh) {
  const std::uint32_t i = index / std::uint32_t(a.s.map_width);
  const std::uint32_t j = index % std::uint32_t(a.s.map_width);
  const std::uint32_t* origin = a.target + std::size_t(i) * a.pitch_words + j / 4;
  const int shift = 8 * int(j % 4);
  const int last_word = a.query_words - 1;
  const std::uint32_t tail_mask = last_word_mask(a.s.query_width);
  const int elements = a.query_words * a.s.query_height;
  // Element e = row · query_words + word, walked without a division per element.
  int row = int(threadIdx.x) / a.query_words, word = int(threadIdx.x) % a.query_words;
  const int step_rows = kThreads / a.query_words, step_words = kThreads % a.query_words;
  std::uint32_t sad = 0;
  for (int first = threadIdx.x; first < elements; first += kLoads * kThreads) {
    std::uint32_t lo[kLoads], hi[kLoads], query_word[kLoads], mask[kLoads];
#pragma unroll
    for (int b = 0; b < kLoads; ++b) {
      lo[b] = hi[b] = query_word[b] = mask[b] = 0u;  // past the query: adds nothing
      const int e = first + b * kThreads;
      if (e < elements) {
        const std::uint32_t* t = origin + std::size_t(row) * a.pitch_words + word;
        lo[b] = __ldg(t);
        hi[b] = __ldg(t + 1);
        query_word[b] = __ldg(a.query + e);
        mask[b] = word == last_word ? tail_mask : ~0u;
        word += step_words;
        row += step_rows;
        if (word >= a.query_words) {
          word -= a.query_words;
          ++row;
        }
      }
    }
#pragma unroll
    for (int b = 0; b < kLoads; ++b) {
      sad = sad4(__funnelshift_r(lo[b], hi[b], shift) & mask[b], query_word[b] & mask[b], sad);
    }
  }
  sad = __reduce_add_sync(kAllLanes, sad);
  if (threadIdx.x % kWarp == 0) sh.warp_sads[threadIdx.x / kWarp] = sad;
  __syncthreads();
  std::uint32_t total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / kWarp; ++w) total += sh.warp_sads[w];
  __syncthreads();  // the slots are written again by the next call
  return total;
}

// The tiles' candidates (2).
struct CandidateList {
  const Key* keys;
  unsigned long long count;

  __device__ unsigned long long size() const { return count; }
  __device__ bool entry(unsigned long long e, const RefineArgs&, Key& key) const {
    key = keys[e];
    return true;
  }
};

// The windows around the centre key's window (3), with their bounds from the map.
struct Neighbourhood {
  const Key* centre;  // not written while the kernel runs
  const std::uint32_t* bounds;

  __device__ unsigned long long size() const { return kPrunePolishSide * kPrunePolishSide; }
  __device__ bool entry(unsigned long long e, const RefineArgs& a, Key& key) const {
    std::uint32_t index;
    // The centre's own SAD is already final.
    if (e == kPrunePolishCentre ||
        !polish_window(std::uint32_t(*centre), a.s.map_width, a.s.map_height, int(e), index)) {
      return false;
    }
    key = sad_key(std::int32_t(bounds[index]), index);
    return true;
  }
};

// The first E (2): one block finds the smallest candidate key and sums its window's whole SAD.
constexpr int kSeedThreads = 1024;
constexpr int kSeedLoads = 4;  // elements a thread loads before it uses any (128 × 128: all)

__global__ void __launch_bounds__(kSeedThreads)
    seed_kernel(PackedSearch a, const Key* candidates, unsigned long long count, Key* best) {
  cuda::wait_for_previous_kernel();
  __shared__ Key warp_keys[kSeedThreads / kWarp];
  __shared__ BlockShared<kSeedThreads> sh;
  Key key = kNoSadKey;
  for (unsigned long long e = threadIdx.x; e < count; e += kSeedThreads) {
    key = sad_min(key, __ldg(candidates + e));
  }
  key = warp_min(key);
  if (threadIdx.x % kWarp == 0) warp_keys[threadIdx.x / kWarp] = key;
  __syncthreads();
  key = kNoSadKey;
#pragma unroll
  for (int w = 0; w < kSeedThreads / kWarp; ++w) key = sad_min(key, warp_keys[w]);
  if (key == kNoSadKey) return;  // the whole block
  const std::uint32_t index = std::uint32_t(key);
  const std::uint32_t sad = block_window_sad<kSeedThreads, kSeedLoads>(a, index, sh);
  if (threadIdx.x == 0) atomicMin(best, sad_key(std::int32_t(sad), index));
}

// A block per entry of `source`, grid-stride; blocks past the entries return at once. Each window
// within E gets its exact SAD, which lowers E. The query is read through the read-only cache with
// the window's words: staging it in shared memory first (when it fits) cost a round trip and a
// barrier per block, which few windows per block do not repay (perf/notes/sad-pruned.md).
template <class Source>
__global__ void __launch_bounds__(kRefineThreads) refine_kernel(RefineArgs a, Source source) {
  cuda::wait_for_previous_kernel();
  __shared__ BlockShared<kRefineThreads> sh;
  const unsigned long long entries = source.size();
  if (blockIdx.x >= entries) return;  // the whole block: before any barrier
  for (unsigned long long e = blockIdx.x; e < entries; e += gridDim.x) {
    Key key;
    if (!source.entry(e, a, key)) continue;
    // Nor the window whose exact SAD the limit is already (the best candidate's, once step 2's
    // other candidates run).
    const Key limit = current_limit(a, sh);
    if (key > limit || std::uint32_t(key) == std::uint32_t(limit)) continue;
    const std::uint32_t index = std::uint32_t(key);
    const std::uint32_t sad = block_window_sad<kRefineThreads, kRefineLoads>(a, index, sh);
    if (threadIdx.x == 0) atomicMin(a.best, sad_key(std::int32_t(sad), index));
  }
}

// --- 4. filter ---------------------------------------------------------------------------------

// A unit: kPruneUnitWindows neighbouring windows of one map row, the positions one thread sums in
// step 5 with full search's row routine (SadFullSearch's rows are padded for reads of
// kFullSearchWords-word groups, which cover groups of kUnitWords).
constexpr int kUnitWords = kPruneUnitWindows / 4;
static_assert(kPruneUnitWindows % 4 == 0 && cuda::kFullSearchWords % kUnitWords == 0,
              "a unit's reads stay inside the padded rows");
constexpr int kFilterThreads = 256;

struct FilterArgs {
  const std::uint32_t* bounds;
  const Key* tile_minima;  // the bound pass's candidates: each tile's smallest key
  int column_tiles;
  SadShape s;
  int unit_columns;          // units per map row
  unsigned long long units;  // map_height · unit_columns
  const Key* best;           // E after step 2: the polish neighbourhood's centre
  const Key* polish;
  std::uint32_t* live;  // units with a window of bound ≤ min(E, polish) outside the settled ones
  Key* live_count;
  Key* windows_left;  // PruneStats::after_bounds
  Key* settled;       // the windows left that the polish neighbourhood holds
  Key* filter;        // kFilterSlot, for the unit refinement
};

// A thread per unit, grid-stride: each warp appends its live units in order with one atomicAdd;
// the block counts the windows left with one more. A unit of a tile whose smallest bound exceeds
// the limit (most of them at low noise) reads none of its bounds. E is not written while it runs
// (the unit refinement merges polish into it), so every block sees the same neighbourhood centre.
__global__ void __launch_bounds__(kFilterThreads) filter_kernel(FilterArgs a) {
  cuda::wait_for_previous_kernel();
  static_assert(kPruneUnitWindows < 32, "a unit's windows are bits of a word");
  __shared__ unsigned warp_windows[kFilterThreads / kWarp], warp_settled[kFilterThreads / kWarp];
  const int lane = threadIdx.x % kWarp;
  const Key centre_key = *a.best;
  const Key polish_key = *a.polish;
  const std::uint32_t limit = std::uint32_t(sad_min(centre_key, polish_key) >> 32);
  const std::uint32_t centre = std::uint32_t(centre_key);  // the key's low word: the window
  if (blockIdx.x == 0 && threadIdx.x == 0) *a.filter = (Key(limit) << 32) | centre;
  unsigned windows = 0, settled = 0;
  const unsigned long long stride = std::size_t(gridDim.x) * kFilterThreads;
  // The loop's bound depends on the warp's first unit only: the warp iterates as one.
  for (unsigned long long warp_first =
           std::size_t(blockIdx.x) * kFilterThreads + threadIdx.x - lane;
       warp_first < a.units; warp_first += stride) {
    const unsigned long long unit = warp_first + lane;
    unsigned inside = 0;
    if (unit < a.units) {
      // 32-bit division: units, fewer than the map's positions, fit (validate_sad_input).
      const int i = int(std::uint32_t(unit) / unsigned(a.unit_columns));
      const int j0 = int(std::uint32_t(unit) % unsigned(a.unit_columns)) * kPruneUnitWindows;
      const std::uint32_t* bound = a.bounds + std::size_t(i) * a.s.map_width + j0;
      const int n = min(kPruneUnitWindows, a.s.map_width - j0);
      const Key tile = __ldg(a.tile_minima + prune_tile_of(i, j0, a.column_tiles));
      if (std::uint32_t(tile >> 32) <= limit) {
        inside = unit_windows_within([&](int p) { return __ldcs(bound + p); }, n, limit);
      }
      const unsigned done = inside & polish_settled_windows(centre, a.s.map_width, i, j0);
      windows += __popc(inside);
      settled += __popc(done);
      inside &= ~done;
    }
    const unsigned live = __ballot_sync(kAllLanes, inside != 0);
    if (live == 0) continue;
    unsigned long long base = 0;
    if (lane == 0) base = atomicAdd(a.live_count, Key(__popc(live)));
    base = __shfl_sync(kAllLanes, base, 0);
    if (inside) a.live[base + __popc(live & ((1u << lane) - 1u))] = std::uint32_t(unit);
  }
  windows = __reduce_add_sync(kAllLanes, windows);
  settled = __reduce_add_sync(kAllLanes, settled);
  if (lane == 0) {
    warp_windows[threadIdx.x / kWarp] = windows;
    warp_settled[threadIdx.x / kWarp] = settled;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0, total_settled = 0;
    for (int w = 0; w < kFilterThreads / kWarp; ++w) {
      total += warp_windows[w];
      total_settled += warp_settled[w];
    }
    if (total > 0) atomicAdd(a.windows_left, Key(total));
    if (total_settled > 0) atomicAdd(a.settled, Key(total_settled));
  }
}

// --- 5. unit refinement ----------------------------------------------------------------------

constexpr int kUnitThreads = 128;

struct UnitArgs : PackedSearch {
  const int* order;  // strip_order: the strips are taken order[0], order[1], …
  int unit_columns;
  const std::uint32_t* bounds;
  const std::uint32_t* live;
  const Key* totals;                     // the run's scalars: the live units and the windows left
  unsigned long long full_search_above;  // more windows left: the full search runs instead
  Key* best;
  const Key* polish;  // merged into best here
  const Key* filter;  // the filter's limit and neighbourhood centre
  Key* after_strip;   // S counters
};

// Query words of one row through the read-only cache; every lane of a warp reads the same word
// at the same time (the units advance strip by strip together), a broadcast.
struct QueryRow {
  const std::uint32_t* __restrict__ words;
  __device__ __forceinline__ std::uint32_t operator()(int w) const { return __ldg(words + w); }
};

// kPruneUnitLanes threads per live unit, each summing every kPruneUnitLanes-th row of a strip
// into its partial SADs of the unit's windows, strip by strip. After each strip the group adds
// its partials up (butterfly shuffles: every lane holds the totals), and a window whose summed
// SAD, a lower bound of its SAD, exceeds E leaves (equal stays: ties); the group leaves with its
// last window. After the last strip the totals are the survivors' exact SADs, which lower E.
static_assert(kWarp % kPruneUnitLanes == 0 && kUnitThreads % kPruneUnitLanes == 0,
              "unit groups tile warps and blocks");

__global__ void __launch_bounds__(kUnitThreads) unit_refine_kernel(UnitArgs a) {
  cuda::wait_for_previous_kernel();
  // E only falls here, and any E at or above the final one is a valid limit meanwhile.
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicMin(a.best, *a.polish);
  if (a.totals[kWindowsLeftSlot] > a.full_search_above) return;
  const unsigned long long count = a.totals[kLiveUnitsSlot];
  const unsigned long long unit_at =
      (std::size_t(blockIdx.x) * kUnitThreads + threadIdx.x) / kPruneUnitLanes;
  if (unit_at >= count) return;  // the whole group
  const int part = threadIdx.x % kPruneUnitLanes;
  const unsigned group_lanes = ((1u << kPruneUnitLanes) - 1u) << (threadIdx.x % kWarp - part);
  const std::uint32_t unit = a.live[unit_at];
  const int i = int(unit / unsigned(a.unit_columns));
  const int group = int(unit % unsigned(a.unit_columns));
  const int j0 = group * kPruneUnitWindows;
  const std::size_t first_index = std::size_t(i) * a.s.map_width + j0;
  // Lane 0 of the group reads E; the group agrees.
  const auto limit_now = [&] {
    const Key limit = part == 0 ? load_key(a.best) : 0;
    return std::uint32_t(__shfl_sync(group_lanes, limit, 0, kPruneUnitLanes) >> 32);
  };
  // The filter's windows: bound within its limit, outside the settled neighbourhood.
  const Key filter = *a.filter;
  const std::uint32_t first_limit = std::uint32_t(filter >> 32);
  std::uint32_t alive =
      unit_windows_within([&](int p) { return a.bounds[first_index + p]; },
                          min(kPruneUnitWindows, a.s.map_width - j0), first_limit);
  alive &= ~polish_settled_windows(std::uint32_t(filter), a.s.map_width, i, j0);
  std::uint32_t partial[kPruneUnitWindows] = {}, total[kPruneUnitWindows];
  const std::uint32_t* row = a.target + std::size_t(i) * a.pitch_words + group * kUnitWords;
  // Derived from the width rather than read from a.query_words: the parameter costs the kernel
  // registers, enough for one block less per SM.
  const int query_words = words_for(a.s.query_width);
  for (int n = 0; n < a.strips.count; ++n) {
    const int k = __ldg(a.order + n);
    for (int y = a.strips.begin(k) + part; y < a.strips.end(k); y += kPruneUnitLanes) {
      accumulate_sad_row<kUnitWords>(
          cuda::GlobalTarget<kUnitWords>{row + std::size_t(y) * a.pitch_words},
          QueryRow{a.query + std::size_t(y) * query_words}, a.s.query_width, partial);
    }
#pragma unroll
    for (int p = 0; p < kPruneUnitWindows; ++p) {
      total[p] = partial[p];
#pragma unroll
      for (int offset = kPruneUnitLanes / 2; offset > 0; offset /= 2) {
        total[p] += __shfl_xor_sync(group_lanes, total[p], offset, kPruneUnitLanes);
      }
    }
    const std::uint32_t limit = limit_now();
#pragma unroll
    for (int p = 0; p < kPruneUnitWindows; ++p) {
      if (total[p] > limit) alive &= ~(1u << p);
    }
    // The groups still here count together, one atomic per warp.
    const unsigned lanes = __activemask();
    const unsigned left = __reduce_add_sync(lanes, part == 0 ? unsigned(__popc(alive)) : 0u);
    if (left > 0 && threadIdx.x % kWarp == __ffs(lanes) - 1)
      atomicAdd(a.after_strip + n, Key(left));
    if (alive == 0) return;
  }
  if (part != 0) return;
  Key key = kNoSadKey;
#pragma unroll
  for (int p = 0; p < kPruneUnitWindows; ++p) {
    if (alive & (1u << p))
      key = sad_min(key, sad_key(std::int32_t(total[p]), std::uint32_t(first_index + p)));
  }
  atomicMin(a.best, key);
}

// --- runner --------------------------------------------------------------------------------------

bool pruned_fits(const SadInput& input) {
  const SadShape s = validate_sad_pruned_input(input);
  return sad_pruned_argmin(input) && strip_layout(s).count <= kMaxStrips;
}

class PrunedRunner final : public Runner<SadPruned> {
 public:
  explicit PrunedRunner(const SadInput& input)
      : shape_(validate_sad_pruned_argmin(input)),
        strips_(strip_layout(shape_)),
        host_strip_sums_(query_strip_sums(input.query, strips_)),
        host_order_(strip_order(input.query, strips_)),
        full_(input),
        windows_(shape_.map_size()),
        unit_columns_((shape_.map_width + kPruneUnitWindows - 1) / kPruneUnitWindows),
        units_(std::uint64_t(shape_.map_height) * std::uint64_t(unit_columns_)),
        limit_(std::uint64_t(kFullSearchFraction * double(windows_))),
        segment_rows_(prune_segment_rows(
            shape_, (shape_.map_width + kWarp - 1) / kWarp,
            cuda::resident_blocks(kBoundKernels[kMaxPassStrips - 1], kBoundThreads, 0, 1 << 30))),
        bound_grid_(dim3((shape_.map_width + kWarp - 1) / kWarp,
                         (shape_.map_height + segment_rows_ - 1) / segment_rows_)),
        strip_sums_(host_strip_sums_.size()),
        bounds_(windows_),
        live_(units_),
        order_(host_order_.size()),
        candidates_(std::size_t(bound_grid_.x) * prune_bands(shape_.map_height)),
        scalars_(kFixedSlots + std::size_t(strips_.count)) {
    if (!pruned_fits(input))
      throw Error("cuda-pruned: the query is too tall for its strip counters");
    // Blocks resident at once: the refinements run a grid-stride loop over their windows.
    refine_grid_ = cuda::resident_blocks(refine_kernel<CandidateList>, kRefineThreads, 0, 1 << 30);
    filter_grid_ = cuda::resident_blocks(filter_kernel, kFilterThreads, 0,
                                         (units_ + kFilterThreads - 1) / kFilterThreads);
  }

  void poison(std::uint8_t byte) override {
    check(cudaMemset(scalars_.get(), byte, scalars_.bytes()), "cudaMemset(poison)");
  }
  void upload() override {
    full_.upload();
    check(cudaMemcpy(strip_sums_.get(), host_strip_sums_.data(), strip_sums_.bytes(),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(sad-pruned strip sums)");
    check(cudaMemcpy(order_.get(), host_order_.data(), order_.bytes(), cudaMemcpyHostToDevice),
          "cudaMemcpy(sad-pruned strip order)");
  }
  void compute() override {
    Key* const scalars = scalars_.get();
    for (int first = 0; first < strips_.count; first += kMaxPassStrips) {
      const int strips = std::min(kMaxPassStrips, strips_.count - first);
      const BoundArgs pass{full_.target(),
                           full_.pitch_words(),
                           shape_,
                           strips_,
                           first,
                           segment_rows_,
                           first == 0,
                           first + strips == strips_.count,
                           strip_sums_.get(),
                           bounds_.get(),
                           candidates_.get(),
                           scalars,
                           int(scalars_.size())};
      kBoundKernels[strips - 1]<<<bound_grid_, kBoundThreads>>>(pass);
      check_launch("bound_kernel");
    }

    const PackedSearch search{
        full_.target(), full_.pitch_words(), full_.query(), full_.query_words(), shape_, strips_};
    RefineArgs refine{search, scalars + kBestSlot, nullptr};
    cuda::launch(seed_kernel, 1, kSeedThreads, 0, 0, kAfterPrevious, "seed_kernel", search,
                 candidates_.get(), (unsigned long long)candidates_.size(), scalars + kBestSlot);
    const int candidate_blocks = int(std::min<std::size_t>(candidates_.size(), refine_grid_));
    cuda::launch(refine_kernel<CandidateList>, candidate_blocks, kRefineThreads, 0, 0,
                 kAfterPrevious, "refine_kernel", refine,
                 CandidateList{candidates_.get(), candidates_.size()});

    RefineArgs polish = refine;
    polish.best = scalars + kPolishSlot;
    polish.other = scalars + kBestSlot;
    const int polish_blocks = std::min(kPrunePolishSide * kPrunePolishSide, refine_grid_);
    cuda::launch(refine_kernel<Neighbourhood>, polish_blocks, kRefineThreads, 0, 0, kAfterPrevious,
                 "refine_kernel", polish, Neighbourhood{scalars + kBestSlot, bounds_.get()});

    const FilterArgs filter{bounds_.get(),
                            candidates_.get(),
                            int(bound_grid_.x),
                            shape_,
                            unit_columns_,
                            units_,
                            scalars + kBestSlot,
                            scalars + kPolishSlot,
                            live_.get(),
                            scalars + kLiveUnitsSlot,
                            scalars + kWindowsLeftSlot,
                            scalars + kSettledSlot,
                            scalars + kFilterSlot};
    cuda::launch(filter_kernel, filter_grid_, kFilterThreads, 0, 0, kAfterPrevious, "filter_kernel",
                 filter);

    // Sized for every unit; blocks past the live ones return at once. (A one-wave grid-stride
    // loop, statically or from a device counter, costs less with few live units but more with
    // many: perf/notes/sad-pruned.md.)
    const UnitArgs units{search,
                         order_.get(),
                         unit_columns_,
                         bounds_.get(),
                         live_.get(),
                         scalars,
                         limit_,
                         scalars + kBestSlot,
                         scalars + kPolishSlot,
                         scalars + kFilterSlot,
                         scalars + kAfterStripSlot};
    const std::uint64_t unit_threads = units_ * kPruneUnitLanes;
    cuda::launch(unit_refine_kernel, unsigned((unit_threads + kUnitThreads - 1) / kUnitThreads),
                 kUnitThreads, 0, 0, kAfterPrevious, "unit_refine_kernel", units);

    full_.search(scalars + kBestSlot, 0, scalars + kWindowsLeftSlot, limit_, kAfterPrevious);
  }
  void sync() override { check(cudaDeviceSynchronize(), "sad-pruned kernels"); }
  void download(SadPrunedResult& out) override {
    std::vector<Key> scalars(scalars_.size());
    check(cudaMemcpy(scalars.data(), scalars_.get(), scalars_.bytes(), cudaMemcpyDeviceToHost),
          "cudaMemcpy(sad-pruned result)");
    out.best = match_from_key(scalars[kBestSlot], shape_.map_width);
    out.stats.windows = windows_;
    out.stats.after_bounds = scalars[kWindowsLeftSlot];
    out.stats.full_search = scalars[kWindowsLeftSlot] > limit_;
    out.stats.after_strip.assign(scalars.begin() + kAfterStripSlot, scalars.end());
    // The settled survivors were refined in step 3, before the strip rounds: counted in each.
    if (!out.stats.full_search) {
      for (std::uint64_t& alive : out.stats.after_strip) alive += scalars[kSettledSlot];
    }
  }

 private:
  SadShape shape_;
  StripLayout strips_;
  std::vector<std::uint32_t> host_strip_sums_;
  std::vector<int> host_order_;
  cuda::SadFullSearch full_;
  std::uint64_t windows_;
  int unit_columns_;
  std::uint64_t units_;
  std::uint64_t limit_;  // more windows left than this: full search
  int segment_rows_;
  dim3 bound_grid_;
  int refine_grid_ = 1, filter_grid_ = 1;
  DeviceBuffer<std::uint32_t> strip_sums_, bounds_, live_;
  DeviceBuffer<int> order_;
  DeviceBuffer<Key> candidates_, scalars_;
};

}  // namespace

void register_sad_pruned_native_cuda(VariantList<SadPruned>& list) {
  list.push_back({"cuda-pruned", Layer::native_cuda, Backend::cuda, false,
                  make_runner<PrunedRunner>, pruned_fits, 1});
}

}  // namespace kbench
