#pragma once
// Checked CUDA calls and owning device / pinned buffers for the native CUDA layer: every error
// becomes a kbench::Error that names the call, never a silent zero.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "kbench/error.hpp"

namespace kbench::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
  }
}

// After a kernel launch: reports launch-configuration errors at once.
inline void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

// Launches kernel<<<grid, block, shared, stream>>>(args...). With `after_previous`, as a
// programmatic dependent of the kernel before it in the stream (sm_90): its blocks may be
// scheduled while that kernel's last blocks finish, so it must call wait_for_previous_kernel()
// before it touches anything that kernel reads or writes.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
            cudaStream_t stream, bool after_previous, const char* name, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = after_previous ? 1 : 0;
  check(cudaLaunchKernelEx(&config, kernel, Params(args)...), name);
}

// In a kernel launched after_previous: waits until the kernel before it has finished and its
// writes are visible. A no-op in any other launch.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Where a CudaBuffer's memory comes from: the device's (cudaMalloc), or page-locked host memory
// (cudaMallocHost), which copies can overlap with kernels.
struct DeviceAllocation {
  static constexpr const char* kWhat = "GPU memory";
  static cudaError_t allocate(void** data, std::size_t bytes) { return cudaMalloc(data, bytes); }
  static void release(void* data) { cudaFree(data); }
};
struct PinnedAllocation {
  static constexpr const char* kWhat = "pinned host memory";
  static cudaError_t allocate(void** data, std::size_t bytes) {
    return cudaMallocHost(data, bytes);
  }
  static void release(void* data) { cudaFreeHost(data); }
};

// `count` values of T from Allocation, freed on destruction. Movable, not copyable; a failed
// allocation throws OutOfMemory.
template <class T, class Allocation>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(std::size_t count) : count_(count) {
    void* data = nullptr;
    const cudaError_t status = Allocation::allocate(&data, count * sizeof(T));
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear the sticky allocation error
      throw OutOfMemory("cannot allocate " + std::to_string(count * sizeof(T)) + " bytes of " +
                        Allocation::kWhat + ": " + cudaGetErrorString(status));
    }
    data_ = static_cast<T*>(data);
  }
  CudaBuffer(CudaBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  ~CudaBuffer() {
    if (data_) Allocation::release(data_);
  }

  T* get() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

template <class T>
using DeviceBuffer = CudaBuffer<T, DeviceAllocation>;
template <class T>
using PinnedBuffer = CudaBuffer<T, PinnedAllocation>;

// Rows of pitched device images start this many bytes apart at least, so that kernels load and
// store whole 16-byte vectors at any width: a row's last vector runs into the padding, whose
// bytes no result reads.
constexpr std::size_t kRowAlignBytes = 16;

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Copies `rows` rows of `row_bytes` bytes from rows `from_pitch` apart to rows `to_pitch` apart,
// device to device, queued on `stream`.
void copy_rows(const std::uint8_t* from, std::size_t from_pitch, std::uint8_t* to,
               std::size_t to_pitch, std::size_t row_bytes, int rows, cudaStream_t stream);

// A u8 image on the device with rows pitch() bytes apart; the host image keeps the user's tight
// rows and moves by 2D copies. The padding starts as zeros, so loads that run into it never see
// uninitialised memory.
class PitchedImage {
 public:
  PitchedImage() = default;
  PitchedImage(std::size_t row_bytes, int rows, std::size_t row_align = kRowAlignBytes)
      : row_bytes_(row_bytes),
        rows_(rows),
        pitch_(round_up(row_bytes, row_align)),
        data_(pitch_ * std::size_t(rows)),
        staging_(pitch_ == row_bytes ? DeviceBuffer<std::uint8_t>()
                                     : DeviceBuffer<std::uint8_t>(row_bytes * std::size_t(rows))) {
    check(cudaMemset(data_.get(), 0, data_.bytes()), "cudaMemset (pitched image)");
  }

  std::uint8_t* get() const { return data_.get(); }
  std::size_t pitch() const { return pitch_; }
  std::size_t row_bytes() const { return row_bytes_; }
  std::size_t bytes() const { return data_.bytes(); }

  // Tight host rows in, queued on `stream`. Where the pitch is not the row, the host rows cross
  // in one contiguous copy to a tight staging image and a kernel spreads them: a 2D copy from
  // pageable memory with pitch ≠ width is several times slower per byte than a contiguous one
  // (perf/notes/portability.md).
  void upload(const std::uint8_t* host, cudaStream_t stream) const {
    std::uint8_t* tight = staging_.get() ? staging_.get() : data_.get();
    check(cudaMemcpyAsync(tight, host, row_bytes_ * std::size_t(rows_), cudaMemcpyHostToDevice,
                          stream),
          "cudaMemcpyAsync (pitched image in)");
    if (staging_.get())
      copy_rows(tight, row_bytes_, data_.get(), pitch_, row_bytes_, rows_, stream);
  }
  // Tight host rows out, queued on `stream` (gathered on the device first, as upload spreads).
  void download(std::uint8_t* host, cudaStream_t stream) const {
    std::uint8_t* tight = staging_.get() ? staging_.get() : data_.get();
    if (staging_.get())
      copy_rows(data_.get(), pitch_, tight, row_bytes_, row_bytes_, rows_, stream);
    check(cudaMemcpyAsync(host, tight, row_bytes_ * std::size_t(rows_), cudaMemcpyDeviceToHost,
                          stream),
          "cudaMemcpyAsync (pitched image out)");
  }
  void fill(std::uint8_t byte, cudaStream_t stream) const {
    check(cudaMemsetAsync(data_.get(), byte, data_.bytes(), stream),
          "cudaMemsetAsync (pitched image)");
  }

 private:
  std::size_t row_bytes_ = 0;
  int rows_ = 0;
  std::size_t pitch_ = 0;
  DeviceBuffer<std::uint8_t> data_;
  DeviceBuffer<std::uint8_t> staging_;  // tight rows; none where the pitch is the row
};

// Non-blocking by default; with cudaStreamDefault the stream and the legacy default stream wait
// for each other's earlier work.
class Stream {
 public:
  explicit Stream(unsigned int flags = cudaStreamNonBlocking) {
    check(cudaStreamCreateWithFlags(&stream_, flags), "cudaStreamCreate");
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// The current device's multiprocessor count.
int multiprocessors();

// Threads of `kernel` (launched with `threads` a block and `shared_bytes` of dynamic shared
// memory) that the current device keeps resident at once.
template <class Kernel>
long long resident_threads(Kernel kernel, int threads, std::size_t shared_bytes) {
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return (long long)multiprocessors() * (per_sm > 1 ? per_sm : 1) * threads;
}

// Blocks of `kernel` for a grid-stride launch over `work_blocks` blocks of work: as many as stay
// resident, at least one, no more than the work.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t shared_bytes, long long work_blocks) {
  const long long resident = resident_threads(kernel, threads, shared_bytes) / threads;
  return int(work_blocks < resident ? (work_blocks > 1 ? work_blocks : 1) : resident);
}

}  // namespace kbench::cuda
