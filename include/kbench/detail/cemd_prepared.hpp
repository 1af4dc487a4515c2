#pragma once
// The prepared form of cemd descriptors and its per-chunk arithmetic, shared by the GPU-shaped
// variants of two layers: cuda-final (native CUDA) and kokkos-tiled (portable). A pre-pass turns
// every descriptor into a prepared row of 32-bit words once; the main kernels then compare
// register tiles of several queries × several database rows one chunk of 8 words at a time.
// Each metric (PreparedNormalised, PreparedRaw, PreparedL2) is a struct of static functions, the
// same on hosts and devices; the forms, and why they are exact:
// docs/cemd.md#the-prefix-and-prepared-forms. The packed helpers below use one Hopper instruction
// each on CUDA devices (DPX add-then-min, 3-input min, dp2a/dp4a) and plain per-lane C++
// elsewhere and with Isa::plain, with the same results; the metrics' prepare and accumulate pass
// their Isa on.

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kbench/cemd.hpp"
#include "kbench/detail/cemd_prefix.hpp"
#include "kbench/host_device.hpp"
#include "kbench/isa.hpp"

namespace kbench {

// --- Packed arithmetic: two unsigned 16-bit lanes per word, four bytes per word ----------------

namespace packed {

KBENCH_HOST_DEVICE std::uint32_t low16(std::uint32_t x) {
  return x & 0xFFFFu;
}
KBENCH_HOST_DEVICE std::uint32_t high16(std::uint32_t x) {
  return x >> 16;
}
KBENCH_HOST_DEVICE std::uint32_t pack16(std::uint32_t low, std::uint32_t high) {
  return low16(low) | (high << 16);
}
KBENCH_HOST_DEVICE std::uint32_t lesser(std::uint32_t a, std::uint32_t b) {
  return a < b ? a : b;
}

// Per lane min(a + b, c), the sum taken modulo 2^16.
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t add_min_u16x2(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __viaddmin_u16x2(a, b, c);
#endif
  return pack16(lesser(low16(low16(a) + low16(b)), low16(c)),
                lesser(low16(high16(a) + high16(b)), high16(c)));
}

template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t min_u16x2(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __vminu2(a, b);
#endif
  return pack16(lesser(low16(a), low16(b)), lesser(high16(a), high16(b)));
}

template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t min3_u16x2(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __vimin3_u16x2(a, b, c);
#endif
  return min_u16x2<kIsa>(min_u16x2<kIsa>(a, b), c);
}

// acc + 2·(low lane + high lane) of x.
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t add_doubled_lanes(std::uint32_t x, std::uint32_t acc) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __dp2a_lo(x, 0x0202u, acc);
#endif
  return acc + 2 * (low16(x) + high16(x));
}

// acc + Σ_b a_b·b_b over the four bytes.
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t dot4_u8(std::uint32_t a, std::uint32_t b, std::uint32_t acc) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __dp4a(a, b, acc);
#endif
  std::uint32_t sum = acc;
  for (int shift = 0; shift < 32; shift += 8)
    sum += ((a >> shift) & 0xFFu) * ((b >> shift) & 0xFFu);
  return sum;
}

}  // namespace packed

KBENCH_HOST_DEVICE float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
KBENCH_HOST_DEVICE std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// A descriptor's 128 bytes as 32 little-endian words.
using DescriptorWords = std::uint32_t[kDescriptorBytes / 4];

KBENCH_HOST_DEVICE int byte_at(const DescriptorWords& words, int i) {
  return int((words[i / 4] >> (8 * (i % 4))) & 0xFFu);
}

// Eight words of a prepared row: one cell (normalised), one pair of cells (raw) or 32 bytes (l2).
constexpr int kPreparedChunkWords = 8;
struct PreparedChunk {
  std::uint32_t w[kPreparedChunkWords];
};

// Each metric: the prepared row (kRowWords words, a multiple of 4, an optional per-descriptor
// word at kExtraWord), its kChunks chunks, the accumulator of one
// (query, row) pair, and the register tiles of cuda-final and kokkos-tiled on CUDA: 2 queries ×
// kCudaRowsPerThread rows a thread (hosts take 4), and kMinBlocks, how many 256-thread blocks
// (teams) of them stay resident with the registers the accumulators need (more would spill).
// Raw's and l2's short cell terms take 8 rows, more independent work between a tile's loads
// (cuda-final takes raw's at 12: FinalShape); normalised's long one gains nothing from them and
// keeps 4, at half the shared memory.
// PreparedNormalised: per cell the running sums F(0..7) as floats (F(7) the mass), the prefix
// form (detail/cemd_prefix.hpp); the cell term is prefix_cell_term<cemd_normalised>, so the bits
// are cemd_cell_quotient()'s.
struct PreparedNormalised {
  static constexpr int kRowWords = kCemdCells * kCemdBins;
  static constexpr int kExtraWord = -1;
  static constexpr int kChunks = kCemdCells;
  static constexpr int kCudaRowsPerThread = 4;
  static constexpr int kMinBlocks = 3;
  using Distance = float;
  struct Acc {
    float sum;
  };

  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void prepare(const DescriptorWords& bytes, bool,
                                         std::uint32_t (&row)[kRowWords]) {
    KBENCH_UNROLL
    for (int c = 0; c < kCemdCells; ++c) {
      int running = 0;
      KBENCH_UNROLL
      for (int i = 0; i < kCemdBins; ++i) {
        running += byte_at(bytes, c * kCemdBins + i);
        row[c * kCemdBins + i] = bits_of(float(running));
      }
    }
  }
  KBENCH_HOST_DEVICE static Acc start() { return {0.0f}; }
  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void accumulate(Acc& acc, const PreparedChunk& q,
                                            const PreparedChunk& r) {
    float f[kCemdBins], g[kCemdBins];
    KBENCH_UNROLL
    for (int i = 0; i < kCemdBins; ++i) {
      f[i] = float_from_bits(q.w[i]);
      g[i] = float_from_bits(r.w[i]);
    }
    acc.sum += prefix_cell_term<DescriptorDistance::cemd_normalised, kIsa>(f, g);
  }
  KBENCH_HOST_DEVICE static Distance finish(const Acc& acc, std::uint32_t, std::uint32_t) {
    return acc.sum;
  }
};

// Two cells per chunk in 16-bit lanes: word (p, i) holds bin i of the running sums of cells p
// (low half) and p + 8 (high half); queries store F, database rows 2048 − G, so one add gives
// D + 2048 in both halves (D + 2048 ∈ [8, 4088]: no carry between lanes). The distance is
// Σ_cells Σ_i D(i) − 2·Σ(4 smallest D), the first sum a per-descriptor extra word. The 4 smallest
// come from the bin pairs (0,1) (2,3) (4,5) (6,7) without sorting: a pair gives 0 values, its
// lower one or both, so the least sum of 4 is a min-plus convolution of the pairs' (0, lower,
// sum): sums of at most 4 values, below 2^14 a lane. Each cell pair's sum goes straight into one
// 32-bit accumulator by dp2a. On CUDA devices the minima (and a 3-input add a pair) take the ALU
// pipe, the other additions and dp2a the FMA pipe: about half each, where sorting the halves
// left the ALU pipe twice the FMA pipe's work.
struct PreparedRaw {
  static constexpr int kPairs = kCemdCells / 2;
  static constexpr int kExtraWord = kPairs * kCemdBins;
  static constexpr int kRowWords = kExtraWord + 4;
  static constexpr int kChunks = kPairs;
  static constexpr int kCudaRowsPerThread = 8;
  static constexpr int kMinBlocks = 3;
  static constexpr std::uint32_t kBias = 2048;  // > 8·255, so D + kBias > 0
  static constexpr std::uint32_t kRowBias = kBias | (kBias << 16);
  // Σ_cells 4·kBias, doubled: the bias the 4 smallest carry, which a database row's extra word
  // takes back (finish()).
  static constexpr int kDoubledMinimaBias = 2 * kCemdCells * 4 * int(kBias);
  using Distance = int;  // exact
  struct Acc {
    std::uint32_t doubled;  // 2 · Σ 4 smallest
  };

  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void prepare(const DescriptorWords& bytes, bool query_role,
                                         std::uint32_t (&row)[kRowWords]) {
    int total = 0;
    KBENCH_UNROLL
    for (int p = 0; p < kPairs; ++p) {
      int low = 0, high = 0;
      KBENCH_UNROLL
      for (int i = 0; i < kCemdBins; ++i) {
        low += byte_at(bytes, p * kCemdBins + i);
        high += byte_at(bytes, (p + kPairs) * kCemdBins + i);
        total += low + high;
        const std::uint32_t lanes = std::uint32_t(low) | (std::uint32_t(high) << 16);
        row[p * kCemdBins + i] = query_role ? lanes : kRowBias - lanes;
      }
    }
    row[kExtraWord] = std::uint32_t(query_role ? total : kDoubledMinimaBias - total);
    KBENCH_UNROLL
    for (int w = kExtraWord + 1; w < kRowWords; ++w) row[w] = 0;
  }
  KBENCH_HOST_DEVICE static Acc start() { return {0}; }
  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void accumulate(Acc& acc, const PreparedChunk& q,
                                            const PreparedChunk& r) {
    using namespace packed;
    const std::uint32_t* f = q.w;
    const std::uint32_t* n = r.w;
    // Each pair's lower value l and its sum s, of D + 2048.
    const std::uint32_t l0 = add_min_u16x2<kIsa>(f[1], n[1], f[0] + n[0]);
    const std::uint32_t l1 = add_min_u16x2<kIsa>(f[3], n[3], f[2] + n[2]);
    const std::uint32_t l2 = add_min_u16x2<kIsa>(f[5], n[5], f[4] + n[4]);
    const std::uint32_t l3 = add_min_u16x2<kIsa>(f[7], n[7], f[6] + n[6]);
    const std::uint32_t s0 = (f[0] + f[1]) + (n[0] + n[1]), s1 = (f[2] + f[3]) + (n[2] + n[3]);
    const std::uint32_t s2 = (f[4] + f[5]) + (n[4] + n[5]), s3 = (f[6] + f[7]) + (n[6] + n[7]);
    // p_k, q_k: the least sum of k values from pairs 0 and 1, and from pairs 2 and 3.
    const std::uint32_t p1 = min_u16x2<kIsa>(l0, l1), q1 = min_u16x2<kIsa>(l2, l3);
    const std::uint32_t p2 = min3_u16x2<kIsa>(l0 + l1, s0, s1);
    const std::uint32_t q2 = min3_u16x2<kIsa>(l2 + l3, s2, s3);
    const std::uint32_t p3 = add_min_u16x2<kIsa>(s0, l1, s1 + l0);
    const std::uint32_t q3 = add_min_u16x2<kIsa>(s2, l3, s3 + l2);
    // The 4 smallest: min over k of p_k + q_(4-k).
    const std::uint32_t smallest4 =
        min3_u16x2<kIsa>(p2 + q2, p3 + q1, min3_u16x2<kIsa>(s0 + s1, s2 + s3, p1 + q3));
    acc.doubled = add_doubled_lanes<kIsa>(smallest4, acc.doubled);
  }
  KBENCH_HOST_DEVICE static Distance finish(const Acc& acc, std::uint32_t query_total,
                                            std::uint32_t row_extra) {
    // Σ_cells (Σ_i D(i) − 2·Σ(4 smallest D)); a database row's extra word is the bias minus its
    // total, so this is one 3-input add.
    return int(query_total) + int(row_extra) - int(acc.doubled);
  }
};

// Σ a² of a descriptor's bytes, exact (at most kMaxL2Sum).
template <Isa kIsa = Isa::tuned>
KBENCH_HOST_DEVICE std::uint32_t squared_norm(const DescriptorWords& bytes) {
  std::uint32_t norm = 0;
  KBENCH_UNROLL
  for (int w = 0; w < kDescriptorBytes / 4; ++w)
    norm = packed::dot4_u8<kIsa>(bytes[w], bytes[w], norm);
  return norm;
}

// The 128 bytes, and Σ a² as the extra word; the distance is sqrt(|a|² + |b|² − 2·a·b) with
// 4-byte dot products.
struct PreparedL2 {
  static constexpr int kExtraWord = kDescriptorBytes / 4;
  static constexpr int kRowWords = kExtraWord + 4;
  static constexpr int kChunks = kExtraWord / kPreparedChunkWords;
  static constexpr int kCudaRowsPerThread = 8;
  static constexpr int kMinBlocks = 2;  // 3 would spill
  using Distance = float;
  struct Acc {
    std::uint32_t dot;
  };

  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void prepare(const DescriptorWords& bytes, bool,
                                         std::uint32_t (&row)[kRowWords]) {
    KBENCH_UNROLL
    for (int w = 0; w < kExtraWord; ++w) row[w] = bytes[w];
    row[kExtraWord] = squared_norm<kIsa>(bytes);
    KBENCH_UNROLL
    for (int w = kExtraWord + 1; w < kRowWords; ++w) row[w] = 0;
  }
  KBENCH_HOST_DEVICE static Acc start() { return {0}; }
  template <Isa kIsa = Isa::tuned>
  KBENCH_HOST_DEVICE static void accumulate(Acc& acc, const PreparedChunk& q,
                                            const PreparedChunk& r) {
    KBENCH_UNROLL
    for (int i = 0; i < kPreparedChunkWords; ++i)
      acc.dot = packed::dot4_u8<kIsa>(q.w[i], r.w[i], acc.dot);
  }
  KBENCH_HOST_DEVICE static Distance finish(const Acc& acc, std::uint32_t query_norm,
                                            std::uint32_t row_norm) {
    return std::sqrt(float(query_norm + row_norm - 2 * acc.dot));
  }
};

// A metric's finish() gives its Distance: a float, or an int where the distance is an exact
// integer (raw, below 2^18: 16 cells of at most 8 · 2040), whose comparisons then need no
// conversion; it becomes a float where it is kept. Rows past the end take absent_distance(),
// above every real one; the int one leaves 4 bits free in 32 (kIntDistanceBits), so a distance
// and a row's slot share one key (LocalTop2).
constexpr int kIntDistanceBits = 28;
template <class D>
KBENCH_HOST_DEVICE constexpr D absent_distance() {
  static_assert(std::is_same_v<D, int> || std::is_same_v<D, float>, "an int or float distance");
  if constexpr (std::is_same_v<D, int>) {
    return (1 << kIntDistanceBits) - 1;
  } else {
    return INFINITY;
  }
}
template <Isa kIsa, class D>
KBENCH_HOST_DEVICE D distance_min(D a, D b) {
  if constexpr (std::is_integral_v<D>) {
    return a < b ? a : b;
  } else {
    return float_min<kIsa>(a, b);
  }
}

// The metric of a distance.
template <DescriptorDistance kDistance>
struct PreparedMetricOf {
  using type = PreparedNormalised;
};
template <>
struct PreparedMetricOf<DescriptorDistance::cemd_raw> {
  using type = PreparedRaw;
};
template <>
struct PreparedMetricOf<DescriptorDistance::l2> {
  using type = PreparedL2;
};
template <DescriptorDistance kDistance>
using PreparedMetric = typename PreparedMetricOf<kDistance>::type;

// --- Splitting the database over blocks (teams) -----------------------------------------------

// Blocks of a (query tile, database split) grid: each block walks its split tile by tile.
struct SplitPlan {
  int splits = 1;
  int rows_per_split = 0;  // a multiple of the tile rows
};

// CUDA's largest grid y, which holds the splits in cuda-final.
constexpr int kMaxSplits = 65535;

// Picks the split count whose estimated time is smallest: blocks run in waves of
// `resident_blocks`, a block costs its tiles plus about one tile of fixed work (its queries, its
// top-2 merge). Many splits keep the last wave full; few keep the overhead low.
inline SplitPlan plan_splits(long long query_tiles, int rows, int tile_rows,
                             long long resident_blocks) {
  constexpr long long kBlockOverheadTiles = 1;
  const int row_tiles = std::max(1, (rows + tile_rows - 1) / tile_rows);
  const int most = std::min(row_tiles, kMaxSplits);
  long long best_cost = std::numeric_limits<long long>::max();
  SplitPlan plan;
  for (int splits = 1; splits <= most; ++splits) {
    const int tiles = (row_tiles + splits - 1) / splits;
    const int used = (row_tiles + tiles - 1) / tiles;  // no empty split
    if (used != splits) continue;
    const long long waves = (query_tiles * splits + resident_blocks - 1) / resident_blocks;
    const long long cost = waves * (tiles + kBlockOverheadTiles);
    if (cost < best_cost) {
      best_cost = cost;
      plan = {splits, tiles * tile_rows};
    }
  }
  return plan;
}

}  // namespace kbench
