// Which pipe runs each kind of min/max on the current GPU: the rate of one instruction kind alone
// and of two kinds mixed 1:1, in warp instructions a cycle an SM sub-partition. Two kinds on one
// pipe share its rate; kinds on different pipes add up (to the issue rate at most). CEMD's raw
// mode is bound by the pipe its packed 16-bit min/max run on (perf/notes/cemd.md).

#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

constexpr int kChains =
    8;  // independent chains a thread, enough to hide each instruction's latency
constexpr int kSteps = 4096;
constexpr int kThreads = 256, kBlocksPerSm = 8, kRuns = 5;

enum class Kind { u16x2_min_max, f16x2_min_max, f32_min_max, f16x2_add, int_multiply_add };

__device__ __forceinline__ std::uint32_t half2_bits(__half2 x) {
  std::uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}
__device__ __forceinline__ __half2 half2_of(std::uint32_t bits) {
  __half2 x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

// Two instructions of one kind on x (a min then a max, so that no 3-input form merges them).
template <Kind kKind>
__device__ __forceinline__ std::uint32_t step(std::uint32_t x, std::uint32_t a, std::uint32_t b) {
  if constexpr (kKind == Kind::u16x2_min_max) return __vmaxu2(__vminu2(x, a), b);
  if constexpr (kKind == Kind::f16x2_min_max) {
    return half2_bits(__hmax2(__hmin2(half2_of(x), half2_of(a)), half2_of(b)));
  }
  if constexpr (kKind == Kind::f32_min_max) {
    return __float_as_uint(
        fmaxf(fminf(__uint_as_float(x), __uint_as_float(a)), __uint_as_float(b)));
  }
  if constexpr (kKind == Kind::f16x2_add) {
    return half2_bits(__hadd2(__hadd2(half2_of(x), half2_of(a)), half2_of(b)));
  }
  return (x * a + b) * b + a;
}

// Even chains run kFirst, odd ones kSecond.
template <Kind kFirst, Kind kSecond>
__global__ void __launch_bounds__(kThreads)
    chains(std::uint32_t a, std::uint32_t b, std::uint32_t* sink) {
  std::uint32_t x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = a * (threadIdx.x + c + 1);
  for (int s = 0; s < kSteps; ++s) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      x[c] = c % 2 == 0 ? step<kFirst>(x[c], a, b) : step<kSecond>(x[c], a, b);
    }
  }
  std::uint32_t all = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) all ^= x[c];
  if (all == a) *sink = all;  // keeps the chains; practically never stores
}

template <Kind kFirst, Kind kSecond>
void measure(const char* name, std::uint32_t* sink) {
  int sms = 0, clock_khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const int blocks = sms * kBlocksPerSm;
  chains<kFirst, kSecond><<<blocks, kThreads>>>(0x3c013c02u, 0x12340678u, sink);  // warm-up
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int r = 0; r < kRuns; ++r) {
    chains<kFirst, kSecond><<<blocks, kThreads>>>(0x3c013c02u + r, 0x12340678u, sink);
  }
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  const double warp_instructions =
      double(kRuns) * blocks * (kThreads / 32) * double(kSteps) * kChains * 2;
  const double cycles = ms * 1e-3 * clock_khz * 1e3;
  std::printf("%-34s %.3f warp instructions a cycle an SMSP (%.2f ms)\n", name,
              warp_instructions / (cycles * sms * 4), ms / kRuns);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

int main() {
  std::uint32_t* sink = nullptr;
  if (cudaMalloc(&sink, sizeof *sink) != cudaSuccess) {
    std::fprintf(stderr, "min-max-pipes: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::printf("%s, at the reported clock %d MHz\n", properties.name, clock_khz / 1000);
  using K = Kind;
  measure<K::u16x2_min_max, K::u16x2_min_max>("u16x2 min/max", sink);
  measure<K::f16x2_min_max, K::f16x2_min_max>("f16x2 min/max", sink);
  measure<K::f32_min_max, K::f32_min_max>("f32 min/max", sink);
  measure<K::f16x2_add, K::f16x2_add>("f16x2 add", sink);
  measure<K::int_multiply_add, K::int_multiply_add>("int multiply-add", sink);
  measure<K::u16x2_min_max, K::f16x2_min_max>("u16x2 + f16x2 min/max", sink);
  measure<K::f32_min_max, K::f16x2_min_max>("f32 + f16x2 min/max", sink);
  measure<K::f16x2_min_max, K::f16x2_add>("f16x2 min/max + f16x2 add", sink);
  measure<K::u16x2_min_max, K::int_multiply_add>("u16x2 min/max + int multiply-add", sink);
  const cudaError_t status = cudaDeviceSynchronize();
  cudaFree(sink);
  if (status != cudaSuccess) {
    std::fprintf(stderr, "min-max-pipes: %s\n", cudaGetErrorString(status));
    return 1;
  }
  return 0;
}
