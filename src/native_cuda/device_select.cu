// Choosing the CUDA device of the calling thread, for processes that drive a given GPU (an MPI
// rank's) or several (one host thread each).
#include <string>

#include "native_cuda/cuda_support.hpp"
#include "native_cuda/devices.hpp"

namespace kbench::cuda {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: none
    return 0;
  }
  return count;
}

void set_device(int device) {
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw Error("GPU " + std::to_string(device) + " does not exist; this machine has " +
                std::to_string(count));
  }
  check(cudaSetDevice(device), "cudaSetDevice");
}

int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

}  // namespace kbench::cuda
