// Native CUDA cemd for sm_90, after Warn et al., "Accelerating Image Feature Comparisons using
// CUDA on Commodity Hardware" (2010), then past it. cuda-initial, cuda-shmem and cuda-unroll are
// the paper's GPU-INITIAL, GPU-SHMEM and GPU-UNROLL. cuda-final prepares every descriptor once and
// gives each thread 2 queries × 4 database rows of a tile staged with cp.async, keeping each
// query's nearest two in registers (no matrix in nearest-two mode); it also runs on the caller's
// device views. cuda-streamed is cuda-final with the database streamed up in chunks from pinned
// memory, for databases larger than the GPU. cuda-final's per-chunk arithmetic is the prepared
// form of kbench/detail/cemd_prepared.hpp, shared with the portable kokkos-tiled. cuda-tensor
// takes the nearest two to the tensor cores: Euclidean dot products on u8 MMAs, and normalised
// CEMD's cell differences on f16 MMAs (its median network and quotient cuda-final's). Ties between
// equal distances go to the smallest database index: the keys are cemd_key()s.
// Each kernel's schedule: docs/cemd.md#the-native-cuda-schedules
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kbench/cemd.hpp"
#include "kbench/detail/cemd_prepared.hpp"
#include "native_cuda/bulk_copy.hpp"
#include "native_cuda/cuda_support.hpp"
#include "native_cuda/devices.hpp"
#include "registry_parts.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;
using cuda::PinnedBuffer;
using cuda::Stream;

using Key = unsigned long long;  // atomicMin's 64-bit type; holds a cemd_key()
static_assert(sizeof(Key) == sizeof(std::uint64_t), "64-bit keys");
constexpr Key kNoKey = kNoCemdKey;
constexpr unsigned kFullWarp = 0xFFFFFFFFu;
constexpr int kWarpSize = 32;
constexpr std::size_t kDescriptorUnits = kDescriptorBytes / sizeof(uint4);  // 16-byte words

// --- top-2 shared by the kernels ------------------------------------------------------------

// Inserts `key` into a query's {best, second} keys in global memory, concurrently with any other
// inserts. A key that takes the best place pushes the one it displaced into second, a key that
// does not is pushed itself, so every key but the smallest reaches second, which therefore ends
// as the second smallest (keys are distinct: they hold the database index). A key larger than
// the current second has two smaller ones already and is dropped without an atomic.
__device__ void atomic_top2_insert(Key* slots, Key key) {
  if (key == kNoKey || key > *static_cast<volatile Key*>(slots + 1)) return;
  const Key displaced = atomicMin(slots, key);
  atomicMin(slots + 1, key < displaced ? displaced : key);
}

// One thread's nearest two of the rows it visits in increasing index order: a later row with an
// equal distance never displaces an earlier one, as cemd_key() order wants. Distances of the
// metric's Distance type; an absent one is never inserted.
template <class Distance = float>
struct LocalTop2 {
  Distance best = absent_distance<Distance>(), second = absent_distance<Distance>();
  int best_index = -1, second_index = -1;

  __device__ __forceinline__ void insert(Distance distance, int index) {
    if (distance < second) {
      if (distance < best) {
        second = best;
        second_index = best_index;
        best = distance;
        best_index = index;
      } else {
        second = distance;
        second_index = index;
      }
    }
  }
  // Offers kRows rows of rising indices first_index + k · index_step. Only their two nearest can
  // enter the list, so int distances go in as keys distance · 2^kSlotBits + k (equal distances
  // keep the row order), and only the two least keys are inserted; absent rows' keys exceed every
  // real one and decode to the absent distance. Float distances are offered one by one.
  template <int kRows>
  __device__ __forceinline__ void insert_rows(const Distance (&distance)[kRows], int first_index,
                                              int index_step) {
    if constexpr (std::is_same_v<Distance, int>) {
      constexpr int kSlotBits = 32 - kIntDistanceBits;
      static_assert(kRows <= 1 << kSlotBits, "a row's slot fits below the distance");
      std::uint32_t key[kRows];
#pragma unroll
      for (int k = 0; k < kRows; ++k) key[k] = std::uint32_t(distance[k]) << kSlotBits | k;
      std::uint32_t nearest = key[0];
#pragma unroll
      for (int k = 1; k < kRows; ++k) nearest = min(nearest, key[k]);
      // Keys are distinct: shifted by −(nearest + 1) modulo 2^32, the nearest becomes the largest.
      const std::uint32_t shift = ~nearest;
      std::uint32_t next = key[0] + shift;
#pragma unroll
      for (int k = 1; k < kRows; ++k) next = min(next, key[k] + shift);
      const auto insert_key = [&](std::uint32_t chosen) {
        insert(int(chosen >> kSlotBits),
               first_index + int(chosen & ((1u << kSlotBits) - 1)) * index_step);
      };
      insert_key(nearest);
      insert_key(next - shift);
    } else {
#pragma unroll
      for (int k = 0; k < kRows; ++k) insert(distance[k], first_index + k * index_step);
    }
  }
  __device__ Top2 keys() const {
    Top2 t;
    if (best_index >= 0) t.best = cemd_key(float(best), std::uint32_t(best_index));
    if (second_index >= 0) t.second = cemd_key(float(second), std::uint32_t(second_index));
    return t;
  }
};

// Merges the top-2 of `lanes` neighbouring lanes (a power of two ≤ 32) into all of them. Every
// lane of the warp must call it.
__device__ Top2 merge_lanes(Top2 t, int lanes) {
  for (int offset = 1; offset < lanes; offset *= 2) {
    Top2 other;
    other.best = __shfl_xor_sync(kFullWarp, Key(t.best), offset);
    other.second = __shfl_xor_sync(kFullWarp, Key(t.second), offset);
    t = top2_merge(t, other);
  }
  return t;
}

__device__ __forceinline__ void atomic_top2_insert(Key* slots, const Top2& t) {
  atomic_top2_insert(slots, Key(t.best));
  atomic_top2_insert(slots, Key(t.second));
}

// A kernel's last step for one query: the top-2 of `lanes` neighbouring lanes merged (as
// merge_lanes: every lane of the warp calls it), then inserted by the lane that `inserts` into
// query `query`'s slots of `keys`, where the query exists.
__device__ __forceinline__ void insert_lanes_top2(Top2 t, int lanes, bool inserts, Key* keys,
                                                  int query, int query_count) {
  t = merge_lanes(t, lanes);
  if (inserts && query < query_count) atomic_top2_insert(keys + 2 * std::size_t(query), t);
}

// The largest grid y: the queries of cuda-initial (the splits' count has the same limit).
constexpr int kMaxGridY = kMaxSplits;

// --- outputs shared by the runners ------------------------------------------------------------

void poison_device(void* data, std::size_t bytes, std::uint8_t byte) {
  if (bytes) check(cudaMemset(data, byte, bytes), "cudaMemset(poison)");
}

void clear_keys(Key* keys, std::size_t count, cudaStream_t stream) {
  check(cudaMemsetAsync(keys, 0xFF, count * sizeof(Key), stream), "cudaMemsetAsync(cemd keys)");
}

// Device copies of the two descriptor sets and the output: the matrix (all pairs) or two keys
// per query.
struct CemdBuffers {
  explicit CemdBuffers(const CemdInput& input)
      : input((validate_cemd_input(input), input)),
        queries(input.queries.count),
        database(input.database.count),
        all_pairs(input.params.all_pairs),
        query_values(input.queries.values.size()),
        database_values(input.database.values.size()),
        matrix(all_pairs ? std::size_t(queries) * database : 0),
        keys(all_pairs ? 0 : 2 * std::size_t(queries)) {}

  void poison(std::uint8_t byte) {
    poison_device(matrix.get(), matrix.bytes(), byte);
    poison_device(keys.get(), keys.bytes(), byte);
  }
  void upload() {
    check(cudaMemcpy(query_values.get(), input.queries.values.data(), query_values.bytes(),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(cemd queries)");
    check(cudaMemcpy(database_values.get(), input.database.values.data(), database_values.bytes(),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(cemd database)");
  }
  void download(CemdResult& out) const {
    out.queries = queries;
    out.database = database;
    out.matrix.clear();
    out.neighbours.clear();
    if (all_pairs) {
      out.matrix.resize(matrix.size());
      check(cudaMemcpy(out.matrix.data(), matrix.get(), matrix.bytes(), cudaMemcpyDeviceToHost),
            "cudaMemcpy(cemd matrix)");
    } else {
      std::vector<Key> host(keys.size());
      check(cudaMemcpy(host.data(), keys.get(), keys.bytes(), cudaMemcpyDeviceToHost),
            "cudaMemcpy(cemd keys)");
      out.neighbours = neighbours_from_keys(host.data(), queries);
    }
  }
  DescriptorDistance distance() const { return input.params.distance; }
  float* matrix_or_null() const { return all_pairs ? matrix.get() : nullptr; }
  Key* keys_or_null() const { return all_pairs ? nullptr : keys.get(); }

  const CemdInput& input;
  const int queries, database;
  const bool all_pairs;
  DeviceBuffer<std::uint8_t> query_values, database_values;
  DeviceBuffer<float> matrix;
  DeviceBuffer<Key> keys;
};

// Runners whose compute() is one kernel launch on the legacy default stream, in call order. The
// Launcher is made once from the buffers (its grid planned there) and launches with ().
template <class Launcher>
class SimpleRunner final : public Runner<Cemd> {
 public:
  explicit SimpleRunner(const CemdInput& input) : buffers_(input), launch_(buffers_) {}
  void poison(std::uint8_t byte) override { buffers_.poison(byte); }
  void upload() override { buffers_.upload(); }
  void compute() override {
    if (!buffers_.all_pairs) clear_keys(buffers_.keys.get(), buffers_.keys.size(), 0);
    launch_();
  }
  void sync() override { check(cudaDeviceSynchronize(), "cemd kernels"); }
  void download(CemdResult& out) override { buffers_.download(out); }

 private:
  CemdBuffers buffers_;
  Launcher launch_;
};

// --- GPU-INITIAL ------------------------------------------------------------------------------

constexpr int kInitialThreads = 256;

// x: database rows, y: queries (a grid-stride loop past the 65535 grid rows).
__global__ void __launch_bounds__(kInitialThreads)
    initial_kernel(const std::uint8_t* queries, int query_count, const std::uint8_t* database,
                   int database_count, DescriptorDistance distance, float* matrix, Key* keys) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= database_count) return;
  for (int q = blockIdx.y; q < query_count; q += gridDim.y) {
    const float d = descriptor_distance(queries + std::size_t(q) * kDescriptorBytes,
                                        database + std::size_t(r) * kDescriptorBytes, distance);
    if (matrix) {
      matrix[std::size_t(q) * database_count + r] = d;
    } else {
      atomic_top2_insert(keys + 2 * std::size_t(q), Key(cemd_key(d, std::uint32_t(r))));
    }
  }
}

class InitialLauncher {
 public:
  explicit InitialLauncher(const CemdBuffers& b)
      : grid_((b.database + kInitialThreads - 1) / kInitialThreads, std::min(b.queries, kMaxGridY)),
        queries_(b.query_values.get()),
        database_(b.database_values.get()),
        query_count_(b.queries),
        database_count_(b.database),
        distance_(b.distance()),
        matrix_(b.matrix_or_null()),
        keys_(b.keys_or_null()) {}
  void operator()() const {
    initial_kernel<<<grid_, kInitialThreads>>>(queries_, query_count_, database_, database_count_,
                                               distance_, matrix_, keys_);
    check_launch("cemd initial_kernel");
  }

 private:
  dim3 grid_;
  const std::uint8_t *queries_, *database_;
  int query_count_, database_count_;
  DescriptorDistance distance_;
  float* matrix_;
  Key* keys_;
};

// --- GPU-SHMEM and GPU-UNROLL: 16 × 16 tiles in shared memory --------------------------------

constexpr int kPairTile = 16;  // queries (y) and database rows (x) of a block
constexpr int kPairThreads = kPairTile * kPairTile;
// A staged row: the descriptor plus 8 bytes, so the 16 rows a half-warp reads start in 16
// different bank pairs.
constexpr int kPairRowBytes = kDescriptorBytes + 8;
static_assert(kPairThreads * sizeof(uint2) == kPairTile * kDescriptorBytes,
              "one 8-byte cell per thread stages a tile");
static_assert(kPairTile == kCemdCells, "thread x stages cell x of a row");

struct PairTileArgs {
  const std::uint8_t* queries;
  int query_count;
  const std::uint8_t* database;
  int database_count;
  int rows_per_split;
  DescriptorDistance distance;  // for cuda-shmem
  float* matrix;                // all pairs; otherwise keys
  Key* keys;
};

// Thread (x, y) copies cell x of row y (8 bytes) of `count` rows starting at `first` into a
// staged tile, zeros past the end, and returns the cell's mass.
__device__ int stage_pair_cell(std::uint8_t (*tile)[kPairRowBytes], const std::uint8_t* rows,
                               int first, int count) {
  const int x = threadIdx.x, y = threadIdx.y;
  uint2 cell = make_uint2(0, 0);
  if (y < count) {
    cell = *reinterpret_cast<const uint2*>(rows + std::size_t(first + y) * kDescriptorBytes +
                                           x * kCemdBins);
  }
  *reinterpret_cast<uint2*>(&tile[y][x * kCemdBins]) = cell;
  return __vsadu4(cell.x, 0) + __vsadu4(cell.y, 0);  // the sum of the 8 bytes
}

// The shared skeleton: `Distance` computes one pair from the staged tiles.
template <class Distance>
__device__ void pair_tile_kernel_body(const PairTileArgs& a, Distance distance_of) {
  __shared__ alignas(16) std::uint8_t queries[kPairTile][kPairRowBytes];
  __shared__ alignas(16) std::uint8_t rows[kPairTile][kPairRowBytes];
  __shared__ int query_mass[kPairTile][kCemdCells + 1];  // + 1: rows in different banks
  __shared__ int row_mass[kPairTile][kCemdCells + 1];
  const int x = threadIdx.x, y = threadIdx.y;
  const int q0 = blockIdx.x * kPairTile;
  const int q = q0 + y;
  const int begin = blockIdx.y * a.rows_per_split;
  const int end = min(a.database_count, begin + a.rows_per_split);
  query_mass[y][x] = stage_pair_cell(queries, a.queries, q0, a.query_count - q0);
  LocalTop2<> top;
  for (int tile = begin; tile < end; tile += kPairTile) {
    __syncthreads();  // the previous tile is no longer read
    row_mass[y][x] = stage_pair_cell(rows, a.database, tile, end - tile);
    __syncthreads();
    const int r = tile + x;
    if (q < a.query_count && r < end) {
      const float d = distance_of(queries[y], rows[x], query_mass[y], row_mass[x]);
      if (a.matrix) {
        a.matrix[std::size_t(q) * a.database_count + r] = d;
      } else {
        top.insert(d, r);
      }
    }
  }
  if (!a.matrix) {
    insert_lanes_top2(top.keys(), kPairTile, x == 0, a.keys, q, a.query_count);
  }
}

// GPU-SHMEM: the shared definition, on the staged bytes.
__global__ void __launch_bounds__(kPairThreads) shmem_kernel(PairTileArgs a) {
  pair_tile_kernel_body(
      a, [distance = a.distance](const std::uint8_t* f, const std::uint8_t* g, const int*,
                                 const int*) { return descriptor_distance(f, g, distance); });
}

// GPU-UNROLL: cells and bins unrolled at compile time, masses from staging.
template <int k>
struct Index {
  static constexpr int value = k;
};

// Calls f(Index<k>()) for k = kBegin … kEnd − 1, each call with its index as a constant.
template <int kBegin, int kEnd, class F>
__device__ __forceinline__ void unrolled(F&& f) {
  if constexpr (kBegin < kEnd) {
    f(Index<kBegin>());
    unrolled<kBegin + 1, kEnd>(f);
  }
}

template <int kBin>
__device__ __forceinline__ int bin_of(uint2 cell) {
  return int(((kBin < 4 ? cell.x : cell.y) >> (8 * (kBin % 4))) & 0xFFu);
}

template <DescriptorDistance kDistance>
__device__ float unrolled_distance(const std::uint8_t* f_bytes, const std::uint8_t* g_bytes,
                                   const int* mass_f, const int* mass_g) {
  const uint2* f = reinterpret_cast<const uint2*>(f_bytes);
  const uint2* g = reinterpret_cast<const uint2*>(g_bytes);
  if constexpr (kDistance == DescriptorDistance::l2) {
    std::uint32_t sum = 0;
    unrolled<0, kCemdCells>([&](auto cell) {
      const uint2 fc = f[decltype(cell)::value], gc = g[decltype(cell)::value];
      unrolled<0, kCemdBins>([&](auto bin) {
        constexpr int i = decltype(bin)::value;
        const int d = bin_of<i>(fc) - bin_of<i>(gc);
        sum += std::uint32_t(d * d);
      });
    });
    return sqrtf(float(sum));
  } else if constexpr (kDistance == DescriptorDistance::cemd_raw) {
    std::uint32_t sum = 0;
    unrolled<0, kCemdCells>([&](auto cell) {
      const uint2 fc = f[decltype(cell)::value], gc = g[decltype(cell)::value];
      int d[kCemdBins];
      int running = 0;
      unrolled<0, kCemdBins>([&](auto bin) {
        constexpr int i = decltype(bin)::value;
        running += bin_of<i>(fc) - bin_of<i>(gc);
        d[i] = running;
      });
      sum += std::uint32_t(circular_emd_of_cumulative(d));
    });
    return float(sum);
  } else {
    float sum = 0.0f;
    unrolled<0, kCemdCells>([&](auto cell) {
      constexpr int c = decltype(cell)::value;
      const uint2 fc = f[c], gc = g[c];
      const int mf = mass_f[c], mg = mass_g[c];
      int d[kCemdBins];
      int running = 0;
      unrolled<0, kCemdBins>([&](auto bin) {
        constexpr int i = decltype(bin)::value;
        running += bin_of<i>(fc) * mg - bin_of<i>(gc) * mf;
        d[i] = running;
      });
      sum += cemd_cell_quotient(std::uint32_t(circular_emd_of_cumulative(d)), mf, mg);
    });
    return sum;
  }
}

template <DescriptorDistance kDistance>
__global__ void __launch_bounds__(kPairThreads) unroll_kernel(PairTileArgs a) {
  pair_tile_kernel_body(
      a, [](const std::uint8_t* f, const std::uint8_t* g, const int* mass_f, const int* mass_g) {
        return unrolled_distance<kDistance>(f, g, mass_f, mass_g);
      });
}

// Launches a 16 × 16 pair-tile kernel over (query tile, database split) blocks.
class PairTileLauncher {
 public:
  using Kernel = void (*)(PairTileArgs);

  PairTileLauncher(const CemdBuffers& b, Kernel kernel) : kernel_(kernel) {
    const int query_tiles = (b.queries + kPairTile - 1) / kPairTile;
    const SplitPlan plan =
        plan_splits(query_tiles, b.database, kPairTile,
                    cuda::resident_threads(kernel, kPairThreads, 0) / kPairThreads);
    grid_ = dim3(query_tiles, plan.splits);
    args_ = {b.query_values.get(), b.queries,    b.database_values.get(), b.database,
             plan.rows_per_split,  b.distance(), b.matrix_or_null(),      b.keys_or_null()};
  }
  void operator()() const {
    kernel_<<<grid_, dim3(kPairTile, kPairTile)>>>(args_);
    check_launch("cemd pair tile kernel");
  }

 private:
  Kernel kernel_;
  dim3 grid_;
  PairTileArgs args_;
};

struct ShmemLauncher : PairTileLauncher {
  explicit ShmemLauncher(const CemdBuffers& b) : PairTileLauncher(b, shmem_kernel) {}
};

PairTileLauncher::Kernel unroll_kernel_for(DescriptorDistance distance) {
  switch (distance) {
    case DescriptorDistance::cemd_normalised:
      return unroll_kernel<DescriptorDistance::cemd_normalised>;
    case DescriptorDistance::cemd_raw:
      return unroll_kernel<DescriptorDistance::cemd_raw>;
    case DescriptorDistance::l2:
      break;
  }
  return unroll_kernel<DescriptorDistance::l2>;
}

struct UnrollLauncher : PairTileLauncher {
  explicit UnrollLauncher(const CemdBuffers& b)
      : PairTileLauncher(b, unroll_kernel_for(b.distance())) {}
};

// --- cuda-final: prepared descriptors, register tiles, fused top-2 --------------------------

// The metrics and their per-chunk arithmetic are the shared prepared form (cemd_prepared.hpp).
using NormalisedMetric = PreparedNormalised;
using RawMetric = PreparedRaw;
using L2Metric = PreparedL2;
constexpr int kChunkWords = kPreparedChunkWords;
using Chunk = PreparedChunk;

__device__ __forceinline__ Chunk load_chunk(const uint4* at) {
  const uint4 lo = at[0], hi = at[1];
  return {{lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}};
}

// The four words of a 16-byte word into to[0..3].
__device__ __forceinline__ void store_words(const uint4& v, std::uint32_t* to) {
  to[0] = v.x, to[1] = v.y, to[2] = v.z, to[3] = v.w;
}

// A prepared row in 16-byte words.
template <class Metric>
constexpr int kRowUnits = Metric::kRowWords / 4;

// The pre-pass: one thread per descriptor.
constexpr int kPrepareThreads = 256;

// Descriptor `i` of `rows` as words.
__device__ __forceinline__ void load_descriptor_words(const uint4* rows, int i,
                                                      DescriptorWords& bytes) {
#pragma unroll
  for (int u = 0; u < int(kDescriptorUnits); ++u) {
    store_words(rows[std::size_t(i) * kDescriptorUnits + u], bytes + 4 * u);
  }
}

template <class Metric>
__global__ void __launch_bounds__(kPrepareThreads)
    prepare_kernel(const uint4* __restrict__ raw, int count, bool query_role,
                   uint4* __restrict__ prepared) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  DescriptorWords bytes;
  load_descriptor_words(raw, i, bytes);
  std::uint32_t row[Metric::kRowWords];
  Metric::prepare(bytes, query_role, row);
  uint4* out = prepared + std::size_t(i) * kRowUnits<Metric>;
#pragma unroll
  for (int u = 0; u < kRowUnits<Metric>; ++u) {
    out[u] = make_uint4(row[4 * u], row[4 * u + 1], row[4 * u + 2], row[4 * u + 3]);
  }
}

template <class Metric>
void launch_prepare(const std::uint8_t* raw, int count, bool query_role, uint4* prepared,
                    cudaStream_t stream) {
  const int blocks = (count + kPrepareThreads - 1) / kPrepareThreads;
  prepare_kernel<Metric><<<blocks, kPrepareThreads, 0, stream>>>(
      reinterpret_cast<const uint4*>(raw), count, query_role, prepared);
  check_launch("cemd prepare_kernel");
}

// A block of kWarps warps; each warp's 32 lanes are 4 query groups × 8 row lanes. A thread
// compares kQueries queries with kRows rows of each staged tile; kMinBlocks blocks an SM.
template <int kWarps, int kQueries, int kRows, int kMinBlocks>
struct FinalTile {
  static constexpr int threads = kWarpSize * kWarps;
  static constexpr int min_blocks = kMinBlocks;
  static constexpr int row_lanes = 8;
  static constexpr int query_groups = threads / row_lanes;
  static constexpr int queries = kQueries, rows = kRows;
  static constexpr int block_queries = query_groups * kQueries;
  static constexpr int tile_rows = row_lanes * kRows;
  static_assert(kQueries <= row_lanes, "one lane per query inserts the merged top-2");
};

// Each metric's tile: 8 warps of 2 queries × the metric's rows a thread, as kokkos-tiled's. Raw
// takes 12 rows at 2 blocks an SM, which spreads a tile's query loads and top-2 over more rows
// (its short cell term makes them weigh); a Kokkos team's scratch cannot stage a tile that long.
template <class Metric>
struct FinalShape {
  using type = FinalTile<8, 2, Metric::kCudaRowsPerThread, Metric::kMinBlocks>;
};
template <>
struct FinalShape<PreparedRaw> {
  using type = FinalTile<8, 2, 12, 2>;
};
template <class Metric>
using FinalShapeOf = typename FinalShape<Metric>::type;

// Staged rows are an odd number of 16-byte words apart, so the 8 rows (or 4 queries) that a
// warp's lanes read at once fall in 8 different groups of 4 banks.
template <class Metric>
constexpr int kStagedUnits = kRowUnits<Metric> | 1;

struct FinalArgs {
  const uint4* queries;  // prepared
  int query_count;
  const uint4* database;  // prepared rows of this launch
  int database_rows;
  int rows_per_split;
  int index_offset;    // database index of row 0 (streamed chunks)
  int matrix_columns;  // all pairs
  float* matrix;       // all pairs; otherwise keys
  Key* keys;
};

// Copies `count` prepared rows starting at `rows` into a staged tile of kTileRows rows, with
// cp.async; rows past `count` become zeros. The rows are contiguous in global memory, so
// element e of the tile comes from rows[e] and lands in row e / kRowUnits of the padded tile.
template <class Metric, class Tile, int kTileRows>
__device__ __forceinline__ void stage_rows(uint4* tile, const uint4* rows, int count) {
  constexpr int kUnits = kRowUnits<Metric>, kPad = kStagedUnits<Metric> - kUnits;
  constexpr int kElements = kTileRows * kUnits;
  const int present = min(count, kTileRows) * kUnits;
#pragma unroll
  for (int i = 0; i < (kElements + Tile::threads - 1) / Tile::threads; ++i) {
    const int e = threadIdx.x + i * Tile::threads;
    if (kElements % Tile::threads == 0 || e < kElements) {
      uint4* to = tile + e + e / kUnits * kPad;
      if (e < present) {
        __pipeline_memcpy_async(to, rows + e, sizeof(uint4));
      } else {
        *to = make_uint4(0, 0, 0, 0);
      }
    }
  }
}

// Stages the tile of database rows from `first` (rows up to `end`) into `buffer`; nothing when
// first ≥ end.
template <class Metric, class Tile>
__device__ __forceinline__ void stage_row_tile(uint4* buffer, const uint4* database, int first,
                                               int end) {
  if (first < end) {
    stage_rows<Metric, Tile, Tile::tile_rows>(
        buffer, database + std::size_t(first) * kRowUnits<Metric>, end - first);
  }
}

// A split's row tiles, double-buffered: tile n of the walk lands in buffer n % 2 while tile n − 1
// is read. Where rows are staged as they lie in memory (kStagedUnits = kRowUnits) on sm_90,
// thread 0 stages a tile with one bulk copy (the tensor memory accelerator) that completes on the
// buffer's "full" mbarrier, once every warp has arrived on its "empty" one after reading the tile
// before: the other threads spend no instructions on staging, and the warps meet at no block
// barrier. Rows past the end keep an earlier tile's rows or zeros (their distances are dropped).
// Elsewhere (padded rows, older GPUs) every thread copies its share with cp.async
// (stage_row_tile, rows past the end zeros) and the block meets at barriers. The shared memory is
// the two buffers, then one 16-byte unit for each pair of barriers.
template <class Metric, class Tile>
class RowTileWalk {
 public:
  static constexpr int kUnits = kRowUnits<Metric>, kStaged = kStagedUnits<Metric>;
  static constexpr bool kBulk = kStaged == kUnits;  // and sm_90: the #if around each use
  static constexpr int kBufferUnits = Tile::tile_rows * kStaged;
  static constexpr int kSharedUnits = 2 * kBufferUnits + 2;

  __device__ explicit RowTileWalk(uint4* shared)
      : buffers_(shared), barriers_(reinterpret_cast<std::uint64_t*>(shared + 2 * kBufferUnits)) {}

  __device__ uint4* buffer(int n) const { return buffers_ + n % 2 * kBufferUnits; }

  // Zero buffers and the barriers; the block must meet at a __syncthreads() before the first stage.
  __device__ void init() {
#if __CUDA_ARCH__ >= 900
    if constexpr (kBulk) {
      for (int u = threadIdx.x; u < 2 * kBufferUnits; u += Tile::threads) {
        buffers_[u] = make_uint4(0, 0, 0, 0);
      }
      // The zeros and the barriers before any bulk copy writes over them or completes on them.
      if (threadIdx.x == 0) {
        for (int b = 0; b < 2; ++b) {
          bulk_copy::init(full(b), 1);
          bulk_copy::init(empty(b), Tile::threads / kWarpSize);  // every warp releases
        }
      }
      bulk_copy::fence_before_copies();
    }
#endif
  }

  // Tile n: the rows from `first` (up to `end`) into buffer n % 2; nothing when first ≥ end.
  __device__ void stage(int n, const uint4* database, int first, int end) {
#if __CUDA_ARCH__ >= 900
    if constexpr (kBulk) {
      if (threadIdx.x == 0 && first < end) {
        if (n >= 2) bulk_copy::wait_phase(empty(n % 2), (n - 2) / 2 % 2);  // tile n − 2 read
        const std::uint32_t bytes = min(Tile::tile_rows, end - first) * kUnits * sizeof(uint4);
        bulk_copy::arrive_expecting(full(n % 2), bytes);
        bulk_copy::copy_to_shared(buffer(n), database + std::size_t(first) * kUnits, bytes,
                                  full(n % 2));
      }
      __syncwarp();
      return;
    }
#endif
    stage_row_tile<Metric, Tile>(buffer(n), database, first, end);
    __pipeline_commit();
  }

  // Until tile n has landed and is visible to the whole block.
  __device__ void wait(int n) const {
#if __CUDA_ARCH__ >= 900
    if constexpr (kBulk) {
      bulk_copy::wait_phase(full(n % 2), n / 2 % 2);
      return;
    }
#endif
    __pipeline_wait_prior(1);  // everything but the tile after it has landed
    __syncthreads();
  }

  // The calling warp has read tile n: its buffer may be staged again.
  __device__ void release(int n) const {
#if __CUDA_ARCH__ >= 900
    if constexpr (kBulk) {
      __syncwarp();
      if (threadIdx.x % kWarpSize == 0) bulk_copy::arrive(empty(n % 2));
      return;
    }
#endif
    __syncthreads();
  }

  // Nothing left in flight at the kernel's end.
  __device__ void finish() const {
    __pipeline_wait_prior(0);
  }

 private:
  __device__ std::uint32_t full(int b) const {
    return bulk_copy::shared_address(barriers_ + b);
  }
  __device__ std::uint32_t empty(int b) const {
    return bulk_copy::shared_address(barriers_ + 2 + b);
  }

  uint4* buffers_;
  std::uint64_t* barriers_;
};

template <class Metric, class Tile, bool kAllPairs>
__global__ void __launch_bounds__(Tile::threads, Tile::min_blocks) final_kernel(FinalArgs a) {
  constexpr int kQ = Tile::queries, kR = Tile::rows, kStaged = kStagedUnits<Metric>;
  extern __shared__ uint4 staged[];
  // The block's queries, then the walk's two row tiles: the one being read and the one being
  // filled.
  uint4* const query_tile = staged;
  RowTileWalk<Metric, Tile> walk(staged + Tile::block_queries * kStaged);

  const int row_lane = threadIdx.x % Tile::row_lanes;  // warps hold whole groups of 8 lanes
  const int group = threadIdx.x / Tile::row_lanes;     // query group of the block
  const int q0 = blockIdx.x * Tile::block_queries;
  const int begin = blockIdx.y * a.rows_per_split;
  const int end = min(a.database_rows, begin + a.rows_per_split);

  stage_rows<Metric, Tile, Tile::block_queries>(
      query_tile, a.queries + std::size_t(q0) * kRowUnits<Metric>, a.query_count - q0);
  __pipeline_commit();
  walk.init();
  __pipeline_wait_prior(0);
  __syncthreads();  // the queries, and the walk's buffers and barriers
  walk.stage(0, a.database, begin, end);

  int query[kQ];
  std::uint32_t query_extra[kQ];
#pragma unroll
  for (int j = 0; j < kQ; ++j) {
    query[j] = q0 + group * kQ + j;
    query_extra[j] =
        Metric::kExtraWord >= 0 && query[j] < a.query_count
            ? reinterpret_cast<const std::uint32_t*>(
                  a.queries)[std::size_t(query[j]) * Metric::kRowWords + max(Metric::kExtraWord, 0)]
            : 0;
  }
  LocalTop2<typename Metric::Distance> top[kQ];

  int n = 0;  // the walk's tile
  for (int tile = begin; tile < end; tile += Tile::tile_rows, ++n) {
    walk.stage(n + 1, a.database, tile + Tile::tile_rows, end);
    walk.wait(n);

    const uint4* const rows = walk.buffer(n);
    typename Metric::Acc acc[kQ][kR];
#pragma unroll
    for (int j = 0; j < kQ; ++j) {
#pragma unroll
      for (int k = 0; k < kR; ++k) acc[j][k] = Metric::start();
    }
#pragma unroll 1
    for (int c = 0; c < Metric::kChunks; ++c) {
      const int unit = c * (kChunkWords / 4);
      Chunk qc[kQ], rc[kR];
#pragma unroll
      for (int j = 0; j < kQ; ++j) {
        qc[j] = load_chunk(query_tile + (group * kQ + j) * kStaged + unit);
      }
#pragma unroll
      for (int k = 0; k < kR; ++k) {
        rc[k] = load_chunk(rows + (row_lane + k * Tile::row_lanes) * kStaged + unit);
      }
#pragma unroll
      for (int j = 0; j < kQ; ++j) {
#pragma unroll
        for (int k = 0; k < kR; ++k) Metric::accumulate(acc[j][k], qc[j], rc[k]);
      }
    }

    // The distances, absent for rows past the end; a tile that ends before `end` (all but a
    // split's last) skips the test.
    using Distance = typename Metric::Distance;
    Distance distance[kQ][kR];
    const auto finish_tile = [&](auto whole_tile) {
#pragma unroll
      for (int k = 0; k < kR; ++k) {
        const int local = row_lane + k * Tile::row_lanes;
        const bool present = decltype(whole_tile)::value || tile + local < end;
        const std::uint32_t row_extra =
            Metric::kExtraWord >= 0 ? reinterpret_cast<const std::uint32_t*>(
                                          rows + local * kStaged)[max(Metric::kExtraWord, 0)]
                                    : 0;
#pragma unroll
        for (int j = 0; j < kQ; ++j) {
          distance[j][k] = present ? Metric::finish(acc[j][k], query_extra[j], row_extra)
                                   : absent_distance<Distance>();
          if constexpr (kAllPairs) {
            if (present && query[j] < a.query_count) {
              a.matrix[std::size_t(query[j]) * a.matrix_columns + a.index_offset + tile + local] =
                  float(distance[j][k]);
            }
          }
        }
      }
    };
    if (tile + Tile::tile_rows <= end) {
      finish_tile(std::true_type{});
    } else {
      finish_tile(std::false_type{});
    }
    walk.release(n);
    if constexpr (!kAllPairs) {
      // Rows past the end are absent and never inserted; most tiles bring nothing closer.
#pragma unroll
      for (int j = 0; j < kQ; ++j) {
        Distance lowest = distance[j][0];
#pragma unroll
        for (int k = 1; k < kR; ++k) lowest = distance_min<Isa::tuned>(lowest, distance[j][k]);
        if (lowest < top[j].second) {
          top[j].insert_rows(distance[j], a.index_offset + tile + row_lane, Tile::row_lanes);
        }
      }
    }
  }
  walk.finish();

  if constexpr (!kAllPairs) {
#pragma unroll
    for (int j = 0; j < kQ; ++j) {
      insert_lanes_top2(top[j].keys(), Tile::row_lanes, row_lane == j, a.keys, query[j],
                        a.query_count);
    }
  }
}

// The splits of a kernel family whose blocks take Tile::block_queries queries each and walk
// their split of the database Tile::tile_rows rows at a time.
template <class Tile>
struct TileSplits {
  static int query_tiles(int queries) {
    return (queries + Tile::block_queries - 1) / Tile::block_queries;
  }
  static SplitPlan plan(int queries, int rows, long long resident_blocks) {
    return plan_splits(query_tiles(queries), rows, Tile::tile_rows, resident_blocks);
  }
};

// Lets `kernel` use `bytes` of dynamic shared memory on the current device.
template <class Kernel>
void opt_in_shared_memory(Kernel kernel, std::size_t bytes) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
        "cudaFuncSetAttribute(cemd kernel shared memory)");
}

// One metric's final kernels: their shared-memory opt-in, occupancy and launches.
template <class RowMetric, class Tile = FinalShapeOf<RowMetric>>
struct FinalKernels : TileSplits<Tile> {
  using Metric = RowMetric;
  using TileSplits<Tile>::query_tiles;
  // The block's queries and the row tiles' walk.
  static constexpr std::size_t kSharedBytes =
      (std::size_t(Tile::block_queries) * kStagedUnits<Metric> +
       RowTileWalk<Metric, Tile>::kSharedUnits) *
      sizeof(uint4);

  // Opts the kernels into their shared memory and returns how many blocks stay resident.
  static long long configure() {
    opt_in_shared_memory(final_kernel<Metric, Tile, true>, kSharedBytes);
    opt_in_shared_memory(final_kernel<Metric, Tile, false>, kSharedBytes);
    return cuda::resident_threads(final_kernel<Metric, Tile, false>, Tile::threads, kSharedBytes) /
           Tile::threads;
  }

  static void launch(FinalArgs args, const SplitPlan& plan, bool all_pairs, cudaStream_t stream) {
    args.rows_per_split = plan.rows_per_split;
    const dim3 grid(query_tiles(args.query_count), plan.splits);
    if (all_pairs) {
      final_kernel<Metric, Tile, true><<<grid, Tile::threads, kSharedBytes, stream>>>(args);
    } else {
      final_kernel<Metric, Tile, false><<<grid, Tile::threads, kSharedBytes, stream>>>(args);
    }
    check_launch("cemd final_kernel");
  }
};

// A prepared-row kernel family (FinalKernels, HalfMmaKernels) on the legacy default stream; the
// pre-pass is part of compute().
template <class Kernels>
class PreparedRunner final : public Runner<Cemd> {
  using Metric = typename Kernels::Metric;

 public:
  explicit PreparedRunner(const CemdInput& input)
      : buffers_(input),
        prepared_queries_(std::size_t(buffers_.queries) * kRowUnits<Metric>),
        prepared_database_(std::size_t(buffers_.database) * kRowUnits<Metric>),
        plan_(Kernels::plan(buffers_.queries, buffers_.database, Kernels::configure())) {}
  void poison(std::uint8_t byte) override { buffers_.poison(byte); }
  void upload() override { buffers_.upload(); }
  void compute() override {
    launch_prepare<Metric>(buffers_.query_values.get(), buffers_.queries, true,
                           prepared_queries_.get(), 0);
    launch_prepare<Metric>(buffers_.database_values.get(), buffers_.database, false,
                           prepared_database_.get(), 0);
    if (!buffers_.all_pairs) clear_keys(buffers_.keys.get(), buffers_.keys.size(), 0);
    const FinalArgs args{prepared_queries_.get(),
                         buffers_.queries,
                         prepared_database_.get(),
                         buffers_.database,
                         0,
                         0,
                         buffers_.database,
                         buffers_.matrix_or_null(),
                         buffers_.keys_or_null()};
    Kernels::launch(args, plan_, buffers_.all_pairs, 0);
  }
  void sync() override { check(cudaDeviceSynchronize(), "cemd prepared-row kernels"); }
  void download(CemdResult& out) override { buffers_.download(out); }

 private:
  CemdBuffers buffers_;
  DeviceBuffer<uint4> prepared_queries_, prepared_database_;
  SplitPlan plan_;
};
template <class Metric>
using FinalRunner = PreparedRunner<FinalKernels<Metric>>;

// --- cuda-final on device views ---------------------------------------------------------------

// A kernel family's split plans for the calls on views: its kernels are configured (shared memory
// opted in, occupancy queried) once per device, since cudaFuncSetAttribute holds for the current
// device only, and the last shape's plan is kept, so a call of a repeated shape does no more
// than a look-up. Kernels has configure() → resident blocks and plan(queries, rows, resident).
template <class Kernels>
class ViewPlans {
 public:
  static SplitPlan plan(int queries, int rows) {
    static ViewPlans plans;
    const int device = cuda::current_device();
    const std::lock_guard<std::mutex> lock(plans.mutex_);
    if (std::size_t(device) >= plans.resident_blocks_.size()) {
      plans.resident_blocks_.resize(std::size_t(device) + 1, 0);
    }
    long long& resident = plans.resident_blocks_[std::size_t(device)];
    if (resident == 0) resident = Kernels::configure();
    Last& last = plans.last_;
    if (last.queries != queries || last.rows != rows || last.resident_blocks != resident) {
      last = {queries, rows, resident, Kernels::plan(queries, rows, resident)};
    }
    return last.plan;
  }

 private:
  struct Last {
    int queries = 0, rows = 0;
    long long resident_blocks = 0;
    SplitPlan plan;
  };
  std::mutex mutex_;
  std::vector<long long> resident_blocks_;  // per device; 0 until configured there
  Last last_;
};

// The final kernels' matrix row stride in elements: the caller's, which FinalArgs holds as an int.
int matrix_columns(const CemdViewCall& call) {
  const std::size_t columns = call.matrix_stride / sizeof(float);
  if (columns > std::size_t(std::numeric_limits<int>::max())) {
    throw Error("a cemd matrix row stride of " + std::to_string(call.matrix_stride) +
                " bytes is more than the cuda-final kernels take");
  }
  return int(columns);
}

// `rows` descriptors where the pre-pass reads them as 16-byte words: the caller's memory when it
// is aligned so, else a copy in the scratch memory `name`, queued on the call's stream.
const std::uint8_t* word_aligned_rows(const std::uint8_t* rows, int count, const ViewWork& work,
                                      const char* name) {
  if (reinterpret_cast<std::uintptr_t>(rows) % sizeof(uint4) == 0) return rows;
  const std::size_t bytes = std::size_t(count) * kDescriptorBytes;
  void* copy = work.scratch->bytes(name, bytes);
  copy_rows_async(copy, bytes, rows, bytes, bytes, 1, work.stream);
  return static_cast<const std::uint8_t*>(copy);
}

// kbench::cemd on device views (Variant::on_views of cuda-final, and cuda-tensor's normalised
// CEMD): compute() of PreparedRunner on the caller's memory and stream. The prepared rows live in
// the context's scratch memory; the kernel writes the matrix rows at the caller's stride itself.
template <class Kernels>
void prepared_on_views(const CemdViewCall& call) {
  using Metric = typename Kernels::Metric;
  const cudaStream_t stream = static_cast<cudaStream_t>(call.work.stream);
  const SplitPlan plan = ViewPlans<Kernels>::plan(call.query_rows, call.database_rows);
  const std::size_t row_bytes = kRowUnits<Metric> * sizeof(uint4);
  auto* const prepared_queries = static_cast<uint4*>(call.work.scratch->bytes(
      "cuda cemd prepared queries", std::size_t(call.query_rows) * row_bytes));
  auto* const prepared_database = static_cast<uint4*>(call.work.scratch->bytes(
      "cuda cemd prepared database", std::size_t(call.database_rows) * row_bytes));
  launch_prepare<Metric>(
      word_aligned_rows(call.queries, call.query_rows, call.work, "cuda cemd queries"),
      call.query_rows, true, prepared_queries, stream);
  launch_prepare<Metric>(
      word_aligned_rows(call.database, call.database_rows, call.work, "cuda cemd database"),
      call.database_rows, false, prepared_database, stream);
  const bool all_pairs = call.matrix != nullptr;
  Key* const keys = all_pairs ? nullptr : reinterpret_cast<Key*>(call.keys);
  if (!all_pairs) clear_keys(keys, 2 * std::size_t(call.query_rows), stream);
  const FinalArgs args{prepared_queries,
                       call.query_rows,
                       prepared_database,
                       call.database_rows,
                       0,
                       0,
                       all_pairs ? matrix_columns(call) : call.database_rows,
                       call.matrix,
                       keys};
  Kernels::launch(args, plan, all_pairs, stream);
}

// --- cuda-tensor: Euclidean matching on integer tensor cores -------------------------------

// The MMA: m16n8k32, u8 operands, s32 accumulators (sm_80 and later). Four of them make one
// 128-byte dot product.
constexpr int kMmaRows = 16, kMmaColumns = 8, kMmaDepth = 32;
constexpr int kMmaSteps = kDescriptorBytes / kMmaDepth;
// The 4 lanes of a quad share an MMA row (and a column); each holds 32 bytes of the row's
// descriptor: 16-byte words t and 4 + t, so a warp's loads cover whole 32-byte sectors.
constexpr int kQuadLanes = 4;
constexpr int kLaneWords = kDescriptorBytes / kQuadLanes / sizeof(std::uint32_t);  // 8
constexpr int kRowUnitsPerHalf = int(kDescriptorUnits) / 2;

// The largest |a|² of a descriptor; a row's partial distance |b|² − 2·a·b is at most this.
constexpr int kMaxSquaredNorm = kMaxL2Sum;
// The norm given to rows past the database's end: their partial distance stays above any real
// one whatever bytes stand in for them.
constexpr std::uint32_t kAbsentNorm = 4u * kMaxSquaredNorm;

// The MMAs start from −⌈|b|²/2⌉ in each row's column, so they end at acc = a·b − ⌈|b|²/2⌉ and the
// partial distance is |b|² − 2·a·b = −2·acc − (|b|² mod 2): no per-pair arithmetic until a
// candidate may enter.
__host__ __device__ constexpr int tensor_start(std::uint32_t norm) {
  return -int((norm + 1) / 2);
}

// The database rows' terms, a block per step of kStepRows rows, staged with the step: the rows'
// |b|² (kStepRows words), then per pair of rows the MMA's start fragment {s(2p), s(2p + 1),
// s(2p), s(2p + 1)} (so one 16-byte read gives a lane its two columns' start, in place).
template <int kStepRows>
struct TensorTerms {
  static constexpr int kNormWords = kStepRows;
  static constexpr int kStartWords = 2 * kStepRows;
  static constexpr int kUnits = (kNormWords + kStartWords) / 4;  // 16-byte units a step
  static_assert(kStepRows % 4 == 0, "whole units of norms");

  // Where row r's norm and its two start copies lie in the terms (words).
  __host__ __device__ static constexpr std::size_t norm_word(std::size_t r) {
    return r / kStepRows * (kUnits * 4) + r % kStepRows;
  }
  __host__ __device__ static constexpr std::size_t start_word(std::size_t r, int copy) {
    return r / kStepRows * (kUnits * 4) + kNormWords + r % kStepRows / 2 * 4 + 2 * copy + r % 2;
  }
};

// The MMA's k order is a permutation of the bytes, the same for both operands, so the dot product
// is unchanged: a lane's word w (bytes 64·(w / 4) + 16·t + 4·(w % 4) of its row) is k-step w / 2,
// the low (w even) or high (w odd) 16 k-values of the fragment's share of lane t.
__device__ __forceinline__ void lane_words(const uint4& lo, const uint4& hi,
                                           std::uint32_t (&w)[kLaneWords]) {
  store_words(lo, w);
  store_words(hi, w + 4);
}
// A lane's words of a row in global memory.
__device__ __forceinline__ void load_lane_words(const uint4* row, int t,
                                                std::uint32_t (&w)[kLaneWords]) {
  lane_words(__ldg(row + t), __ldg(row + kRowUnitsPerHalf + t), w);
}

// d = a·b + c for one m16n8k32 fragment: a from rows g and g + 8, b from column g (g = lane / 4),
// in the PTX fragment layout. Before sm_80 the same product comes from the quad's registers by
// shuffles and 4-byte dot products.
__device__ __forceinline__ void mma_u8(int (&d)[4], const std::uint32_t (&a)[4],
                                       const std::uint32_t (&b)[2], const int (&c)[4]) {
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]),
        "r"(c[2]), "r"(c[3]));
#else
  constexpr auto dot4 = packed::dot4_u8<Isa::tuned>;
  const int lane = threadIdx.x % kWarpSize, g = lane / kQuadLanes, t = lane % kQuadLanes;
  int sum[4] = {c[0], c[1], c[2], c[3]};
#pragma unroll
  for (int p = 0; p < kQuadLanes; ++p) {
    std::uint32_t row_words[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) row_words[r] = __shfl_sync(kFullWarp, a[r], g * kQuadLanes + p);
#pragma unroll
    for (int col = 0; col < 2; ++col) {
      const int from = (2 * t + col) * kQuadLanes + p;
      const std::uint32_t b0 = __shfl_sync(kFullWarp, b[0], from);
      const std::uint32_t b1 = __shfl_sync(kFullWarp, b[1], from);
      sum[col] = int(dot4(row_words[0], b0, dot4(row_words[2], b1, std::uint32_t(sum[col]))));
      sum[2 + col] =
          int(dot4(row_words[1], b0, dot4(row_words[3], b1, std::uint32_t(sum[2 + col]))));
    }
  }
  for (int i = 0; i < 4; ++i) d[i] = sum[i];
#endif
}

// Where unit u (16 bytes) of staged row r lies: odd rows swap their halves, so the 8 lanes of a
// 128-bit shared-memory phase (two rows, four units each) fall on 32 different banks.
__device__ __forceinline__ int tensor_staged_unit(int row, int unit) {
  return row * int(kDescriptorUnits) + (unit ^ (row & 1) * kRowUnitsPerHalf);
}

// A block of kWarps warps; a warp holds kQueryTiles × 16 queries in registers for the whole
// walk and multiplies them by kRowTiles × 8 database rows a step; kMinBlocks blocks an SM (the
// registers' limit).
template <int kWarps, int kQueryTiles, int kRowTiles, int kMinBlocks>
struct TensorTile {
  static constexpr int threads = kWarpSize * kWarps;
  static constexpr int query_tiles = kQueryTiles, row_tiles = kRowTiles;
  static constexpr int warp_queries = kQueryTiles * kMmaRows;
  static constexpr int block_queries = kWarps * warp_queries;
  static constexpr int step_rows = kRowTiles * kMmaColumns;
  static constexpr int min_blocks = kMinBlocks;
  static constexpr int stages = 4;  // steps of rows in shared memory: in flight and being read
};
// Sixteen warps an SM: 128 registers a thread hold the fragments and the nearest two (a few
// bytes spill).
using TensorShape = TensorTile<4, 2, 4, 4>;

// One query row's nearest two in a lane. Candidates are ranked by their cemd_key (the float
// distance, then the index), but most are turned away by their exact partial distance
// |b|² − 2·a·b (the squared distance less the query's |a|²): one more than kL2TieReach above the
// query's second-nearest partial cannot round to its distance, so only the few within bound reach
// the key. The bound only falls: the lane's own second, or its quad's (share_bound).
struct TensorTop2 {
  Key best = kNoKey, second = kNoKey;
  int best_partial = kMaxSquaredNorm, second_partial = kMaxSquaredNorm;
  int bound = kMaxSquaredNorm;
  // The least MMA result that may be within bound: −2·acc − parity ≤ bound needs
  // acc ≥ −⌊(bound + 1) / 2⌋.
  int enter_at = -((kMaxSquaredNorm + 1) >> 1);

  __device__ __forceinline__ void lower_bound_to(int value) {
    bound = min(bound, value);
    enter_at = -((bound + 1) >> 1);
  }

  __device__ __forceinline__ void offer(int partial, std::uint32_t query_norm, int index) {
    if (partial > bound) return;
    const Key key = cemd_key(std::sqrt(float(query_norm + std::uint32_t(partial))), index);
    if (key < best) {
      second = best, second_partial = best_partial;
      best = key, best_partial = partial;
    } else if (key < second) {
      second = key, second_partial = partial;
    } else {
      return;
    }
    lower_bound_to(second_partial + kL2TieReach);
  }
  // The quad's four lanes hold the same query's candidates: the second smallest partial of their
  // nearest twos bounds the query's second too. Every lane of the warp must call it.
  __device__ __forceinline__ void share_bound() {
    int lowest = best_partial, next = second_partial;
#pragma unroll
    for (int offset = 1; offset < kQuadLanes; offset *= 2) {
      const int other_lowest = __shfl_xor_sync(kFullWarp, lowest, offset);
      const int other_next = __shfl_xor_sync(kFullWarp, next, offset);
      next = min(max(lowest, other_lowest), min(next, other_next));
      lowest = min(lowest, other_lowest);
    }
    lower_bound_to(next + kL2TieReach);
  }
  __device__ __forceinline__ Top2 keys() const {
    return {best, second};
  }
};

struct TensorArgs {
  const uint4* queries;
  const std::uint32_t* query_norms;
  int query_count;
  const uint4* database;
  // The rows' TensorTerms, padded to whole steps with kAbsentNorm's, 16-byte aligned.
  const uint4* row_terms;
  int database_rows;
  int rows_per_split;
  Key* keys;
};

template <class Tile>
__global__ void __launch_bounds__(Tile::threads, Tile::min_blocks) tensor_kernel(TensorArgs a) {
  constexpr int kQT = Tile::query_tiles, kRT = Tile::row_tiles;
  const int lane = threadIdx.x % kWarpSize, g = lane / kQuadLanes, t = lane % kQuadLanes;
  const int warp_query =
      blockIdx.x * Tile::block_queries + threadIdx.x / kWarpSize * Tile::warp_queries;
  const int begin = blockIdx.y * a.rows_per_split;
  const int end = min(a.database_rows, begin + a.rows_per_split);

  // The warp's query fragments: tile i, rows g (h 0) and g + 8 (h 1).
  std::uint32_t query_words[kQT][2][kLaneWords];
  std::uint32_t query_norm[kQT][2];
  TensorTop2 top[kQT][2];
#pragma unroll
  for (int i = 0; i < kQT; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int q = min(warp_query + i * kMmaRows + h * kMmaColumns + g, a.query_count - 1);
      load_lane_words(a.queries + std::size_t(q) * kDescriptorUnits, t, query_words[i][h]);
      query_norm[i][h] = a.query_norms[q];
      top[i][h] = TensorTop2{};  // assigned: nvcc dropped the initialisers of all but row 0
    }
  }

  // The block's steps of rows pass through Tile::stages buffers of shared memory, filled with
  // cp.async stages − 1 steps ahead with the steps' terms; rows past the end are zeros. A thread
  // copies the same units of every step, and reads the same units of its rows.
  using Terms = TensorTerms<Tile::step_rows>;
  constexpr int kStepUnits = Tile::step_rows * int(kDescriptorUnits);
  constexpr int kCopies = kStepUnits / Tile::threads;
  static_assert(kStepUnits % Tile::threads == 0, "whole copies per thread");
  static_assert(Terms::kUnits <= Tile::threads, "one terms copy per thread at most");
  __shared__ uint4 staged[Tile::stages][kStepUnits];
  __shared__ uint4 staged_terms[Tile::stages][Terms::kUnits];
  int copy_to[kCopies];
#pragma unroll
  for (int k = 0; k < kCopies; ++k) {
    const int e = threadIdx.x + k * Tile::threads;
    copy_to[k] = tensor_staged_unit(e / int(kDescriptorUnits), e % int(kDescriptorUnits));
  }
  int read_lo[kRT], read_hi[kRT];
#pragma unroll
  for (int j = 0; j < kRT; ++j) {
    read_lo[j] = tensor_staged_unit(j * kMmaColumns + g, t);
    read_hi[j] = tensor_staged_unit(j * kMmaColumns + g, kRowUnitsPerHalf + t);
  }
  const auto stage = [&](int first, int b) {
    if (first >= end) return;
    const uint4* const rows = a.database + std::size_t(first) * kDescriptorUnits + threadIdx.x;
    if (first + Tile::step_rows <= end) {
#pragma unroll
      for (int k = 0; k < kCopies; ++k) {
        __pipeline_memcpy_async(staged[b] + copy_to[k], rows + k * Tile::threads, sizeof(uint4));
      }
    } else {  // the database's last step
      const int present = (end - first) * int(kDescriptorUnits) - int(threadIdx.x);
#pragma unroll
      for (int k = 0; k < kCopies; ++k) {
        if (k * Tile::threads < present) {
          __pipeline_memcpy_async(staged[b] + copy_to[k], rows + k * Tile::threads, sizeof(uint4));
        } else {
          staged[b][copy_to[k]] = make_uint4(0, 0, 0, 0);
        }
      }
    }
    if (threadIdx.x < Terms::kUnits) {
      __pipeline_memcpy_async(
          staged_terms[b] + threadIdx.x,
          a.row_terms + std::size_t(first / Tile::step_rows) * Terms::kUnits + threadIdx.x,
          sizeof(uint4));
    }
  };
#pragma unroll
  for (int k = 0; k < Tile::stages - 1; ++k) {
    stage(begin + k * Tile::step_rows, k);
    __pipeline_commit();
  }
  for (int first = begin, b = 0; first < end;
       first += Tile::step_rows, b = b + 1 < Tile::stages ? b + 1 : 0) {
    __pipeline_wait_prior(Tile::stages - 2);  // this step's copies (this thread's) have landed
    __syncthreads();                          // everyone's; and the previous step is read
    stage(first + (Tile::stages - 1) * Tile::step_rows, b > 0 ? b - 1 : Tile::stages - 1);
    __pipeline_commit();

    // 32 bytes of each of the step's rows in every lane of its quad.
    std::uint32_t words[kRT][kLaneWords];
#pragma unroll
    for (int j = 0; j < kRT; ++j)
      lane_words(staged[b][read_lo[j]], staged[b][read_hi[j]], words[j]);
    // Columns 2t and 2t + 1 of each row tile start from their rows' tensor_start.
    const auto* const starts =
        reinterpret_cast<const int4*>(staged_terms[b] + Terms::kNormWords / 4);
    int start[kRT][4];
#pragma unroll
    for (int j = 0; j < kRT; ++j) {
      const int4 quad = starts[j * kMmaColumns / 2 + t];
      start[j][0] = quad.x, start[j][1] = quad.y, start[j][2] = quad.z, start[j][3] = quad.w;
    }
    int acc[kQT][kRT][4];
#pragma unroll
    for (int s = 0; s < kMmaSteps; ++s) {
#pragma unroll
      for (int j = 0; j < kRT; ++j) {
        const std::uint32_t b_words[2] = {words[j][2 * s], words[j][2 * s + 1]};
#pragma unroll
        for (int i = 0; i < kQT; ++i) {
          const std::uint32_t fragment[4] = {query_words[i][0][2 * s], query_words[i][1][2 * s],
                                             query_words[i][0][2 * s + 1],
                                             query_words[i][1][2 * s + 1]};
          mma_u8(acc[i][j], fragment, b_words, s == 0 ? start[j] : acc[i][j]);
        }
      }
    }

    bool may_enter[kQT][2];
    bool any_may_enter = false;
#pragma unroll
    for (int i = 0; i < kQT; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // The largest result (the lowest partial distance) by a tree, so the maxima do not wait
        // on each other.
        int largest[kRT * 2];
#pragma unroll
        for (int k = 0; k < kRT * 2; ++k) largest[k] = acc[i][k / 2][2 * h + k % 2];
#pragma unroll
        for (int width = kRT; width >= 1; width /= 2) {
#pragma unroll
          for (int k = 0; k < width; ++k) largest[k] = max(largest[k], largest[k + width]);
        }
        may_enter[i][h] = largest[0] >= top[i][h].enter_at;
        any_may_enter |= may_enter[i][h];
      }
    }
    // Rare once the nearest twos settle; whole warps take it, for the quads' shuffles.
    if (__any_sync(kFullWarp, any_may_enter)) {
      // The parities of columns 2t and 2t + 1; rows past the end have kAbsentNorm's.
      int parity[kRT][2];
#pragma unroll
      for (int j = 0; j < kRT; ++j) {
        const uint2 n = reinterpret_cast<const uint2*>(staged_terms[b])[j * kMmaColumns / 2 + t];
        parity[j][0] = int(n.x & 1u), parity[j][1] = int(n.y & 1u);
      }
#pragma unroll
      for (int i = 0; i < kQT; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!__any_sync(kFullWarp, may_enter[i][h])) continue;
#pragma unroll
          for (int k = 0; k < kRT * 2; ++k) {
            const int j = k / 2, c = k % 2;
            top[i][h].offer(-2 * acc[i][j][2 * h + c] - parity[j][c], query_norm[i][h],
                            first + j * kMmaColumns + 2 * t + c);
          }
          top[i][h].share_bound();
        }
      }
    }
  }
  __pipeline_wait_prior(0);  // nothing left in flight (the stages past a short split)

#pragma unroll
  for (int i = 0; i < kQT; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      insert_lanes_top2(top[i][h].keys(), kQuadLanes, t == 0, a.keys,
                        warp_query + i * kMmaRows + h * kMmaColumns + g, a.query_count);
    }
  }
}

// Squared norms of `count` descriptors, one thread each, into `norms`; or with `terms`, as the
// TensorTerms of a database padded to `padded` rows with kAbsentNorm.
constexpr int kNormThreads = 256;
template <class Terms>
__global__ void __launch_bounds__(kNormThreads)
    norms_kernel(const uint4* __restrict__ rows, int count, int padded,
                 std::uint32_t* __restrict__ norms, std::uint32_t* __restrict__ terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= padded) return;
  std::uint32_t sum = kAbsentNorm;
  if (i < count) {
    DescriptorWords bytes;
    load_descriptor_words(rows, i, bytes);
    sum = squared_norm(bytes);
  }
  if (!terms) {
    norms[i] = sum;
    return;
  }
  terms[Terms::norm_word(i)] = sum;
  for (int copy = 0; copy < 2; ++copy) terms[Terms::start_word(i, copy)] = tensor_start(sum);
}

// The tensor kernel's launches: norms of both sets, then the walk over database splits.
template <class Tile = TensorShape>
struct TensorKernels {
  static long long configure() {
    return cuda::resident_threads(tensor_kernel<Tile>, Tile::threads, 0) / Tile::threads;
  }
  static int query_blocks(int queries) {
    return (queries + Tile::block_queries - 1) / Tile::block_queries;
  }
  // Splits are planned in grains of kPlanSteps steps: about a block's fixed cost (its query
  // fragments, and the first steps, where most candidates still enter the nearest two).
  static constexpr int kPlanSteps = 64;
  static SplitPlan plan(int queries, int rows, long long resident_blocks) {
    return plan_splits(query_blocks(queries), rows, kPlanSteps * Tile::step_rows, resident_blocks);
  }
  using Terms = TensorTerms<Tile::step_rows>;
  // Scratch words for the two sets' terms: the queries' norms, then the rows' TensorTerms.
  static std::size_t term_words(int queries, int rows) {
    const std::size_t steps = (std::size_t(rows) + Tile::step_rows - 1) / Tile::step_rows;
    return cuda::round_up(std::size_t(queries), 4) + steps * Terms::kUnits * 4;
  }

  // Matches `queries` against `database` (both 16-byte aligned) into `keys` (two per query,
  // cleared here); `terms` is the caller's scratch of term_words() words, 16-byte aligned.
  static void match(const std::uint8_t* queries, int query_rows, const std::uint8_t* database,
                    int database_rows, std::uint32_t* terms, Key* keys, const SplitPlan& plan,
                    cudaStream_t stream) {
    const auto norms = [&](const std::uint8_t* rows, int count, int padded, std::uint32_t* norms,
                           std::uint32_t* row_terms) {
      norms_kernel<Terms><<<(padded + kNormThreads - 1) / kNormThreads, kNormThreads, 0, stream>>>(
          reinterpret_cast<const uint4*>(rows), count, padded, norms, row_terms);
      check_launch("cemd norms_kernel");
    };
    std::uint32_t* const query_norms = terms;
    std::uint32_t* const row_terms = terms + cuda::round_up(std::size_t(query_rows), 4);
    norms(queries, query_rows, query_rows, query_norms, nullptr);
    norms(database, database_rows, int(cuda::round_up(std::size_t(database_rows), Tile::step_rows)),
          nullptr, row_terms);
    clear_keys(keys, 2 * std::size_t(query_rows), stream);
    const TensorArgs args{reinterpret_cast<const uint4*>(queries),
                          query_norms,
                          query_rows,
                          reinterpret_cast<const uint4*>(database),
                          reinterpret_cast<const uint4*>(row_terms),
                          database_rows,
                          plan.rows_per_split,
                          keys};
    const dim3 grid(query_blocks(query_rows), plan.splits);
    tensor_kernel<Tile><<<grid, Tile::threads, 0, stream>>>(args);
    check_launch("cemd tensor_kernel");
  }
};

// cuda-tensor's runner: the tensor kernels on the legacy default stream.
class TensorRunner final : public Runner<Cemd> {
 public:
  explicit TensorRunner(const CemdInput& input)
      : buffers_(input),
        terms_(TensorKernels<>::term_words(buffers_.queries, buffers_.database)),
        plan_(TensorKernels<>::plan(buffers_.queries, buffers_.database,
                                    TensorKernels<>::configure())) {}
  void poison(std::uint8_t byte) override { buffers_.poison(byte); }
  void upload() override { buffers_.upload(); }
  void compute() override {
    TensorKernels<>::match(buffers_.query_values.get(), buffers_.queries,
                           buffers_.database_values.get(), buffers_.database, terms_.get(),
                           buffers_.keys.get(), plan_, 0);
  }
  void sync() override { check(cudaDeviceSynchronize(), "cemd tensor kernels"); }
  void download(CemdResult& out) override { buffers_.download(out); }

 private:
  CemdBuffers buffers_;
  DeviceBuffer<std::uint32_t> terms_;
  SplitPlan plan_;
};

// cuda-tensor on device views: the caller's rows (copied where not 16-byte aligned) and stream,
// the norms and starts in the context's scratch memory.
void tensor_on_views(const CemdViewCall& call) {
  using Kernels = TensorKernels<>;
  const cudaStream_t stream = static_cast<cudaStream_t>(call.work.stream);
  const SplitPlan plan = ViewPlans<Kernels>::plan(call.query_rows, call.database_rows);
  auto* const terms = static_cast<std::uint32_t*>(call.work.scratch->bytes(
      "cuda cemd norms",
      Kernels::term_words(call.query_rows, call.database_rows) * sizeof(std::uint32_t)));
  Kernels::match(
      word_aligned_rows(call.queries, call.query_rows, call.work, "cuda cemd queries"),
      call.query_rows,
      word_aligned_rows(call.database, call.database_rows, call.work, "cuda cemd database"),
      call.database_rows, terms, reinterpret_cast<Key*>(call.keys), plan, stream);
}

// --- cuda-tensor, normalised CEMD: the cells' differences on half-precision tensor cores ------

// Two floats as the halves of one word (the low one first), as MMA operands hold them.
__device__ __forceinline__ std::uint32_t half_pair(float low, float high) {
  const __half2 pair = __floats2half2_rn(low, high);
  std::uint32_t word;
  memcpy(&word, &pair, sizeof word);
  return word;
}

// A prepared row of the half MMAs: per cell 8 slots, each the two k-values of one m16n8k8 MMA
// operand in a lane as two halves. A query's slot s < 7 holds a(s) = (F(s), F(7)) and slot 7
// a(7) = (F(7), 2^-15); a database row's b(s) = (G(7), −G(s)) and b(7) = (2·G(7), 2^-15), so
// a(s)·b(s) = d(s) = F(s)·|g| − |f|·G(s), the prefix form's difference (detail/cemd_prefix.hpp),
// and a(7)·b(7) = 2·|f|·|g| + kEmptyCellDivisor (2^-15 is a subnormal half, exact; a divisor
// from the operands leaves every MMA's accumulator zero, which reads no registers). A cell takes 8
// MMAs (kMmas), each lane of a quad's first two adding its slot's product: lane 0 slot 2i and lane
// 1 slot 2i + 1, the second time with lane 1's query negated, give d(2i) + d(2i + 1) and d(2i) −
// d(2i + 1) for i < 3, so each pair is ordered by two additions, 2·min = sum − |difference| and
// 2·max = sum + |difference|, instead of two min/max on the busier ALU pipe; lane 0's slot 6 gives
// d(6), ordered against d(7) = 0 alike, and lane 1's slot 7 twice the quotient's divisor: the 8
// values come doubled, and halving both operands of quotient_of_small_integers scales each of its
// steps by a power of two, so the quotient's bits are the same. A database row's cell lists lane
// 0's slots, then lane 1's (row_word), so a lane reads its four in one 16-byte word. Exact: the
// running sums are integers below 2^11 and twice them even integers below 2^12 (exact halves);
// the products and their sums are integers below 2^24, the numerator an even one below 2^25
// (exact floats). A row ends in kPadWords zeros, so that rows lie ≡ 2 (mod 8) 16-byte words apart
// both in memory and staged (kStagedUnits below) and a tile of rows is one contiguous copy.
struct PreparedNormalisedHalves {
  static constexpr int kSlots = kCemdBins;
  static constexpr int kCellWords = kCemdCells * kSlots;
  static constexpr int kPadWords = 8;
  static constexpr int kRowWords = kCellWords + kPadWords;
  static constexpr int kMmas = kSlots;
  static constexpr int kOrderedPairs = 3;  // the MMAs 2i and 2i + 1, i < 3
  static constexpr int kLastDifferenceMma = 2 * kOrderedPairs;
  static constexpr int kDivisorMma = kLastDifferenceMma + 1;
  static constexpr int kDivisorSlot = kSlots - 1;
  static constexpr int kNoSlot = -1;
  static constexpr float kEmptyCellDivisorRoot = 0x1p-15f;
  static_assert(kEmptyCellDivisorRoot * kEmptyCellDivisorRoot == kEmptyCellDivisor);

  // Where slot s of a database row's cell lies: lane 0's slots (even) first, then lane 1's.
  __host__ __device__ static constexpr int row_word(int slot) {
    return slot % 2 * (kSlots / 2) + slot / 2;
  }
  // The database word (of a lane's four) that MMA m multiplies.
  __host__ __device__ static constexpr int row_operand(int mma) {
    return mma < kLastDifferenceMma ? mma / 2 : kLastDifferenceMma / 2;
  }
  // The query slot lane 0 or 1 of a quad multiplies in MMA m, or kNoSlot (a zero operand).
  __host__ __device__ static constexpr int query_slot(int lane, int mma) {
    if (mma < kLastDifferenceMma) return mma / 2 * 2 + lane;
    if (mma == kLastDifferenceMma) return lane == 0 ? kSlots - 2 : kNoSlot;
    return lane == 1 ? kDivisorSlot : kNoSlot;
  }
  // Whether that query operand is negated (the differences of the ordered pairs).
  __host__ __device__ static constexpr bool query_negated(int lane, int mma) {
    return lane == 1 && mma < kLastDifferenceMma && mma % 2 == 1;
  }

  template <Isa = Isa::tuned>
  __device__ static void prepare(const DescriptorWords& bytes, bool query_role,
                                 std::uint32_t (&row)[kRowWords]) {
#pragma unroll
    for (int c = 0; c < kCemdCells; ++c) {
      float running[kCemdBins];
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < kCemdBins; ++i) {
        sum += float(byte_at(bytes, c * kCemdBins + i));
        running[i] = sum;
      }
      const float mass = running[kCemdBins - 1];
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const bool divisor = s == kDivisorSlot;
        if (query_role) {
          row[c * kSlots + s] = half_pair(running[s], divisor ? kEmptyCellDivisorRoot : mass);
        } else {
          row[c * kSlots + row_word(s)] = divisor ? half_pair(2.0f * mass, kEmptyCellDivisorRoot)
                                                  : half_pair(mass, -running[s]);
        }
      }
    }
#pragma unroll
    for (int w = kCellWords; w < kRowWords; ++w) row[w] = 0;
  }
};

// Staged database rows ≡ 2 (mod 8) 16-byte words apart, as in memory (the row's zeros): a quad's
// lanes 0 and 1 read two adjacent words of a row, so the 8 rows a warp reads fill each group of 4
// banks twice.
template <>
constexpr int kStagedUnits<PreparedNormalisedHalves> = kRowUnits<PreparedNormalisedHalves>;
static_assert(kStagedUnits<PreparedNormalisedHalves> % 8 == 2);

// d = a·b for one m16n8k8 fragment, f16 operands and f32 sums: a from rows g and g + 8 (k-values
// 2t and 2t + 1), b from column g, in the PTX fragment layout. Before sm_75 the same sums come
// from the quad's registers by shuffles.
__device__ __forceinline__ void mma_f16(float (&d)[4], std::uint32_t a_low, std::uint32_t a_high,
                                        std::uint32_t b) {
  constexpr float kZero = 0.0f;
#if __CUDA_ARCH__ >= 750
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%9,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a_low), "r"(a_high), "r"(b), "f"(kZero), "f"(kZero), "f"(kZero), "f"(kZero));
#else
  const auto floats = [](std::uint32_t word) {
    __half2 pair;
    memcpy(&pair, &word, sizeof word);
    return __half22float2(pair);
  };
  const int lane = threadIdx.x % kWarpSize, g = lane / kQuadLanes, t = lane % kQuadLanes;
  float sum[4] = {kZero, kZero, kZero, kZero};
#pragma unroll
  for (int p = 0; p < kQuadLanes; ++p) {
    const float2 low = floats(__shfl_sync(kFullWarp, a_low, g * kQuadLanes + p));
    const float2 high = floats(__shfl_sync(kFullWarp, a_high, g * kQuadLanes + p));
#pragma unroll
    for (int col = 0; col < 2; ++col) {
      const float2 k = floats(__shfl_sync(kFullWarp, b, (2 * t + col) * kQuadLanes + p));
      sum[col] = fmaf(low.y, k.y, fmaf(low.x, k.x, sum[col]));
      sum[2 + col] = fmaf(high.y, k.y, fmaf(high.x, k.x, sum[2 + col]));
    }
  }
  for (int i = 0; i < 4; ++i) d[i] = sum[i];
#endif
}

// A block of kQueryWarps × kRowWarps warps: a warp multiplies kQueryTiles × 16 of the block's
// queries by kRowTiles × 8 rows of each staged tile, one cell at a time; kMinBlocks blocks an SM
// (shared memory's limit).
template <int kQueryWarps, int kRowWarps, int kQueryTiles, int kRowTiles, int kMinBlocks>
struct HalfMmaTile {
  static constexpr int threads = kWarpSize * kQueryWarps * kRowWarps;
  static constexpr int row_warps = kRowWarps;
  static constexpr int query_tiles = kQueryTiles, row_tiles = kRowTiles;
  static constexpr int warp_queries = kQueryTiles * kMmaRows, warp_rows = kRowTiles * kMmaColumns;
  static constexpr int block_queries = kQueryWarps * warp_queries;
  static constexpr int tile_rows = kRowWarps * warp_rows;
  static constexpr int min_blocks = kMinBlocks;
};
using HalfMmaShape = HalfMmaTile<2, 4, 1, 1, 2>;

// The block's queries in shared memory as the A operand's register pairs: per query pair (rows g
// and g + 8 of a 16-query tile) and cell, two blocks of kMmas {row g, row g + 8} pairs, lane 0's
// operands and lane 1's (PreparedNormalisedHalves::query_slot), so four 16-byte reads give a lane
// its cell. kPairUnits apart (≡ 1 mod 8, so the 16 blocks a warp reads fall twice in each group
// of 4 banks). Queries past the end, and operands with no slot, are zeros.
template <class Tile>
struct StagedQueryPairs {
  using Metric = PreparedNormalisedHalves;
  static constexpr int kBlockWords = 2 * Metric::kMmas;
  static constexpr int kBlockUnits = kBlockWords / 4;
  static constexpr int kCellUnits = 2 * kBlockUnits;
  static constexpr int kPairUnits = kCemdCells * kCellUnits + 1;
  static constexpr int kUnits = Tile::block_queries / 2 * kPairUnits;

  // Cell c of the block's query q into `pairs`; plain loads and stores, once a block.
  __device__ static void stage(std::uint32_t* pairs, const uint4* queries, int count) {
    constexpr int kQueryUnits = kRowUnits<Metric>, kCellSlotUnits = Metric::kSlots / 4;
    constexpr std::uint32_t kHalvesSign = 0x80008000u;
    for (int e = threadIdx.x; e < Tile::block_queries * kCemdCells; e += Tile::threads) {
      const int q = e / kCemdCells, c = e % kCemdCells;
      std::uint32_t slot[Metric::kSlots];
#pragma unroll
      for (int u = 0; u < kCellSlotUnits; ++u) {
        const uint4 v = q < count ? queries[std::size_t(q) * kQueryUnits + c * kCellSlotUnits + u]
                                  : make_uint4(0, 0, 0, 0);
        store_words(v, slot + 4 * u);
      }
      const int pair = q / kMmaRows * kMmaColumns + q % kMmaColumns, h = q % kMmaRows / kMmaColumns;
      std::uint32_t* const to = pairs + (pair * kPairUnits + c * kCellUnits) * 4 + h;
#pragma unroll
      for (int lane = 0; lane < 2; ++lane) {
#pragma unroll
        for (int m = 0; m < Metric::kMmas; ++m) {
          const int s = Metric::query_slot(lane, m);
          const std::uint32_t word = s == Metric::kNoSlot ? 0u : slot[s];
          to[lane * kBlockWords + 2 * m] =
              Metric::query_negated(lane, m) ? word ^ kHalvesSign : word;
        }
      }
    }
  }
};

// Normalised CEMD nearest two: per cell, each pair's doubled and pairwise ordered differences and
// its divisor come from 8 MMAs (queries the A rows, database rows the B columns); a lane then
// holds its 4 pairs' cell (2 queries × 2 rows of each tile pair) and runs the prefix form's
// median network and quotient, summing in cell order, so the distances are cuda-final's bits.
// The B operand is a row's cell in the quad's first two lanes and zeros in the other two (whose
// A operand is lane 0's).
template <class Tile>
__global__ void __launch_bounds__(Tile::threads, Tile::min_blocks) half_mma_kernel(FinalArgs a) {
  using Metric = PreparedNormalisedHalves;
  constexpr int kQT = Tile::query_tiles, kRT = Tile::row_tiles, kMmas = Metric::kMmas;
  using Pairs = StagedQueryPairs<Tile>;
  constexpr int kStaged = kStagedUnits<Metric>, kRowCellUnits = Metric::kSlots / 4;
  using Walk = RowTileWalk<Metric, Tile>;
  static_assert(Walk::kBulk, "rows staged as they lie in memory, one bulk copy a tile");
  extern __shared__ uint4 staged[];
  uint4* const query_pairs = staged;
  Walk walk(staged + Pairs::kUnits);
  uint4* const zeros = staged + Pairs::kUnits + Walk::kSharedUnits;

  const int lane = threadIdx.x % kWarpSize, g = lane / kQuadLanes, t = lane % kQuadLanes;
  const int warp = threadIdx.x / kWarpSize;
  const int warp_query = warp / Tile::row_warps * Tile::warp_queries;  // of the block's queries
  const int warp_row = warp % Tile::row_warps * Tile::warp_rows;       // of a staged tile
  const int q0 = blockIdx.x * Tile::block_queries;
  const int begin = blockIdx.y * a.rows_per_split;
  const int end = min(a.database_rows, begin + a.rows_per_split);

  for (int u = threadIdx.x; u < kRowUnits<Metric>; u += Tile::threads) {
    zeros[u] = make_uint4(0, 0, 0, 0);
  }
  Pairs::stage(reinterpret_cast<std::uint32_t*>(query_pairs),
               a.queries + std::size_t(q0) * kRowUnits<Metric>, a.query_count - q0);
  walk.init();
  __syncthreads();  // the queries, the zero row and the walk's buffers and barriers
  walk.stage(0, a.database, begin, end);

  // Query tile i, rows g (h 0) and g + 8 (h 1); assigned, as tensor_kernel's are: nvcc 13 dropped
  // the member initialisers of all but the first row of such an array there.
  LocalTop2<> top[kQT][2];
#pragma unroll
  for (int i = 0; i < kQT; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) top[i][h] = LocalTop2<>{};
  }

  int n = 0;  // the walk's tile
  for (int tile = begin; tile < end; tile += Tile::tile_rows, ++n) {
    walk.stage(n + 1, a.database, tile + Tile::tile_rows, end);
    walk.wait(n);

    // The B operand's row of row tile j: lanes 0 and 1 of the quad read their half of row g's
    // cell, the others zeros.
    const uint4* b_rows[kRT];
#pragma unroll
    for (int j = 0; j < kRT; ++j) {
      b_rows[j] = t < 2 ? walk.buffer(n) + (warp_row + j * kMmaColumns + g) * kStaged + t : zeros;
    }
    // sum[i][j][p]: fragment place p of tile pair (i, j): query h = p / 2, row 2t + p % 2.
    float sum[kQT][kRT][4];
#pragma unroll
    for (int i = 0; i < kQT; ++i) {
#pragma unroll
      for (int j = 0; j < kRT; ++j) {
#pragma unroll
        for (int p = 0; p < 4; ++p) sum[i][j][p] = 0.0f;
      }
    }
#pragma unroll
    for (int c = 0; c < kCemdCells; ++c) {
      std::uint32_t b[kRT][4];
#pragma unroll
      for (int j = 0; j < kRT; ++j) store_words(b_rows[j][c * kRowCellUnits], b[j]);
#pragma unroll
      for (int i = 0; i < kQT; ++i) {
        // MMA m's pair {row g, row g + 8}: words 2m and 2m + 1 of the lane's block.
        const uint4* const pairs = query_pairs +
                                   ((warp_query + i * kMmaRows) / 2 + g) * Pairs::kPairUnits +
                                   c * Pairs::kCellUnits + (t == 1) * Pairs::kBlockUnits;
        const Chunk pairs_low = load_chunk(pairs), pairs_high = load_chunk(pairs + 2);
#pragma unroll
        for (int j = 0; j < kRT; ++j) {
          float d[kMmas][4];
#pragma unroll
          for (int m = 0; m < kMmas; ++m) {
            const Chunk& from = m < kMmas / 2 ? pairs_low : pairs_high;
            const int w = 2 * (m % (kMmas / 2));
            mma_f16(d[m], from.w[w], from.w[w + 1], b[j][Metric::row_operand(m)]);
          }
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            // 2·d(0..7) with each pair ordered; d(7) = F(7)·|g| − |f|·G(7) = 0.
            float doubled[kCemdBins];
#pragma unroll
            for (int k = 0; k < Metric::kOrderedPairs; ++k) {
              const float pair_sum = d[2 * k][p], spread = fabsf(d[2 * k + 1][p]);
              doubled[2 * k] = pair_sum - spread;
              doubled[2 * k + 1] = pair_sum + spread;
            }
            const float last = d[Metric::kLastDifferenceMma][p];
            doubled[kCemdBins - 2] = last - fabsf(last);
            doubled[kCemdBins - 1] = last + fabsf(last);
            sum[i][j][p] += quotient_of_small_integers<Isa::tuned>(
                median_deviation_sum<Isa::tuned, true>(doubled), d[Metric::kDivisorMma][p]);
          }
        }
      }
    }
    walk.release(n);

    // Rows past the end are at +inf and never inserted; each lane offers its rows in order.
#pragma unroll
    for (int i = 0; i < kQT; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float distance[kRT][2];
        float lowest = INFINITY;
#pragma unroll
        for (int j = 0; j < kRT; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const bool present = tile + warp_row + j * kMmaColumns + 2 * t + e < end;
            distance[j][e] = present ? sum[i][j][2 * h + e] : INFINITY;
            lowest = fminf(lowest, distance[j][e]);
          }
        }
        if (lowest < top[i][h].second) {
#pragma unroll
          for (int j = 0; j < kRT; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              top[i][h].insert(distance[j][e], tile + warp_row + j * kMmaColumns + 2 * t + e);
            }
          }
        }
      }
    }
  }
  walk.finish();

#pragma unroll
  for (int i = 0; i < kQT; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      insert_lanes_top2(top[i][h].keys(), kQuadLanes, t == 0, a.keys,
                        q0 + warp_query + i * kMmaRows + h * kMmaColumns + g, a.query_count);
    }
  }
}

// The half MMA kernel's shared-memory opt-in, occupancy and launch, as FinalKernels'.
template <class Tile = HalfMmaShape>
struct HalfMmaKernels : TileSplits<Tile> {
  using Metric = PreparedNormalisedHalves;
  using TileSplits<Tile>::query_tiles;
  // The queries, the row tiles' walk, and a zero row for the B operand's other lanes.
  static constexpr std::size_t kSharedBytes =
      (std::size_t(StagedQueryPairs<Tile>::kUnits) + RowTileWalk<Metric, Tile>::kSharedUnits +
       kRowUnits<Metric>)*sizeof(uint4);

  static long long configure() {
    opt_in_shared_memory(half_mma_kernel<Tile>, kSharedBytes);
    return cuda::resident_threads(half_mma_kernel<Tile>, Tile::threads, kSharedBytes) /
           Tile::threads;
  }
  static void launch(FinalArgs args, const SplitPlan& plan, bool all_pairs, cudaStream_t stream) {
    if (all_pairs) throw Error("cuda-tensor computes the nearest two only");
    args.rows_per_split = plan.rows_per_split;
    const dim3 grid(query_tiles(args.query_count), plan.splits);
    half_mma_kernel<Tile><<<grid, Tile::threads, kSharedBytes, stream>>>(args);
    check_launch("cemd half_mma_kernel");
  }
};

// cuda-tensor computes the nearest two of the Euclidean distance (integer tensor cores) and of
// normalised CEMD (half ones).
bool tensor_handles(const CemdInput& input) {
  const DescriptorDistance distance = input.params.distance;
  return !input.params.all_pairs &&
         (distance == DescriptorDistance::l2 || distance == DescriptorDistance::cemd_normalised);
}

std::unique_ptr<Runner<Cemd>> make_tensor_runner(const CemdInput& input) {
  if (input.params.distance == DescriptorDistance::cemd_normalised) {
    return std::make_unique<PreparedRunner<HalfMmaKernels<>>>(input);
  }
  return std::make_unique<TensorRunner>(input);
}

void cuda_tensor_on_views(const CemdViewCall& call) {
  if (call.distance == DescriptorDistance::cemd_normalised) {
    return prepared_on_views<HalfMmaKernels<>>(call);
  }
  tensor_on_views(call);
}

// --- cuda-streamed ------------------------------------------------------------------------------

// The largest chunk: big enough that a chunk's kernels take far longer than its copy, small
// enough that the first (unhidden) copy is short.
constexpr int kMaxChunkRows = 1 << 18;
// Of the free device memory, the share the chunk buffers may take.
constexpr double kChunkMemoryShare = 0.5;
constexpr const char* kChunkRowsVariable = "KBENCH_CEMD_CHUNK_ROWS";

// Database rows per chunk: KBENCH_CEMD_CHUNK_ROWS when set (tests force several chunks with it),
// else what fits in part of the free device memory, capped.
int chunk_rows(int database, std::size_t bytes_per_row, std::size_t fixed_bytes) {
  if (const char* text = std::getenv(kChunkRowsVariable); text && *text) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < 1 || value > std::numeric_limits<int>::max()) {
      throw Error(std::string(kChunkRowsVariable) + " must be a positive row count, not '" + text +
                  "'");
    }
    return int(std::min<long>(value, database));
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const double usable = kChunkMemoryShare * double(free_bytes) - double(fixed_bytes);
  const double fits = usable / double(bytes_per_row);
  if (fits < 1) {
    throw Error("not enough free GPU memory for the cemd query set and a database chunk (" +
                std::to_string(free_bytes) + " bytes free)");
  }
  return int(std::min<double>({fits, double(kMaxChunkRows), double(database)}));
}

template <class Metric>
class StreamedRunner final : public Runner<Cemd> {
 public:
  static constexpr int kBuffers = 2;

  explicit StreamedRunner(const CemdInput& input)
      : queries_((validate_cemd_input(input), input.queries.count)),
        database_(input.database.count),
        chunk_rows_(chunk_rows(
            database_, kBuffers * kDescriptorBytes + kRowUnits<Metric> * sizeof(uint4),
            std::size_t(queries_) *
                (kDescriptorBytes + kRowUnits<Metric> * sizeof(uint4) + 2 * sizeof(Key)))),
        resident_blocks_(FinalKernels<Metric>::configure()),
        host_queries_(input.queries.values.size()),
        host_database_(input.database.values.size()),
        host_keys_(2 * std::size_t(queries_)),
        query_bytes_(host_queries_.size()),
        prepared_queries_(std::size_t(queries_) * kRowUnits<Metric>),
        prepared_chunk_(std::size_t(chunk_rows_) * kRowUnits<Metric>),
        keys_(host_keys_.size()) {
    std::copy(input.queries.values.begin(), input.queries.values.end(), host_queries_.get());
    std::copy(input.database.values.begin(), input.database.values.end(), host_database_.get());
    for (int b = 0; b < kBuffers; ++b) {
      chunk_bytes_[b] = DeviceBuffer<std::uint8_t>(std::size_t(chunk_rows_) * kDescriptorBytes);
      check(cudaEventCreateWithFlags(&copied_[b], cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventCreateWithFlags(&consumed_[b], cudaEventDisableTiming), "cudaEventCreate");
    }
  }
  ~StreamedRunner() override {
    for (int b = 0; b < kBuffers; ++b) {
      if (copied_[b]) cudaEventDestroy(copied_[b]);
      if (consumed_[b]) cudaEventDestroy(consumed_[b]);
    }
  }
  StreamedRunner(const StreamedRunner&) = delete;
  StreamedRunner& operator=(const StreamedRunner&) = delete;

  void poison(std::uint8_t byte) override {
    poison_device(keys_.get(), keys_.bytes(), byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(host_keys_.get()), host_keys_.bytes(), byte);
  }
  void compute() override {
    const cudaStream_t work = work_.get(), copies = copies_.get();
    check(cudaMemcpyAsync(query_bytes_.get(), host_queries_.get(), query_bytes_.bytes(),
                          cudaMemcpyHostToDevice, work),
          "cudaMemcpyAsync(cemd queries)");
    launch_prepare<Metric>(query_bytes_.get(), queries_, true, prepared_queries_.get(), work);
    clear_keys(keys_.get(), keys_.size(), work);
    for (int begin = 0, chunk = 0; begin < database_; begin += chunk_rows_, ++chunk) {
      const int rows = std::min(chunk_rows_, database_ - begin);
      const int b = chunk % kBuffers;
      // The copy into buffer b waits until the pre-pass of the chunk before it there (this
      // call's or the previous call's) has read it.
      check(cudaStreamWaitEvent(copies, consumed_[b], 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(chunk_bytes_[b].get(),
                            host_database_.get() + std::size_t(begin) * kDescriptorBytes,
                            std::size_t(rows) * kDescriptorBytes, cudaMemcpyHostToDevice, copies),
            "cudaMemcpyAsync(cemd database chunk)");
      check(cudaEventRecord(copied_[b], copies), "cudaEventRecord");
      check(cudaStreamWaitEvent(work, copied_[b], 0), "cudaStreamWaitEvent");
      launch_prepare<Metric>(chunk_bytes_[b].get(), rows, false, prepared_chunk_.get(), work);
      check(cudaEventRecord(consumed_[b], work), "cudaEventRecord");
      const FinalArgs args{prepared_queries_.get(),
                           queries_,
                           prepared_chunk_.get(),
                           rows,
                           0,
                           begin,
                           0,
                           nullptr,
                           keys_.get()};
      FinalKernels<Metric>::launch(args, plan_for(rows), false, work);
    }
    check(
        cudaMemcpyAsync(host_keys_.get(), keys_.get(), keys_.bytes(), cudaMemcpyDeviceToHost, work),
        "cudaMemcpyAsync(cemd keys)");
  }
  void sync() override {
    check(cudaStreamSynchronize(copies_.get()), "cemd streamed copies");
    check(cudaStreamSynchronize(work_.get()), "cemd streamed kernels");
  }
  void download(CemdResult& out) override {
    out.queries = queries_;
    out.database = database_;
    out.matrix.clear();
    out.neighbours.clear();
    out.neighbours = neighbours_from_keys(host_keys_.get(), queries_);
  }

 private:
  // The split plan of a chunk size (every chunk but the last has the same).
  const SplitPlan& plan_for(int rows) {
    for (const auto& [plan_rows, plan] : plans_) {
      if (plan_rows == rows) return plan;
    }
    plans_.emplace_back(rows, FinalKernels<Metric>::plan(queries_, rows, resident_blocks_));
    return plans_.back().second;
  }

  const int queries_, database_;
  const int chunk_rows_;
  const long long resident_blocks_;
  PinnedBuffer<std::uint8_t> host_queries_, host_database_;
  PinnedBuffer<Key> host_keys_;
  DeviceBuffer<std::uint8_t> query_bytes_;
  DeviceBuffer<uint4> prepared_queries_, prepared_chunk_;
  DeviceBuffer<std::uint8_t> chunk_bytes_[kBuffers];
  DeviceBuffer<Key> keys_;
  Stream work_, copies_;
  cudaEvent_t copied_[kBuffers] = {}, consumed_[kBuffers] = {};
  std::vector<std::pair<int, SplitPlan>> plans_;
};

// The metric of the input's distance, for the registry's make().
template <template <class> class MetricRunner>
std::unique_ptr<Runner<Cemd>> make_for_metric(const CemdInput& input) {
  switch (input.params.distance) {
    case DescriptorDistance::cemd_normalised:
      return std::make_unique<MetricRunner<NormalisedMetric>>(input);
    case DescriptorDistance::cemd_raw:
      return std::make_unique<MetricRunner<RawMetric>>(input);
    case DescriptorDistance::l2:
      break;
  }
  return std::make_unique<MetricRunner<L2Metric>>(input);
}

// final_on_views of the call's distance, as make_for_metric picks the runner.
void cuda_final_on_views(const CemdViewCall& call) {
  switch (call.distance) {
    case DescriptorDistance::cemd_normalised:
      return prepared_on_views<FinalKernels<NormalisedMetric>>(call);
    case DescriptorDistance::cemd_raw:
      return prepared_on_views<FinalKernels<RawMetric>>(call);
    case DescriptorDistance::l2:
      break;
  }
  prepared_on_views<FinalKernels<L2Metric>>(call);
}

bool nearest_two(const CemdInput& input) {
  return !input.params.all_pairs;
}

}  // namespace

void register_cemd_native_cuda(VariantList<Cemd>& list) {
  const auto add = [&](const char* name, Variant<Cemd>::Make make,
                       std::function<bool(const CemdInput&)> supports, int rank,
                       bool end_to_end = false,
                       std::function<void(const CemdViewCall&)> on_views = {}) {
    list.push_back({name, Layer::native_cuda, Backend::cuda, end_to_end, std::move(make),
                    std::move(supports), rank, Isa::tuned, false, std::move(on_views)});
  };
  add("cuda-initial", make_runner<SimpleRunner<InitialLauncher>>, {}, 1);
  add("cuda-shmem", make_runner<SimpleRunner<ShmemLauncher>>, {}, 2);
  add("cuda-unroll", make_runner<SimpleRunner<UnrollLauncher>>, {}, 3);
  add("cuda-final", make_for_metric<FinalRunner>, {}, 4, false, cuda_final_on_views);
  add("cuda-tensor", make_tensor_runner, tensor_handles, 5, false, cuda_tensor_on_views);
  add("cuda-streamed", make_for_metric<StreamedRunner>, nearest_two, kNotChosen, true);
}

}  // namespace kbench
