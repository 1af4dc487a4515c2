#include "native_cuda/cuda_support.hpp"

#include "native_cuda/devices.hpp"

namespace kbench::cuda {

namespace {

constexpr int kCopyThreads = 256;
constexpr int kMaxCopyRowBlocks = 65535;  // CUDA's largest grid y

// Rows over blockIdx.y (grid-stride), a row's bytes over the threads of blockIdx.x.
__global__ void __launch_bounds__(kCopyThreads)
    copy_rows_kernel(const std::uint8_t* __restrict__ from, std::size_t from_pitch,
                     std::uint8_t* __restrict__ to, std::size_t to_pitch, std::size_t row_bytes,
                     int rows) {
  const std::size_t x = std::size_t(blockIdx.x) * kCopyThreads + threadIdx.x;
  if (x >= row_bytes) return;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    to[std::size_t(y) * to_pitch + x] = from[std::size_t(y) * from_pitch + x];
  }
}

}  // namespace

void copy_rows(const std::uint8_t* from, std::size_t from_pitch, std::uint8_t* to,
               std::size_t to_pitch, std::size_t row_bytes, int rows, cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0) return;
  const dim3 grid(unsigned((row_bytes + kCopyThreads - 1) / kCopyThreads),
                  unsigned(rows < kMaxCopyRowBlocks ? rows : kMaxCopyRowBlocks));
  copy_rows_kernel<<<grid, kCopyThreads, 0, stream>>>(from, from_pitch, to, to_pitch, row_bytes,
                                                      rows);
  check(cudaGetLastError(), "copy_rows_kernel");
}

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
  int count = 0;
  check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, current_device()),
        "cudaDeviceGetAttribute(multiprocessors)");
  return count;
}

std::string device_name() {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, current_device()), "cudaGetDeviceProperties");
  return properties.name;
}

void memory_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

}  // namespace kbench::cuda
