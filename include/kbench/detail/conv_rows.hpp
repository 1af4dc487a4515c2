#pragma once
// The N×N u8 convolution of one output row from N rows of floats, over the vectors of one CPU
// level (kbench/detail/cpu_vectors.hpp), and the walk of a band of output rows built on it: the
// SIMD CPU variants and the portable rows schedule. A row is one stream of samples (every channel
// sees the same weights), so horizontal tap i of output sample s is padded sample s + i·C; rows
// are turned into floats once, each sum is N² multiply-adds in the order mask row j, then tap i,
// and the sums become bytes as conv_to_pixel makes them. The last block of a run may read up to a
// block's worth of floats past the run's taps (the caller's rows have that slack) and stores only
// the run's bytes. The padding per border, and the blocks: docs/conv.md#the-row-walk-on-cpus

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kbench/conv.hpp"
#include "kbench/detail/cpu_vectors.hpp"
#include "kbench/host_device.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kbench::conv_rows {

// Output samples one block of Ops computes.
template <class Ops>
constexpr int block_samples() {
  return Ops::kLanes * simd::kPackVectors;
}

// Floats a row of a run of `count` output samples needs, in blocks of `block` samples: the taps
// of every block, with the last block whole.
constexpr std::size_t row_floats(std::size_t count, std::size_t block, int mask_size,
                                 int channels) {
  return (count + block - 1) / block * block + std::size_t(mask_size - 1) * channels;
}

// dst[k] = padded sample begin + k, k < end − begin, of an input row of `row_samples` samples
// and `channels` channels, padded by `pad` samples (r · C for Border::clamp, 0 for crop) on
// each side.
template <class Ops>
void widen_padded(const std::uint8_t* row, std::ptrdiff_t row_samples, int channels,
                  std::ptrdiff_t pad, std::ptrdiff_t begin, std::ptrdiff_t end, float* dst) {
  std::ptrdiff_t p = begin;
  // pad and row_samples are multiples of C, so padded sample p is channel p % C.
  for (; p < end && p < pad; ++p) dst[p - begin] = row[p % channels];
  const std::ptrdiff_t inside_end = end < pad + row_samples ? end : pad + row_samples;
  for (; p + Ops::kLanes <= inside_end; p += Ops::kLanes) {
    Ops::store(dst + (p - begin), Ops::widen(row + (p - pad)));
  }
  for (; p < inside_end; ++p) dst[p - begin] = row[p - pad];
  const std::uint8_t* last_pixel = row + row_samples - channels;
  for (; p < end; ++p) dst[p - begin] = last_pixel[(p - pad) % channels];
}

// The block's pixels; only the first `left` when the run ends inside the block.
template <class Ops>
void store_block(const typename Ops::Floats (&acc)[simd::kPackVectors], std::size_t left,
                 std::uint8_t* out) {
  constexpr std::size_t kBlock = block_samples<Ops>();
  if (left >= kBlock) {
    Ops::pack_pixels(acc, out);
    return;
  }
  std::uint8_t bytes[kBlock];
  Ops::pack_pixels(acc, bytes);
  std::memcpy(out, bytes, left);
}

// out[s] for s < count: the pixel of Σ_j Σ_i weights[j·n + i] · rows[j][s + i·channels]. kN > 0
// fixes n at compile time, so the taps unroll and their weights stay in registers.
template <class Ops, int kN>
void convolve_row(const float* const* rows, const float* weights, int n, int channels,
                  std::size_t count, std::uint8_t* out) {
  using Floats = typename Ops::Floats;
  constexpr int kVectors = simd::kPackVectors;
  constexpr int kLanes = Ops::kLanes;
  constexpr std::size_t kBlock = block_samples<Ops>();
  const int size = kN > 0 ? kN : n;
  if constexpr (kN > 0) {
    // Copies, so that the byte stores (which may alias anything) leave them in registers.
    Floats w[kN * kN];
    const float* row[kN];
    KBENCH_UNROLL
    for (int t = 0; t < kN * kN; ++t) w[t] = Ops::broadcast(weights[t]);
    KBENCH_UNROLL
    for (int j = 0; j < kN; ++j) row[j] = rows[j];
    for (std::size_t s = 0; s < count; s += kBlock) {
      Floats acc[kVectors];
      KBENCH_UNROLL
      for (int v = 0; v < kVectors; ++v) acc[v] = Ops::zero();
      KBENCH_UNROLL
      for (int j = 0; j < kN; ++j) {
        KBENCH_UNROLL
        for (int i = 0; i < kN; ++i) {
          const float* taps = row[j] + s + std::ptrdiff_t(i) * channels;
          KBENCH_UNROLL
          for (int v = 0; v < kVectors; ++v) {
            acc[v] = Ops::mul_add(w[j * kN + i], Ops::load(taps + v * kLanes), acc[v]);
          }
        }
      }
      store_block<Ops>(acc, count - s, out + s);
    }
  } else {
    for (std::size_t s = 0; s < count; s += kBlock) {
      Floats acc[kVectors];
      for (int v = 0; v < kVectors; ++v) acc[v] = Ops::zero();
      for (int j = 0; j < size; ++j) {
        const float* taps = rows[j] + s;
        for (int i = 0; i < size; ++i, taps += channels) {
          const Floats w = Ops::broadcast(weights[j * size + i]);
          KBENCH_UNROLL
          for (int v = 0; v < kVectors; ++v) {
            acc[v] = Ops::mul_add(w, Ops::load(taps + v * kLanes), acc[v]);
          }
        }
      }
      store_block<Ops>(acc, count - s, out + s);
    }
  }
}

// ---- The band walk. ----
//
// A work item (a thread of the native variants, a Kokkos work item of the portable one) walks a
// band of output rows, strip by strip. A strip is a run of a row's samples whose N rows of floats
// stay in the core's cache while the walk goes down the band: each input row's strip is turned
// into floats once, used by the N output rows it feeds, and left behind.

// Bytes of floats a strip's N rows may take: about half the L2 cache of one core, so a 3×3 mask
// takes whole rows up to 4K RGB. (Strips of L1 size measure slower: walking down the rows of a
// narrow strip, the hardware prefetchers restart on every row.)
constexpr std::size_t kStripRowsBytes = 256 * 1024;

// What a band walk reads and writes.
struct BandJob {
  const std::uint8_t* in;
  std::size_t in_pitch;  // bytes from one input row to the next
  std::uint8_t* out;
  std::size_t out_pitch;
  const float* weights;
  int mask_size, channels, in_height, shift;
  std::ptrdiff_t in_row_samples;  // input samples per row
  std::size_t out_row_samples;    // output samples per row
  std::ptrdiff_t pad;             // padded samples before and after an input row
};

// The row helpers of one level (Ops), the mask size fixed at compile time where kN > 0: what a
// band walk calls.
template <class Ops, int kN>
struct LevelRows {
  std::size_t block() const { return block_samples<Ops>(); }
  void widen(const BandJob& job, const std::uint8_t* row, std::ptrdiff_t begin, std::ptrdiff_t end,
             float* dst) const {
    widen_padded<Ops>(row, job.in_row_samples, job.channels, job.pad, begin, end, dst);
  }
  void convolve(const BandJob& job, const float* const* rows, std::size_t count,
                std::uint8_t* out) const {
    convolve_row<Ops, kN>(rows, job.weights, job.mask_size, job.channels, count, out);
  }
};

// Output samples per strip: a whole number of blocks, as many as kStripRowsBytes allows.
inline std::size_t strip_samples(const BandJob& job, std::size_t block) {
  const std::size_t fit = kStripRowsBytes / (sizeof(float) * std::size_t(job.mask_size));
  const std::size_t blocks = fit / block > 1 ? fit / block : 1;
  return blocks * block < job.out_row_samples ? blocks * block : job.out_row_samples;
}

// Output rows [y0, y1) through the row helpers `helpers` (LevelRows or RowKernels). Padded input
// row v (row v of the unclamped row numbering, v >= −r) lives in ring slot (v + r) mod N while
// the N output rows that read it are computed.
template <class Rows>
void convolve_band(const BandJob& job, int y0, int y1, const Rows& helpers) {
  const int n = job.mask_size, r = n / 2;
  const std::size_t strip = strip_samples(job, helpers.block());
  const std::size_t stride = row_floats(strip, helpers.block(), n, job.channels);
  // Zeroed: the floats past a strip's last taps that a last block reads are finite.
  std::vector<float> ring(stride * std::size_t(n));
  std::vector<const float*> rows(std::size_t(n), nullptr);
  const auto slot = [&](int v) { return ring.data() + std::size_t((v + r) % n) * stride; };
  for (std::size_t s0 = 0; s0 < job.out_row_samples; s0 += strip) {
    const std::size_t count = strip < job.out_row_samples - s0 ? strip : job.out_row_samples - s0;
    const std::ptrdiff_t end = std::ptrdiff_t(s0 + count) + std::ptrdiff_t(n - 1) * job.channels;
    const auto load = [&](int v) {
      const std::uint8_t* row =
          job.in + std::size_t(clamp_coordinate(v, job.in_height)) * job.in_pitch;
      helpers.widen(job, row, std::ptrdiff_t(s0), end, slot(v));
    };
    const int first = y0 + job.shift - r;  // the first input row of the band
    for (int v = first; v < first + n - 1; ++v) load(v);
    for (int y = y0; y < y1; ++y) {
      load(y + job.shift + r);
      for (int j = 0; j < n; ++j) rows[j] = slot(y + job.shift - r + j);
      helpers.convolve(job, rows.data(), count, job.out + std::size_t(y) * job.out_pitch + s0);
    }
  }
}

// The row helpers of the highest level this CPU has (cpu_level()), for band walks in code that
// carries no target attribute (a Kokkos kernel): each row is one call through a pointer into
// code compiled for the level.
struct RowKernels {
  std::size_t block_samples;
  void (*widen_row)(const BandJob&, const std::uint8_t*, std::ptrdiff_t, std::ptrdiff_t, float*);
  void (*convolve_row)(const BandJob&, const float* const*, std::size_t, std::uint8_t*);

  std::size_t block() const { return block_samples; }
  void widen(const BandJob& job, const std::uint8_t* row, std::ptrdiff_t begin, std::ptrdiff_t end,
             float* dst) const {
    widen_row(job, row, begin, end, dst);
  }
  void convolve(const BandJob& job, const float* const* rows, std::size_t count,
                std::uint8_t* out) const {
    convolve_row(job, rows, count, out);
  }
};

// The helpers for masks of `mask_size` (3 and 5 unrolled).
RowKernels row_kernels(int mask_size);

// The plain C++ form of a level, one float at a time, for the `-plain` portable variant: the same
// walk and the same sums, with no target-specific instruction.
struct PlainOps {
  static constexpr int kLanes = 1;
  using Floats = float;

  static Floats zero() { return 0.f; }
  static Floats broadcast(float v) { return v; }
  static Floats load(const float* p) { return *p; }
  static void store(float* p, Floats v) { *p = v; }
  static Floats mul_add(Floats a, Floats b, Floats c) { return a * b + c; }
  static Floats widen(const std::uint8_t* p) { return float(*p); }
  static void pack_pixels(const Floats (&sums)[simd::kPackVectors], std::uint8_t* out) {
    for (int k = 0; k < simd::kPackVectors; ++k) out[k] = conv_to_pixel(sums[k]);
  }
};

}  // namespace kbench::conv_rows

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
