#pragma once
// Device memory for the calls on device views: owning allocations, copies between any two
// memories and waiting for a stream, through CUDA where kbench was built with it (each throws
// kbench::Error otherwise). A stream is a cudaStream_t passed as void*; null is CUDA's legacy
// default stream.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kbench/context.hpp"

namespace kbench {

// True where this kbench has its CUDA layers.
bool built_with_cuda();

// Makes CUDA device `device` the calling thread's and creates its context now: the first CUDA
// call on a device pays for that, which would otherwise fall inside whatever it times.
void initialise_device(int device);

// Makes CUDA device `device` current for its scope, then the caller's again.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

// Bytes of memory on CUDA device `device`, freed on destruction. Movable, not copyable.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(std::size_t bytes, int device);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  int device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
};

// Page-locked host memory (cudaMallocHost), which the GPU copies to and from asynchronously,
// freed on destruction. Movable, not copyable.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  explicit PinnedMemory(std::size_t bytes);
  ~PinnedMemory();
  PinnedMemory(PinnedMemory&& other) noexcept;
  PinnedMemory& operator=(PinnedMemory&& other) noexcept;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// A CUDA stream of device `device` of its own, which runs beside the legacy default stream
// (neither waits for the other's work); destruction waits for its work. Movable, not copyable.
class DeviceStream {
 public:
  DeviceStream() = default;
  explicit DeviceStream(int device);
  ~DeviceStream();
  DeviceStream(DeviceStream&& other) noexcept;
  DeviceStream& operator=(DeviceStream&& other) noexcept;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  // The cudaStream_t, for the calls that take a stream.
  void* handle() const { return stream_; }

 private:
  void* stream_ = nullptr;
};

// How a host thread waits for a DeviceEvent: spinning on a core (the shortest delay), or blocked
// until the GPU signals, leaving the core to other threads meanwhile.
enum class HostWait { spin, block };

// A point in one stream's queued work that another stream, or the host, can wait for (a
// cudaEvent_t without timing) of device `device`. Waiting for one never recorded returns at once.
// Movable, not copyable.
class DeviceEvent {
 public:
  DeviceEvent() = default;
  explicit DeviceEvent(int device, HostWait host_wait = HostWait::spin);
  ~DeviceEvent();
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;

  // Marks the end of the work queued on `stream` so far.
  void record(void* stream);
  // Makes the work queued on `stream` from now on wait for the recorded point.
  void queue_wait(void* stream) const;
  // Waits on this host thread until the GPU has reached the recorded point.
  void wait() const;
  // False for a default-constructed (or moved-from) event, which has no CUDA event to use.
  bool made() const { return event_ != nullptr; }

 private:
  void* event_ = nullptr;
};

// Host memory the caller owns, page-locked in place (cudaHostRegister) for this object's life, so
// that copies from it to a GPU run at the link's rate instead of through a staging buffer. Where
// kbench has no CUDA, or the memory cannot be locked, it stays pageable: pinned() says which, and
// copies work either way. The memory must outlive this object. Movable, not copyable.
class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(void* data, std::size_t bytes);
  ~HostRegistration();
  HostRegistration(HostRegistration&& other) noexcept;
  HostRegistration& operator=(HostRegistration&& other) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  bool pinned() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
};

// Copies `rows` rows of `row_bytes` bytes, rows `from_pitch` apart to rows `to_pitch` apart,
// between host and device memory in any direction, queued on `stream`.
void copy_rows_async(void* to, std::size_t to_pitch, const void* from, std::size_t from_pitch,
                     std::size_t row_bytes, std::size_t rows, void* stream);
// Sets `bytes` bytes of device memory to `byte`, queued on `stream`.
void fill_async(void* data, std::uint8_t byte, std::size_t bytes, void* stream);
// Copies the last channel of every frame of `from`, starting `inset` pixels in from its top and
// left, into the last channel of `to`'s frames (device views of the same channel count), queued
// on `stream`.
void copy_last_channel_async(const ConstImageView& from, int inset, const ImageView& to,
                             void* stream);
// Waits for everything queued on `stream`.
void synchronize(void* stream);
// The CUDA device that `pointer` lies on, or -1 for host memory.
int device_of(const void* pointer);

// Device memory a context keeps between calls, by name: allocated at a name's first use, grown
// when a call needs more, never shrunk. `uploaded` also keeps values copied from the host,
// copied again only when they change. A call begins with begin(stream): when the stream is not
// the previous call's, it waits for the previous call's work first, so calls of one context on
// different streams never use the scratch at the same time.
class DeviceScratch {
 public:
  explicit DeviceScratch(int device) : device_(device) {}
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  int device() const { return device_; }
  void begin(void* stream);
  void* bytes(const std::string& name, std::size_t size);
  const void* uploaded(const std::string& name, const void* host, std::size_t size, void* stream);
  // Page-locked host memory of at least `size` bytes for staged copies, grown, never shrunk.
  void* staging(std::size_t size);

 private:
  struct Uploaded {
    DeviceMemory memory;
    std::vector<unsigned char> values;
  };
  int device_;
  bool begun_ = false;
  void* last_stream_ = nullptr;
  DeviceEvent stream_change_;  // made at the first change of stream
  std::unordered_map<std::string, DeviceMemory> buffers_;
  std::unordered_map<std::string, Uploaded> uploads_;
  PinnedMemory staging_;
};

// Where a call on views runs: the caller's stream and the context's scratch memory.
struct ViewWork {
  void* stream = nullptr;
  DeviceScratch* scratch = nullptr;
};

// Frames as a kernel reads or writes them: frame f's row y at data + f · frame_stride + y · pitch.
struct FrameLayout {
  std::uint8_t* data = nullptr;
  std::size_t pitch = 0;
  std::size_t frame_stride = 0;
};

// Copies every frame of `from` into `to`, views of one shape in any two places, queued on
// `stream`.
void copy_view_async(const ImageView& to, const ConstImageView& from, void* stream);
// Converts `rows` descriptors of float values, rows `stride` bytes apart in device memory, into
// packed u8 rows at `to`, queued on `stream`; the flat index (row · 128 + column) of the first
// value that is not a whole number 0..255 lowers *first_bad (device memory the caller set to
// kNoBadValue).
constexpr std::uint32_t kNoBadValue = ~std::uint32_t(0);
void descriptors_to_u8_async(const float* from, std::size_t stride, int rows, std::uint8_t* to,
                             std::uint32_t* first_bad, void* stream);
// Merges one piece's nearest two per query (cemd keys of rows numbered from 0 in the piece,
// query q's in piece[2q] and piece[2q + 1]) into the nearest two so far in `running` (the same
// layout, rows of the whole database), the piece's rows renumbered from `first_row`, queued on
// `stream`; first_row plus the piece's rows must stay below 2^32.
void merge_top2_keys_async(std::uint64_t* running, const std::uint64_t* piece, int queries,
                           std::uint32_t first_row, void* stream);
// Copies host view `from` into device view `to` (one shape) through `staging`, page-locked memory
// of at least from's packed bytes: the host threads pack a step of rows into it while the
// previous step's copy to the device runs (a copy from pageable memory runs at a quarter to a
// half of one from page-locked memory). Returns with the last step queued on `stream`.
void upload_staged(const ImageView& to, const ConstImageView& from, void* staging, void* stream);
// Copies device view `from` into host view `to` (one shape) through `staging`, as upload_staged:
// one copy into it on `stream`, a wait, and the host threads unpack the rows. Returns when `to`
// holds the frames.
void download_staged(const ImageView& to, const ConstImageView& from, void* staging, void* stream);

// Whether a kernel that loads and stores whole `vector`-byte vectors from each row's start can
// use `view` in place: pointer, pitch and frame stride multiples of `vector`, and rows of a whole
// number of vectors (so that nothing past a row's bytes is touched).
bool usable_by_vectors(const ConstImageView& view, std::size_t vector);
// `view`'s frames for such a kernel: the view itself where usable, otherwise a copy in the
// scratch memory `name`, rows padded to whole vectors, queued on the call's stream.
FrameLayout vector_input(const ConstImageView& view, std::size_t vector, const ViewWork& work,
                         const char* name);
// Where such a kernel writes `view`'s frames: the view itself where usable, otherwise the scratch
// memory `name`, which finish_vector_output then copies into the view.
FrameLayout vector_output(const ImageView& view, std::size_t vector, const ViewWork& work,
                          const char* name);
void finish_vector_output(const FrameLayout& written, const ImageView& view, const ViewWork& work);

}  // namespace kbench
