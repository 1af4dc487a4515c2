#pragma once
// Which instructions the helpers that the layers share may use.
//
// A target-specific instruction reaches a portable kernel only through a helper in include/kbench
// with a plain C++ form beside it (sad4, lbp_codes4, conv_band's byte permutes and pixel packing,
// cemd's float min/max, fused products, quotient and packed lanes). Each such helper, and every
// function and kernel that calls one, takes an Isa template parameter:
// - Isa::tuned (the default): the target's own instruction where the helper has one (on CUDA
//   devices PRMT, VABSDIFF4, fp16 pairs, F2IP, DPX, the division's fast path; psadbw on x86
//   hosts), else the plain form;
// - Isa::plain: the plain form on every target, with the same results, so that a portable kernel
//   built with it (a `-plain` variant) shows what Kokkos reaches without target-specific
//   instructions, on the same schedule.
// The native layers keep the default.

#include <cstdint>

#include "kbench/host_device.hpp"

namespace kbench {

enum class Isa { tuned, plain };

const char* to_string(Isa isa);

// Byte `selector` nibble k picks byte k of the result from the 8 bytes y:x (CUDA's __byte_perm,
// without its sign-replicating modes).
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, unsigned selector) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned) return __byte_perm(x, y, selector);
#endif
  const std::uint64_t bytes = (std::uint64_t(y) << 32) | x;
  std::uint32_t result = 0;
  for (int k = 0; k < 4; ++k) {
    const unsigned pick = (selector >> (4 * k)) & 7u;
    result |= std::uint32_t((bytes >> (8 * pick)) & 0xFFu) << (8 * k);
  }
  return result;
}

// Byte b of `word` (one PRMT on CUDA devices).
template <Isa kIsa>
KBENCH_HOST_DEVICE std::uint32_t byte_of(std::uint32_t word, int b) {
  return byte_perm<kIsa>(word, 0u, 0x4440u | unsigned(b));
}

}  // namespace kbench
