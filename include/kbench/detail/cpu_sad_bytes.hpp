#pragma once
// Byte vectors for the SIMD CPU variants of sad and sad-pruned, one type per CpuLevel, with the
// packed-SAD arithmetic they share: GenericBytes (16 bytes, the baseline ISA: SSE2 on x86-64,
// plain C++ elsewhere; GenericBytes<Isa::plain> is plain C++ on every target), Avx2Bytes (32)
// and Avx512Bytes (64). Each member function carries its level's target attribute, so one binary
// holds all three; a function that calls them must be compiled for that level too and run only
// where cpu_supports() says the level is there: docs/portability.md#cpu-levels-in-one-binary.
// PlainBytes lists the operations every level's type offers.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_targets.hpp"
#include "kbench/isa.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
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

  static Vec load(const std::uint8_t* p) {
    Vec v;
    std::memcpy(v.lane, p, kBytes);
    return v;
  }
  static Vec zero() { return Vec{}; }
  static Vec bit_and(Vec a, Vec b) { return {{a.lane[0] & b.lane[0], a.lane[1] & b.lane[1]}}; }
  static Vec add_sad(Vec acc, Vec a, Vec b) {
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int shift = 0; shift < 8 * kLaneBytes; shift += 8) {
        const int d = int((a.lane[lane] >> shift) & 0xFFu) - int((b.lane[lane] >> shift) & 0xFFu);
        acc.lane[lane] += std::uint64_t(d < 0 ? -d : d);
      }
    }
    return acc;
  }
  static std::uint32_t lane_sum(Vec acc) { return std::uint32_t(acc.lane[0] + acc.lane[1]); }

  using Half = std::uint64_t;
  static Half load_half(const std::uint8_t* p) {
    Half h;
    std::memcpy(&h, p, kLaneBytes);
    return h;
  }
  static Half half_and(Half a, Half b) { return a & b; }
  static Vec add_sad_half(Vec acc, Half a, Half b) {
    return add_sad(acc, Vec{{a, 0}}, Vec{{b, 0}});
  }
};

#if defined(__SSE2__)
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
  static Vec add_sad_half(Vec acc, Half a, Half b) { return add_sad(acc, a, b); }
};
#endif

// The generic level's byte vector: SSE2 where the baseline has it and kIsa is tuned, else plain.
#if defined(__SSE2__)
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

}  // namespace kbench::cpu_simd
