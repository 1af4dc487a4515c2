#pragma once
// Which x86 vector extensions the CPU running this process offers.
//
// The SIMD CPU variants are compiled for each level with per-function target attributes, so one
// binary serves machines with and without AVX-512. Each level is registered as its own variant
// (`...-avx512`, `...-avx2`, and a `...-generic` fallback built from GCC vector extensions at the
// baseline ISA) whose `supports` asks cpu_supports(): tests then run every level this CPU has,
// the fallback always, and the user-facing calls pick the highest by rank.

#include <string>

namespace kbench {

enum class CpuLevel {
  generic,  // the compiler's baseline (SSE2 on x86-64), or any non-x86 CPU
  avx2,     // AVX2 + FMA + BMI2
  avx512,   // AVX-512 F, BW, VL and DQ
};

const char* to_string(CpuLevel level);

// The highest level this CPU and operating system offer. KBENCH_CPU=generic|avx2|avx512 in the
// environment caps it (for trying a fallback by hand; an unknown value is an error).
CpuLevel cpu_level();

inline bool cpu_supports(CpuLevel level) {
  return static_cast<int>(level) <= static_cast<int>(cpu_level());
}

// The name every algorithm registers its SIMD CPU variant of `level` under: omp-simd-<level>.
std::string simd_variant_name(CpuLevel level);

// A variant's `supports` for code compiled for `level`: whatever the input, whether this CPU has
// the level.
inline auto supports_level(CpuLevel level) {
  return [level](const auto&) { return cpu_supports(level); };
}

}  // namespace kbench
