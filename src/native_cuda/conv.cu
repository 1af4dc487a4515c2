// Native CUDA conv: the report's naive and tiled kernels, a vectorised u8 kernel for sm_90, and
// two end-to-end variants that include the host↔device copies (synchronous, and pinned memory
// with one stream per channel).
//
// Output pixel (x, y) reads input (x + shift + i, y + shift + j), i, j < N, clamped into the
// image: shift is −r for Border::clamp and 0 for Border::crop, whose windows never leave it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "native_cuda/cuda_support.hpp"
#include "registry_parts.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;
using cuda::PinnedBuffer;
using cuda::Stream;

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kMaxGridY = 65535;

// The mask of the kernels that read it from constant memory; every launch copies its runner's
// mask here first, on a stream ordered before the launch.
__constant__ float c_conv_mask[kMaxMaskSize * kMaxMaskSize];
static_assert(sizeof(c_conv_mask) <= 64 * 1024, "the largest mask must fit in constant memory");

// Sizes of one conv, as every kernel sees them.
struct ConvGeometry {
  int width;  // input
  int height;
  int channels;
  int out_width;
  int out_height;
  int mask_size;
  int shift;
};

ConvGeometry make_geometry(const ConvInput& input) {
  validate_conv_input(input);
  const ImageU8& image = input.image;
  // Kernels index bytes within a row with int.
  if (std::size_t(image.width) * image.channels > std::size_t(INT_MAX / 2)) {
    throw Error("an image row of " + std::to_string(image.width) +
                " pixels is too wide for the CUDA conv kernels");
  }
  const ImageSize out = conv_output_size(image.width, image.height, input.mask, input.border);
  const int shift = input.border == Border::clamp ? -input.mask.radius() : 0;
  return {image.width, image.height, image.channels, out.width, out.height, input.mask.size, shift};
}

// One launch over pitched images: the input holds rows [in_row_begin, in_row_end) of the
// image, the first at `in`; the launch writes output rows [out_row_begin, out_row_end), row 0
// at `out`. Streamed variants give each launch a band of rows; the others the whole image.
struct ConvLaunch {
  ConvGeometry g;
  bool clamp;
  const std::uint8_t* in;
  std::size_t in_pitch;
  int in_row_begin;
  int in_row_end;
  std::uint8_t* out;
  std::size_t out_pitch;
  int out_row_begin;
  int out_row_end;
};

// Input row y (image coordinates) as an index into the stored rows. For every row an output
// inside the launch reads, this equals clamp_coordinate(y, height) − in_row_begin; rows of
// threads past the last output stay inside the stored rows.
__device__ __forceinline__ int stored_row(const ConvLaunch& p, int y) {
  return min(max(y, p.in_row_begin), p.in_row_end - 1) - p.in_row_begin;
}

unsigned blocks_for(long long items, int per_block) {
  return unsigned((items + per_block - 1) / per_block);
}

// grid.y is limited to 65535 blocks.
unsigned row_blocks(int rows, int rows_per_block) {
  const unsigned blocks = blocks_for(rows, rows_per_block);
  if (blocks > unsigned(kMaxGridY)) {
    throw Error("an image of " + std::to_string(rows) +
                " rows is too tall for the CUDA conv kernels");
  }
  return blocks;
}

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// ---------------------------------------------------------------------------------------------
// Naive kernels: one thread per output pixel, every tap and the mask read from global memory.

constexpr int kNaiveBlockX = 32;
constexpr int kNaiveBlockY = 8;

__global__ void conv_naive_aos_kernel(const std::uint8_t* in, std::uint8_t* out, const float* mask,
                                      ConvGeometry g) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.out_width || y >= g.out_height) return;
  const int n = g.mask_size;
  for (int c = 0; c < g.channels; ++c) {
    float sum = 0.f;
    for (int j = 0; j < n; ++j) {
      const int sy = clamp_coordinate(y + g.shift + j, g.height);
      for (int i = 0; i < n; ++i) {
        const int sx = clamp_coordinate(x + g.shift + i, g.width);
        sum += mask[j * n + i] * in[(std::size_t(sy) * g.width + sx) * g.channels + c];
      }
    }
    out[(std::size_t(y) * g.out_width + x) * g.channels + c] = conv_to_pixel(sum);
  }
}

// Planar: channel c of the input and output are planes c of `in` and `out`.
__global__ void conv_naive_soa_kernel(const std::uint8_t* in, std::uint8_t* out, const float* mask,
                                      ConvGeometry g) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= g.out_width || y >= g.out_height) return;
  const int n = g.mask_size;
  const std::size_t in_plane = std::size_t(g.width) * g.height;
  const std::size_t out_plane = std::size_t(g.out_width) * g.out_height;
  for (int c = 0; c < g.channels; ++c) {
    const std::uint8_t* plane = in + c * in_plane;
    float sum = 0.f;
    for (int j = 0; j < n; ++j) {
      const int sy = clamp_coordinate(y + g.shift + j, g.height);
      for (int i = 0; i < n; ++i) {
        const int sx = clamp_coordinate(x + g.shift + i, g.width);
        sum += mask[j * n + i] * plane[std::size_t(sy) * g.width + sx];
      }
    }
    out[c * out_plane + std::size_t(y) * g.out_width + x] = conv_to_pixel(sum);
  }
}

void launch_naive(void (*kernel)(const std::uint8_t*, std::uint8_t*, const float*, ConvGeometry),
                  const char* name, const std::uint8_t* in, std::uint8_t* out, const float* mask,
                  const ConvGeometry& g) {
  const dim3 block(kNaiveBlockX, kNaiveBlockY);
  const dim3 grid(blocks_for(g.out_width, kNaiveBlockX), row_blocks(g.out_height, kNaiveBlockY));
  kernel<<<grid, block>>>(in, out, mask, g);
  check_launch(name);
}

// ---------------------------------------------------------------------------------------------
// Tiled kernel: a block stages its output tile plus the N − 1 halo in shared memory, then each
// thread computes one pixel, all channels, with the mask from constant memory. It handles any
// N and channel count, so it is also the fallback of the vectorised kernel.

constexpr int kTileW = 32;
constexpr int kTileH = 8;

template <int kW, int kH>
__global__ void __launch_bounds__(kW* kH) conv_tiled_kernel(const ConvLaunch p) {
  extern __shared__ std::uint8_t tile[];  // (kH + N − 1) rows × (kW + N − 1) pixels, interleaved
  const std::uint8_t* __restrict__ in = p.in;
  std::uint8_t* __restrict__ out = p.out;
  const int n = p.g.mask_size;
  const int channels = p.g.channels;
  const int tile_w = kW + n - 1;
  const int tile_h = kH + n - 1;
  const int x0 = blockIdx.x * kW;
  const int y0 = p.out_row_begin + blockIdx.y * kH;

  for (int r = threadIdx.y; r < tile_h; r += kH) {
    const std::uint8_t* src = in + std::size_t(stored_row(p, y0 + p.g.shift + r)) * p.in_pitch;
    std::uint8_t* dst = tile + r * tile_w * channels;
    for (int px = threadIdx.x; px < tile_w; px += kW) {
      const int sx = clamp_coordinate(x0 + p.g.shift + px, p.g.width) * channels;
      for (int c = 0; c < channels; ++c) dst[px * channels + c] = src[sx + c];
    }
  }
  __syncthreads();

  const int x = x0 + threadIdx.x;
  const int y = y0 + threadIdx.y;
  if (x >= p.g.out_width || y >= p.out_row_end) return;
  std::uint8_t* dst = out + std::size_t(y) * p.out_pitch + std::size_t(x) * channels;
  for (int c = 0; c < channels; ++c) {
    float sum = 0.f;
    for (int j = 0; j < n; ++j) {
      const std::uint8_t* row = tile + ((threadIdx.y + j) * tile_w + threadIdx.x) * channels + c;
      for (int i = 0; i < n; ++i) sum += c_conv_mask[j * n + i] * row[i * channels];
    }
    dst[c] = conv_to_pixel(sum);
  }
}

// Reads c_conv_mask: the caller has filled it on a stream ordered before `stream`.
template <int kW = kTileW, int kH = kTileH>
void launch_tiled(const ConvLaunch& p, cudaStream_t stream) {
  static_assert((kW + kMaxMaskSize - 1) * (kH + kMaxMaskSize - 1) * 4 <= 48 * 1024,
                "the largest tile must fit in the default shared memory of a block");
  const int n = p.g.mask_size;
  const std::size_t shared = std::size_t(kW + n - 1) * (kH + n - 1) * p.g.channels;
  const dim3 block(kW, kH);
  const dim3 grid(blocks_for(p.g.out_width, kW), row_blocks(p.out_row_end - p.out_row_begin, kH));
  conv_tiled_kernel<kW, kH><<<grid, block, shared, stream>>>(p);
  check_launch("conv_tiled_kernel");
}

// ---------------------------------------------------------------------------------------------
// Vectorised 3×3 u8 kernel. A thread owns 16 consecutive output bytes (one uint4) of a row
// and kRows consecutive rows; a warp covers 512 bytes of the row. Each input row is read once
// per thread as one uint4; the bytes beside it come from the neighbour lanes by shuffle (lanes
// 0 and 31 load them), so every input byte is fetched once per warp. Input rows are pushed
// into the accumulators of the up to three output rows they feed, so a thread reads kRows + 2
// rows for kRows outputs. Bytes become floats through the 2^23 mantissa trick (PRMT + FADD)
// instead of the quarter-rate I2F. The taps travel as a launch parameter (constant bank), so
// runners on different streams never share a mask buffer.
//
// Requires 16-byte aligned rows and pitches that are multiples of 16: the padding after a row
// lets every thread load and store whole uint4s; padding bytes of the output are garbage.

constexpr int kVecBytes = 16;
constexpr int kVecWarpsPerBlock = 4;
constexpr int kVecRowsPerThread = 4;

struct Mask3x3 {
  float w[9];
};

// Byte k of `word` as a float: 0x4B0000bb is 2^23 + bb.
__device__ __forceinline__ float byte_to_float(std::uint32_t word, int k) {
  return __uint_as_float(__byte_perm(word, 0x4B00u, 0x5440u | unsigned(k))) - 8388608.f;
}

// conv_to_pixel of a sum that started at 0.5, its rounding offset: one conversion that
// truncates and saturates to 0..255 (F2IP.U8 on sm_90) instead of two clamps and a round.
__device__ __forceinline__ std::uint32_t to_pixel(float rounded_sum) {
  std::uint32_t pixel;
  asm("cvt.rzi.u8.f32 %0, %1;" : "=r"(pixel) : "f"(rounded_sum));
  return pixel;
}

__device__ __forceinline__ std::uint32_t pack_pixels(const float* rounded_sum) {
  const std::uint32_t lo = __byte_perm(to_pixel(rounded_sum[0]), to_pixel(rounded_sum[1]), 0x0040u);
  const std::uint32_t hi = __byte_perm(to_pixel(rounded_sum[2]), to_pixel(rounded_sum[3]), 0x0040u);
  return __byte_perm(lo, hi, 0x5410u);
}

// PRMT selector that puts byte 0 of the second operand at byte k and keeps the rest.
__device__ constexpr unsigned insert_byte_selector(int k) {
  return (0x3210u & ~(0xFu << (4 * k))) | (4u << (4 * k));
}

// PRMT selector that fills the last kChannels bytes of a word with the first pixel of `word`:
// the clamped left neighbour of pixel 0.
__device__ constexpr unsigned left_clamp_selector(int channels) {
  unsigned selector = 0;
  for (int k = 4 - channels; k < 4; ++k) selector |= unsigned(k - 4 + channels) << (4 * k);
  return selector;
}

// A thread's window of a row, in words: the word before its chunk, the chunk, and the two words
// after it. Window byte q is row byte b0 − kWindowLead + q.
constexpr int kWindowLead = 4;
struct Window {
  std::uint32_t w[7];
};

// Border::clamp, last chunks of a row: window bytes past the row end repeat the last pixel.
// Out of line: only the lanes at a row end take it, and inlined it would be six copies.
template <int kChannels>
__device__ __noinline__ Window clamp_right_edge(Window win, const std::uint8_t* __restrict__ row,
                                                int b0, int row_bytes) {
#pragma unroll
  for (int q = kWindowLead; q < kWindowLead + kVecBytes + kChannels; ++q) {
    const int byte = b0 - kWindowLead + q;
    if (byte >= row_bytes) {
      const std::uint32_t v = row[row_bytes - kChannels + (byte - row_bytes) % kChannels];
      win.w[q / 4] = __byte_perm(win.w[q / 4], v, insert_byte_selector(q % 4));
    }
  }
  return win;
}

template <int kChannels, bool kClamp, int kRows>
__global__ void __launch_bounds__(kWarpSize* kVecWarpsPerBlock)
    conv3x3_u8_vec_kernel(const ConvLaunch p, const Mask3x3 m) {
  constexpr int kTaps = 3;
  // Window bytes the taps read: one pixel either side of the chunk (clamp), or the chunk and
  // the two pixels after it (crop, where output x reads input x .. x + 2).
  constexpr int kFirst = kClamp ? kWindowLead - kChannels : kWindowLead;
  constexpr int kCount = kVecBytes + (kTaps - 1) * kChannels;
  constexpr bool kNeedsLeft = kClamp;
  constexpr bool kNeedsSecondRight = kFirst + kCount > 6 * 4;  // reads window word 6

  const int lane = threadIdx.x;
  const int b0 = (blockIdx.x * kWarpSize + lane) * kVecBytes;
  const int y0 = p.out_row_begin + (blockIdx.y * kVecWarpsPerBlock + threadIdx.y) * kRows;
  if (y0 >= p.out_row_end) return;  // the whole warp shares y0

  const std::uint8_t* __restrict__ in = p.in;
  std::uint8_t* __restrict__ out = p.out;
  const int row_bytes = p.g.width * kChannels;
  const int in_pitch = int(p.in_pitch);
  const bool loads_chunk = b0 < in_pitch;
  const bool stores = b0 < p.g.out_width * kChannels;
  const auto row_at = [&](int k) {
    return in + std::size_t(stored_row(p, y0 + p.g.shift + k)) * p.in_pitch;
  };

  // Issue every load up front so each warp keeps kRows + 2 rows in flight.
  uint4 chunk[kRows + kTaps - 1];
  uint2 halo[kRows + kTaps - 1];  // lane 0: the word before the warp; lane 31: the words after
#pragma unroll
  for (int k = 0; k < kRows + kTaps - 1; ++k) {
    const std::uint8_t* row = row_at(k);
    chunk[k] =
        loads_chunk ? __ldg(reinterpret_cast<const uint4*>(row + b0)) : make_uint4(0, 0, 0, 0);
    halo[k] = make_uint2(0, 0);
    if (kNeedsLeft && lane == 0 && b0 > 0) {
      halo[k].x = __ldg(reinterpret_cast<const unsigned*>(row + b0 - 4));
    }
    if (lane == kWarpSize - 1 && b0 + kVecBytes < in_pitch) {
      if (kNeedsSecondRight) {
        halo[k] = __ldg(reinterpret_cast<const uint2*>(row + b0 + kVecBytes));
      } else {
        halo[k].x = __ldg(reinterpret_cast<const unsigned*>(row + b0 + kVecBytes));
      }
    }
  }

  float sum[kRows][kVecBytes];
#pragma unroll
  for (int t = 0; t < kRows; ++t) {
#pragma unroll
    for (int b = 0; b < kVecBytes; ++b) sum[t][b] = 0.5f;
  }
#pragma unroll
  for (int k = 0; k < kRows + kTaps - 1; ++k) {
    Window win = {{0, chunk[k].x, chunk[k].y, chunk[k].z, chunk[k].w, 0, 0}};
    if (kNeedsLeft) {
      win.w[0] = __shfl_up_sync(kFullWarp, win.w[4], 1);
      if (lane == 0) win.w[0] = halo[k].x;
    }
    win.w[5] = __shfl_down_sync(kFullWarp, win.w[1], 1);
    if (kNeedsSecondRight) win.w[6] = __shfl_down_sync(kFullWarp, win.w[2], 1);
    if (lane == kWarpSize - 1) {
      win.w[5] = halo[k].x;
      win.w[6] = halo[k].y;
    }
    if (kClamp) {
      if (b0 == 0) win.w[0] = __byte_perm(win.w[1], 0, left_clamp_selector(kChannels));
      if (stores && b0 + kVecBytes + kChannels > row_bytes) {
        win = clamp_right_edge<kChannels>(win, row_at(k), b0, row_bytes);
      }
    }

    float v[kCount];
#pragma unroll
    for (int q = 0; q < kCount; ++q) {
      v[q] = byte_to_float(win.w[(kFirst + q) / 4], (kFirst + q) % 4);
    }

#pragma unroll
    for (int j = 0; j < kTaps; ++j) {
      // Input row k is mask row j of output row k − j: taps add up in the reference order.
      const int t = k - j;
      if (t < 0 || t >= kRows) continue;
#pragma unroll
      for (int i = 0; i < kTaps; ++i) {
#pragma unroll
        for (int b = 0; b < kVecBytes; ++b) {
          sum[t][b] = fmaf(m.w[j * kTaps + i], v[b + i * kChannels], sum[t][b]);
        }
      }
    }

    const int done = k - (kTaps - 1);
    if (done >= 0 && stores && y0 + done < p.out_row_end) {
      const uint4 pixels = make_uint4(pack_pixels(sum[done]), pack_pixels(sum[done] + 4),
                                      pack_pixels(sum[done] + 8), pack_pixels(sum[done] + 12));
      // Streaming store: the output is not read again, keep L2 for the input halo rows.
      __stcs(reinterpret_cast<uint4*>(out + std::size_t(y0 + done) * p.out_pitch + b0), pixels);
    }
  }
}

template <int kChannels, bool kClamp>
void launch_vec3x3(const ConvLaunch& p, const Mask3x3& mask, cudaStream_t stream) {
  const int chunks = blocks_for(p.g.out_width * kChannels, kVecBytes);
  const dim3 block(kWarpSize, kVecWarpsPerBlock);
  const dim3 grid(blocks_for(chunks, kWarpSize), row_blocks(p.out_row_end - p.out_row_begin,
                                                            kVecRowsPerThread * kVecWarpsPerBlock));
  conv3x3_u8_vec_kernel<kChannels, kClamp, kVecRowsPerThread><<<grid, block, 0, stream>>>(p, mask);
  check_launch("conv3x3_u8_vec_kernel");
}

template <int kChannels>
void launch_vec3x3(const ConvLaunch& p, const Mask3x3& mask, cudaStream_t stream) {
  if (p.clamp) {
    launch_vec3x3<kChannels, true>(p, mask, stream);
  } else {
    launch_vec3x3<kChannels, false>(p, mask, stream);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

// A runner's mask on the device, and its taps as a launch parameter when it is 3×3.
class DeviceMask {
 public:
  explicit DeviceMask(const Mask& mask) : size_(mask.size), weights_(mask.weights.size()) {
    check(cudaMemcpy(weights_.get(), mask.weights.data(), weights_.bytes(), cudaMemcpyHostToDevice),
          "cudaMemcpy (conv mask)");
    if (is_3x3()) std::copy(mask.weights.begin(), mask.weights.end(), taps_3x3_.w);
  }

  const float* get() const { return weights_.get(); }
  bool is_3x3() const { return size_ == 3; }
  const Mask3x3& taps_3x3() const { return taps_3x3_; }

  // Fills c_conv_mask, ordered on `stream`; device to device, so it never blocks the host.
  void to_constant(cudaStream_t stream) const {
    check(cudaMemcpyToSymbolAsync(c_conv_mask, weights_.get(), weights_.bytes(), 0,
                                  cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyToSymbolAsync (conv mask)");
  }

 private:
  int size_;
  DeviceBuffer<float> weights_;
  Mask3x3 taps_3x3_{};
};

// The fastest u8 kernel for the launch: the vectorised kernel for 3×3 masks, the tiled one
// otherwise (which reads c_conv_mask: fill it first, see DeviceMask::to_constant). The
// vectorised kernel needs rows padded to kVecBytes.
void launch_u8_conv(const ConvLaunch& p, const DeviceMask& mask, cudaStream_t stream) {
  if (!mask.is_3x3()) {
    launch_tiled(p, stream);
    return;
  }
  switch (p.g.channels) {
    case 1:
      launch_vec3x3<1>(p, mask.taps_3x3(), stream);
      break;
    case 2:
      launch_vec3x3<2>(p, mask.taps_3x3(), stream);
      break;
    case 3:
      launch_vec3x3<3>(p, mask.taps_3x3(), stream);
      break;
    default:
      launch_vec3x3<4>(p, mask.taps_3x3(), stream);
      break;
  }
}

// Interleaved input and output images on the device, rows padded to a multiple of `row_align`
// bytes.
class DeviceImages {
 public:
  DeviceImages(const ConvInput& input, std::size_t row_align)
      : input_(input),
        g_(make_geometry(input)),
        in_row_bytes_(std::size_t(g_.width) * g_.channels),
        out_row_bytes_(std::size_t(g_.out_width) * g_.channels),
        in_pitch_(round_up(in_row_bytes_, row_align)),
        out_pitch_(round_up(out_row_bytes_, row_align)),
        in_(in_pitch_ * g_.height),
        out_(out_pitch_ * g_.out_height) {}

  const ConvGeometry& geometry() const { return g_; }
  const std::uint8_t* in() const { return in_.get(); }
  std::uint8_t* out() const { return out_.get(); }

  ConvLaunch launch() const {
    return {g_,         input_.border == Border::clamp,
            in_.get(),  in_pitch_,
            0,          g_.height,
            out_.get(), out_pitch_,
            0,          g_.out_height};
  }

  void poison(std::uint8_t byte) {
    check(cudaMemset(out_.get(), byte, out_.bytes()), "cudaMemset (conv output)");
  }

  void upload() {
    check(cudaMemcpy2D(in_.get(), in_pitch_, input_.image.data.data(), in_row_bytes_, in_row_bytes_,
                       g_.height, cudaMemcpyHostToDevice),
          "cudaMemcpy2D (conv input)");
  }

  // Copies the output into `dst`, out_width × channels bytes a row; waits for it.
  void copy_out(std::uint8_t* dst) const {
    check(cudaMemcpy2D(dst, out_row_bytes_, out_.get(), out_pitch_, out_row_bytes_, g_.out_height,
                       cudaMemcpyDeviceToHost),
          "cudaMemcpy2D (conv output)");
  }

  void download(ImageU8& out) const {
    out = make_conv_output(input_);
    copy_out(out.data.data());
  }

 private:
  const ConvInput& input_;
  ConvGeometry g_;
  std::size_t in_row_bytes_;
  std::size_t out_row_bytes_;
  std::size_t in_pitch_;
  std::size_t out_pitch_;
  DeviceBuffer<std::uint8_t> in_;
  DeviceBuffer<std::uint8_t> out_;
};

void synchronize_device() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (conv)");
}

// The variants below run on the legacy default stream, so launches of different runners, and
// the copies into c_conv_mask before them, execute in issue order.

class NaiveAosRunner final : public Runner<Conv> {
 public:
  explicit NaiveAosRunner(const ConvInput& input) : images_(input, 1), mask_(input.mask) {}

  void poison(std::uint8_t byte) override { images_.poison(byte); }
  void upload() override { images_.upload(); }
  void compute() override {
    launch_naive(conv_naive_aos_kernel, "conv_naive_aos_kernel", images_.in(), images_.out(),
                 mask_.get(), images_.geometry());
  }
  void sync() override { synchronize_device(); }
  void download(ImageU8& out) override { images_.download(out); }

 private:
  DeviceImages images_;
  DeviceMask mask_;
};

class NaiveSoaRunner final : public Runner<Conv> {
 public:
  explicit NaiveSoaRunner(const ConvInput& input)
      : g_(make_geometry(input)),
        planar_in_(to_planar(input.image)),
        planar_out_(g_.out_width, g_.out_height, g_.channels),
        in_(planar_in_.sample_count()),
        out_(planar_out_.sample_count()),
        mask_(input.mask) {}

  void poison(std::uint8_t byte) override {
    check(cudaMemset(out_.get(), byte, out_.bytes()), "cudaMemset (conv output)");
    std::fill(planar_out_.data.begin(), planar_out_.data.end(), byte);
  }
  void upload() override {
    check(cudaMemcpy(in_.get(), planar_in_.data.data(), in_.bytes(), cudaMemcpyHostToDevice),
          "cudaMemcpy (conv input)");
  }
  void compute() override {
    launch_naive(conv_naive_soa_kernel, "conv_naive_soa_kernel", in_.get(), out_.get(), mask_.get(),
                 g_);
  }
  void sync() override { synchronize_device(); }
  void download(ImageU8& out) override {
    check(cudaMemcpy(planar_out_.data.data(), out_.get(), out_.bytes(), cudaMemcpyDeviceToHost),
          "cudaMemcpy (conv output)");
    out = to_interleaved(planar_out_);
  }

 private:
  ConvGeometry g_;
  PlanarImageU8 planar_in_;
  PlanarImageU8 planar_out_;
  DeviceBuffer<std::uint8_t> in_;
  DeviceBuffer<std::uint8_t> out_;
  DeviceMask mask_;
};

// kW × kH threads per block, one output pixel each; instantiated at several sizes for the
// block-size study.
template <int kW, int kH>
class TiledRunner final : public Runner<Conv> {
 public:
  explicit TiledRunner(const ConvInput& input) : images_(input, 1), mask_(input.mask) {}

  void poison(std::uint8_t byte) override { images_.poison(byte); }
  void upload() override { images_.upload(); }
  void compute() override {
    mask_.to_constant(0);
    launch_tiled<kW, kH>(images_.launch(), 0);
  }
  void sync() override { synchronize_device(); }
  void download(ImageU8& out) override { images_.download(out); }

 private:
  DeviceImages images_;
  DeviceMask mask_;
};

class U8VecRunner final : public Runner<Conv> {
 public:
  explicit U8VecRunner(const ConvInput& input) : images_(input, kVecBytes), mask_(input.mask) {}

  void poison(std::uint8_t byte) override { images_.poison(byte); }
  void upload() override { images_.upload(); }
  void compute() override {
    if (!mask_.is_3x3()) mask_.to_constant(0);
    launch_u8_conv(images_.launch(), mask_, 0);
  }
  void sync() override { synchronize_device(); }
  void download(ImageU8& out) override { images_.download(out); }

 private:
  DeviceImages images_;
  DeviceMask mask_;
};

// End to end, synchronous: pageable input → device → kernel → internal host output.
class E2eSyncRunner final : public Runner<Conv> {
 public:
  explicit E2eSyncRunner(const ConvInput& input)
      : images_(input, kVecBytes), mask_(input.mask), host_out_(make_conv_output(input)) {}

  void poison(std::uint8_t byte) override {
    images_.poison(byte);
    std::fill(host_out_.data.begin(), host_out_.data.end(), byte);
  }
  void compute() override {
    images_.upload();
    if (!mask_.is_3x3()) mask_.to_constant(0);
    launch_u8_conv(images_.launch(), mask_, 0);
    images_.copy_out(host_out_.data.data());
  }
  void sync() override { synchronize_device(); }
  void download(ImageU8& out) override { out = host_out_; }

 private:
  DeviceImages images_;
  DeviceMask mask_;
  ImageU8 host_out_;
};

// End to end, the report's asynchronous version: planar pinned buffers and one stream per
// channel, each copying its plane in, convolving it and copying it out, so one channel's copies
// overlap another's kernel. A gray image is cut into bands of rows instead, each stored on the
// device with the halo rows its outputs read, so bands need no other band's copy.
constexpr int kGrayBands = 4;

class E2eStreamsRunner final : public Runner<Conv> {
 public:
  explicit E2eStreamsRunner(const ConvInput& input)
      : input_(input),
        g_(make_geometry(input)),
        in_pitch_(round_up(std::size_t(g_.width), kVecBytes)),
        out_pitch_(round_up(std::size_t(g_.out_width), kVecBytes)),
        host_in_(std::size_t(g_.width) * g_.height * g_.channels),
        host_out_(std::size_t(g_.out_width) * g_.out_height * g_.channels),
        mask_(input.mask) {
    const PlanarImageU8 planar = to_planar(input.image);
    std::memcpy(host_in_.get(), planar.data.data(), host_in_.bytes());

    const int bands = g_.channels == 1 ? std::min(kGrayBands, g_.out_height) : 1;
    const int taps = g_.mask_size - 1;
    std::size_t in_rows = 0;
    for (int c = 0; c < g_.channels; ++c) {
      for (int b = 0; b < bands; ++b) {
        Segment s;
        s.channel = c;
        s.out_row_begin = int(std::int64_t(g_.out_height) * b / bands);
        s.out_row_end = int(std::int64_t(g_.out_height) * (b + 1) / bands);
        s.in_row_begin = clamp_coordinate(s.out_row_begin + g_.shift, g_.height);
        s.in_row_end = clamp_coordinate(s.out_row_end - 1 + g_.shift + taps, g_.height) + 1;
        s.in_offset = in_rows * in_pitch_;
        in_rows += std::size_t(s.in_row_end - s.in_row_begin);
        segments_.push_back(s);
      }
    }
    in_ = DeviceBuffer<std::uint8_t>(in_rows * in_pitch_);
    out_ = DeviceBuffer<std::uint8_t>(out_pitch_ * g_.out_height * g_.channels);
    // Blocking streams wait for the legacy stream, where c_conv_mask is filled.
    for (std::size_t s = 0; s < segments_.size(); ++s) streams_.emplace_back(cudaStreamDefault);
  }

  void poison(std::uint8_t byte) override {
    check(cudaMemset(out_.get(), byte, out_.bytes()), "cudaMemset (conv output)");
    std::memset(host_out_.get(), byte, host_out_.bytes());
  }

  void compute() override {
    if (!mask_.is_3x3()) mask_.to_constant(cudaStreamLegacy);
    ConvGeometry plane = g_;
    plane.channels = 1;
    const std::size_t in_plane = std::size_t(g_.width) * g_.height;
    const std::size_t out_plane = std::size_t(g_.out_width) * g_.out_height;
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      const Segment& s = segments_[i];
      const cudaStream_t stream = streams_[i].get();
      const int in_rows = s.in_row_end - s.in_row_begin;
      const int out_rows = s.out_row_end - s.out_row_begin;
      const std::uint8_t* src =
          host_in_.get() + s.channel * in_plane + std::size_t(s.in_row_begin) * g_.width;
      std::uint8_t* const in = in_.get() + s.in_offset;
      std::uint8_t* const out_plane_dev = out_.get() + s.channel * out_pitch_ * g_.out_height;
      check(cudaMemcpy2DAsync(in, in_pitch_, src, g_.width, g_.width, in_rows,
                              cudaMemcpyHostToDevice, stream),
            "cudaMemcpy2DAsync (conv input plane)");
      const ConvLaunch launch{plane,
                              input_.border == Border::clamp,
                              in,
                              in_pitch_,
                              s.in_row_begin,
                              s.in_row_end,
                              out_plane_dev,
                              out_pitch_,
                              s.out_row_begin,
                              s.out_row_end};
      launch_u8_conv(launch, mask_, stream);
      check(cudaMemcpy2DAsync(host_out_.get() + s.channel * out_plane +
                                  std::size_t(s.out_row_begin) * g_.out_width,
                              g_.out_width, out_plane_dev + s.out_row_begin * out_pitch_,
                              out_pitch_, g_.out_width, out_rows, cudaMemcpyDeviceToHost, stream),
            "cudaMemcpy2DAsync (conv output plane)");
    }
  }

  void sync() override {
    for (const Stream& stream : streams_) {
      check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize (conv)");
    }
  }

  void download(ImageU8& out) override {
    out = make_conv_output(input_);
    const std::size_t pixels = out.pixel_count();
    for (int c = 0; c < g_.channels; ++c) {
      const std::uint8_t* plane = host_out_.get() + c * pixels;
      for (std::size_t i = 0; i < pixels; ++i) out.data[i * g_.channels + c] = plane[i];
    }
  }

 private:
  // One stream's work: output rows [out_row_begin, out_row_end) of one channel, from input
  // rows [in_row_begin, in_row_end) stored at in_offset of the device input.
  struct Segment {
    int channel;
    int in_row_begin;
    int in_row_end;
    int out_row_begin;
    int out_row_end;
    std::size_t in_offset;
  };

  const ConvInput& input_;
  ConvGeometry g_;
  std::size_t in_pitch_;
  std::size_t out_pitch_;
  PinnedBuffer<std::uint8_t> host_in_;   // planar
  PinnedBuffer<std::uint8_t> host_out_;  // planar
  DeviceMask mask_;
  std::vector<Segment> segments_;
  DeviceBuffer<std::uint8_t> in_;
  DeviceBuffer<std::uint8_t> out_;
  std::vector<Stream> streams_;
};

// Preference: the vectorised kernel is the fastest for user calls.
template <class R>
Variant<Conv> native_cuda_variant(const char* name, bool end_to_end, int preference = 20) {
  return {name,
          Layer::native_cuda,
          Backend::cuda,
          end_to_end,
          [](const ConvInput& input) -> std::unique_ptr<Runner<Conv>> {
            return std::make_unique<R>(input);
          },
          {},
          preference};
}

}  // namespace

void register_conv_native_cuda(VariantList<Conv>& list) {
  list.push_back(native_cuda_variant<NaiveAosRunner>("cuda-naive-aos", false));
  list.push_back(native_cuda_variant<NaiveSoaRunner>("cuda-naive-soa", false));
  list.push_back(native_cuda_variant<TiledRunner<kTileW, kTileH>>("cuda-tiled", false));
  list.push_back(native_cuda_variant<TiledRunner<8, 8>>("cuda-tiled-8x8", false));
  list.push_back(native_cuda_variant<TiledRunner<16, 16>>("cuda-tiled-16x16", false));
  list.push_back(native_cuda_variant<TiledRunner<32, 32>>("cuda-tiled-32x32", false));
  list.push_back(native_cuda_variant<U8VecRunner>("cuda-u8-vec", false, 30));
  list.push_back(native_cuda_variant<E2eSyncRunner>("cuda-e2e-sync", true));
  list.push_back(native_cuda_variant<E2eStreamsRunner>("cuda-e2e-streams", true));
}

}  // namespace kbench
