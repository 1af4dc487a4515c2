#pragma once
// Shared-memory mbarriers and bulk copies (the tensor memory accelerator, sm_90 on) as one-line
// device functions, for a walk whose buffers are filled by a bulk copy that completes on a "full"
// barrier and handed back on an "empty" one. Below sm_90 none of them exists: callers keep a
// cp.async path there, and these trap if reached.

#include <cstdint>

namespace kbench::bulk_copy {

// The shared-memory address of `pointer`, as the instructions take it.
__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return std::uint32_t(__cvta_generic_to_shared(pointer));
}

// A barrier at `barrier` whose phase completes after `arrivals` arrivals (and the bytes expected).
__device__ __forceinline__ void init(std::uint32_t barrier, std::uint32_t arrivals) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier), "r"(arrivals));
#else
  __trap();
#endif
}

// The calling thread's shared-memory writes (the barriers' initialisation, zeros) before any bulk
// copy of the block's: the copies run in the async proxy.
__device__ __forceinline__ void fence_before_copies() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}

// Until the phase of `barrier` with parity `parity` has completed.
__device__ __forceinline__ void wait_phase(std::uint32_t barrier, std::uint32_t parity) {
#if __CUDA_ARCH__ >= 900
  std::uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
  }
#else
  __trap();
#endif
}

// One arrival on `barrier`.
__device__ __forceinline__ void arrive(std::uint32_t barrier) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier) : "memory");
#else
  __trap();
#endif
}

// One arrival on `barrier`, whose phase then also waits for `bytes` of bulk copies.
__device__ __forceinline__ void arrive_expecting(std::uint32_t barrier, std::uint32_t bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `from` to shared `to` by
// one bulk copy, which completes its bytes on `barrier`.
__device__ __forceinline__ void copy_to_shared(void* to, const void* from, std::uint32_t bytes,
                                               std::uint32_t barrier) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(shared_address(to)),
      "l"(from), "r"(bytes), "r"(barrier)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace kbench::bulk_copy
