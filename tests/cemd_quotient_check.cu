// The device's normalised cemd quotient (quotient_of_small_integers) against IEEE division over
// its whole domain. It is not correctly rounded for every pair of floats (its reciprocal is the
// hardware's approximation), so the suite checks it for every operand the cemd kernels can give
// it, on the device that runs them.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cemd_quotient_check.hpp"
#include "kbench/cemd.hpp"
#include "kbench/detail/cemd_prefix.hpp"
#include "native_cuda/cuda_support.hpp"

namespace kbench::testing {
namespace {

constexpr int kMostCellMass = kCemdBins * 255;
// A cell term is a circular EMD of two unit masses over kCemdBins bins: at most half the circle.
constexpr int kMostQuotient = kCemdBins / 2;
constexpr int kThreads = 256;

struct Counts {
  unsigned long long checked, misrounded;
  float numerator, divisor;
};

__device__ void check_one(float n, float d, Counts* counts) {
  const float q = quotient_of_small_integers<Isa::tuned>(n, d);
  if (__float_as_uint(q) != __float_as_uint(__fdiv_rn(n, d)) &&
      atomicAdd(&counts->misrounded, 1ull) == 0) {
    counts->numerator = n, counts->divisor = d;
  }
}

// Block k checks product k: divisor p with numerators 0 … 4p, and 2p with 0, 2, … 8p.
__global__ void __launch_bounds__(kThreads)
    check_quotients(const int* products, int count, Counts* counts) {
  unsigned long long checked = 0;
  for (int k = blockIdx.x; k < count; k += gridDim.x) {
    const int p = products[k];
    for (int n = threadIdx.x; n <= kMostQuotient * p; n += kThreads) {
      check_one(float(n), float(p), counts);
      check_one(2.0f * float(n), 2.0f * float(p), counts);
      checked += 2;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    check_one(0.0f, kEmptyCellDivisor, counts);
    ++checked;
  }
  atomicAdd(&counts->checked, checked);
}

}  // namespace

QuotientCheck check_device_cemd_quotients() {
  std::vector<char> is_product(std::size_t(kMostCellMass) * kMostCellMass + 1, 0);
  for (int a = 1; a <= kMostCellMass; ++a) {
    for (int b = a; b <= kMostCellMass; ++b) is_product[std::size_t(a) * b] = 1;
  }
  std::vector<int> products;
  std::uint64_t expected = 1;  // 0 over the empty cell's divisor
  for (std::size_t p = 1; p < is_product.size(); ++p) {
    if (!is_product[p]) continue;
    products.push_back(int(p));
    expected += 2 * (std::uint64_t(kMostQuotient) * p + 1);  // p and 2p, numerators 0 … 4p each
  }
  const cuda::DeviceBuffer<int> device_products(products.size());
  const cuda::DeviceBuffer<Counts> device_counts(1);
  cuda::check(cudaMemcpy(device_products.get(), products.data(), device_products.bytes(),
                         cudaMemcpyHostToDevice),
              "cudaMemcpy");
  cuda::check(cudaMemset(device_counts.get(), 0, device_counts.bytes()), "cudaMemset");
  const int blocks = int(std::min<std::size_t>(products.size(), 1 << 16));
  check_quotients<<<blocks, kThreads>>>(device_products.get(), int(products.size()),
                                        device_counts.get());
  cuda::check_launch("check_quotients");
  Counts counts{};
  cuda::check(cudaMemcpy(&counts, device_counts.get(), sizeof counts, cudaMemcpyDeviceToHost),
              "cudaMemcpy");
  return {counts.checked, expected, counts.misrounded, counts.numerator, counts.divisor};
}

}  // namespace kbench::testing
