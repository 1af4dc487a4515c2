// kbench/device_memory.hpp's scratch memory, and the calls' refusals where kbench has no CUDA.
#include "kbench/device_memory.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kbench/error.hpp"
#include "kbench/image.hpp"

namespace kbench {

#if !defined(KBENCH_HAVE_CUDA)

namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw Error(std::string(what) + ": this kbench was built without CUDA");
}

}  // namespace

bool built_with_cuda() {
  return false;
}

void initialise_device(int) {
  no_cuda("a CUDA device");
}

ScopedDevice::ScopedDevice(int) {
  no_cuda("a CUDA device");
}
ScopedDevice::~ScopedDevice() = default;

DeviceMemory::DeviceMemory(std::size_t, int) {
  no_cuda("device memory");
}
DeviceMemory::~DeviceMemory() = default;
DeviceMemory::DeviceMemory(DeviceMemory&&) noexcept = default;
DeviceMemory& DeviceMemory::operator=(DeviceMemory&&) noexcept = default;

PinnedMemory::PinnedMemory(std::size_t) {
  no_cuda("page-locked memory");
}
PinnedMemory::~PinnedMemory() = default;
PinnedMemory::PinnedMemory(PinnedMemory&&) noexcept = default;
PinnedMemory& PinnedMemory::operator=(PinnedMemory&&) noexcept = default;

DeviceStream::DeviceStream(int) {
  no_cuda("a CUDA stream");
}
DeviceStream::~DeviceStream() = default;
DeviceStream::DeviceStream(DeviceStream&&) noexcept = default;
DeviceStream& DeviceStream::operator=(DeviceStream&&) noexcept = default;

DeviceEvent::DeviceEvent(int, HostWait) {
  no_cuda("a CUDA event");
}
DeviceEvent::~DeviceEvent() = default;
DeviceEvent::DeviceEvent(DeviceEvent&&) noexcept = default;
DeviceEvent& DeviceEvent::operator=(DeviceEvent&&) noexcept = default;
void DeviceEvent::record(void*) {
  no_cuda("a CUDA event");
}
void DeviceEvent::queue_wait(void*) const {
  no_cuda("a CUDA event");
}
void DeviceEvent::wait() const {
  no_cuda("a CUDA event");
}

HostRegistration::HostRegistration(void*, std::size_t) {}
HostRegistration::~HostRegistration() = default;
HostRegistration::HostRegistration(HostRegistration&&) noexcept = default;
HostRegistration& HostRegistration::operator=(HostRegistration&&) noexcept = default;

void copy_rows_async(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t,
                     void*) {
  no_cuda("a device copy");
}
void fill_async(void*, std::uint8_t, std::size_t, void*) {
  no_cuda("a device fill");
}
void copy_last_channel_async(const ConstImageView&, int, const ImageView&, void*) {
  no_cuda("a device copy");
}
void descriptors_to_u8_async(const float*, std::size_t, int, std::uint8_t*, std::uint32_t*, void*) {
  no_cuda("a device conversion");
}
void merge_top2_keys_async(std::uint64_t*, const std::uint64_t*, int, std::uint32_t, void*) {
  no_cuda("a device merge");
}
void synchronize(void*) {
  no_cuda("a stream");
}
int device_of(const void*) {
  return -1;
}
void DeviceScratch::begin(void*) {
  no_cuda("a call on device views");
}

#endif

void* DeviceScratch::staging(std::size_t size) {
  if (staging_.size() < size) {
    staging_ = PinnedMemory();  // the old allocation goes before the larger one is made
    staging_ = PinnedMemory(size);
  }
  return staging_.data();
}

void* DeviceScratch::bytes(const std::string& name, std::size_t size) {
  DeviceMemory& memory = buffers_[name];
  if (memory.size() < size) {
    memory = DeviceMemory();  // the old allocation goes before the larger one is made
    memory = DeviceMemory(size, device_);
    // Zeroed once, so that vector loads running into a row's padding never read uninitialised
    // memory.
    fill_async(memory.data(), 0, size, nullptr);
    synchronize(nullptr);
  }
  return memory.data();
}

const void* DeviceScratch::uploaded(const std::string& name, const void* host, std::size_t size,
                                    void* stream) {
  Uploaded& upload = uploads_[name];
  const auto* bytes = static_cast<const unsigned char*>(host);
  if (upload.memory.size() == size && std::memcmp(upload.values.data(), bytes, size) == 0) {
    return upload.memory.data();
  }
  if (upload.memory.size() != size) upload.memory = DeviceMemory(size, device_);
  upload.values.assign(bytes, bytes + size);
  copy_rows_async(upload.memory.data(), size, upload.values.data(), size, size, 1, stream);
  return upload.memory.data();
}

namespace {

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Copies every frame between two layouts of one shape, in one 2D copy where both hold their
// frames back to back.
void copy_frames(const FrameLayout& to, const FrameLayout& from, std::size_t row_bytes, int height,
                 int frames, void* stream) {
  const bool back_to_back = to.frame_stride == to.pitch * std::size_t(height) &&
                            from.frame_stride == from.pitch * std::size_t(height);
  if (back_to_back) {
    copy_rows_async(to.data, to.pitch, from.data, from.pitch, row_bytes,
                    std::size_t(height) * std::size_t(frames), stream);
    return;
  }
  for (int f = 0; f < frames; ++f) {
    copy_rows_async(to.data + std::size_t(f) * to.frame_stride, to.pitch,
                    from.data + std::size_t(f) * from.frame_stride, from.pitch, row_bytes,
                    std::size_t(height), stream);
  }
}

template <class Byte>
FrameLayout layout_of(const BasicImageView<Byte>& view) {
  return {const_cast<std::uint8_t*>(view.data), view.row_pitch(), view.frame_pitch()};
}

FrameLayout scratch_layout(const ConstImageView& view, std::size_t vector, const ViewWork& work,
                           const char* name) {
  const std::size_t pitch = round_up(view.row_bytes(), vector);
  const std::size_t frame = pitch * std::size_t(view.height);
  auto* data =
      static_cast<std::uint8_t*>(work.scratch->bytes(name, frame * std::size_t(view.frames)));
  return {data, pitch, frame};
}

}  // namespace

void copy_view_async(const ImageView& to, const ConstImageView& from, void* stream) {
  copy_frames(layout_of(to), layout_of(from), from.row_bytes(), from.height, from.frames, stream);
}

namespace {

// Bytes of rows a staged upload moves per step.
constexpr std::size_t kStagingStepBytes = std::size_t(4) << 20;

// Calls move(layout_rows, packed_rows, rows) for rows [first, first + count) of all frames' rows
// in order (frame f's row y is row f · height + y), once per frame they touch: layout_rows in
// `layout`, packed_rows in `staging`, where the rows lie packed.
template <class Move>
void for_each_frame_run(const FrameLayout& layout, std::uint8_t* staging, std::size_t row_bytes,
                        std::size_t height, std::size_t first, std::size_t count,
                        const Move& move) {
  for (std::size_t row = first; row < first + count;) {
    const std::size_t frame = row / height, y = row % height;
    const std::size_t rows = std::min(height - y, first + count - row);
    move(layout.data + frame * layout.frame_stride + y * layout.pitch, staging + row * row_bytes,
         rows);
    row += rows;
  }
}

}  // namespace

void upload_staged(const ImageView& to, const ConstImageView& from, void* staging, void* stream) {
  const std::size_t row_bytes = from.row_bytes(), height = std::size_t(from.height);
  const std::size_t rows = height * std::size_t(from.frames);
  const std::size_t step =
      std::max<std::size_t>(1, kStagingStepBytes / std::max<std::size_t>(row_bytes, 1));
  auto* packed = static_cast<std::uint8_t*>(staging);
  const FrameLayout host = layout_of(from), device = layout_of(to);
  for (std::size_t first = 0; first < rows; first += step) {
    const std::size_t count = std::min(step, rows - first);
    for_each_frame_run(host, packed, row_bytes, height, first, count,
                       [&](std::uint8_t* host_rows, std::uint8_t* packed_rows, std::size_t n) {
                         copy_host_rows(packed_rows, row_bytes, host_rows, host.pitch, row_bytes,
                                        n);
                       });
    for_each_frame_run(device, packed, row_bytes, height, first, count,
                       [&](std::uint8_t* device_rows, std::uint8_t* packed_rows, std::size_t n) {
                         copy_rows_async(device_rows, device.pitch, packed_rows, row_bytes,
                                         row_bytes, n, stream);
                       });
  }
}

void download_staged(const ImageView& to, const ConstImageView& from, void* staging, void* stream) {
  const std::size_t row_bytes = from.row_bytes(), height = std::size_t(from.height);
  const std::size_t rows = height * std::size_t(from.frames);
  auto* packed = static_cast<std::uint8_t*>(staging);
  const FrameLayout device = layout_of(from), host = layout_of(to);
  for_each_frame_run(device, packed, row_bytes, height, 0, rows,
                     [&](std::uint8_t* device_rows, std::uint8_t* packed_rows, std::size_t n) {
                       copy_rows_async(packed_rows, row_bytes, device_rows, device.pitch, row_bytes,
                                       n, stream);
                     });
  synchronize(stream);
  for_each_frame_run(host, packed, row_bytes, height, 0, rows,
                     [&](std::uint8_t* host_rows, std::uint8_t* packed_rows, std::size_t n) {
                       copy_host_rows(host_rows, host.pitch, packed_rows, row_bytes, row_bytes, n);
                     });
}

bool usable_by_vectors(const ConstImageView& view, std::size_t vector) {
  const auto address = reinterpret_cast<std::uintptr_t>(view.data);
  return address % vector == 0 && view.row_pitch() % vector == 0 &&
         view.frame_pitch() % vector == 0 && view.row_bytes() % vector == 0;
}

FrameLayout vector_input(const ConstImageView& view, std::size_t vector, const ViewWork& work,
                         const char* name) {
  if (usable_by_vectors(view, vector)) return layout_of(view);
  const FrameLayout staged = scratch_layout(view, vector, work, name);
  copy_frames(staged, layout_of(view), view.row_bytes(), view.height, view.frames, work.stream);
  return staged;
}

FrameLayout vector_output(const ImageView& view, std::size_t vector, const ViewWork& work,
                          const char* name) {
  if (usable_by_vectors(view, vector)) return layout_of(view);
  return scratch_layout(view, vector, work, name);
}

void finish_vector_output(const FrameLayout& written, const ImageView& view, const ViewWork& work) {
  if (written.data == view.data) return;
  copy_frames(layout_of(view), written, view.row_bytes(), view.height, view.frames, work.stream);
}

}  // namespace kbench
