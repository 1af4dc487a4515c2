#pragma once
// Marks small helpers that the sequential, portable and native CUDA layers share.

#if defined(__CUDACC__)
#define KBENCH_HOST_DEVICE __host__ __device__ inline
#else
#define KBENCH_HOST_DEVICE inline
#endif
