#include "kbench/cpu_features.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "kbench/error.hpp"

namespace kbench {
namespace {

CpuLevel detect() {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XGETBV).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return CpuLevel::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2")) {
    return CpuLevel::avx2;
  }
#endif
  return CpuLevel::generic;
}

CpuLevel capped(CpuLevel detected) {
  const char* cap = std::getenv("KBENCH_CPU");
  if (cap == nullptr || *cap == '\0') return detected;
  for (CpuLevel level : {CpuLevel::generic, CpuLevel::avx2, CpuLevel::avx512}) {
    if (std::strcmp(cap, to_string(level)) == 0) {
      return static_cast<int>(level) < static_cast<int>(detected) ? level : detected;
    }
  }
  throw Error("KBENCH_CPU='" + std::string(cap) + "': expected generic, avx2 or avx512");
}

}  // namespace

const char* to_string(CpuLevel level) {
  switch (level) {
    case CpuLevel::generic:
      return "generic";
    case CpuLevel::avx2:
      return "avx2";
    case CpuLevel::avx512:
      return "avx512";
  }
  return "?";
}

std::string simd_variant_name(CpuLevel level) {
  return std::string("omp-simd-") + to_string(level);
}

CpuLevel cpu_level() {
  static const CpuLevel level = capped(detect());
  return level;
}

}  // namespace kbench
