#pragma once
// The target attributes of the x86 levels above the baseline (the ones cpu_features.cpp checks),
// for the SIMD CPU helpers (detail/cpu_sad_bytes.hpp, detail/cpu_vectors.hpp) and the functions
// compiled for a level. `#pragma GCC target` takes no macro, so code compiled under the pragma
// spells the strings out.

#define KBENCH_TARGET_AVX2 "avx2,fma,bmi2"
#define KBENCH_TARGET_AVX512 "avx512f,avx512bw,avx512vl,avx512dq"

// The same as attributes: [[KBENCH_CPU_TARGET_AVX2]].
#define KBENCH_CPU_TARGET_AVX2 gnu::target(KBENCH_TARGET_AVX2)
#define KBENCH_CPU_TARGET_AVX512 gnu::target(KBENCH_TARGET_AVX512)
