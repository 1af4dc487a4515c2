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
#include "kbench/detail/conv_band.hpp"
#include "kbench/error.hpp"
#include "kbench/grid.hpp"
#include "native_cuda/cuda_support.hpp"
#include "registry_parts.hpp"

namespace kbench {
namespace {

using cuda::check;
using cuda::check_launch;
using cuda::DeviceBuffer;
using cuda::PinnedBuffer;
using cuda::round_up;
using cuda::Stream;

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

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

ConvGeometry make_geometry(int width, int height, int channels, const Mask& mask, Border border) {
  // Kernels index bytes within a row with int.
  if (std::size_t(width) * channels > std::size_t(INT_MAX / 2)) {
    throw Error("an image row of " + std::to_string(width) +
                " pixels is too wide for the CUDA conv kernels");
  }
  const ImageSize out = conv_output_size(width, height, mask, border);
  const int shift = border == Border::clamp ? -mask.radius() : 0;
  return {width, height, channels, out.width, out.height, mask.size, shift};
}

ConvGeometry make_geometry(const ConvInput& input) {
  validate_conv_input(input);
  return make_geometry(input.image.width, input.image.height, input.image.channels, input.mask,
                       input.border);
}

// One launch over pitched images: the input holds rows [in_row_begin, in_row_end) of the
// image, the first at `in`; the launch writes output rows [out_row_begin, out_row_end), row 0
// at `out`. Streamed variants give each launch a band of rows; the others the whole image.
// A batch is `frames` such images, frame f's at `in` + f · in_frame_stride and `out` + f ·
// out_frame_stride (blockIdx.z).
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
  int frames = 1;
  std::size_t in_frame_stride = 0;
  std::size_t out_frame_stride = 0;
};

// Frames per launch: CUDA's grid z holds at most 65535 blocks.
constexpr int kMaxFramesPerLaunch = 65535;

// Launches `launch_frames(part)` for parts of `p` of at most kMaxFramesPerLaunch frames.
template <class LaunchFrames>
void for_frame_parts(const ConvLaunch& p, LaunchFrames launch_frames) {
  for (int first = 0; first < p.frames; first += kMaxFramesPerLaunch) {
    ConvLaunch part = p;
    part.frames = std::min(p.frames - first, kMaxFramesPerLaunch);
    part.in += std::size_t(first) * p.in_frame_stride;
    part.out += std::size_t(first) * p.out_frame_stride;
    launch_frames(part);
  }
}

// Input row y (image coordinates) as an index into the stored rows. For every row an output
// inside the launch reads, this equals clamp_coordinate(y, height) − in_row_begin; rows of
// threads past the last output stay inside the stored rows.
__device__ __forceinline__ int stored_row(const ConvLaunch& p, int y) {
  return min(max(y, p.in_row_begin), p.in_row_end - 1) - p.in_row_begin;
}

unsigned blocks_for(long long items, int per_block) {
  return unsigned((items + per_block - 1) / per_block);
}

// Blocks in grid y for `rows` rows: at most CUDA's 65535, past which the kernels stride over
// the rows by the grid.
unsigned row_blocks(int rows, int rows_per_block) {
  return std::min(blocks_for(rows, rows_per_block), unsigned(kMaxGridBlocksY));
}

// ---------------------------------------------------------------------------------------------
// Naive kernels: one thread per output pixel, every tap and the mask read from global memory;
// rows stride by the grid, for images taller than 65535 blocks of rows.

constexpr int kNaiveBlockX = 32;
constexpr int kNaiveBlockY = 8;

__global__ void conv_naive_aos_kernel(const std::uint8_t* in, std::uint8_t* out, const float* mask,
                                      ConvGeometry g) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= g.out_width) return;
  const int n = g.mask_size;
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < g.out_height;
       y += gridDim.y * blockDim.y) {
    for (int c = 0; c < g.channels; ++c) {
      float sum = 0.f;
      for (int j = 0; j < n; ++j) {
        const int sy = clamp_coordinate(y + g.shift + j, g.height);
        for (int i = 0; i < n; ++i) {
          const int sx = clamp_coordinate(x + g.shift + i, g.width);
          sum += mask[j * n + i] * in[sample_index(g.width, g.channels, sx, sy, c)];
        }
      }
      out[sample_index(g.out_width, g.channels, x, y, c)] = conv_to_pixel(sum);
    }
  }
}

// Planar: channel c of the input and output are planes c of `in` and `out`.
__global__ void conv_naive_soa_kernel(const std::uint8_t* in, std::uint8_t* out, const float* mask,
                                      ConvGeometry g) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= g.out_width) return;
  const int n = g.mask_size;
  const std::size_t in_plane = std::size_t(g.width) * g.height;
  const std::size_t out_plane = std::size_t(g.out_width) * g.out_height;
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < g.out_height;
       y += gridDim.y * blockDim.y) {
    for (int c = 0; c < g.channels; ++c) {
      const std::uint8_t* plane = in + c * in_plane;
      float sum = 0.f;
      for (int j = 0; j < n; ++j) {
        const int sy = clamp_coordinate(y + g.shift + j, g.height);
        for (int i = 0; i < n; ++i) {
          const int sx = clamp_coordinate(x + g.shift + i, g.width);
          sum += mask[j * n + i] * plane[pitched_index(g.width, sx, sy)];
        }
      }
      out[c * out_plane + pitched_index(g.out_width, x, y)] = conv_to_pixel(sum);
    }
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

// The mask's weights as the tiled kernel reads them: from c_conv_mask, which the runners fill on
// their stream, or from device memory of the call's own (calls on views, which may run on
// several streams at once with different masks).
struct ConstantMaskTaps {
  __device__ float operator[](int i) const { return c_conv_mask[i]; }
};
struct GlobalMaskTaps {
  const float* __restrict__ weights;
  __device__ float operator[](int i) const { return __ldg(weights + i); }
};

template <int kW, int kH, class Taps>
__global__ void __launch_bounds__(kW* kH) conv_tiled_kernel(const ConvLaunch p, const Taps taps) {
  extern __shared__ std::uint8_t tile[];  // (kH + N − 1) rows × (kW + N − 1) pixels, interleaved
  const std::uint8_t* __restrict__ in = p.in + blockIdx.z * p.in_frame_stride;
  std::uint8_t* __restrict__ out = p.out + blockIdx.z * p.out_frame_stride;
  const int n = p.g.mask_size;
  const int channels = p.g.channels;
  const int tile_w = kW + n - 1;
  const int tile_h = kH + n - 1;
  const int x0 = blockIdx.x * kW;
  const int x = x0 + threadIdx.x;

  // Tile rows stride by the grid, for images taller than 65535 tiles; the whole block takes
  // every step, as the barriers need.
  for (int y0 = p.out_row_begin + blockIdx.y * kH; y0 < p.out_row_end; y0 += gridDim.y * kH) {
    for (int r = threadIdx.y; r < tile_h; r += kH) {
      const std::uint8_t* src =
          in + pitched_index(p.in_pitch, 0, stored_row(p, y0 + p.g.shift + r));
      std::uint8_t* dst = tile + r * tile_w * channels;
      for (int px = threadIdx.x; px < tile_w; px += kW) {
        const int sx = clamp_coordinate(x0 + p.g.shift + px, p.g.width) * channels;
        for (int c = 0; c < channels; ++c) dst[px * channels + c] = src[sx + c];
      }
    }
    __syncthreads();

    const int y = y0 + threadIdx.y;
    if (x < p.g.out_width && y < p.out_row_end) {
      std::uint8_t* dst = out + pitched_index(p.out_pitch, x * channels, y);
      for (int c = 0; c < channels; ++c) {
        float sum = 0.f;
        for (int j = 0; j < n; ++j) {
          const std::uint8_t* row =
              tile + ((threadIdx.y + j) * tile_w + threadIdx.x) * channels + c;
          for (int i = 0; i < n; ++i) sum += taps[j * n + i] * row[i * channels];
        }
        dst[c] = conv_to_pixel(sum);
      }
    }
    __syncthreads();  // the next tile overwrites this one
  }
}

// With ConstantMaskTaps, reads c_conv_mask: the caller has filled it on a stream ordered before
// `stream`.
template <int kW = kTileW, int kH = kTileH, class Taps = ConstantMaskTaps>
void launch_tiled(const ConvLaunch& p, cudaStream_t stream, const Taps& taps = {}) {
  static_assert((kW + kMaxMaskSize - 1) * (kH + kMaxMaskSize - 1) * 4 <= 48 * 1024,
                "the largest tile must fit in the default shared memory of a block");
  const int n = p.g.mask_size;
  const std::size_t shared = std::size_t(kW + n - 1) * (kH + n - 1) * p.g.channels;
  const dim3 block(kW, kH);
  for_frame_parts(p, [&](const ConvLaunch& part) {
    const dim3 grid(blocks_for(part.g.out_width, kW),
                    row_blocks(part.out_row_end - part.out_row_begin, kH), unsigned(part.frames));
    conv_tiled_kernel<kW, kH><<<grid, block, shared, stream>>>(part, taps);
    check_launch("conv_tiled_kernel");
  });
}

// ---------------------------------------------------------------------------------------------
// Banded 3×3 u8 kernel, the arithmetic of kbench/detail/conv_band.hpp: a thread owns 16 bytes of a
// row and a band of rows; a warp, which is a block, covers 512 bytes of the row. Each input row is
// read once per thread as one uint4; the words beside it come from the neighbour lanes by shuffle
// (lanes 0 and 31 load them), so every input byte is fetched once per warp. Bands are as long as
// one wave of resident warps allows (conv_band::band_rows): each warp streams its band with the
// next rows' loads in flight and pays a first load's latency only once, where short-lived warps
// spent much of their life waiting for it.
//
// Requires 16-byte aligned rows and pitches that are multiples of 16 (cuda::kRowAlignBytes): the
// padding after a row lets every thread load and store whole uint4s at any width; padding bytes
// of the output are garbage that the 2D copies leave behind, and Border::clamp replicates a row's
// last pixel in registers (conv_band::clamp_row_end), never reading the padding for a kept output.

using conv_band::kBandBytes;
using conv_band::Taps3x3;
static_assert(cuda::kRowAlignBytes % kBandBytes == 0, "a pitched row holds whole uint4s");

// A launch shape of the banded kernel: the resident warps per SM that its register budget must
// allow (__launch_bounds__; 20 warps leave 102 registers a thread, 16 leave 128). Blocks are one
// warp, so that bands fill the resident warps without rounding to a block of several.
template <int kWarpsPerSM>
struct VecShape {
  static constexpr int min_blocks_per_sm = kWarpsPerSM;
};
// The user-facing shape; the sweep variants register others (see register_conv_native_cuda).
using DefaultVecShape = VecShape<20>;

// Input rows of a band for one lane: its uint4 of each row, the neighbours' words by shuffle.
template <int kChannels, bool kClamp>
class ShuffledRows {
 public:
  using Span = conv_band::WindowSpan<kChannels, kClamp>;
  // Halo words: lane 0 uses the word before the warp's bytes (clamp), lane 31 the words after
  // them.
  static constexpr int kHaloWords = Span::needs_second_after ? 2 : 1;
  struct Slot {
    uint4 chunk;
    std::uint32_t halo[kHaloWords];
  };

  // Band input row 0 is image row `first_row` of the frame whose stored rows start at `in`.
  __device__ ShuffledRows(const ConvLaunch& p, const std::uint8_t* in, int lane, int b0,
                          int first_row)
      : p_(p),
        lane_(lane),
        b0_(b0),
        first_row_(first_row),
        in_pitch_(unsigned(p.in_pitch)),
        // Lanes past the row, padded to whole chunks, load its last chunk instead: only the
        // lane before them reads it, for bytes that no kept output uses. The halo loads are
        // clamped into the padded row the same way where it starts or ends, and their words
        // then go unused (or are replaced, for clamp). No load leaves the padded row.
        chunk_base_(in + min(b0, padded_row_bytes(p) - kBandBytes)),
        // Every lane loads halo words, which the middle lanes ignore (they hit the cache lines
        // of the neighbours' chunks): cheaper than branching around the load.
        halo_base_(in + (lane == 0 && Span::needs_before
                             ? max(b0 - 4, 0)
                             : min(b0 + kBandBytes, padded_row_bytes(p) - 4 * kHaloWords))) {}

  static __device__ int padded_row_bytes(const ConvLaunch& p) {
    return (p.g.width * kChannels + kBandBytes - 1) / kBandBytes * kBandBytes;
  }

  __device__ void load(Slot& slot, int n) const {
    // Unsigned 32-bit factors: one IMAD.WIDE.U32 per row offset.
    const std::size_t offset = std::size_t(unsigned(stored_row(p_, first_row_ + n))) * in_pitch_;
    slot.chunk = __ldg(reinterpret_cast<const uint4*>(chunk_base_ + offset));
    if (kHaloWords == 2) {
      const uint2 words = __ldg(reinterpret_cast<const uint2*>(halo_base_ + offset));
      slot.halo[0] = words.x;
      slot.halo[kHaloWords - 1] = words.y;
    } else {
      slot.halo[0] = __ldg(reinterpret_cast<const std::uint32_t*>(halo_base_ + offset));
    }
  }

  __device__ conv_band::Window window(const Slot& slot) const {
    const uint4 c = slot.chunk;
    conv_band::Window win = {{0, c.x, c.y, c.z, c.w, 0, 0}};
    if (Span::needs_before) {
      const std::uint32_t before = __shfl_up_sync(kFullWarp, c.w, 1);
      win.w[0] = lane_ == 0 ? slot.halo[0] : before;
    }
    const std::uint32_t after = __shfl_down_sync(kFullWarp, c.x, 1);
    win.w[5] = lane_ == kWarpSize - 1 ? slot.halo[0] : after;
    if (Span::needs_second_after) {
      const std::uint32_t after2 = __shfl_down_sync(kFullWarp, c.y, 1);
      win.w[6] = lane_ == kWarpSize - 1 ? slot.halo[kHaloWords - 1] : after2;
    }
    conv_band::clamp_window<kChannels, kClamp>(win, b0_);
    return win;
  }

 private:
  const ConvLaunch& p_;
  int lane_;
  int b0_;
  int first_row_;
  unsigned in_pitch_;
  const std::uint8_t* __restrict__ chunk_base_;
  const std::uint8_t* __restrict__ halo_base_;
};

// Output rows of a band for one lane, row t at first + t · pitch; lanes past the row store nothing.
struct PitchedRowSink {
  std::uint8_t* __restrict__ first;
  unsigned pitch;
  bool stores;

  __device__ void store(int t, const conv_band::Pixels16& pixels) const {
    if (!stores) return;
    // Streaming store: the output is not read again, keep L2 for the input halo rows.
    __stcs(reinterpret_cast<uint4*>(first + std::size_t(unsigned(t)) * pitch),
           make_uint4(pixels.w[0], pixels.w[1], pixels.w[2], pixels.w[3]));
  }
};

template <int kChannels, bool kClamp, class Shape>
__global__ void __launch_bounds__(kWarpSize, Shape::min_blocks_per_sm)
    conv3x3_band_kernel(const ConvLaunch p, const Taps3x3 taps, int band_rows) {
  const int lane = threadIdx.x;
  const int b0 = (blockIdx.x * kWarpSize + lane) * kBandBytes;
  const int y0 = p.out_row_begin + blockIdx.y * band_rows;
  const ShuffledRows<kChannels, kClamp> source(p, p.in + blockIdx.z * p.in_frame_stride, lane, b0,
                                               y0 + p.g.shift);
  const PitchedRowSink sink{p.out + blockIdx.z * p.out_frame_stride +
                                std::size_t(unsigned(y0)) * unsigned(p.out_pitch) + b0,
                            unsigned(p.out_pitch), b0 < p.g.out_width * kChannels};
  conv_band::convolve_band<kChannels, kClamp>(
      source, sink, taps, min(band_rows, p.out_row_end - y0), p.g.width * kChannels - b0);
}

template <class Shape, int kChannels, bool kClamp>
void launch_band3x3(const ConvLaunch& p, const Taps3x3& taps, cudaStream_t stream) {
  const auto kernel = conv3x3_band_kernel<kChannels, kClamp, Shape>;
  static const long long resident = cuda::resident_threads(kernel, kWarpSize, 0);
  const unsigned warps_x = blocks_for(blocks_for(p.g.out_width * kChannels, kBandBytes), kWarpSize);
  const int rows = p.out_row_end - p.out_row_begin;
  for_frame_parts(p, [&](const ConvLaunch& part) {
    // The frames share one wave of resident warps; bands lengthen past kMaxBandRows where the
    // image is taller than 65535 of them (grid y).
    const int band_rows =
        std::max(conv_band::band_rows(rows, (long long)warps_x * kWarpSize * part.frames, resident),
                 min_rows_per_block(rows));
    const dim3 grid(warps_x, row_blocks(rows, band_rows), unsigned(part.frames));
    kernel<<<grid, kWarpSize, 0, stream>>>(part, taps, band_rows);
    check_launch("conv3x3_band_kernel");
  });
}

template <class Shape, int kChannels>
void launch_band3x3(const ConvLaunch& p, const Taps3x3& taps, cudaStream_t stream) {
  if (p.clamp) {
    launch_band3x3<Shape, kChannels, true>(p, taps, stream);
  } else {
    launch_band3x3<Shape, kChannels, false>(p, taps, stream);
  }
}

template <class Shape>
void launch_band3x3(const ConvLaunch& p, const Taps3x3& taps, cudaStream_t stream) {
  switch (p.g.channels) {
    case 1:
      return launch_band3x3<Shape, 1>(p, taps, stream);
    case 2:
      return launch_band3x3<Shape, 2>(p, taps, stream);
    case 3:
      return launch_band3x3<Shape, 3>(p, taps, stream);
    default:
      return launch_band3x3<Shape, 4>(p, taps, stream);
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
    if (is_3x3()) taps_3x3_ = conv_band::taps_of(mask);
  }

  const float* get() const { return weights_.get(); }
  bool is_3x3() const { return size_ == 3; }
  const Taps3x3& taps_3x3() const { return taps_3x3_; }

  // Fills c_conv_mask, ordered on `stream`; device to device, so it never blocks the host.
  void to_constant(cudaStream_t stream) const {
    check(cudaMemcpyToSymbolAsync(c_conv_mask, weights_.get(), weights_.bytes(), 0,
                                  cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyToSymbolAsync (conv mask)");
  }

 private:
  int size_;
  DeviceBuffer<float> weights_;
  Taps3x3 taps_3x3_{};
};

// The fastest u8 kernel for the launch: the banded kernel for 3×3 masks, at any width, in the
// given shape; the tiled one for other masks, after filling c_conv_mask on the same stream
// (launches on other streams that fill it at the same time write the same taps). The banded
// kernel needs rows padded to kBandBytes.
template <class Shape = DefaultVecShape>
void launch_u8_conv(const ConvLaunch& p, const DeviceMask& mask, cudaStream_t stream) {
  if (!mask.is_3x3()) {
    mask.to_constant(stream);
    launch_tiled(p, stream);
    return;
  }
  launch_band3x3<Shape>(p, mask.taps_3x3(), stream);
}

// The output's channel planes (tight, one after another) interleaved into `out`, reshaped to the
// output (its buffer reused when it has that shape: see DeviceImages::download).
void interleave_planes(const std::uint8_t* planes, const ConvGeometry& g, ImageU8& out) {
  reshape(out, g.out_width, g.out_height, g.channels);
  const std::size_t pixels = out.pixel_count();
  for (int c = 0; c < g.channels; ++c) {
    const std::uint8_t* plane = planes + c * pixels;
    for (std::size_t i = 0; i < pixels; ++i) out.data[i * g.channels + c] = plane[i];
  }
}

// Interleaved input and output images on the device, rows padded to a multiple of `row_align`
// bytes (kTightRows for the naive kernel, which indexes tight rows).
constexpr std::size_t kTightRows = 1;

class DeviceImages {
 public:
  DeviceImages(const ConvInput& input, std::size_t row_align)
      : input_(input),
        g_(make_geometry(input)),
        in_(std::size_t(g_.width) * g_.channels, g_.height, row_align),
        out_(std::size_t(g_.out_width) * g_.channels, g_.out_height, row_align) {}

  const ConvGeometry& geometry() const { return g_; }
  const std::uint8_t* in() const { return in_.get(); }
  std::uint8_t* out() const { return out_.get(); }

  ConvLaunch launch() const {
    return {g_,         input_.border == Border::clamp,
            in_.get(),  in_.pitch(),
            0,          g_.height,
            out_.get(), out_.pitch(),
            0,          g_.out_height};
  }

  void poison(std::uint8_t byte) { out_.fill(byte, 0); }
  void upload() { in_.upload(input_.image.data.data(), 0); }

  // Copies the output into `dst`, out_width × channels bytes a row; waits for it.
  void copy_out(std::uint8_t* dst) const {
    out_.download(dst, 0);
    synchronize_device();
  }

  // Into `out`'s own buffer when it has the shape already: a fresh one each call would be
  // first-touched by the copy, page by page, several times slower end to end past glibc's 32 MB
  // mmap threshold, where every large allocation is new pages (perf/notes/portability.md).
  void download(ImageU8& out) const {
    reshape(out, g_.out_width, g_.out_height, g_.channels);
    copy_out(out.data.data());
  }

 private:
  static void synchronize_device() {
    check(cudaStreamSynchronize(0), "cudaStreamSynchronize (conv output)");
  }

  const ConvInput& input_;
  ConvGeometry g_;
  cuda::PitchedImage in_;
  cuda::PitchedImage out_;
};

void synchronize_device() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (conv)");
}

// The variants below run on the legacy default stream, so launches of different runners, and
// the copies into c_conv_mask before them, execute in issue order.

class NaiveAosRunner final : public Runner<Conv> {
 public:
  explicit NaiveAosRunner(const ConvInput& input) : images_(input, kTightRows), mask_(input.mask) {}

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
    interleave_planes(planar_out_.data.data(), g_, out);
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
  explicit TiledRunner(const ConvInput& input) : images_(input, kTightRows), mask_(input.mask) {}

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

// The vectorised kernel in a given shape: the default is the user-facing variant, the others
// the shape sweep.
template <class Shape = DefaultVecShape>
class U8VecRunner final : public Runner<Conv> {
 public:
  explicit U8VecRunner(const ConvInput& input)
      : images_(input, cuda::kRowAlignBytes), mask_(input.mask) {}

  void poison(std::uint8_t byte) override { images_.poison(byte); }
  void upload() override { images_.upload(); }
  void compute() override { launch_u8_conv<Shape>(images_.launch(), mask_, 0); }
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
      : images_(input, cuda::kRowAlignBytes),
        mask_(input.mask),
        host_out_(make_conv_output(input)) {}

  void poison(std::uint8_t byte) override {
    images_.poison(byte);
    std::fill(host_out_.data.begin(), host_out_.data.end(), byte);
  }
  void compute() override {
    images_.upload();
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
// overlap another's kernel. With kPlaneBands > 1 each plane is also cut into bands of rows, one
// stream each, so that less of the copying waits at either end; a gray image is always cut into at
// least kGrayBands. A band is stored on the device with the halo rows its outputs read, so it
// needs no other band's copy.
constexpr int kGrayBands = 4;

template <int kPlaneBands>
class E2eStreamsRunner final : public Runner<Conv> {
 public:
  explicit E2eStreamsRunner(const ConvInput& input)
      : input_(input),
        g_(make_geometry(input)),
        in_pitch_(round_up(std::size_t(g_.width), cuda::kRowAlignBytes)),
        out_pitch_(round_up(std::size_t(g_.out_width), cuda::kRowAlignBytes)),
        host_in_(std::size_t(g_.width) * g_.height * g_.channels),
        host_out_(std::size_t(g_.out_width) * g_.out_height * g_.channels),
        mask_(input.mask) {
    const PlanarImageU8 planar = to_planar(input.image);
    std::memcpy(host_in_.get(), planar.data.data(), host_in_.bytes());

    const int bands =
        std::min(g_.channels == 1 ? std::max(kPlaneBands, kGrayBands) : kPlaneBands, g_.out_height);
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
    // Blocking streams wait for the legacy stream, where other runners fill c_conv_mask.
    for (std::size_t s = 0; s < segments_.size(); ++s) streams_.emplace_back(cudaStreamDefault);
  }

  void poison(std::uint8_t byte) override {
    check(cudaMemset(out_.get(), byte, out_.bytes()), "cudaMemset (conv output)");
    std::memset(host_out_.get(), byte, host_out_.bytes());
  }

  void compute() override {
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

  void download(ImageU8& out) override { interleave_planes(host_out_.get(), g_, out); }

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

// kbench::conv on device views (Variant::on_views of cuda-u8-vec): every frame in one launch on
// the call's stream. The banded kernel (3×3 masks) loads and stores whole chunks from each row's
// start, so views it cannot use in place go through the context's scratch memory; other masks
// take the tiled kernel, which reads views of any layout and the weights from the scratch memory
// (c_conv_mask is one per process, and calls on other streams may use other masks).
void conv_on_views(const ConvViewCall& call) {
  const cudaStream_t stream = static_cast<cudaStream_t>(call.work.stream);
  const Mask& mask = *call.mask;
  const ConvGeometry g =
      make_geometry(call.in.width, call.in.height, call.in.channels, mask, call.border);
  const bool clamp = call.border == Border::clamp;
  if (mask.size != 3) {
    const auto* weights = static_cast<const float*>(
        call.work.scratch->uploaded("cuda conv mask", mask.weights.data(),
                                    mask.weights.size() * sizeof(float), call.work.stream));
    const ConvLaunch p{g,
                       clamp,
                       call.in.data,
                       call.in.row_pitch(),
                       0,
                       g.height,
                       call.out.data,
                       call.out.row_pitch(),
                       0,
                       g.out_height,
                       call.in.frames,
                       call.in.frame_pitch(),
                       call.out.frame_pitch()};
    launch_tiled(p, stream, GlobalMaskTaps{weights});
    return;
  }
  const FrameLayout in = vector_input(call.in, kBandBytes, call.work, "cuda conv input");
  const FrameLayout out = vector_output(call.out, kBandBytes, call.work, "cuda conv output");
  const ConvLaunch p{g,
                     clamp,
                     in.data,
                     in.pitch,
                     0,
                     g.height,
                     out.data,
                     out.pitch,
                     0,
                     g.out_height,
                     call.in.frames,
                     in.frame_stride,
                     out.frame_stride};
  launch_band3x3<DefaultVecShape>(p, conv_band::taps_of(mask), stream);
  finish_vector_output(out, call.out, call.work);
}

// Ranks: the vectorised kernel is the fastest for user calls.
template <class R>
Variant<Conv> native_cuda_variant(const char* name, bool end_to_end, int rank = 1,
                                  std::function<void(const ConvViewCall&)> on_views = {}) {
  return {name, Layer::native_cuda, Backend::cuda, end_to_end,         make_runner<R>, {},
          rank, Isa::tuned,         false,         std::move(on_views)};
}

}  // namespace

void register_conv_native_cuda(VariantList<Conv>& list) {
  list.push_back(native_cuda_variant<NaiveAosRunner>("cuda-naive-aos", false));
  list.push_back(native_cuda_variant<NaiveSoaRunner>("cuda-naive-soa", false));
  list.push_back(native_cuda_variant<TiledRunner<kTileW, kTileH>>("cuda-tiled", false));
  list.push_back(native_cuda_variant<TiledRunner<8, 8>>("cuda-tiled-8x8", false));
  list.push_back(native_cuda_variant<TiledRunner<16, 16>>("cuda-tiled-16x16", false));
  list.push_back(native_cuda_variant<TiledRunner<32, 32>>("cuda-tiled-32x32", false));
  list.push_back(native_cuda_variant<U8VecRunner<>>("cuda-u8-vec", false, 2, conv_on_views));
  // The shape sweep: 16 and 24 resident warps per SM (128 and 80 registers a thread) against
  // the default 20.
  list.push_back(native_cuda_variant<U8VecRunner<VecShape<16>>>("cuda-u8-vec-w16", false));
  list.push_back(native_cuda_variant<U8VecRunner<VecShape<24>>>("cuda-u8-vec-w24", false));
  list.push_back(native_cuda_variant<E2eSyncRunner>("cuda-e2e-sync", true));
  list.push_back(native_cuda_variant<E2eStreamsRunner<1>>("cuda-e2e-streams", true));
  list.push_back(native_cuda_variant<E2eStreamsRunner<4>>("cuda-e2e-streams-b4", true));
}

}  // namespace kbench
