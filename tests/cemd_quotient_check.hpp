#pragma once
// The device's normalised cemd quotient against IEEE division over every operand it can be given
// (tests/cemd_quotient_check.cu; built with the CUDA layer).

#include <cstdint>

namespace kbench::testing {

struct QuotientCheck {
  std::uint64_t checked = 0;   // the quotients the device compared
  std::uint64_t expected = 0;  // those the operands listed above make
  std::uint64_t misrounded = 0;
  float numerator = 0.0f, divisor = 0.0f;  // the first misrounded one
};

// quotient_of_small_integers<Isa::tuned> on the current CUDA device, against __fdiv_rn, for every
// divisor a·b and 2·a·b (1 ≤ a, b ≤ 8 · 255, a cell's largest mass; each product once) and every
// numerator up to 4 times it (even ones for the doubled divisor), and 0 / kEmptyCellDivisor.
QuotientCheck check_device_cemd_quotients();

}  // namespace kbench::testing
