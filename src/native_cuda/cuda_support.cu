#include "native_cuda/cuda_support.hpp"

namespace kbench::cuda {

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the error, say why
    return cudaGetErrorString(status);
  }
  return count > 0 ? std::string() : "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)";
}

int multiprocessors() {
  int device = 0, count = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(multiprocessors)");
  return count;
}

std::string device_name() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

}  // namespace kbench::cuda
