#pragma once
// Which instructions the helpers that the layers share may use (issue 14).
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

namespace kbench {

enum class Isa { tuned, plain };

const char* to_string(Isa isa);

}  // namespace kbench
