#pragma once
// Float and byte vectors of one x86 level, for the host kernels that are written once and
// compiled for every level (conv, lbp, cemd): simd::Generic (GCC vector extensions at the
// baseline ISA, any CPU), simd::Avx2 and simd::Avx512 (intrinsics, x86 only). A kernel is a
// template over the level's struct (`Ops`), reached through an entry function with the level's
// KBENCH_CPU_TARGET_* attribute and gnu::flatten, which must run only where cpu_supports(level)
// holds; why so: docs/portability.md#cpu-levels-in-one-binary. Generic lists what a level offers.

#include <cstdint>
#include <cstring>

#include "kbench/detail/cpu_targets.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(__CUDACC__)
#define KBENCH_X86_SIMD 1
#include <immintrin.h>
#else
#define KBENCH_X86_SIMD 0
#endif

// A kernel is inlined whole into its level's entry function; the calls between these helpers
// never cross a function boundary, so the ABI of wide vectors at one does not matter.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 takes the self-initialised _mm512_undefined_* of its AVX-512 intrinsics for unset values.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace kbench::simd {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "Generic::pack_pixels takes the low byte of a word as its first");

// Sum vectors that pack_pixels turns into bytes at once (a whole number of byte vectors).
constexpr int kPackVectors = 4;

// The largest float conv_to_pixel keeps, and the shift that leaves a float's rounded integer in
// its low mantissa bits (conv_to_pixel's 2^23).
constexpr float kPixelMax = 255.f;
constexpr float kRoundingShift = 8388608.f;

template <class T, int kCount>
struct VectorOf {
  typedef T type __attribute__((vector_size(sizeof(T) * kCount)));
};
template <class T, int kCount>
using Vector = typename VectorOf<T, kCount>::type;

// The compiler's baseline: 16-byte vectors (SSE2 on x86-64, NEON or scalar code elsewhere).
// What each level offers:
//   kLanes, Floats            a vector of kLanes floats
//   zero, broadcast, load, store, mul_add(a, b, c) = a · b + c (fused where the level has FMA)
//   widen(p)                  kLanes bytes at p as floats
//   pack_pixels(sums, out)    kPackVectors vectors of sums → kPackVectors · kLanes bytes at out,
//                             each conv_to_pixel(sum)
//   kBytes, Bytes             a vector of kBytes bytes
//   load_bytes, store_bytes, splat_byte
//   or_bit_if_ge(code, n, c, bit)  code | (n >= c ? bit : 0) in every byte, unsigned (the LBP
//                             comparison, lbp_bit_set)
struct Generic {
  static constexpr int kLanes = 4;
  static constexpr int kBytes = 16;
  using Floats = Vector<float, kLanes>;
  using Bytes = Vector<std::uint8_t, kBytes>;

  static Floats zero() { return Floats{}; }
  // Every lane set, not Floats{} + v: without -fno-signed-zeros that addition stays an add.
  static Floats broadcast(float v) {
    static_assert(kLanes == 4, "one initialiser per lane");
    return Floats{v, v, v, v};
  }
  static Floats load(const float* p) {
    Floats v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, Floats v) { std::memcpy(p, &v, sizeof v); }
  static Floats mul_add(Floats a, Floats b, Floats c) { return a * b + c; }
  static Floats widen(const std::uint8_t* p) {
    Vector<std::uint8_t, kLanes> bytes;
    std::memcpy(&bytes, p, sizeof bytes);
    return __builtin_convertvector(bytes, Floats);
  }

  static void pack_pixels(const Floats (&sums)[kPackVectors], std::uint8_t* out) {
    using Words = Vector<std::uint16_t, 2 * kLanes>;
    using Ints = Vector<std::int32_t, kLanes>;
    Words words[kPackVectors];
    for (int k = 0; k < kPackVectors; ++k) {
      // conv_to_pixel: clamp (a NaN becomes 0), then the rounded value is the low byte.
      Floats v = sums[k] > 0.f ? sums[k] : 0.f;
      v = v < kPixelMax ? v : kPixelMax;
      v += kRoundingShift;
      words[k] = Words((Ints)v & 0xFF);
    }
    // The low half of every word, then the low byte of every half.
    constexpr Words kEvenWords = {0, 2, 4, 6, 8, 10, 12, 14};
    constexpr Bytes kEvenBytes = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const Words low = __builtin_shuffle(words[0], words[1], kEvenWords);
    const Words high = __builtin_shuffle(words[2], words[3], kEvenWords);
    const Bytes bytes = __builtin_shuffle(Bytes(low), Bytes(high), kEvenBytes);
    std::memcpy(out, &bytes, sizeof bytes);
  }

  static Bytes load_bytes(const std::uint8_t* p) {
    Bytes v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store_bytes(std::uint8_t* p, Bytes v) { std::memcpy(p, &v, sizeof v); }
  static Bytes splat_byte(std::uint8_t v) { return Bytes{} + v; }
  static Bytes or_bit_if_ge(Bytes code, Bytes n, Bytes c, Bytes bit) {
    return code | (Bytes(n >= c) & bit);
  }
};

#if KBENCH_X86_SIMD

// Dword k of the result is dword kPackOrder[k] of two (AVX2) or four (AVX-512) 128-bit lanes
// packed by packus_epi32 then packus_epi16: lane l holds 4 bytes of each of the 4 vectors, in
// vector order, so the permutation gathers each vector's dwords lane by lane.
struct Avx2 {
  static constexpr int kLanes = 8;
  static constexpr int kBytes = 32;
  using Floats = __m256;
  using Bytes = __m256i;

  [[KBENCH_CPU_TARGET_AVX2]] static Floats zero() { return _mm256_setzero_ps(); }
  [[KBENCH_CPU_TARGET_AVX2]] static Floats broadcast(float v) { return _mm256_set1_ps(v); }
  [[KBENCH_CPU_TARGET_AVX2]] static Floats load(const float* p) { return _mm256_loadu_ps(p); }
  [[KBENCH_CPU_TARGET_AVX2]] static void store(float* p, Floats v) { _mm256_storeu_ps(p, v); }
  [[KBENCH_CPU_TARGET_AVX2]] static Floats mul_add(Floats a, Floats b, Floats c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  [[KBENCH_CPU_TARGET_AVX2]] static Floats widen(const std::uint8_t* p) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  }

  // cvtps_epi32 rounds to nearest even (the default MXCSR mode) as conv_to_pixel does; the
  // unsigned saturation of the packs clamps at 0 (a NaN converts to INT_MIN, so it becomes 0 too,
  // min passing its second operand on) and min clamps at 255 before the conversion could
  // overflow.
  [[KBENCH_CPU_TARGET_AVX2]] static void pack_pixels(const Floats (&sums)[kPackVectors],
                                                     std::uint8_t* out) {
    const Floats max = _mm256_set1_ps(kPixelMax);
    __m256i ints[kPackVectors];
    for (int k = 0; k < kPackVectors; ++k)
      ints[k] = _mm256_cvtps_epi32(_mm256_min_ps(max, sums[k]));
    const __m256i low = _mm256_packus_epi32(ints[0], ints[1]);
    const __m256i high = _mm256_packus_epi32(ints[2], ints[3]);
    const __m256i lanes = _mm256_packus_epi16(low, high);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permutevar8x32_epi32(lanes, order));
  }

  [[KBENCH_CPU_TARGET_AVX2]] static Bytes load_bytes(const std::uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  [[KBENCH_CPU_TARGET_AVX2]] static void store_bytes(std::uint8_t* p, Bytes v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  [[KBENCH_CPU_TARGET_AVX2]] static Bytes splat_byte(std::uint8_t v) {
    return _mm256_set1_epi8(char(v));
  }
  // n >= c exactly where max(n, c) == n.
  [[KBENCH_CPU_TARGET_AVX2]] static Bytes or_bit_if_ge(Bytes code, Bytes n, Bytes c, Bytes bit) {
    const __m256i ge = _mm256_cmpeq_epi8(_mm256_max_epu8(n, c), n);
    return _mm256_or_si256(code, _mm256_and_si256(ge, bit));
  }
};

struct Avx512 {
  static constexpr int kLanes = 16;
  static constexpr int kBytes = 64;
  using Floats = __m512;
  using Bytes = __m512i;

  [[KBENCH_CPU_TARGET_AVX512]] static Floats zero() { return _mm512_setzero_ps(); }
  [[KBENCH_CPU_TARGET_AVX512]] static Floats broadcast(float v) { return _mm512_set1_ps(v); }
  [[KBENCH_CPU_TARGET_AVX512]] static Floats load(const float* p) { return _mm512_loadu_ps(p); }
  [[KBENCH_CPU_TARGET_AVX512]] static void store(float* p, Floats v) { _mm512_storeu_ps(p, v); }
  [[KBENCH_CPU_TARGET_AVX512]] static Floats mul_add(Floats a, Floats b, Floats c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  [[KBENCH_CPU_TARGET_AVX512]] static Floats widen(const std::uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
  }

  // As Avx2::pack_pixels, over four 128-bit lanes.
  [[KBENCH_CPU_TARGET_AVX512]] static void pack_pixels(const Floats (&sums)[kPackVectors],
                                                       std::uint8_t* out) {
    const Floats max = _mm512_set1_ps(kPixelMax);
    __m512i ints[kPackVectors];
    for (int k = 0; k < kPackVectors; ++k)
      ints[k] = _mm512_cvtps_epi32(_mm512_min_ps(max, sums[k]));
    const __m512i low = _mm512_packus_epi32(ints[0], ints[1]);
    const __m512i high = _mm512_packus_epi32(ints[2], ints[3]);
    const __m512i lanes = _mm512_packus_epi16(low, high);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512(out, _mm512_permutexvar_epi32(order, lanes));
  }

  [[KBENCH_CPU_TARGET_AVX512]] static Bytes load_bytes(const std::uint8_t* p) {
    return _mm512_loadu_si512(p);
  }
  [[KBENCH_CPU_TARGET_AVX512]] static void store_bytes(std::uint8_t* p, Bytes v) {
    _mm512_storeu_si512(p, v);
  }
  [[KBENCH_CPU_TARGET_AVX512]] static Bytes splat_byte(std::uint8_t v) {
    return _mm512_set1_epi8(char(v));
  }
  // The comparison gives a mask register; the masked add sets the bit where it holds (code has
  // it clear: each neighbour owns its own bit).
  [[KBENCH_CPU_TARGET_AVX512]] static Bytes or_bit_if_ge(Bytes code, Bytes n, Bytes c, Bytes bit) {
    return _mm512_mask_add_epi8(code, _mm512_cmpge_epu8_mask(n, c), code, bit);
  }
};

#endif  // KBENCH_X86_SIMD

// The widest level the translation unit itself is compiled for (-march, KBENCH_HOST_ARCH): what
// host code without run-time dispatch (the portable layer's host schedules) may call. Generic
// at the baseline ISA.
#if KBENCH_X86_SIMD && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
using Compiled = Avx512;
#elif KBENCH_X86_SIMD && defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__)
using Compiled = Avx2;
#else
using Compiled = Generic;
#endif

}  // namespace kbench::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
