#pragma once
// Byte vectors for the SIMD CPU variants of sad and sad-pruned, one type per CpuLevel, with the
// packed-SAD arithmetic they share: GenericBytes (16 bytes, the baseline ISA: SSE2 on x86-64,
// plain C++ elsewhere; GenericBytes<Isa::plain> is plain C++ on every target), Avx2Bytes (32)
// and Avx512Bytes (64). Each member function carries its level's target attribute, so one binary
// holds all three; a function that calls them must be compiled for that level too and run only
// where cpu_supports() says the level is there: docs/portability.md#cpu-levels-in-one-binary.
// PlainBytes lists the operations every level's type offers. SadBlock, the full search's register
// block over any of them, serves native sad (per level) and the portable kokkos-simd-rows
// (CompiledBytes, PlainBytes on devices).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_targets.hpp"
#include "kbench/host_device.hpp"
#include "kbench/isa.hpp"

// Not under nvcc (the portable layer's CUDA build): its passes get PlainBytes, which device code
// can call.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#include <immintrin.h>
#define KBENCH_X86_PACKED_SAD 1
#endif

namespace kbench::cpu_simd {

// 16 bytes in plain C++: two 64-bit lanes of 8 little-endian bytes.
// Every level's type offers (all exact integer arithmetic, so each level gives the same sums):
//   load(p)              kBytes bytes from p, any alignment
//   zero()               all bytes 0
//   bit_and(a, b)        bytewise a & b (masking bytes off)
//   add_sad(acc, a, b)   acc's 64-bit lanes, each plus Σ |a_x − b_x| over its own 8 bytes
//                        (psadbw / vpsadbw, then a 64-bit add)
//   lane_sum(acc)        the sum of acc's 64-bit lanes, modulo 2^32
//   in_register(v)       nothing, but v (a Vec or Half) is a register value from here on: a
//                        vector that several packed SADs share is then loaded once, where GCC's
//                        tuning for some CPUs (znver3) would fold the load into each of them
// and on half vectors (Half, kBytes / 2 bytes), for a tail that fits in one, at half the cost
// where the narrower instruction is cheaper:
//   load_half(p), half_and(a, b)
//   add_sad_half(acc, a, b)  acc's lower half of lanes plus the packed SAD of two halves
struct PlainBytes {
  static constexpr CpuLevel level = CpuLevel::generic;
  static constexpr int kBytes = 16;
  static constexpr int kLanes = 2;
  static constexpr int kLaneBytes = 8;
  struct Vec {
    std::uint64_t lane[kLanes];
  };

  KBENCH_HOST_DEVICE static Vec load(const std::uint8_t* p) {
    Vec v;
    std::memcpy(v.lane, p, kBytes);
    return v;
  }
  KBENCH_HOST_DEVICE static Vec zero() { return Vec{}; }
  KBENCH_HOST_DEVICE static Vec bit_and(Vec a, Vec b) {
    return {{a.lane[0] & b.lane[0], a.lane[1] & b.lane[1]}};
  }
  KBENCH_HOST_DEVICE static Vec add_sad(Vec acc, Vec a, Vec b) {
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int shift = 0; shift < 8 * kLaneBytes; shift += 8) {
        const int d = int((a.lane[lane] >> shift) & 0xFFu) - int((b.lane[lane] >> shift) & 0xFFu);
        acc.lane[lane] += std::uint64_t(d < 0 ? -d : d);
      }
    }
    return acc;
  }
  KBENCH_HOST_DEVICE static std::uint32_t lane_sum(Vec acc) {
    return std::uint32_t(acc.lane[0] + acc.lane[1]);
  }

  using Half = std::uint64_t;
  KBENCH_HOST_DEVICE static Half load_half(const std::uint8_t* p) {
    Half h;
    std::memcpy(&h, p, kLaneBytes);
    return h;
  }
  KBENCH_HOST_DEVICE static Half half_and(Half a, Half b) { return a & b; }
  template <class V>
  KBENCH_HOST_DEVICE static void in_register(V&) {}
  KBENCH_HOST_DEVICE static Vec add_sad_half(Vec acc, Half a, Half b) {
    return add_sad(acc, Vec{{a, 0}}, Vec{{b, 0}});
  }
};

#if defined(__SSE2__) && defined(KBENCH_X86_PACKED_SAD)
// 16 bytes in SSE2, part of the x86-64 baseline: psadbw.
struct Sse2Bytes {
  static constexpr CpuLevel level = CpuLevel::generic;
  static constexpr int kBytes = 16;
  using Vec = __m128i;

  static Vec load(const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static Vec zero() { return _mm_setzero_si128(); }
  static Vec bit_and(Vec a, Vec b) { return _mm_and_si128(a, b); }
  static Vec add_sad(Vec acc, Vec a, Vec b) { return _mm_add_epi64(acc, _mm_sad_epu8(a, b)); }
  static std::uint32_t lane_sum(Vec acc) {
    return std::uint32_t(_mm_cvtsi128_si32(_mm_add_epi64(acc, _mm_unpackhi_epi64(acc, acc))));
  }

  using Half = __m128i;  // 8 bytes in the low lane, zeros above
  static Half load_half(const std::uint8_t* p) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  }
  static Half half_and(Half a, Half b) { return _mm_and_si128(a, b); }
  static void in_register(Vec& v) { asm("" : "+x"(v)); }
  static Vec add_sad_half(Vec acc, Half a, Half b) { return add_sad(acc, a, b); }
};
#endif

// The generic level's byte vector: SSE2 where the baseline has it and kIsa is tuned, else plain.
#if defined(__SSE2__) && defined(KBENCH_X86_PACKED_SAD)
template <Isa kIsa = Isa::tuned>
using GenericBytes = std::conditional_t<kIsa == Isa::tuned, Sse2Bytes, PlainBytes>;
#else
template <Isa kIsa = Isa::tuned>
using GenericBytes = PlainBytes;
#endif

#if defined(KBENCH_X86_PACKED_SAD)

struct Avx2Bytes {
  static constexpr CpuLevel level = CpuLevel::avx2;
  static constexpr int kBytes = 32;
  using Vec = __m256i;

  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Vec load(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Vec zero() { return _mm256_setzero_si256(); }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Vec bit_and(Vec a, Vec b) {
    return _mm256_and_si256(a, b);
  }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Vec add_sad(Vec acc, Vec a, Vec b) {
    return _mm256_add_epi64(acc, _mm256_sad_epu8(a, b));
  }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline std::uint32_t lane_sum(Vec acc) {
    const __m128i half =
        _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    return std::uint32_t(_mm_cvtsi128_si32(_mm_add_epi64(half, _mm_unpackhi_epi64(half, half))));
  }

  using Half = __m128i;
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Half load_half(const std::uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Half half_and(Half a, Half b) {
    return _mm_and_si128(a, b);
  }
  template <class V>
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline void in_register(V& v) {
    asm("" : "+x"(v));
  }
  [[gnu::target(KBENCH_TARGET_AVX2)]] static inline Vec add_sad_half(Vec acc, Half a, Half b) {
    return _mm256_add_epi64(acc, _mm256_zextsi128_si256(_mm_sad_epu8(a, b)));
  }
};

struct Avx512Bytes {
  static constexpr CpuLevel level = CpuLevel::avx512;
  static constexpr int kBytes = 64;
  using Vec = __m512i;
  static constexpr __mmask8 kAllLanes4 = 0x0F;  // the four 64-bit lanes of a 256-bit half
  static constexpr __mmask8 kAllLanes8 = 0xFF;  // all eight 64-bit lanes

  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Vec load(const std::uint8_t* p) {
    return _mm512_loadu_si512(p);
  }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Vec zero() { return _mm512_setzero_si512(); }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Vec bit_and(Vec a, Vec b) {
    return _mm512_and_si512(a, b);
  }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Vec add_sad(Vec acc, Vec a, Vec b) {
    return _mm512_add_epi64(acc, _mm512_sad_epu8(a, b));
  }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline std::uint32_t lane_sum(Vec acc) {
    // The zero-masking extracts: GCC 12's unmasked ones start from an "undefined" vector that
    // -Wuninitialized reports.
    const __m256i half = _mm256_add_epi64(_mm512_maskz_extracti64x4_epi64(kAllLanes4, acc, 0),
                                          _mm512_maskz_extracti64x4_epi64(kAllLanes4, acc, 1));
    const __m128i quarter =
        _mm_add_epi64(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
    return std::uint32_t(
        _mm_cvtsi128_si32(_mm_add_epi64(quarter, _mm_unpackhi_epi64(quarter, quarter))));
  }

  using Half = __m256i;
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Half load_half(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Half half_and(Half a, Half b) {
    return _mm256_and_si256(a, b);
  }
  template <class V>
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline void in_register(V& v) {
    asm("" : "+v"(v));
  }
  [[gnu::target(KBENCH_TARGET_AVX512)]] static inline Vec add_sad_half(Vec acc, Half a, Half b) {
    // The zero-masking insert, as in lane_sum (GCC 12's _mm512_zextsi256_si512 warns the same way).
    return _mm512_add_epi64(acc, _mm512_maskz_inserti64x4(kAllLanes8, _mm512_setzero_si512(),
                                                          _mm256_sad_epu8(a, b), 0));
  }
};

#endif  // KBENCH_X86_PACKED_SAD

// The widest level's bytes that the translation unit itself is compiled for (-march,
// KBENCH_HOST_ARCH), for host code without run-time dispatch (the portable layer's host
// schedules); Isa::plain gives PlainBytes on every target.
#if defined(KBENCH_X86_PACKED_SAD) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512DQ__)
template <Isa kIsa>
using CompiledBytes = std::conditional_t<kIsa == Isa::tuned, Avx512Bytes, PlainBytes>;
#elif defined(KBENCH_X86_PACKED_SAD) && defined(__AVX2__)
template <Isa kIsa>
using CompiledBytes = std::conditional_t<kIsa == Isa::tuned, Avx2Bytes, PlainBytes>;
#else
template <Isa kIsa>
using CompiledBytes = GenericBytes<kIsa>;
#endif

// The register block (SadBlock) of map rows × neighbouring positions for each byte vector: most of
// the level's vector registers, 16 at 16 and 32 bytes and 32 at AVX-512.
template <class Bytes>
struct SadBlockShape {
  static constexpr int kRows = 2, kPositions = 4;
};
#if defined(KBENCH_X86_PACKED_SAD)
// 12 accumulators, the query vector and a target vector: 14 of the 16 registers. One query load
// feeds 12 vpsadbw; 1 × 12 measured fastest of the blocks tried on the 2-core EPYC
// (perf/notes/portability.md).
template <>
struct SadBlockShape<Avx2Bytes> {
  static constexpr int kRows = 1, kPositions = 12;
};
template <>
struct SadBlockShape<Avx512Bytes> {
  static constexpr int kRows = 4, kPositions = 4;
};
#endif

// Query bytes per band of query rows: a band and the target window under it fit in a 32 KiB L1
// together.
constexpr int kSadBandBytes = 8 * 1024;

// The pitch of padded rows of `bytes` bytes: they start on cache lines (of `line_bytes`) and span
// an odd number of them, so the rows of a band fall into every L1 set rather than a few (a pitch of
// 24 lines, e.g., would use only 24 of 64 sets).
inline std::size_t odd_lines_pitch(std::size_t bytes, std::size_t line_bytes) {
  const std::size_t lines = (bytes + line_bytes - 1) / line_bytes;
  return (lines | 1) * line_bytes;
}

// The sizes of the padded copies (PaddedSad) for chunks of `chunk_bytes` and register blocks of
// `block_positions` columns, and the query rows per band (kSadBandBytes).
struct PaddedSadSizes {
  std::size_t target_pitch;  // a block's last column reads block_positions − 1 + a chunk past the
                             // map's edge
  int query_pitch;           // the query's width rounded up to whole chunks
  int whole_chunk_bytes;     // bytes of a query row in chunks that need no mask
  int band_rows;

  PaddedSadSizes(int target_width, int query_width, int chunk_bytes, int block_positions,
                 std::size_t line_bytes)
      : target_pitch(
            odd_lines_pitch(std::size_t(target_width) + block_positions + chunk_bytes, line_bytes)),
        query_pitch((query_width + chunk_bytes - 1) / chunk_bytes * chunk_bytes),
        whole_chunk_bytes(query_width / chunk_bytes * chunk_bytes),
        band_rows(std::max(1, kSadBandBytes / query_pitch)) {}
};

// The padded copies a register block of packed SADs reads: zeros around target and query, so a
// block may read past the map's edge and a chunk (Bytes::kBytes) past the query's width.
struct PaddedSad {
  const std::uint8_t* target;
  std::size_t target_pitch;  // bytes per padded target row
  const std::uint8_t* query;
  int query_width;
  int query_pitch;                // the query's width rounded up to whole chunks
  int whole_chunk_bytes;          // bytes of a query row in chunks that need no mask
  const std::uint8_t* tail_mask;  // one chunk: 0xFF over the tail's query bytes, 0 past them
};

// A level's caller inlines a block whole (gnu::flatten, or a translation unit built for the level),
// so the vectors its calls return never cross a function boundary: GCC's note on their ABI does
// not apply.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// A block of kRows × kPositions map positions (rows i0.., columns j0..) keeping one accumulator
// vector per position. Target row y serves the block's rows ii with query row k = y − i0 − ii: one
// load of target bytes at column j0 + p + x feeds kRows packed SADs (one per query row), one load
// of query bytes feeds kPositions.
template <class Bytes, int kRows, int kPositions>
struct SadBlock {
  using Vec = typename Bytes::Vec;

  // How add_chunk reads a chunk: whole (every byte a query byte), or the query row's tail, with
  // the target bytes past the query's width masked off, in a whole or (when the tail fits) half
  // vector.
  enum class Chunk { whole, tail, half_tail };

  // A whole vector, or a half one (Bytes::Half) when kHalf, loaded through a reference: a function
  // returning it draws GCC's ABI note at the end of the file, where the pragma above no longer
  // holds.
  template <bool kHalf, class Unused = void>
  struct PartOf {
    using type = Vec;
  };
  template <class Unused>
  struct PartOf<true, Unused> {
    using type = typename Bytes::Half;
  };
  template <bool kHalf>
  KBENCH_HOST_DEVICE static void load_part(const std::uint8_t* p,
                                           typename PartOf<kHalf>::type& out) {
    if constexpr (kHalf) {
      out = Bytes::load_half(p);
    } else {
      out = Bytes::load(p);
    }
  }

  // acc[ii][p] += the packed SAD of the query bytes x.. of row (k − ii) against the target bytes
  // at column p + x.. of `target`, for ii in [first, last] (every ii unless kEdge).
  template <bool kEdge, Chunk kChunk>
  KBENCH_HOST_DEVICE static void add_chunk(const PaddedSad& l, const std::uint8_t* target, int k,
                                           int first, int last, int x,
                                           Vec (&acc)[kRows][kPositions]) {
    constexpr bool kHalf = kChunk == Chunk::half_tail;
    using Part = typename PartOf<kHalf>::type;
    Part query[kRows];
    KBENCH_UNROLL
    for (int ii = 0; ii < kRows; ++ii) {
      query[ii] = Part{};
      if (!kEdge || (ii >= first && ii <= last)) {
        load_part<kHalf>(l.query + std::size_t(k - ii) * l.query_pitch + x, query[ii]);
      }
    }
    Part mask{};
    if (kChunk != Chunk::whole) load_part<kHalf>(l.tail_mask, mask);
    KBENCH_UNROLL
    for (int p = 0; p < kPositions; ++p) {
      Part t;
      load_part<kHalf>(target + p + x, t);
      if constexpr (kRows > 1) Bytes::in_register(t);  // shared by kRows packed SADs
      if constexpr (kChunk == Chunk::tail) t = Bytes::bit_and(t, mask);
      if constexpr (kHalf) t = Bytes::half_and(t, mask);
      KBENCH_UNROLL
      for (int ii = 0; ii < kRows; ++ii) {
        if (kEdge && (ii < first || ii > last)) continue;
        if constexpr (kHalf) {
          acc[ii][p] = Bytes::add_sad_half(acc[ii][p], query[ii], t);
        } else {
          acc[ii][p] = Bytes::add_sad(acc[ii][p], query[ii], t);
        }
      }
    }
  }

  // One target row's contribution to the block (see add_chunk): whole chunks, then the tail.
  template <bool kEdge>
  KBENCH_HOST_DEVICE static void add_target_row(const PaddedSad& l, const std::uint8_t* target,
                                                int k, int first, int last,
                                                Vec (&acc)[kRows][kPositions]) {
    const int whole = l.whole_chunk_bytes;
    for (int x = 0; x < whole; x += Bytes::kBytes) {
      add_chunk<kEdge, Chunk::whole>(l, target, k, first, last, x, acc);
    }
    const int tail = l.query_width - whole;
    if (tail > Bytes::kBytes / 2) {
      add_chunk<kEdge, Chunk::tail>(l, target, k, first, last, whole, acc);
    } else if (tail > 0) {
      add_chunk<kEdge, Chunk::half_tail>(l, target, k, first, last, whole, acc);
    }
  }

  // sums[ii][p] = Σ over query rows [k_begin, k_end) of the SAD at map position (i0 + ii, j0 + p).
  KBENCH_HOST_DEVICE static void sum(const PaddedSad& l, int i0, int j0, int k_begin, int k_end,
                                     std::uint32_t (&sums)[kRows][kPositions]) {
    Vec acc[kRows][kPositions];
    KBENCH_UNROLL
    for (int ii = 0; ii < kRows; ++ii) {
      KBENCH_UNROLL
      for (int p = 0; p < kPositions; ++p) acc[ii][p] = Bytes::zero();
    }
    // Target rows i0 + k_begin .. i0 + kRows − 1 + k_end − 1; the first and last kRows − 1 of
    // them serve only some of the block's rows.
    for (int y = i0 + k_begin; y < i0 + kRows - 1 + k_end; ++y) {
      const int k = y - i0;  // the query row of block row 0
      const int first = k - (k_end - 1) > 0 ? k - (k_end - 1) : 0;
      const int last = k - k_begin < kRows - 1 ? k - k_begin : kRows - 1;
      const std::uint8_t* target = l.target + std::size_t(y) * l.target_pitch + j0;
      if (first == 0 && last == kRows - 1) {
        add_target_row<false>(l, target, k, first, last, acc);
      } else {
        add_target_row<true>(l, target, k, first, last, acc);
      }
    }
    KBENCH_UNROLL
    for (int ii = 0; ii < kRows; ++ii) {
      KBENCH_UNROLL
      for (int p = 0; p < kPositions; ++p) sums[ii][p] = Bytes::lane_sum(acc[ii][p]);
    }
  }
};

#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC diagnostic pop
#endif

}  // namespace kbench::cpu_simd
