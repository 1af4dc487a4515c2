// Native CUDA lbp for sm_90. Three kernels, each writing codes and counting the histogram in one
// pass:
//  - cuda-global-atomic: one thread per pixel, neighbours read from global memory, one global
//    atomic per pixel (the report's first kernel);
//  - cuda-shared-tiled: each block stages a tile plus its one-pixel halo in shared memory and
//    counts into a block-private shared histogram, merged into the result once per block;
//  - cuda-vec: each thread codes 16 pixels of a row from 16-byte loads, four codes at a time in
//    32-bit words (lbp_codes4), into a shared histogram with one copy per lane; merged once per
//    block.
// cuda-e2e-sync is cuda-vec with the pageable host↔device copies inside compute().
//
// Device images are pitched: each row starts on a kVecBytes boundary, so cuda-vec's vector loads
// and stores are aligned for any width. The kernels add into one of two result histograms and
// their first block zeroes the other for the next call (LbpHistogramTurns).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "kbench/detail/lbp_codes.hpp"
#include "kbench/lbp.hpp"
#include "native_cuda/cuda_support.hpp"
#include "native_cuda/devices.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;
using cuda::resident_blocks;

// Bytes per vector load/store in cuda-vec: the pitched rows (cuda::kRowAlignBytes) hold whole
// vectors.
constexpr int kVecBytes = 16;
static_assert(cuda::kRowAlignBytes % kVecBytes == 0, "a pitched row holds whole vectors");

// A batch (cuda-vec only) is frames of this shape: frame f at in + f · in_frame_stride, its
// codes at out + f · out_frame_stride, its histogram at hist + f · bins (blockIdx.y).
struct Geometry {
  int in_width, in_height, in_pitch;
  int out_width, out_height, out_pitch;
  int shift;  // output (x, y) is centred on input (x + shift, y + shift)
  int bins;
  bool mapped;  // false for the plain mapping: the tables are the identity and are skipped
  std::size_t in_frame_stride = 0;
  std::size_t out_frame_stride = 0;
};

// The geometry of images `in_pitch` and `out_pitch` bytes a row.
Geometry geometry_of(int width, int height, const LbpParams& params, std::size_t in_pitch,
                     std::size_t out_pitch) {
  const ImageSize out = lbp_output_size(width, height, params.border);
  return {width,
          height,
          int(in_pitch),
          out.width,
          out.height,
          int(out_pitch),
          params.border == Border::crop ? 1 : 0,
          lbp_bin_count(params.mapping),
          params.mapping != LbpMapping::plain};
}

// The runners' geometry: rows padded to cuda::kRowAlignBytes.
Geometry geometry_of(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  return geometry_of(input.gray.width, input.gray.height, input.params,
                     cuda::round_up(std::size_t(input.gray.width), cuda::kRowAlignBytes),
                     cuda::round_up(std::size_t(out.width), cuda::kRowAlignBytes));
}

// The code of output (x, y), every neighbour read through clamped coordinates.
__device__ __forceinline__ std::uint8_t code_clamped(const std::uint8_t* __restrict__ in,
                                                     const Geometry& g, int x, int y) {
  const int cx = x + g.shift, cy = y + g.shift;
  return lbp_code([&](int dx, int dy) {
    return __ldg(in + std::size_t(clamp_coordinate(cy + dy, g.in_height)) * g.in_pitch +
                 clamp_coordinate(cx + dx, g.in_width));
  });
}

// Copies the tables (value of code c at c, its bin at kLbpCodes + c) into shared memory.
__device__ __forceinline__ void stage_tables(const std::uint8_t* __restrict__ tables,
                                             std::uint8_t* shared, bool mapped) {
  if (!mapped) return;
  for (int i = threadIdx.x + threadIdx.y * blockDim.x; i < 2 * kLbpCodes;
       i += blockDim.x * blockDim.y) {
    shared[i] = tables[i];
  }
}

// Zeroes the next call's histogram, where there is one (not in calls on views); only the first
// block does.
__device__ __forceinline__ void clear_next(std::uint32_t* __restrict__ next, int bins) {
  if (!next || blockIdx.x != 0 || blockIdx.y != 0) return;
  for (int i = threadIdx.x + threadIdx.y * blockDim.x; i < bins; i += blockDim.x * blockDim.y) {
    next[i] = 0;
  }
}

// ---- cuda-global-atomic ------------------------------------------------------------------------

constexpr int kGlobalBlockX = 32, kGlobalBlockY = 8;
constexpr int kMaxGridY = 65535;

__global__ void __launch_bounds__(kGlobalBlockX* kGlobalBlockY)
    lbp_global_atomic(const std::uint8_t* __restrict__ in, const std::uint8_t* __restrict__ tables,
                      Geometry g, std::uint8_t* __restrict__ out, std::uint32_t* __restrict__ hist,
                      std::uint32_t* __restrict__ next) {
  clear_next(next, g.bins);
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= g.out_width) return;
  // Rows stride by the grid: very tall images need more rows than a grid has in y.
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < g.out_height;
       y += gridDim.y * blockDim.y) {
    const std::uint8_t code = code_clamped(in, g, x, y);
    out[std::size_t(y) * g.out_pitch + x] = g.mapped ? __ldg(tables + code) : code;
    atomicAdd(hist + (g.mapped ? __ldg(tables + kLbpCodes + code) : code), 1u);
  }
}

struct GlobalAtomicKernel {
  dim3 grid, block{kGlobalBlockX, kGlobalBlockY};

  explicit GlobalAtomicKernel(const Geometry& g)
      : grid((g.out_width + kGlobalBlockX - 1) / kGlobalBlockX,
             std::min((g.out_height + kGlobalBlockY - 1) / kGlobalBlockY, kMaxGridY)) {}

  void launch(const std::uint8_t* in, const std::uint8_t* tables, const Geometry& g,
              std::uint8_t* out, std::uint32_t* hist, std::uint32_t* next,
              cudaStream_t stream) const {
    lbp_global_atomic<<<grid, block, 0, stream>>>(in, tables, g, out, hist, next);
    check_launch("lbp_global_atomic");
  }
};

// ---- cuda-shared-tiled -------------------------------------------------------------------------

// A block of kTileW × kTileThreadsY threads codes kTileW × kTileH output tiles, each thread
// kTileH / kTileThreadsY rows of a tile.
constexpr int kTileW = 64, kTileH = 16, kTileThreadsY = 4;
constexpr int kTileThreads = kTileW * kTileThreadsY;

__global__ void __launch_bounds__(kTileThreads)
    lbp_shared_tiled(const std::uint8_t* __restrict__ in, const std::uint8_t* __restrict__ tables,
                     Geometry g, std::uint8_t* __restrict__ out, std::uint32_t* __restrict__ hist,
                     std::uint32_t* __restrict__ next, int tiles_x, int tiles) {
  constexpr int kHaloW = kTileW + 2, kHaloH = kTileH + 2;
  __shared__ std::uint8_t tile[kHaloH][kHaloW];
  __shared__ std::uint8_t shared_tables[2 * kLbpCodes];
  __shared__ std::uint32_t counts[kLbpCodes];
  const int tid = threadIdx.y * kTileW + threadIdx.x;
  clear_next(next, g.bins);
  for (int b = tid; b < g.bins; b += kTileThreads) counts[b] = 0;
  stage_tables(tables, shared_tables, g.mapped);
  __syncthreads();

  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int ox0 = (t % tiles_x) * kTileW, oy0 = (t / tiles_x) * kTileH;
    // The tile's input window, clamped: samples past a partial tile's edge are staged but unused.
    for (int i = tid; i < kHaloW * kHaloH; i += kTileThreads) {
      const int row = clamp_coordinate(oy0 + g.shift - 1 + i / kHaloW, g.in_height);
      const int col = clamp_coordinate(ox0 + g.shift - 1 + i % kHaloW, g.in_width);
      tile[i / kHaloW][i % kHaloW] = __ldg(in + std::size_t(row) * g.in_pitch + col);
    }
    __syncthreads();
    const int x = ox0 + threadIdx.x;
    for (int r = threadIdx.y; r < kTileH; r += kTileThreadsY) {
      const int y = oy0 + r;
      if (x >= g.out_width || y >= g.out_height) continue;
      const std::uint8_t code =
          lbp_code([&](int dx, int dy) { return tile[r + 1 + dy][threadIdx.x + 1 + dx]; });
      out[std::size_t(y) * g.out_pitch + x] = g.mapped ? shared_tables[code] : code;
      atomicAdd(&counts[g.mapped ? shared_tables[kLbpCodes + code] : code], 1u);
    }
    __syncthreads();  // the next tile overwrites this one
  }

  for (int b = tid; b < g.bins; b += kTileThreads) {
    if (counts[b]) atomicAdd(hist + b, counts[b]);
  }
}

struct SharedTiledKernel {
  int tiles_x, tiles, blocks;
  dim3 block{kTileW, kTileThreadsY};

  explicit SharedTiledKernel(const Geometry& g)
      : tiles_x((g.out_width + kTileW - 1) / kTileW),
        tiles(tiles_x * ((g.out_height + kTileH - 1) / kTileH)),
        blocks(resident_blocks(lbp_shared_tiled, kTileThreads, 0, tiles)) {}

  void launch(const std::uint8_t* in, const std::uint8_t* tables, const Geometry& g,
              std::uint8_t* out, std::uint32_t* hist, std::uint32_t* next,
              cudaStream_t stream) const {
    lbp_shared_tiled<<<blocks, block, 0, stream>>>(in, tables, g, out, hist, next, tiles_x, tiles);
    check_launch("lbp_shared_tiled");
  }
};

// ---- cuda-vec ----------------------------------------------------------------------------------

// One block of 1024 threads per multiprocessor: each block zeroes and merges its 32 copies of the
// histogram, a fixed cost a call that one large block pays once instead of four times
// (perf/notes/lbp.md).
constexpr int kVecThreads = 1024;
constexpr int kWarp = 32;
constexpr int kWordsPerVec = kVecBytes / 4;
// The shared histogram keeps one copy per lane, bin b of lane l at b × kWarp + l: a warp's 32
// updates land in 32 different banks whatever the codes, so flat regions do not serialise.
constexpr int kHistCopies = kWarp;

// Replaces byte j (0..15) of four packed words; the loop keeps `words` in registers.
__device__ __forceinline__ void set_byte(std::uint32_t (&words)[kWordsPerVec], int j,
                                         std::uint8_t value) {
#pragma unroll
  for (int w = 0; w < kWordsPerVec; ++w) {
    if (w == j / 4) {
      const int bit = 8 * (j % 4);
      words[w] = (words[w] & ~(0xFFu << bit)) | (std::uint32_t(value) << bit);
    }
  }
}

// Each work item is kVecBytes output pixels of one row, starting at ox0 = kVecBytes × v. Per input
// row it loads the aligned vector at ox0 plus the word after it (and, for clamp, the word before
// it); the 8-byte windows lbp_codes4 needs start one column left of each group of 4 centres.
// With kShift = 1 (crop) that column is ox0 + 4i, word-aligned; with kShift = 0 (clamp) it is
// 3 bytes into the previous word. Clamp's first and last columns, whose windows leave the row,
// are recoded through clamped reads.
template <int kShift, bool kMapped>
__global__ void __launch_bounds__(kVecThreads, 1)
    lbp_vec(const std::uint8_t* __restrict__ in, const std::uint8_t* __restrict__ tables,
            Geometry g, std::uint8_t* __restrict__ out, std::uint32_t* __restrict__ hist,
            std::uint32_t* __restrict__ next, unsigned vecs_per_row, unsigned long long items) {
  extern __shared__ std::uint32_t counts[];  // (g.bins + 1 spare) × kHistCopies
  __shared__ std::uint8_t shared_tables[2 * kLbpCodes];
  clear_next(next, g.bins);
  in += blockIdx.y * g.in_frame_stride;
  out += blockIdx.y * g.out_frame_stride;
  hist += blockIdx.y * unsigned(g.bins);
  for (int i = threadIdx.x; i < g.bins * kHistCopies; i += kVecThreads) counts[i] = 0;
  stage_tables(tables, shared_tables, kMapped);
  __syncthreads();
  std::uint32_t* lane_counts = counts + threadIdx.x % kWarp;

  // Each block takes a contiguous share of the items, as the portable schedule's teams do, so the
  // items past a whole number of rounds fall on every multiprocessor (a grid stride can put them
  // all on the first block). On wide images it costs a little: blocks walking rows of their own
  // share fewer input rows in L2 (perf/notes/lbp.md).
  const unsigned long long end = items * (blockIdx.x + 1) / gridDim.x;
  for (unsigned long long item = items * blockIdx.x / gridDim.x + threadIdx.x; item < end;
       item += kVecThreads) {
    const unsigned oy = unsigned(item) / vecs_per_row;
    const int ox0 = int(unsigned(item) - oy * vecs_per_row) * kVecBytes;
    const int cy = int(oy) + kShift;
    const int rows[3] = {clamp_coordinate(cy - 1, g.in_height), cy,
                         clamp_coordinate(cy + 1, g.in_height)};

    std::uint32_t lo[kWordsPerVec][3], hi[kWordsPerVec][3];
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const std::uint8_t* row = in + std::size_t(rows[r]) * g.in_pitch + ox0;
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(row));
      // Words past the row's end or before its start are only read by pixels recoded below or
      // not stored; 0 keeps the loads inside the image.
      const std::uint32_t after =
          ox0 + kVecBytes < g.in_width
              ? __ldg(reinterpret_cast<const std::uint32_t*>(row + kVecBytes))
              : 0u;
      if constexpr (kShift == 1) {
        const std::uint32_t w[kWordsPerVec + 1] = {v.x, v.y, v.z, v.w, after};
#pragma unroll
        for (int i = 0; i < kWordsPerVec; ++i) {
          lo[i][r] = w[i];
          hi[i][r] = w[i + 1];
        }
      } else {
        const std::uint32_t before =
            ox0 > 0 ? __ldg(reinterpret_cast<const std::uint32_t*>(row) - 1) : 0u;
        const std::uint32_t w[kWordsPerVec + 2] = {before, v.x, v.y, v.z, v.w, after};
#pragma unroll
        for (int i = 0; i < kWordsPerVec; ++i) {
          lo[i][r] = lbp_bytes_at(w[i], w[i + 1], 3);
          hi[i][r] = lbp_bytes_at(w[i + 1], w[i + 2], 3);
        }
      }
    }
    std::uint32_t codes[kWordsPerVec];
#pragma unroll
    for (int i = 0; i < kWordsPerVec; ++i) codes[i] = lbp_codes4(lo[i], hi[i]);

    if constexpr (kShift == 0) {
      if (ox0 == 0) set_byte(codes, 0, code_clamped(in, g, 0, int(oy)));
      const int last = g.in_width - 1 - ox0;
      if (last < kVecBytes) set_byte(codes, last, code_clamped(in, g, g.in_width - 1, int(oy)));
    }

    std::uint32_t values[kWordsPerVec] = {codes[0], codes[1], codes[2], codes[3]};
    // Pixels past the row's end are stored into the pitch padding but not counted: only the last
    // item of a row can have them, so the others count without a test per pixel.
    std::uint32_t bins[kVecBytes];
#pragma unroll
    for (int j = 0; j < kVecBytes; ++j) {
      const std::uint32_t code = __byte_perm(codes[j / 4], 0, 0x4440u | unsigned(j % 4));
      bins[j] = code;
      if (kMapped) {
        set_byte(values, j, shared_tables[code]);
        bins[j] = shared_tables[kLbpCodes + code];
      }
    }
    const int valid = g.out_width - ox0;
    if (valid >= kVecBytes) {
#pragma unroll
      for (int j = 0; j < kVecBytes; ++j) atomicAdd(lane_counts + bins[j] * kHistCopies, 1u);
    } else {
      // The others go to the spare bin after the histogram's, which is never merged.
#pragma unroll
      for (int j = 0; j < kVecBytes; ++j) {
        atomicAdd(lane_counts + (j < valid ? bins[j] : unsigned(g.bins)) * kHistCopies, 1u);
      }
    }
    *reinterpret_cast<uint4*>(out + std::size_t(oy) * g.out_pitch + ox0) =
        make_uint4(values[0], values[1], values[2], values[3]);
  }
  __syncthreads();

  // Thread b sums bin b's copies starting at copy b, so a warp reads 32 different banks.
  for (int b = threadIdx.x; b < g.bins; b += kVecThreads) {
    std::uint32_t sum = 0;
#pragma unroll 8
    for (int c = 0; c < kHistCopies; ++c) sum += counts[b * kHistCopies + (b + c) % kHistCopies];
    if (sum) atomicAdd(hist + b, sum);
  }
}

// The instance of lbp_vec for the border and mapping of `g`.
auto lbp_vec_for(const Geometry& g) {
  if (g.shift) return g.mapped ? lbp_vec<1, true> : lbp_vec<1, false>;
  return g.mapped ? lbp_vec<0, true> : lbp_vec<0, false>;
}

// Frames per launch: CUDA's grid y holds at most 65535 blocks.
constexpr int kMaxFramesPerLaunch = kMaxGridY;

// Blocks of `kernel` with `shared_bytes` that the current device keeps resident, asked of the
// occupancy calculator once per kernel, size and device (calls on views make a VecKernel per call).
template <class Kernel>
long long resident_vec_blocks(Kernel kernel, std::size_t shared_bytes) {
  const int device = cuda::current_device();
  const auto key = std::make_tuple(reinterpret_cast<const void*>(kernel), shared_bytes, device);
  static std::mutex mutex;
  static std::map<decltype(key), long long> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(key);
  if (found != known.end()) return found->second;
  const long long blocks = resident_blocks(kernel, kVecThreads, shared_bytes, LLONG_MAX);
  known.emplace(key, blocks);
  return blocks;
}

// Launches lbp_vec over `frames` frames of `g` (1 for the runners); the frames share one wave of
// resident blocks, at least one block each.
struct VecKernel {
  unsigned vecs_per_row;
  unsigned long long items;
  std::size_t shared_bytes;
  decltype(lbp_vec_for(Geometry{})) kernel;
  long long resident;
  int work_blocks;

  explicit VecKernel(const Geometry& g)
      : vecs_per_row(unsigned((g.out_width + kVecBytes - 1) / kVecBytes)),
        items((unsigned long long)vecs_per_row * unsigned(g.out_height)),
        shared_bytes(std::size_t(g.bins + 1) * kHistCopies * sizeof(std::uint32_t)),
        kernel(lbp_vec_for(g)),
        resident(resident_vec_blocks(kernel, shared_bytes)),
        work_blocks(int(std::min<unsigned long long>((items + kVecThreads - 1) / kVecThreads,
                                                     (unsigned long long)resident))) {}

  void launch(const std::uint8_t* in, const std::uint8_t* tables, const Geometry& g,
              std::uint8_t* out, std::uint32_t* hist, std::uint32_t* next, cudaStream_t stream,
              int frames = 1) const {
    for (int first = 0; first < frames; first += kMaxFramesPerLaunch) {
      const int part = std::min(frames - first, kMaxFramesPerLaunch);
      const int blocks = int(std::max(1LL, std::min<long long>(work_blocks, resident / part)));
      kernel<<<dim3(blocks, part), kVecThreads, shared_bytes, stream>>>(
          in + std::size_t(first) * g.in_frame_stride, tables, g,
          out + std::size_t(first) * g.out_frame_stride, hist + std::size_t(first) * g.bins, next,
          vecs_per_row, items);
      check_launch("lbp_vec");
    }
  }
};

// ---- runners -----------------------------------------------------------------------------------

// Device buffers of one run (pitched input and codes, two histograms, tables). Every operation is
// queued on the legacy default stream, so poisoning, copies and kernels stay in order, and the
// calls of different runners run one after another (Runner's contract).
class DeviceLbp {
 public:
  explicit DeviceLbp(const LbpInput& input)
      : g_(geometry_of(input)),
        in_(std::size_t(g_.in_width), g_.in_height),
        out_(std::size_t(g_.out_width), g_.out_height),
        hist_(2 * std::size_t(g_.bins)),
        tables_(2 * kLbpCodes) {
    const LbpTables t = lbp_tables(input.params.mapping);
    check(cudaMemcpyAsync(tables_.get(), t.value, kLbpCodes, cudaMemcpyHostToDevice, stream()),
          "cudaMemcpyAsync(lbp tables)");
    check(cudaMemcpyAsync(tables_.get() + kLbpCodes, t.bin, kLbpCodes, cudaMemcpyHostToDevice,
                          stream()),
          "cudaMemcpyAsync(lbp tables)");
    sync();  // `t` goes out of scope
  }

  const Geometry& geometry() const { return g_; }
  cudaStream_t stream() const { return cudaStreamLegacy; }
  void sync() const { check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize"); }

  void poison(std::uint8_t byte) {
    out_.fill(byte, stream());
    check(cudaMemsetAsync(hist_.get(), byte, hist_.bytes(), stream()),
          "cudaMemsetAsync(lbp histogram)");
    turns_.poisoned();
  }
  void upload(const ImageU8& gray) { in_.upload(gray.data.data(), stream()); }
  template <class Kernel>
  void compute(const Kernel& kernel) {
    const LbpHistogramTurns::Turn turn = turns_.next();
    if (turn.clear_first) {
      check(cudaMemsetAsync(half(turn.add_into), 0, half_bytes(), stream()),
            "cudaMemsetAsync(lbp histogram)");
    }
    kernel.launch(in_.get(), tables_.get(), g_, out_.get(), half(turn.add_into),
                  half(turn.clear_for_next), stream());
  }
  // Queues the copies into `out`, which must already have the output's shape.
  void download(LbpResult& out) {
    out_.download(out.codes.data.data(), stream());
    check(cudaMemcpyAsync(out.histogram.data(), half(turns_.last()), half_bytes(),
                          cudaMemcpyDeviceToHost, stream()),
          "cudaMemcpyAsync(lbp histogram)");
  }

 private:
  std::uint32_t* half(int k) const { return hist_.get() + std::size_t(k) * std::size_t(g_.bins); }
  std::size_t half_bytes() const { return std::size_t(g_.bins) * sizeof(std::uint32_t); }

  Geometry g_;
  cuda::PitchedImage in_, out_;       // the pitches of g_
  DeviceBuffer<std::uint32_t> hist_;  // two histograms of g_.bins (LbpHistogramTurns)
  LbpHistogramTurns turns_;
  DeviceBuffer<std::uint8_t> tables_;
};

// Kernel-only: upload() and download() move the data, compute() runs on resident buffers.
template <class Kernel>
class KernelRunner final : public Runner<Lbp> {
 public:
  explicit KernelRunner(const LbpInput& input)
      : input_(input), device_(input), kernel_(device_.geometry()) {}
  void poison(std::uint8_t byte) override { device_.poison(byte); }
  void upload() override { device_.upload(input_.gray); }
  void compute() override { device_.compute(kernel_); }
  void sync() override { device_.sync(); }
  void download(LbpResult& out) override {
    const Geometry& g = device_.geometry();
    reshape(out.codes, g.out_width, g.out_height, 1);
    out.histogram.resize(std::size_t(g.bins));
    device_.download(out);
    device_.sync();
  }

 private:
  const LbpInput& input_;
  DeviceLbp device_;
  Kernel kernel_;
};

// End to end: compute() copies the pageable input in, runs the kernel and copies the result back
// into host memory the runner owns.
template <class Kernel>
class EndToEndRunner final : public Runner<Lbp> {
 public:
  explicit EndToEndRunner(const LbpInput& input)
      : input_(input),
        device_(input),
        kernel_(device_.geometry()),
        result_(make_lbp_output(input)) {}
  void poison(std::uint8_t byte) override {
    device_.poison(byte);
    std::fill(result_.codes.data.begin(), result_.codes.data.end(), byte);
    std::fill(result_.histogram.begin(), result_.histogram.end(),
              std::uint32_t(byte) * 0x01010101u);
  }
  void compute() override {
    device_.upload(input_.gray);
    device_.compute(kernel_);
    device_.download(result_);
  }
  void sync() override { device_.sync(); }
  void download(LbpResult& out) override { out = result_; }

 private:
  const LbpInput& input_;
  DeviceLbp device_;
  Kernel kernel_;
  LbpResult result_;
};

// kbench::lbp on device views (Variant::on_views of cuda-vec): every frame in one launch on the
// call's stream, the histograms zeroed first. The kernel loads and stores whole vectors from each
// row's start, so views it cannot use in place go through the context's scratch memory.
void lbp_on_views(const LbpViewCall& call) {
  const cudaStream_t stream = static_cast<cudaStream_t>(call.work.stream);
  const FrameLayout in = vector_input(call.in, kVecBytes, call.work, "cuda lbp input");
  const FrameLayout out = vector_output(call.codes, kVecBytes, call.work, "cuda lbp codes");
  Geometry g = geometry_of(call.in.width, call.in.height, call.params, in.pitch, out.pitch);
  g.in_frame_stride = in.frame_stride;
  g.out_frame_stride = out.frame_stride;
  const LbpTables tables = lbp_tables(call.params.mapping);
  static_assert(offsetof(LbpTables, bin) == kLbpCodes, "the kernels read bins after values");
  const auto* device_tables = static_cast<const std::uint8_t*>(
      call.work.scratch->uploaded("cuda lbp tables", &tables, 2 * kLbpCodes, call.work.stream));
  fill_async(call.histograms, 0, std::size_t(call.in.frames) * g.bins * sizeof(std::uint32_t),
             call.work.stream);
  VecKernel(g).launch(in.data, device_tables, g, out.data, call.histograms, nullptr, stream,
                      call.in.frames);
  finish_vector_output(out, call.codes, call.work);
}

}  // namespace

void register_lbp_native_cuda(VariantList<Lbp>& list) {
  // Ranks: the vectorised kernel is the fastest.
  const auto add = [&](const char* name, bool end_to_end, Variant<Lbp>::Make make, int rank,
                       std::function<void(const LbpViewCall&)> on_views = {}) {
    list.push_back({name,
                    Layer::native_cuda,
                    Backend::cuda,
                    end_to_end,
                    std::move(make),
                    {},
                    rank,
                    Isa::tuned,
                    false,
                    std::move(on_views)});
  };
  add("cuda-global-atomic", false, make_runner<KernelRunner<GlobalAtomicKernel>>, 2);
  add("cuda-shared-tiled", false, make_runner<KernelRunner<SharedTiledKernel>>, 3);
  add("cuda-vec", false, make_runner<KernelRunner<VecKernel>>, 4, lbp_on_views);
  add("cuda-e2e-sync", true, make_runner<EndToEndRunner<VecKernel>>, 1);
}

}  // namespace kbench
