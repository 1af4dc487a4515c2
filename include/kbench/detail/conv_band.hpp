#pragma once
// The 3×3 u8 convolution of a band of rows held in registers: the arithmetic that the native
// CUDA kernel and the portable (Kokkos) schedule share, apart from how input rows reach a thread
// (a `RowSource`) and where output rows go (a `RowSink`). A thread owns kBandBytes consecutive
// bytes of an interleaved row (a row is one byte stream, the taps kC bytes apart) and walks down a
// band of output rows: each input row is loaded and turned into floats once and pushed into a
// ring of the three output rows it feeds, while a later row's load is in flight. Bytes become
// floats through the 2^23 mantissa trick, and sums become bytes two at a time on GPUs, equal to
// conv_to_pixel; with Isa::plain every step takes its plain C++ form. In full, with its cost per
// output byte: docs/conv.md#the-band-walk

#include <cmath>
#include <cstdint>

#include "kbench/conv.hpp"
#include "kbench/host_device.hpp"
#include "kbench/isa.hpp"

namespace kbench::conv_band {

constexpr int kTaps = 3;
// Output bytes of a row per thread: one 16-byte load and store.
constexpr int kBandBytes = 16;
// A thread's window of an input row in words: the word before its bytes, its four words and
// the two after them. Window byte q is row byte b0 − kWindowLead + q.
constexpr int kWindowLead = 4;
constexpr int kWindowWords = 7;
// Bands are at most this many rows long (longer ones only lengthen the walk on backends with
// few threads).
constexpr int kMaxBandRows = 48;

struct Taps3x3 {
  float w[kTaps * kTaps];  // row-major, as Mask::weights
};

inline Taps3x3 taps_of(const Mask& mask) {
  Taps3x3 taps{};
  for (int t = 0; t < kTaps * kTaps; ++t) taps.w[t] = mask.weights[t];
  return taps;
}

struct Window {
  std::uint32_t w[kWindowWords];
};

// The window bytes the taps of kC-channel outputs read: one pixel either side of the thread's
// bytes for Border::clamp, the bytes and the two pixels after them for Border::crop (output x
// reads input x .. x + 2).
template <int kC, bool kClamp>
struct WindowSpan {
  static constexpr int first = kClamp ? kWindowLead - kC : kWindowLead;
  static constexpr int count = kBandBytes + (kTaps - 1) * kC;
  static constexpr bool needs_before = kClamp;
  // Whether the taps reach the second word after the thread's bytes.
  static constexpr bool needs_second_after = first + count > (kWindowWords - 1) * 4;
};

// Byte k of `word` as a float: on CUDA devices 0x4B0000bb is 2^23 + bb (a byte permute and an
// add instead of the quarter-rate int→float conversion).
template <Isa kIsa>
KBENCH_HOST_DEVICE float byte_to_float(std::uint32_t word, int k) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned)
    return __uint_as_float(__byte_perm(word, 0x4B00u, 0x5440u | unsigned(k))) - 8388608.f;
#endif
  return float((word >> (8 * k)) & 0xFFu);
}

// Border::clamp at the start of a row: the kC bytes before it repeat its first pixel.
template <int kC, Isa kIsa>
KBENCH_HOST_DEVICE void clamp_window_start(Window& win) {
  unsigned selector = 0;  // result byte k ← byte k − 4 + kC of the first word of the row
  for (int k = 4 - kC; k < 4; ++k) selector |= unsigned(k - 4 + kC) << (4 * k);
  win.w[0] = byte_perm<kIsa>(win.w[1], 0, selector);
}

// The clamped start of a row, for a window whose bytes start at row byte b0 (the end is
// clamped on the window's floats, clamp_row_end, where a row may end at any byte).
template <int kC, bool kClamp, Isa kIsa = Isa::tuned>
KBENCH_HOST_DEVICE void clamp_window(Window& win, int b0) {
  if (kClamp && b0 == 0) clamp_window_start<kC, kIsa>(win);
}

template <int kC, bool kClamp, Isa kIsa>
KBENCH_HOST_DEVICE void window_to_floats(const Window& win,
                                         float (&v)[WindowSpan<kC, kClamp>::count]) {
  using Span = WindowSpan<kC, kClamp>;
  KBENCH_UNROLL
  for (int q = 0; q < Span::count; ++q) {
    v[q] = byte_to_float<kIsa>(win.w[(Span::first + q) / 4], (Span::first + q) % 4);
  }
}

// Border::clamp where a row ends within the taps' reach of a thread whose bytes start
// `bytes_left` bytes before the row's end: the values past the row repeat its last pixel, as
// clamp_coordinate does, whatever the padding after the row holds. Only the threads at a row's
// end take the branch, so the others pay one comparison per row.
template <int kC, bool kClamp>
KBENCH_HOST_DEVICE void clamp_row_end(float (&v)[WindowSpan<kC, kClamp>::count], int bytes_left) {
  using Span = WindowSpan<kC, kClamp>;
  if constexpr (kClamp) {
    // v[q] is window byte Span::first + q, row byte b0 − kWindowLead + Span::first + q.
    const int end = bytes_left + kWindowLead - Span::first;
    if (end < Span::count) {
      KBENCH_UNROLL
      for (int q = kC; q < Span::count; ++q) {
        if (q >= end) v[q] = v[q - kC];
      }
    }
  } else {
    (void)v;
    (void)bytes_left;
  }
}

// a · b + c: one fused instruction on GPUs; on hosts built without FMA a call to fmaf would
// cost far more than the rounding difference is worth. The plain form is a * b + c, which nvcc
// contracts to the same fused instruction (fmad is on by default).
template <Isa kIsa>
KBENCH_HOST_DEVICE float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return fmaf(a, b, c);
#endif
  return a * b + c;
}

// Mask row j over one input row; kStarts begins the sums (one multiply instead of an add to 0).
template <int kC, bool kStarts, Isa kIsa, int kCount>
KBENCH_HOST_DEVICE void add_mask_row(float (&sum)[kBandBytes], const float (&v)[kCount],
                                     const Taps3x3& taps, int j) {
  static_assert(kCount == kBandBytes + (kTaps - 1) * kC, "a window of the band's bytes");
  const float w0 = taps.w[kTaps * j], w1 = taps.w[kTaps * j + 1], w2 = taps.w[kTaps * j + 2];
  KBENCH_UNROLL
  for (int b = 0; b < kBandBytes; ++b) {
    const float first = kStarts ? w0 * v[b] : mul_add<kIsa>(w0, v[b], sum[b]);
    sum[b] = mul_add<kIsa>(w2, v[b + 2 * kC], mul_add<kIsa>(w1, v[b + kC], first));
  }
}

// conv_to_pixel of sums 0 and 1 into bytes 0 and 1, above the low half of `high`.
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t pack_pixel_pair(float sum1, float sum0, std::uint32_t high) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) {
    // ptxas fuses the three into one F2IP.
    int int1;
    int int0;
    std::uint32_t packed;
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(int1) : "f"(sum1));
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(int0) : "f"(sum0));
    asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(packed) : "r"(int1), "r"(int0), "r"(high));
    return packed;
  }
#endif
  return (high << 16) | (std::uint32_t(conv_to_pixel(sum1)) << 8) | conv_to_pixel(sum0);
}

struct Pixels16 {
  std::uint32_t w[kBandBytes / 4];
};

template <Isa kIsa>
KBENCH_HOST_DEVICE Pixels16 pack_pixels(const float (&sum)[kBandBytes]) {
  Pixels16 out;
  KBENCH_UNROLL
  for (int k = 0; k < kBandBytes / 4; ++k) {
    out.w[k] = pack_pixel_pair<kIsa>(sum[4 * k + 1], sum[4 * k],
                                     pack_pixel_pair<kIsa>(sum[4 * k + 3], sum[4 * k + 2], 0));
  }
  return out;
}

// Output rows per band, so that the bands × `segments` work items of an image `out_rows` high
// about fill the `resident` work items the machine runs at once (one wave on a GPU), at most
// kMaxBandRows. Any length works: the walk stops where its band does.
inline int band_rows(int out_rows, long long segments, long long resident) {
  const long long bands = resident / segments > 1 ? resident / segments : 1;
  const long long rows = (out_rows + bands - 1) / bands;
  return int(rows < kMaxBandRows ? rows : kMaxBandRows);
}

// Convolves one thread's band of `outputs` output rows, its bytes starting `bytes_left` bytes
// before the end of a row (any row length; the bytes past it are never stored where they are
// kept). Input row n of the band (n = 0 is the row above the first output for Border::clamp, the
// first output's own for crop) is loaded by
// `source.load(slot, n)` and read back as a Window by `source.window(slot)`; output row t goes to
// `sink.store(t, pixels)`. Every step is taken by all threads that share the band (the native
// source exchanges words between lanes), whatever they store.
template <int kC, bool kClamp, Isa kIsa, class RowSource, class RowSink>
class BandWalk {
 public:
  KBENCH_HOST_DEVICE BandWalk(const RowSource& source, const RowSink& sink, const Taps3x3& taps,
                              int outputs, int bytes_left)
      : source_(source), sink_(sink), taps_(taps), outputs_(outputs), bytes_left_(bytes_left) {}

  KBENCH_HOST_DEVICE void run() {
    for (int n = 0; n < kTaps; ++n) source_.load(slot_[n], n);
    step<0, 1>(0);
    step<1, 2>(1);
    for (int t = 0; t < outputs_; t += kTaps) {
      step<2, kTaps>(t + 2);
      step<0, kTaps>(t + 3);
      step<1, kTaps>(t + 4);
    }
  }

 private:
  static constexpr int kCount = WindowSpan<kC, kClamp>::count;

  // Input row n, in slot kSlot = n mod 3: starts output row n and adds mask row 1 to output
  // n − 1 and mask row 2 to n − 2, which it completes (kMaskRows says how many of these exist).
  template <int kSlot, int kMaskRows>
  KBENCH_HOST_DEVICE void step(int n) {
    if (n - (kMaskRows - 1) >= outputs_) return;  // past the band (uniform across its threads)
    float v[kCount];
    window_to_floats<kC, kClamp, kIsa>(source_.window(slot_[kSlot]), v);
    clamp_row_end<kC, kClamp>(v, bytes_left_);
    // Unconditional, so the slot is not copied: near the band's end this reads up to three rows
    // past it (sources clamp rows into the image), which the next band reads anyway.
    source_.load(slot_[kSlot], n + kTaps);
    add_mask_row<kC, true, kIsa>(acc_[kSlot], v, taps_, 0);
    if (kMaskRows > 1) add_mask_row<kC, false, kIsa>(acc_[(kSlot + 2) % kTaps], v, taps_, 1);
    if (kMaskRows > 2) {
      float(&done)[kBandBytes] = acc_[(kSlot + 1) % kTaps];
      add_mask_row<kC, false, kIsa>(done, v, taps_, 2);
      sink_.store(n - 2, pack_pixels<kIsa>(done));
    }
  }

  const RowSource& source_;
  const RowSink& sink_;
  const Taps3x3& taps_;
  int outputs_;
  int bytes_left_;
  typename RowSource::Slot slot_[kTaps];
  float acc_[kTaps][kBandBytes];
};

// The source's window() clamps its rows' starts (clamp_window) with the same kIsa.
template <int kC, bool kClamp, Isa kIsa = Isa::tuned, class RowSource, class RowSink>
KBENCH_HOST_DEVICE void convolve_band(const RowSource& source, const RowSink& sink,
                                      const Taps3x3& taps, int outputs, int bytes_left) {
  BandWalk<kC, kClamp, kIsa, RowSource, RowSink>(source, sink, taps, outputs, bytes_left).run();
}

}  // namespace kbench::conv_band
