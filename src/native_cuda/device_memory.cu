// kbench/device_memory.hpp's CUDA side.
#include "kbench/device_memory.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

#include "kbench/cemd.hpp"
#include "native_cuda/cuda_support.hpp"

namespace kbench {

using cuda::check;

namespace {

cudaStream_t stream_of(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

constexpr int kCopyKernelThreads = 256;        // threads a block of the copy and conversion kernels
constexpr int kMaxGridRows = 65535;            // CUDA's largest grid y and z
constexpr std::size_t kMaxGridBlocks = 65536;  // a grid-stride loop past this many blocks
constexpr std::size_t kDescriptorValues = 128;  // values per descriptor row

// Frames as the channel copy walks them.
struct ChannelFrames {
  std::uint8_t* data;
  std::size_t pitch, frame_stride;
  int channels;

  __device__ std::uint8_t& at(int f, int x, int y, int c) const {
    return data[std::size_t(f) * frame_stride + std::size_t(y) * pitch + std::size_t(x) * channels +
                c];
  }
};

template <class Byte>
ChannelFrames channel_frames(const BasicImageView<Byte>& view) {
  return {const_cast<std::uint8_t*>(view.data), view.row_pitch(), view.frame_pitch(),
          view.channels};
}

// Pixel x of row y (grid y, strided) of frame f (grid z, strided): the last channel.
__global__ void __launch_bounds__(kCopyKernelThreads)
    copy_last_channel_kernel(const ChannelFrames from, int inset, const ChannelFrames to, int width,
                             int height, int frames) {
  const int x = blockIdx.x * kCopyKernelThreads + threadIdx.x;
  if (x >= width) return;
  const int c = to.channels - 1;
  for (int f = blockIdx.z; f < frames; f += gridDim.z) {
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
      to.at(f, x, y, c) = from.at(f, x + inset, y + inset, c);
    }
  }
}

// Value `i` of the flat rows (row i / 128, column i % 128; grid-stride) converted to u8; a value
// that is not a whole number 0..255 (NaN included) lowers *first_bad to its index.
__global__ void __launch_bounds__(kCopyKernelThreads)
    descriptors_to_u8_kernel(const unsigned char* from, std::size_t stride, std::size_t values,
                             std::uint8_t* to, std::uint32_t* first_bad) {
  for (std::size_t i = std::size_t(blockIdx.x) * kCopyKernelThreads + threadIdx.x; i < values;
       i += std::size_t(gridDim.x) * kCopyKernelThreads) {
    const float value = reinterpret_cast<const float*>(from + (i / kDescriptorValues) *
                                                                  stride)[i % kDescriptorValues];
    const bool whole = value >= 0.f && value <= 255.f && value == floorf(value);
    to[i] = whole ? std::uint8_t(value) : 0;
    if (!whole) atomicMin(first_bad, std::uint32_t(i));
  }
}

// Query q's (grid-stride) nearest two so far merged with a piece's, renumbered from first_row.
__global__ void __launch_bounds__(kCopyKernelThreads)
    merge_top2_keys_kernel(std::uint64_t* running, const std::uint64_t* piece, int queries,
                           std::uint32_t first_row) {
  for (int q = blockIdx.x * kCopyKernelThreads + threadIdx.x; q < queries;
       q += gridDim.x * kCopyKernelThreads) {
    Top2 t{running[2 * std::size_t(q)], running[2 * std::size_t(q) + 1]};
    top2_insert(t, cemd_key_from_row(piece[2 * std::size_t(q)], first_row));
    top2_insert(t, cemd_key_from_row(piece[2 * std::size_t(q) + 1], first_row));
    running[2 * std::size_t(q)] = t.best;
    running[2 * std::size_t(q) + 1] = t.second;
  }
}

}  // namespace

void descriptors_to_u8_async(const float* from, std::size_t stride, int rows, std::uint8_t* to,
                             std::uint32_t* first_bad, void* stream) {
  const std::size_t values = std::size_t(rows) * kDescriptorValues;
  const std::size_t blocks = (values + kCopyKernelThreads - 1) / kCopyKernelThreads;
  descriptors_to_u8_kernel<<<unsigned(std::min<std::size_t>(blocks, kMaxGridBlocks)),
                             kCopyKernelThreads, 0, stream_of(stream)>>>(
      reinterpret_cast<const unsigned char*>(from), stride, values, to, first_bad);
  check(cudaGetLastError(), "descriptors_to_u8_kernel");
}

void merge_top2_keys_async(std::uint64_t* running, const std::uint64_t* piece, int queries,
                           std::uint32_t first_row, void* stream) {
  if (queries <= 0) return;
  const std::size_t blocks = (std::size_t(queries) + kCopyKernelThreads - 1) / kCopyKernelThreads;
  merge_top2_keys_kernel<<<unsigned(std::min<std::size_t>(blocks, kMaxGridBlocks)),
                           kCopyKernelThreads, 0, stream_of(stream)>>>(running, piece, queries,
                                                                       first_row);
  check(cudaGetLastError(), "merge_top2_keys_kernel");
}

void copy_last_channel_async(const ConstImageView& from, int inset, const ImageView& to,
                             void* stream) {
  const dim3 grid(unsigned((to.width + kCopyKernelThreads - 1) / kCopyKernelThreads),
                  unsigned(std::min(to.height, kMaxGridRows)),
                  unsigned(std::min(to.frames, kMaxGridRows)));
  copy_last_channel_kernel<<<grid, kCopyKernelThreads, 0, stream_of(stream)>>>(
      channel_frames(from), inset, channel_frames(to), to.width, to.height, to.frames);
  check(cudaGetLastError(), "copy_last_channel_kernel");
}

bool built_with_cuda() {
  return true;
}

void initialise_device(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(nullptr) creating the device's context");
}

ScopedDevice::ScopedDevice(int device) : device_(device) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
}

ScopedDevice::~ScopedDevice() {
  if (previous_ != device_) cudaSetDevice(previous_);
}

DeviceMemory::DeviceMemory(std::size_t bytes, int device) : size_(bytes), device_(device) {
  const ScopedDevice on(device);
  const cudaError_t status = cudaMalloc(&data_, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky allocation error
    data_ = nullptr;
    throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes on CUDA device " +
                      std::to_string(device) + ": " + cudaGetErrorString(status));
  }
}

DeviceMemory::~DeviceMemory() {
  if (data_) cudaFree(data_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(device_, other.device_);
  return *this;
}

PinnedMemory::PinnedMemory(std::size_t bytes) : size_(bytes) {
  const cudaError_t status = cudaMallocHost(&data_, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky allocation error
    data_ = nullptr;
    throw OutOfMemory("cannot allocate " + std::to_string(bytes) +
                      " bytes of page-locked host memory: " + cudaGetErrorString(status));
  }
}

PinnedMemory::~PinnedMemory() {
  if (data_) cudaFreeHost(data_);
}

PinnedMemory::PinnedMemory(PinnedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedMemory& PinnedMemory::operator=(PinnedMemory&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

DeviceStream::DeviceStream(int device) {
  const ScopedDevice on(device);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_ = stream;
}

DeviceStream::~DeviceStream() {
  if (!stream_) return;
  cudaStreamSynchronize(stream_of(stream_));
  cudaStreamDestroy(stream_of(stream_));
}

DeviceEvent::DeviceEvent(int device, HostWait host_wait) {
  const ScopedDevice on(device);
  cudaEvent_t event;
  const unsigned flags =
      cudaEventDisableTiming | (host_wait == HostWait::block ? cudaEventBlockingSync : 0u);
  check(cudaEventCreateWithFlags(&event, flags), "cudaEventCreateWithFlags");
  event_ = event;
}

DeviceEvent::~DeviceEvent() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

void DeviceEvent::record(void* stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream_of(stream)), "cudaEventRecord");
}

void DeviceEvent::queue_wait(void* stream) const {
  check(cudaStreamWaitEvent(stream_of(stream), static_cast<cudaEvent_t>(event_), 0),
        "cudaStreamWaitEvent");
}

void DeviceEvent::wait() const {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize");
}

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

HostRegistration::HostRegistration(void* data, std::size_t bytes) {
  if (!data || bytes == 0) return;
  if (cudaHostRegister(data, bytes, cudaHostRegisterDefault) == cudaSuccess) {
    data_ = data;
  } else {
    cudaGetLastError();  // clear the error: the memory stays pageable
  }
}

HostRegistration::~HostRegistration() {
  if (data_) cudaHostUnregister(data_);
}

HostRegistration::HostRegistration(HostRegistration&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)) {}

HostRegistration& HostRegistration::operator=(HostRegistration&& other) noexcept {
  std::swap(data_, other.data_);
  return *this;
}

void copy_rows_async(void* to, std::size_t to_pitch, const void* from, std::size_t from_pitch,
                     std::size_t row_bytes, std::size_t rows, void* stream) {
  if (rows == 0 || row_bytes == 0) return;
  if (to_pitch == row_bytes && from_pitch == row_bytes) {
    check(cudaMemcpyAsync(to, from, row_bytes * rows, cudaMemcpyDefault, stream_of(stream)),
          "cudaMemcpyAsync");
    return;
  }
  check(cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, row_bytes, rows, cudaMemcpyDefault,
                          stream_of(stream)),
        "cudaMemcpy2DAsync");
}

void fill_async(void* data, std::uint8_t byte, std::size_t bytes, void* stream) {
  check(cudaMemsetAsync(data, byte, bytes, stream_of(stream)), "cudaMemsetAsync");
}

void synchronize(void* stream) {
  check(cudaStreamSynchronize(stream_of(stream)), "cudaStreamSynchronize");
}

int device_of(const void* pointer) {
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged
             ? attributes.device
             : -1;
}

void DeviceScratch::begin(void* stream) {
  if (begun_ && stream != last_stream_) {
    if (!stream_change_.made()) stream_change_ = DeviceEvent(device_);
    stream_change_.record(last_stream_);
    stream_change_.queue_wait(stream);
  }
  begun_ = true;
  last_stream_ = stream;
}

}  // namespace kbench
