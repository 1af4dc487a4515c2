#pragma once
// Marks small helpers that the sequential, portable and native CUDA layers share.

#if defined(__CUDACC__)
#define KBENCH_HOST_DEVICE __host__ __device__ inline
#else
#define KBENCH_HOST_DEVICE inline
#endif

// Asks the compiler to unroll the next loop completely (its trip count is a compile-time
// constant), so that arrays indexed by the loop variable stay in registers.
#if defined(__CUDACC__)
#define KBENCH_UNROLL _Pragma("unroll")
#else
#define KBENCH_UNROLL _Pragma("GCC unroll 16")
#endif
