// cpu-ceiling: the host's ceilings for the CPU variants' fraction-of-ceiling figures (issue 13),
// on every OpenMP thread, as JSON lines on stdout:
// - copy_bandwidth: STREAM-like copy of buffers far larger than the caches, each thread copying
//   the pages it touched first; read + written bytes per second (GB/s).
// - packed_sad: byte-SADs per second of psadbw / vpsadbw at each vector width this CPU has
//   (instruction: psadbw-xmm, vpsadbw-ymm, vpsadbw-zmm), each instruction feeding the next of
//   its own chain through registers, enough chains to hide the latency; the highest is the
//   ceiling that perf/report.py divides sad's throughput by.
// - packed_sad_accumulate: the same with the kernels' shape, a packed SAD of bytes loaded from
//   L1 at unaligned offsets plus a 64-bit add into each accumulator (the widest width only).
// - multi_sad: mpsadbw (AVX2, 8 shifted 4-byte SADs per 128-bit lane) and vdbpsadbw (AVX-512BW,
//   4 per 64-bit lane), which share target bytes between neighbouring positions, for comparison.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_sad_bytes.hpp"
#include "kbench/system_info.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kCopyBytesPerThread = 64u << 20;  // far past any L3 slice
constexpr int kCopyRepeats = 10;
constexpr int kChains = 12;  // independent chains per thread: latency 3-4 × 2-3 ports
constexpr long kSadIterations = 20'000'000;
constexpr int kSadRepeats = 3;
constexpr int kL1Bytes = 4096;  // the accumulate form's data, well inside L1
constexpr int kAccumulators = 8;

// The best of `repeats` timed runs of `body` on every thread at once, in seconds.
template <class Body>
double best_parallel_seconds(int repeats, Body body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    double seconds = 0;
#pragma omp parallel
    {
#pragma omp barrier
      const Clock::time_point start = Clock::now();
      body(omp_get_thread_num());
#pragma omp barrier
#pragma omp master
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
    best = std::min(best, seconds);
  }
  return best;
}

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

void print_line(const char* ceiling, const char* instruction, double value, const char* unit) {
  std::printf(
      "{\"ceiling\": \"%s\", \"instruction\": \"%s\", \"value\": %.4g, \"unit\": \"%s\", "
      "\"threads\": %d, \"cpu\": \"%s\", \"level\": \"%s\", \"date\": \"%s\", \"commit\": "
      "\"%s\"}\n",
      ceiling, instruction, value, unit, omp_get_max_threads(),
      json_escape(kbench::cpu_name()).c_str(), kbench::to_string(kbench::cpu_level()),
      kbench::utc_timestamp().c_str(), kbench::build_commit());
  std::fflush(stdout);
}

void copy_bandwidth() {
  const int threads = omp_get_max_threads();
  const std::size_t bytes = kCopyBytesPerThread * std::size_t(threads);
  // Untouched until the threads' first writes below place each page.
  std::unique_ptr<char[]> source(new char[bytes]), destination(new char[bytes]);
  const std::size_t share = bytes / threads;
#pragma omp parallel
  {
    const std::size_t begin = share * std::size_t(omp_get_thread_num());
    std::memset(source.get() + begin, 1, share);
    std::memset(destination.get() + begin, 0, share);
  }
  const double seconds = best_parallel_seconds(kCopyRepeats, [&](int thread) {
    const std::size_t begin = share * std::size_t(thread);
    std::memcpy(destination.get() + begin, source.get() + begin, share);
  });
  print_line("copy_bandwidth", "memcpy", 2.0 * double(bytes) / seconds / 1e9, "GB/s");
}

// Chains of one packed-SAD instruction `Sad(chain, other)` per thread; returns byte-SADs / s.
// Written once per level (the target attribute cannot vary with a template argument).
#define KBENCH_SAD_CHAINS(NAME, TARGET, VEC, SET1, SAD, EXTRACT)                                  \
  [[gnu::target(TARGET)]] std::uint64_t NAME(long iterations, int seed) {                         \
    VEC chain[kChains];                                                                           \
    const VEC other = SET1(char(seed));                                                           \
    for (int c = 0; c < kChains; ++c) chain[c] = SET1(char(seed + c));                            \
    for (long i = 0; i < iterations; ++i) {                                                       \
      _Pragma("GCC unroll 16") for (int c = 0; c < kChains; ++c) chain[c] = SAD(chain[c], other); \
    }                                                                                             \
    std::uint64_t sum = 0;                                                                        \
    for (int c = 0; c < kChains; ++c) sum += std::uint64_t(EXTRACT(chain[c]));                    \
    return sum;                                                                                   \
  }

#define KBENCH_MPSADBW(a, b) _mm256_mpsadbw_epu8(a, b, 0)
#define KBENCH_DBPSADBW(a, b) _mm512_dbsad_epu8(a, b, 0)
#define KBENCH_LOW_128(v) _mm_cvtsi128_si64(v)
#define KBENCH_LOW_256(v) _mm256_extract_epi64(v, 0)
#define KBENCH_LOW_512(v) _mm_cvtsi128_si64(_mm512_castsi512_si128(v))

KBENCH_SAD_CHAINS(psadbw_xmm, "sse2", __m128i, _mm_set1_epi8, _mm_sad_epu8, KBENCH_LOW_128)
KBENCH_SAD_CHAINS(vpsadbw_ymm, KBENCH_TARGET_AVX2, __m256i, _mm256_set1_epi8, _mm256_sad_epu8,
                  KBENCH_LOW_256)
KBENCH_SAD_CHAINS(mpsadbw_ymm, KBENCH_TARGET_AVX2, __m256i, _mm256_set1_epi8, KBENCH_MPSADBW,
                  KBENCH_LOW_256)
KBENCH_SAD_CHAINS(vpsadbw_zmm, KBENCH_TARGET_AVX512, __m512i, _mm512_set1_epi8, _mm512_sad_epu8,
                  KBENCH_LOW_512)
KBENCH_SAD_CHAINS(vdbpsadbw_zmm, KBENCH_TARGET_AVX512, __m512i, _mm512_set1_epi8, KBENCH_DBPSADBW,
                  KBENCH_LOW_512)

// The kernels' shape: acc[p] += packed SAD of a query vector and the bytes at offset p + x of a
// buffer in L1, for kAccumulators neighbouring offsets p.
#define KBENCH_SAD_ACCUMULATE(NAME, TARGET, BYTES)                                        \
  [[gnu::target(TARGET)]] std::uint64_t NAME(long iterations, const std::uint8_t* data) { \
    using Bytes = BYTES;                                                                  \
    constexpr int kSpan = kL1Bytes / 2;                                                   \
    Bytes::Vec acc[kAccumulators];                                                        \
    for (int p = 0; p < kAccumulators; ++p) acc[p] = Bytes::zero();                       \
    const Bytes::Vec query = Bytes::load(data + kSpan);                                   \
    for (long i = 0; i < iterations; i += kSpan / Bytes::kBytes) {                        \
      _Pragma("GCC unroll 1") for (int x = 0; x < kSpan; x += Bytes::kBytes) {            \
        _Pragma("GCC unroll 16") for (int p = 0; p < kAccumulators; ++p) acc[p] =         \
            Bytes::add_sad(acc[p], query, Bytes::load(data + x + p));                     \
      }                                                                                   \
    }                                                                                     \
    std::uint64_t sum = 0;                                                                \
    for (int p = 0; p < kAccumulators; ++p) sum += Bytes::lane_sum(acc[p]);               \
    return sum;                                                                           \
  }

KBENCH_SAD_ACCUMULATE(accumulate_avx2, KBENCH_TARGET_AVX2, kbench::cpu_simd::Avx2Bytes)
KBENCH_SAD_ACCUMULATE(accumulate_avx512, KBENCH_TARGET_AVX512, kbench::cpu_simd::Avx512Bytes)

volatile std::uint64_t sink = 0;  // keeps the measured results alive

void sad_rate(const char* ceiling, const char* instruction, int byte_sads_per_instruction,
              std::uint64_t (*chains)(long, int)) {
  std::vector<std::uint64_t> results(omp_get_max_threads());
  const double seconds = best_parallel_seconds(
      kSadRepeats, [&](int thread) { results[thread] = chains(kSadIterations, thread); });
  for (const std::uint64_t r : results) sink = sink + r;
  const double instructions = double(kSadIterations) * kChains * omp_get_max_threads();
  print_line(ceiling, instruction, instructions * byte_sads_per_instruction / seconds / 1e9,
             "Gsad/s");
}

void accumulate_rate(const char* instruction, int vector_bytes,
                     std::uint64_t (*accumulate)(long, const std::uint8_t*)) {
  const int threads = omp_get_max_threads();
  std::vector<std::vector<std::uint8_t>> data(threads);
  std::vector<std::uint64_t> results(threads);
#pragma omp parallel
  {
    // Each thread's own bytes, some of them per offset so the sums differ.
    std::vector<std::uint8_t>& bytes = data[omp_get_thread_num()];
    bytes.resize(kL1Bytes + kAccumulators + vector_bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i * 7);
  }
  const double seconds = best_parallel_seconds(kSadRepeats, [&](int thread) {
    results[thread] = accumulate(kSadIterations, data[thread].data());
  });
  for (const std::uint64_t r : results) sink = sink + r;
  const double instructions = double(kSadIterations) * kAccumulators * threads;
  print_line("packed_sad_accumulate", instruction, instructions * vector_bytes / seconds / 1e9,
             "Gsad/s");
}

}  // namespace

int main() {
  using kbench::cpu_supports;
  using kbench::CpuLevel;
  copy_bandwidth();
  sad_rate("packed_sad", "psadbw-xmm", 16, psadbw_xmm);
  if (cpu_supports(CpuLevel::avx2)) {
    sad_rate("packed_sad", "vpsadbw-ymm", 32, vpsadbw_ymm);
    // Two 128-bit lanes × 8 offsets × 4 bytes.
    sad_rate("multi_sad", "mpsadbw-ymm", 64, mpsadbw_ymm);
  }
  if (cpu_supports(CpuLevel::avx512)) {
    sad_rate("packed_sad", "vpsadbw-zmm", 64, vpsadbw_zmm);
    // 32 16-bit sums of 4 bytes each.
    sad_rate("multi_sad", "vdbpsadbw-zmm", 128, vdbpsadbw_zmm);
    accumulate_rate("vpsadbw-zmm+vpaddq", 64, accumulate_avx512);
  } else if (cpu_supports(CpuLevel::avx2)) {
    accumulate_rate("vpsadbw-ymm+vpaddq", 32, accumulate_avx2);
  }
  return 0;
}
