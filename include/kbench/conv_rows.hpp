#pragma once
// The N×N u8 convolution of one output row from N rows of floats, over the vectors of one CPU
// level (kbench/cpu_simd.hpp): the arithmetic of the SIMD CPU variants (issue 13).
//
// Every channel of an interleaved row sees the same weights, so a row is one stream of samples
// and horizontal tap i of output sample s is padded sample s + i·C (C channels). The padded row
// is the input row itself for Border::crop (output x reads input x .. x + N − 1); for
// Border::clamp it is the input row with its first and last pixels repeated r = (N − 1) / 2 times
// before and after it, as clamp_coordinate would. Rows are turned into floats once
// (widen_padded), each sum is N² fused multiply-adds over loads from those rows, in the order
// mask row j, then tap i, and the sums become bytes as conv_to_pixel makes them.
//
// A block is kPackVectors vectors of output samples, summed in registers; the last block of a
// run may read up to a block's worth of floats past the run's taps (the caller's rows have that
// slack) and stores only the run's bytes.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kbench/cpu_simd.hpp"
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

// Floats a row of a run of `count` output samples needs: the taps of every block, with the
// last block whole.
template <class Ops>
constexpr std::size_t row_floats(std::size_t count, int mask_size, int channels) {
  const std::size_t block = block_samples<Ops>();
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

}  // namespace kbench::conv_rows

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
