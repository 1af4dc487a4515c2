#pragma once
// Which registered variants this machine runs, for tests that run every variant: host variants,
// the SIMD CPU variants (omp-simd-<level>) only at the levels this CPU has, and CUDA variants
// where a GPU is usable.

#include <string>

#include "kbench/cpu_features.hpp"
#include "kbench/harness.hpp"

namespace kbench::test {

constexpr const char* kSimdPrefix = "omp-simd-";
constexpr CpuLevel kCpuLevels[] = {CpuLevel::generic, CpuLevel::avx2, CpuLevel::avx512};

template <class Algorithm>
bool runs_on_this_cpu(const Variant<Algorithm>& v) {
  for (const CpuLevel level : kCpuLevels) {
    if (v.name == simd_variant_name(level)) return cpu_supports(level);
  }
  return true;
}

template <class Algorithm>
bool runs_on_this_machine(const Variant<Algorithm>& v) {
  return runs_here(v) && runs_on_this_cpu(v);
}

}  // namespace kbench::test
