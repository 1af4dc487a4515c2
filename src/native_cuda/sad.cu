// Native CUDA sad for sm_90: cuda-global and cuda-global-restrict (the report's Global1/Global2,
// a thread per map position from global memory); cuda-shared-b8..b32 (B × B blocks staging query
// rows and the target strip in shared memory); cuda-regblock-vsad-p16/p32 (16 or 32 positions of
// a map row per thread in registers with the packed SAD instruction, the argmin merged in the
// same kernel by one 64-bit atomicMin, no map written when none is wanted; also on the caller's
// device views); cuda-regblock-vsad-e2e (the p32 kernel with its copies); SadFullSearch
// (sad_full_search.hpp: the p32 kernel without a map, for sad-pruned). The map-only variants find
// the argmin with a second kernel over the map. Every argmin is a minimum of sad_key()s, so ties
// follow the shared (score, row, col) rule. Each schedule: docs/sad.md#schedules-in-detail
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "kbench/detail/sad_words.hpp"
#include "kbench/sad.hpp"
#include "native_cuda/cuda_support.hpp"
#include "native_cuda/sad_full_search.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;
using cuda::PinnedBuffer;
using cuda::Stream;

using Key = unsigned long long;  // atomicMin's 64-bit type; holds a sad_key()
static_assert(sizeof(Key) == sizeof(std::uint64_t), "64-bit keys");

// --- argmin reduction shared by the kernels --------------------------------------------------

// Folds every thread's key into *best: warp shuffles, one shared slot per warp, one atomicMin per
// block. Every thread of the block must call it.
__device__ void block_min_to(Key* best, Key key) {
  __shared__ Key warp_best[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    key = sad_min(key, __shfl_xor_sync(0xFFFFFFFFu, key, offset));
  }
  const int thread = threadIdx.y * blockDim.x + threadIdx.x;
  const int warps = (blockDim.x * blockDim.y + 31) / 32;
  if (thread % 32 == 0) warp_best[thread / 32] = key;
  __syncthreads();
  if (thread < 32) {
    key = thread < warps ? warp_best[thread] : kNoSadKey;
    for (int offset = 16; offset > 0; offset /= 2) {
      key = sad_min(key, __shfl_xor_sync(0xFFFFFFFFu, key, offset));
    }
    if (thread == 0 && key != kNoSadKey) atomicMin(best, key);
  }
}

constexpr int kArgminThreads = 256;

__global__ void __launch_bounds__(kArgminThreads)
    map_argmin_kernel(const std::int32_t* __restrict__ map, std::size_t size, Key* best) {
  Key key = kNoSadKey;
  for (std::size_t index = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; index < size;
       index += std::size_t(gridDim.x) * blockDim.x) {
    key = sad_min(key, sad_key(map[index], std::uint32_t(index)));
  }
  block_min_to(best, key);
}

void launch_map_argmin(const std::int32_t* map, std::size_t size, Key* best, cudaStream_t stream) {
  check(cudaMemsetAsync(best, 0xFF, sizeof(Key), stream), "cudaMemsetAsync(sad best)");
  const int blocks = int(std::min<std::size_t>((size + kArgminThreads - 1) / kArgminThreads, 2048));
  map_argmin_kernel<<<blocks, kArgminThreads, 0, stream>>>(map, size, best);
  check_launch("map_argmin_kernel");
}

// --- Global1 / Global2 ------------------------------------------------------------------------

constexpr int kGlobalBlock = 16;

__device__ __forceinline__ void global_sad(const std::uint8_t* target, const std::uint8_t* query,
                                           const SadShape& s, std::int32_t* map) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= s.map_height || j >= s.map_width) return;
  std::int32_t sum = 0;
  for (int k = 0; k < s.query_height; ++k) {
    const std::uint8_t* t = target + std::size_t(i + k) * s.target_width + j;
    const std::uint8_t* q = query + std::size_t(k) * s.query_width;
    for (int l = 0; l < s.query_width; ++l) sum += abs(int(t[l]) - int(q[l]));
  }
  map[std::size_t(i) * s.map_width + j] = sum;
}

__global__ void global_kernel(const std::uint8_t* target, const std::uint8_t* query, SadShape s,
                              std::int32_t* map) {
  global_sad(target, query, s, map);
}

// The same body; the qualifiers let the compiler use read-only, non-coherent loads.
__global__ void global_restrict_kernel(const std::uint8_t* __restrict__ target,
                                       const std::uint8_t* __restrict__ query, SadShape s,
                                       std::int32_t* __restrict__ map) {
  global_sad(target, query, s, map);
}

// --- shared-memory tiles --------------------------------------------------------------------

constexpr std::size_t kSharedBytes = 48 * 1024;

// Query rows staged at once by a B × B block: as many as fit next to their target strip.
int shared_chunk_rows(int block, const SadShape& s) {
  const std::size_t strip = std::size_t(block) + s.query_width - 1;
  for (int rows = std::min(s.query_height, 64); rows >= 1; --rows) {
    if (std::size_t(rows) * s.query_width + (block + rows - 1) * strip <= kSharedBytes) return rows;
  }
  return 0;
}

template <int B>
__global__ void __launch_bounds__(B* B)
    shared_kernel(const std::uint8_t* __restrict__ target, const std::uint8_t* __restrict__ query,
                  SadShape s, int chunk, std::int32_t* __restrict__ map) {
  extern __shared__ std::uint8_t staged[];
  const int strip = B + s.query_width - 1;
  std::uint8_t* query_rows = staged;
  std::uint8_t* target_rows = staged + chunk * s.query_width;
  const int i0 = blockIdx.y * B, j0 = blockIdx.x * B;
  const int thread = threadIdx.y * B + threadIdx.x;
  const bool inside = i0 + int(threadIdx.y) < s.map_height && j0 + int(threadIdx.x) < s.map_width;
  std::int32_t sum = 0;
  for (int k0 = 0; k0 < s.query_height; k0 += chunk) {
    const int rows = min(chunk, s.query_height - k0);
    __syncthreads();  // the previous chunk is done with the staged rows
    for (int e = thread; e < rows * s.query_width; e += B * B) {
      query_rows[e] = query[std::size_t(k0) * s.query_width + e];
    }
    for (int e = thread; e < (B + rows - 1) * strip; e += B * B) {
      const int y = i0 + k0 + e / strip, x = j0 + e % strip;
      target_rows[e] = y < s.target_height && x < s.target_width
                           ? target[std::size_t(y) * s.target_width + x]
                           : 0;
    }
    __syncthreads();
    if (inside) {
      for (int kk = 0; kk < rows; ++kk) {
        const std::uint8_t* t = target_rows + (threadIdx.y + kk) * strip + threadIdx.x;
        const std::uint8_t* q = query_rows + kk * s.query_width;
        for (int l = 0; l < s.query_width; ++l) sum += abs(int(t[l]) - int(q[l]));
      }
    }
  }
  if (inside) map[std::size_t(i0 + threadIdx.y) * s.map_width + j0 + threadIdx.x] = sum;
}

// --- register-blocked packed SAD ----------------------------------------------------------------

constexpr int kConstantQueryWords = 16384;  // 64 KB: all the constant memory a module can have
__constant__ std::uint32_t c_query[kConstantQueryWords];

// Constant memory is one per module, so each run loads its own query into c_query, in stream
// order; a full search that finds its own query there already skips the copy (its runs then
// chain kernel to kernel). Which query c_query holds: the id of the SadFullSearch that loaded it
// last, 0 after any other load. Runners enqueue work from one host thread, on one device.
std::uint64_t constant_query_owner = 0;

void load_constant_query(const std::uint32_t* query, std::size_t bytes, cudaStream_t stream,
                         std::uint64_t owner = 0) {
  if (owner != 0 && owner == constant_query_owner) return;
  cuda::check(cudaMemcpyToSymbolAsync(c_query, query, bytes, 0, cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyToSymbolAsync(sad query)");
  constant_query_owner = owner;
}

struct RegblockArgs {
  const std::uint32_t* target;  // packed rows, pitch_words each
  const std::uint32_t* query;   // packed rows, query_words each (GlobalQuery)
  int pitch_words, query_words;
  SadShape s;
  int row_begin, row_end;  // map rows of this launch
  std::int32_t* map;
  Key* best;
  // Gated kernels run only when *gate > gate_above (SadFullSearch::search).
  const Key* gate = nullptr;
  Key gate_above = 0;
  // Elements from one map row's start to the next; 0: map_width (a packed map).
  std::size_t map_pitch = 0;
};

// Query words of one row: from constant memory (a warp reads one word at a time: a broadcast)...
struct ConstantQuery {
  int row_offset;
  static __device__ ConstantQuery row(const RegblockArgs& a, int k) { return {k * a.query_words}; }
  __device__ __forceinline__ std::uint32_t operator()(int w) const {
    return c_query[row_offset + w];
  }
};
// ... or, for queries over 64 KB, through the read-only cache.
struct GlobalQuery {
  const std::uint32_t* __restrict__ words;
  int row_offset;
  static __device__ GlobalQuery row(const RegblockArgs& a, int k) {
    return {a.query, k * a.query_words};
  }
  __device__ __forceinline__ std::uint32_t operator()(int w) const {
    return __ldg(words + row_offset + w);
  }
};

template <int kWords, int kLanesX, int kRowsY>
struct RegblockConfig {
  static constexpr int words = kWords;     // 4·kWords positions per thread
  static constexpr int lanes_x = kLanesX;  // threads across a block's map row
  static constexpr int rows_y = kRowsY;    // map rows per block
  static constexpr int positions = 4 * kWords;
  static constexpr int block_columns = kLanesX * positions;
  static_assert(kWords % 4 == 0, "16-byte target loads");
  static_assert(kLanesX * kRowsY % 32 == 0, "whole warps");
};

template <class Config, bool kWriteMap, class Query, bool kGated>
__global__ void __launch_bounds__(Config::lanes_x* Config::rows_y) regblock_kernel(RegblockArgs a) {
  constexpr int kWords = Config::words;
  if constexpr (kGated) {
    cuda::wait_for_previous_kernel();
    if (*a.gate <= a.gate_above) return;  // the whole block: before any barrier
  }
  const int i = a.row_begin + blockIdx.y * Config::rows_y + threadIdx.y;
  const int group = blockIdx.x * Config::lanes_x + threadIdx.x;
  const int j0 = group * Config::positions;
  Key key = kNoSadKey;
  if (i < a.row_end && j0 < a.s.map_width) {
    std::uint32_t acc[Config::positions] = {};
    const std::uint32_t* row = a.target + std::size_t(i) * a.pitch_words + group * kWords;
    for (int k = 0; k < a.s.query_height; ++k) {
      accumulate_sad_row<kWords>(cuda::GlobalTarget<kWords>{row + std::size_t(k) * a.pitch_words},
                                 Query::row(a, k), a.s.query_width, acc);
    }
    // Keys index the map row-major whatever its pitch (the shared tie rule).
    const std::size_t base = std::size_t(i) * a.s.map_width + j0;
    std::int32_t* map_row = nullptr;
    if constexpr (kWriteMap) {
      map_row = a.map + std::size_t(i) * (a.map_pitch ? a.map_pitch : std::size_t(a.s.map_width));
    }
#pragma unroll
    for (int p = 0; p < Config::positions; ++p) {
      if (j0 + p < a.s.map_width) {
        if constexpr (kWriteMap) map_row[j0 + p] = std::int32_t(acc[p]);
        key = sad_min(key, sad_key(std::int32_t(acc[p]), std::uint32_t(base + p)));
      }
    }
  }
  block_min_to(a.best, key);
}

// Device layout of the packed target: every thread's reads (accumulate_sad_row's last word
// included) stay inside a row, and rows stay 16-byte aligned.
template <class Config>
int regblock_pitch_words(const SadShape& s) {
  const int groups = (s.map_width + Config::positions - 1) / Config::positions;
  const int query_words = words_for(s.query_width);
  const int read = (groups - 1) * Config::words +
                   (query_words + Config::words - 1) / Config::words * Config::words +
                   Config::words;
  return (read + 3) / 4 * 4;
}

bool query_fits_constant(const SadShape& s) {
  return std::size_t(words_for(s.query_width)) * s.query_height <= kConstantQueryWords;
}

template <class Config, bool kWriteMap, bool kGated = false>
void launch_regblock(const RegblockArgs& a, bool constant_query, cudaStream_t stream,
                     bool after_previous = false) {
  const dim3 block(Config::lanes_x, Config::rows_y);
  const dim3 grid((a.s.map_width + Config::block_columns - 1) / Config::block_columns,
                  (a.row_end - a.row_begin + Config::rows_y - 1) / Config::rows_y);
  cuda::launch(constant_query ? regblock_kernel<Config, kWriteMap, ConstantQuery, kGated>
                              : regblock_kernel<Config, kWriteMap, GlobalQuery, kGated>,
               grid, block, 0, stream, after_previous, "regblock_kernel", a);
}

// --- runners ----------------------------------------------------------------------------------

void poison_device(void* data, std::size_t bytes, std::uint8_t byte) {
  if (bytes) check(cudaMemset(data, byte, bytes), "cudaMemset(poison)");
}

// The best match and, when wanted, the map from the device into `out`.
void download_result(const SadShape& shape, const Key* best, const DeviceBuffer<std::int32_t>& map,
                     bool want_map, SadResult& out) {
  Key key = 0;
  check(cudaMemcpy(&key, best, sizeof key, cudaMemcpyDeviceToHost), "cudaMemcpy(sad best)");
  out.map_width = shape.map_width;
  out.map_height = shape.map_height;
  out.best = match_from_key(key, shape.map_width);
  out.map.clear();
  if (want_map) {
    out.map.resize(map.size());
    check(cudaMemcpy(out.map.data(), map.get(), map.bytes(), cudaMemcpyDeviceToHost),
          "cudaMemcpy(sad map)");
  }
}

// Kernels that write the map (global, shared), then the argmin kernel over it.
template <void (*Launch)(const std::uint8_t*, const std::uint8_t*, const SadShape&, std::int32_t*)>
class MapRunner final : public Runner<Sad> {
 public:
  explicit MapRunner(const SadInput& input)
      : input_(input),
        shape_(validate_sad_input(input)),
        target_(input.target.sample_count()),
        query_(input.query.sample_count()),
        map_(shape_.map_size()),
        best_(1) {}
  void poison(std::uint8_t byte) override {
    poison_device(map_.get(), map_.bytes(), byte);
    poison_device(best_.get(), best_.bytes(), byte);
  }
  void upload() override {
    check(cudaMemcpy(target_.get(), input_.target.data.data(), target_.bytes(),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy(sad target)");
    check(
        cudaMemcpy(query_.get(), input_.query.data.data(), query_.bytes(), cudaMemcpyHostToDevice),
        "cudaMemcpy(sad query)");
  }
  void compute() override {
    Launch(target_.get(), query_.get(), shape_, map_.get());
    launch_map_argmin(map_.get(), map_.size(), best_.get(), 0);
  }
  void sync() override { check(cudaDeviceSynchronize(), "sad kernels"); }
  void download(SadResult& out) override {
    download_result(shape_, best_.get(), map_, input_.params.want_map, out);
  }

 private:
  const SadInput& input_;
  SadShape shape_;
  DeviceBuffer<std::uint8_t> target_, query_;
  DeviceBuffer<std::int32_t> map_;
  DeviceBuffer<Key> best_;
};

dim3 grid_for(const SadShape& s, int block) {
  return dim3((s.map_width + block - 1) / block, (s.map_height + block - 1) / block);
}

void launch_global(const std::uint8_t* target, const std::uint8_t* query, const SadShape& s,
                   std::int32_t* map) {
  global_kernel<<<grid_for(s, kGlobalBlock), dim3(kGlobalBlock, kGlobalBlock)>>>(target, query, s,
                                                                                 map);
  check_launch("global_kernel");
}

void launch_global_restrict(const std::uint8_t* target, const std::uint8_t* query,
                            const SadShape& s, std::int32_t* map) {
  global_restrict_kernel<<<grid_for(s, kGlobalBlock), dim3(kGlobalBlock, kGlobalBlock)>>>(
      target, query, s, map);
  check_launch("global_restrict_kernel");
}

template <int B>
void launch_shared(const std::uint8_t* target, const std::uint8_t* query, const SadShape& s,
                   std::int32_t* map) {
  const int chunk = shared_chunk_rows(B, s);
  const std::size_t bytes =
      std::size_t(chunk) * s.query_width + std::size_t(B + chunk - 1) * (B + s.query_width - 1);
  shared_kernel<B><<<grid_for(s, B), dim3(B, B), bytes>>>(target, query, s, chunk, map);
  check_launch("shared_kernel");
}

// The packed target and query on the device, and the argmin; the map only when wanted (the
// kernel is fused otherwise).
template <class Config>
class RegblockRunner final : public Runner<Sad> {
 public:
  explicit RegblockRunner(const SadInput& input)
      : want_map_(input.params.want_map),
        shape_(validate_sad_input(input)),
        pitch_words_(regblock_pitch_words<Config>(shape_)),
        query_words_(words_for(shape_.query_width)),
        constant_query_(query_fits_constant(shape_)),
        packed_target_(pack_rows(input.target, pitch_words_, shape_.target_height)),
        packed_query_(pack_rows(input.query, query_words_, shape_.query_height)),
        target_(packed_target_.size()),
        query_(packed_query_.size()),
        map_(want_map_ ? shape_.map_size() : 0),
        best_(1) {}
  void poison(std::uint8_t byte) override {
    poison_device(map_.get(), map_.bytes(), byte);
    poison_device(best_.get(), best_.bytes(), byte);
  }
  void upload() override {
    check(cudaMemcpy(target_.get(), packed_target_.data(), target_.bytes(), cudaMemcpyHostToDevice),
          "cudaMemcpy(sad packed target)");
    check(cudaMemcpy(query_.get(), packed_query_.data(), query_.bytes(), cudaMemcpyHostToDevice),
          "cudaMemcpy(sad packed query)");
  }
  void compute() override {
    if (constant_query_) load_constant_query(query_.get(), query_.bytes(), 0);
    check(cudaMemsetAsync(best_.get(), 0xFF, sizeof(Key), 0), "cudaMemsetAsync(sad best)");
    const RegblockArgs args{target_.get(),     query_.get(), pitch_words_, query_words_, shape_, 0,
                            shape_.map_height, map_.get(),   best_.get()};
    if (want_map_) {
      launch_regblock<Config, true>(args, constant_query_, 0);
    } else {
      launch_regblock<Config, false>(args, constant_query_, 0);
    }
  }
  void sync() override { check(cudaDeviceSynchronize(), "sad regblock kernel"); }
  void download(SadResult& out) override {
    download_result(shape_, best_.get(), map_, want_map_, out);
  }

 private:
  bool want_map_;
  SadShape shape_;
  int pitch_words_, query_words_;
  bool constant_query_;
  std::vector<std::uint32_t> packed_target_, packed_query_;
  DeviceBuffer<std::uint32_t> target_, query_;
  DeviceBuffer<std::int32_t> map_;
  DeviceBuffer<Key> best_;
};

// The regblock kernel with its copies in compute(): the packed target and query go up from
// pinned memory (packed when the runner is made), the map comes down in row bands, each band's
// copy overlapping the kernels of the bands after it.
template <class Config>
class RegblockEndToEndRunner final : public Runner<Sad> {
 public:
  static constexpr int kBands = 4;

  explicit RegblockEndToEndRunner(const SadInput& input)
      : want_map_(input.params.want_map),
        shape_(validate_sad_input(input)),
        pitch_words_(regblock_pitch_words<Config>(shape_)),
        query_words_(words_for(shape_.query_width)),
        constant_query_(query_fits_constant(shape_)),
        target_(std::size_t(pitch_words_) * shape_.target_height),
        query_(std::size_t(query_words_) * shape_.query_height),
        map_(want_map_ ? shape_.map_size() : 0),
        best_(1),
        host_target_(target_.size()),
        host_query_(query_.size()),
        host_map_(std::max<std::size_t>(1, map_.size())),
        host_best_(1) {
    const auto target = pack_rows(input.target, pitch_words_, shape_.target_height);
    const auto query = pack_rows(input.query, query_words_, shape_.query_height);
    std::copy(target.begin(), target.end(), host_target_.get());
    std::copy(query.begin(), query.end(), host_query_.get());
    for (auto& e : band_done_) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    }
    check(cudaEventCreateWithFlags(&copies_done_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~RegblockEndToEndRunner() override {
    for (auto e : band_done_) cudaEventDestroy(e);
    cudaEventDestroy(copies_done_);
  }
  RegblockEndToEndRunner(const RegblockEndToEndRunner&) = delete;
  RegblockEndToEndRunner& operator=(const RegblockEndToEndRunner&) = delete;

  void poison(std::uint8_t byte) override {
    poison_device(map_.get(), map_.bytes(), byte);
    poison_device(best_.get(), best_.bytes(), byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(host_map_.get()), host_map_.bytes(), byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(host_best_.get()), host_best_.bytes(), byte);
  }
  void compute() override {
    const cudaStream_t work = work_.get(), copies = copies_.get();
    // The previous run's map copies finish before this run's kernels overwrite the map.
    check(cudaStreamWaitEvent(work, copies_done_, 0), "cudaStreamWaitEvent");
    check(cudaMemcpyAsync(target_.get(), host_target_.get(), target_.bytes(),
                          cudaMemcpyHostToDevice, work),
          "cudaMemcpyAsync(sad target)");
    check(cudaMemcpyAsync(query_.get(), host_query_.get(), query_.bytes(), cudaMemcpyHostToDevice,
                          work),
          "cudaMemcpyAsync(sad query)");
    if (constant_query_) load_constant_query(query_.get(), query_.bytes(), work);
    check(cudaMemsetAsync(best_.get(), 0xFF, sizeof(Key), work), "cudaMemsetAsync(sad best)");
    const int band_rows = (shape_.map_height + kBands - 1) / kBands;
    for (int b = 0; b < kBands; ++b) {
      const int begin = std::min(shape_.map_height, b * band_rows);
      const int end = std::min(shape_.map_height, begin + band_rows);
      if (begin == end) continue;
      const RegblockArgs args{target_.get(), query_.get(), pitch_words_, query_words_, shape_,
                              begin,         end,          map_.get(),   best_.get()};
      if (want_map_) {
        launch_regblock<Config, true>(args, constant_query_, work);
        check(cudaEventRecord(band_done_[b], work), "cudaEventRecord");
        check(cudaStreamWaitEvent(copies, band_done_[b], 0), "cudaStreamWaitEvent");
        const std::size_t offset = std::size_t(begin) * shape_.map_width;
        const std::size_t count = std::size_t(end - begin) * shape_.map_width;
        check(cudaMemcpyAsync(host_map_.get() + offset, map_.get() + offset,
                              count * sizeof(std::int32_t), cudaMemcpyDeviceToHost, copies),
              "cudaMemcpyAsync(sad map band)");
      } else {
        launch_regblock<Config, false>(args, constant_query_, work);
      }
    }
    check(cudaMemcpyAsync(host_best_.get(), best_.get(), sizeof(Key), cudaMemcpyDeviceToHost, work),
          "cudaMemcpyAsync(sad best)");
    check(cudaEventRecord(copies_done_, copies), "cudaEventRecord");
  }
  void sync() override {
    check(cudaStreamSynchronize(work_.get()), "sad end-to-end kernels");
    check(cudaStreamSynchronize(copies_.get()), "sad end-to-end map copies");
  }
  void download(SadResult& out) override {
    out.map_width = shape_.map_width;
    out.map_height = shape_.map_height;
    out.best = match_from_key(*host_best_.get(), shape_.map_width);
    out.map.assign(host_map_.get(), host_map_.get() + map_.size());
  }

 private:
  bool want_map_;
  SadShape shape_;
  int pitch_words_, query_words_;
  bool constant_query_;
  DeviceBuffer<std::uint32_t> target_, query_;
  DeviceBuffer<std::int32_t> map_;
  DeviceBuffer<Key> best_;
  PinnedBuffer<std::uint32_t> host_target_, host_query_;
  PinnedBuffer<std::int32_t> host_map_;
  PinnedBuffer<Key> host_best_;
  Stream work_, copies_;
  cudaEvent_t band_done_[kBands] = {};
  cudaEvent_t copies_done_ = nullptr;
};

template <int B>
bool shared_fits(const SadInput& input) {
  return shared_chunk_rows(B, validate_sad_input(input)) > 0;
}

using RegblockP16 = RegblockConfig<4, 16, 16>;
using RegblockP32 = RegblockConfig<cuda::kFullSearchWords, 8, 16>;

// --- calls on device views -----------------------------------------------------------------------

constexpr int kPackThreads = 256;
constexpr int kMaxPackRowBlocks = 65535;  // CUDA's largest grid y
constexpr int kPackedWordBytes = int(sizeof(std::uint32_t));

// pack_rows on the device: word w of row y (rows pitch_words words apart) holds bytes
// 4w .. 4w + 3 of the caller's row y (rows `pitch` bytes apart, any alignment), zero past
// `width`, so every word of a row is written, its padding included. A row's words over
// blockIdx.x, rows over blockIdx.y (grid-stride).
__global__ void __launch_bounds__(kPackThreads)
    pack_rows_kernel(const std::uint8_t* __restrict__ from, std::size_t pitch, int width, int rows,
                     int pitch_words, std::uint32_t* __restrict__ to) {
  const int w = blockIdx.x * kPackThreads + threadIdx.x;
  if (w >= pitch_words) return;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const std::uint8_t* row = from + std::size_t(y) * pitch;
    std::uint32_t word = 0;
#pragma unroll
    for (int b = 0; b < kPackedWordBytes; ++b) {
      const int x = kPackedWordBytes * w + b;
      if (x < width) word |= std::uint32_t(row[x]) << (8 * b);
    }
    to[std::size_t(y) * pitch_words + w] = word;
  }
}

// The gray frame of `view` packed into `pitch_words`-word rows of the scratch memory `name`,
// queued on the call's stream.
const std::uint32_t* packed_view(const ConstImageView& view, int pitch_words, const ViewWork& work,
                                 const char* name) {
  auto* packed = static_cast<std::uint32_t*>(work.scratch->bytes(
      name, std::size_t(pitch_words) * std::size_t(view.height) * sizeof(std::uint32_t)));
  const dim3 grid(unsigned((pitch_words + kPackThreads - 1) / kPackThreads),
                  unsigned(std::min(view.height, kMaxPackRowBlocks)));
  pack_rows_kernel<<<grid, kPackThreads, 0, static_cast<cudaStream_t>(work.stream)>>>(
      view.data, view.row_pitch(), view.width, view.height, pitch_words, packed);
  check_launch("pack_rows_kernel");
  return packed;
}

// kbench::sad on device views (Variant::on_views of the regblock variants), queued on the call's
// stream: the target and query packed as the runner packs them on the host (the kernel's 16-byte
// loads need the word pitch, whatever the caller's), the key reset, then the kernel, writing the
// caller's map rows directly when a map is given. The query is read from the scratch memory, not
// constant memory: c_query is one per process, and calls on other streams may search for other
// queries at the same time.
template <class Config>
void regblock_on_views(const SadViewCall& call) {
  const cudaStream_t stream = static_cast<cudaStream_t>(call.work.stream);
  const SadShape s = shape_of(call);
  const int pitch_words = regblock_pitch_words<Config>(s);
  const int query_words = words_for(s.query_width);
  const std::uint32_t* target =
      packed_view(call.target, pitch_words, call.work, "cuda sad packed target");
  const std::uint32_t* query =
      packed_view(call.query, query_words, call.work, "cuda sad packed query");
  fill_async(call.best_key, 0xFF, sizeof(std::uint64_t), call.work.stream);  // kNoSadKey
  const bool write_map = call.map && call.map->data;
  RegblockArgs args{target,
                    query,
                    pitch_words,
                    query_words,
                    s,
                    0,
                    s.map_height,
                    write_map ? call.map->data : nullptr,
                    reinterpret_cast<Key*>(call.best_key)};
  if (write_map) {
    args.map_pitch = call.map->pitch / sizeof(std::int32_t);
    launch_regblock<Config, true>(args, false, stream);
  } else {
    launch_regblock<Config, false>(args, false, stream);
  }
}

}  // namespace

namespace cuda {

SadFullSearch::SadFullSearch(const SadInput& input)
    : shape_(validate_sad_input(input)),
      pitch_words_(regblock_pitch_words<RegblockP32>(shape_)),
      query_words_(words_for(shape_.query_width)),
      constant_query_(query_fits_constant(shape_)),
      id_(++last_id_),
      packed_target_(pack_rows(input.target, pitch_words_, shape_.target_height)),
      packed_query_(pack_rows(input.query, query_words_, shape_.query_height)),
      target_(packed_target_.size()),
      query_(packed_query_.size()) {}

void SadFullSearch::upload() {
  check(cudaMemcpy(target_.get(), packed_target_.data(), target_.bytes(), cudaMemcpyHostToDevice),
        "cudaMemcpy(sad packed target)");
  check(cudaMemcpy(query_.get(), packed_query_.data(), query_.bytes(), cudaMemcpyHostToDevice),
        "cudaMemcpy(sad packed query)");
}

std::uint64_t SadFullSearch::last_id_ = 0;

void SadFullSearch::search(Key* best, cudaStream_t stream, const Key* gate, Key gate_above,
                           bool after_previous) const {
  if (constant_query_) load_constant_query(query_.get(), query_.bytes(), stream, id_);
  RegblockArgs args{target_.get(),     query_.get(), pitch_words_, query_words_, shape_, 0,
                    shape_.map_height, nullptr,      best};
  if (gate) {
    args.gate = gate;
    args.gate_above = gate_above;
    launch_regblock<RegblockP32, false, true>(args, constant_query_, stream, after_previous);
  } else {
    launch_regblock<RegblockP32, false>(args, constant_query_, stream);
  }
}

}  // namespace cuda

void register_sad_native_cuda(VariantList<Sad>& list) {
  const auto add = [&](const char* name, Variant<Sad>::Make make,
                       std::function<bool(const SadInput&)> supports, int rank,
                       bool end_to_end = false,
                       std::function<void(const SadViewCall&)> on_views = {}) {
    list.push_back({name, Layer::native_cuda, Backend::cuda, end_to_end, std::move(make),
                    std::move(supports), rank, Isa::tuned, false, std::move(on_views)});
  };
  add("cuda-global", make_runner<MapRunner<launch_global>>, {}, 1);
  add("cuda-global-restrict", make_runner<MapRunner<launch_global_restrict>>, {}, 2);
  add("cuda-shared-b8", make_runner<MapRunner<launch_shared<8>>>, shared_fits<8>, 3);
  add("cuda-shared-b16", make_runner<MapRunner<launch_shared<16>>>, shared_fits<16>, 3);
  add("cuda-shared-b24", make_runner<MapRunner<launch_shared<24>>>, shared_fits<24>, 3);
  add("cuda-shared-b32", make_runner<MapRunner<launch_shared<32>>>, shared_fits<32>, 3);
  add("cuda-regblock-vsad-p16", make_runner<RegblockRunner<RegblockP16>>, {}, 4, false,
      regblock_on_views<RegblockP16>);
  add("cuda-regblock-vsad-p32", make_runner<RegblockRunner<RegblockP32>>, {}, 5, false,
      regblock_on_views<RegblockP32>);
  add("cuda-regblock-vsad-e2e", make_runner<RegblockEndToEndRunner<RegblockP32>>, {}, kNotChosen,
      true);
}

}  // namespace kbench
