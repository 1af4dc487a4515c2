#pragma once
// Marks small helpers that the sequential, portable and native CUDA layers share.

#if defined(__CUDACC__)
#define KBENCH_HOST_DEVICE __host__ __device__ inline
#else
#define KBENCH_HOST_DEVICE inline
#endif

// Asks the compiler to unroll the next loop completely (its trip count is a compile-time
// constant), so that arrays indexed by the loop variable stay in registers. nvcc's device pass
// takes CUDA's pragma and plain host compilers GCC's; nvcc's host pass knows neither (its host
// compiler would ignore the CUDA one with a warning), so it gets none.
#if defined(__CUDA_ARCH__)
#define KBENCH_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define KBENCH_UNROLL
#else
#define KBENCH_UNROLL _Pragma("GCC unroll 16")
#endif

// A loop over the lanes of a register block (independent results one work item computes
// together, e.g. the distances of one query to 16 database rows): fully unrolled on GPUs, whose
// registers hold an array only under constant indices; on hosts a SIMD loop for the vectoriser
// (unrolling it first would hide it from the vectoriser). nvcc's host pass gets nothing, as above.
#if defined(__CUDA_ARCH__)
#define KBENCH_LANE_LOOP _Pragma("unroll")
#elif defined(__CUDACC__) || !defined(_OPENMP)
#define KBENCH_LANE_LOOP
#else
#define KBENCH_LANE_LOOP _Pragma("omp simd")
#endif

// Keeps the next loop rolled (a long body that unrolling would only make larger, e.g. the cells
// of a register tile's comparisons). nvcc's host pass gets nothing, as above.
#if defined(__CUDA_ARCH__)
#define KBENCH_NO_UNROLL _Pragma("unroll 1")
#elif defined(__CUDACC__)
#define KBENCH_NO_UNROLL
#else
#define KBENCH_NO_UNROLL _Pragma("GCC unroll 1")
#endif
