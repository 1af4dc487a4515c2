#pragma once
// The library calls' common parts: views of the caller's memory, the choice of implementation,
// and the Context that owns what is expensive to set up.
//
// A call (kbench::conv, kbench::lbp, kbench::sad_map, kbench::match, kbench::cemd_match,
// kbench::cemd_all_pairs; one per algorithm header) reads its inputs from views, checks them
// all before any work (kbench::Error naming the argument; nothing is written to an output view
// when a call refuses), runs the chosen variant and writes its outputs into the output views.
// Threads and contexts: see Context below; device views and streams: see Stream. A guide with
// examples: docs/library.md.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace kbench {

enum class MemoryKind { host, cuda };

// Where a view's memory is: host memory, or the memory of CUDA device `device`.
struct MemoryPlace {
  MemoryKind kind = MemoryKind::host;
  int device = 0;

  static MemoryPlace host() { return {}; }
  static MemoryPlace cuda(int device) { return {MemoryKind::cuda, device}; }
  bool on_host() const { return kind == MemoryKind::host; }
};

// One or more frames of one shape: 8-bit samples, `channels` interleaved per pixel, rows `pitch`
// bytes apart, frames `frame_stride` bytes apart. Zero pitch or stride mean packed.
template <class Byte>
struct BasicImageView {
  Byte* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 1;
  std::size_t pitch = 0;
  int frames = 1;
  std::size_t frame_stride = 0;
  MemoryPlace place;

  std::size_t row_bytes() const { return std::size_t(width) * std::size_t(channels); }
  std::size_t row_pitch() const { return pitch ? pitch : row_bytes(); }
  std::size_t frame_pitch() const { return frame_stride ? frame_stride : row_pitch() * height; }
  Byte* row(int frame, int y) const {
    return data + std::size_t(frame) * frame_pitch() + std::size_t(y) * row_pitch();
  }
  // The same memory, read-only (a template whose type depends on its parameter, so that the
  // read-only view declares no conversion to itself).
  template <class B = Byte, class = std::enable_if_t<!std::is_const_v<B>>>
  operator BasicImageView<const B>() const {
    return {data, width, height, channels, pitch, frames, frame_stride, place};
  }
};
using ImageView = BasicImageView<std::uint8_t>;
using ConstImageView = BasicImageView<const std::uint8_t>;

// A packed single image in host memory.
inline ImageView host_image(std::uint8_t* data, int width, int height, int channels) {
  return {data, width, height, channels, 0, 1, 0, MemoryPlace::host()};
}
inline ConstImageView host_image(const std::uint8_t* data, int width, int height, int channels) {
  return {data, width, height, channels, 0, 1, 0, MemoryPlace::host()};
}

// The CUDA stream a call on device views queues its work on (a cudaStream_t; null is CUDA's
// legacy default stream). The call returns without waiting for the work unless `wait` is set;
// calls on host views always wait.
// Device views (conv and lbp): the views' memory is on the context's CUDA device; the call
// queues its work on the caller's Stream and returns, writing its outputs there with no host
// round trip, every frame in one launch. A context keeps device scratch memory between calls;
// a call on another stream than the context's previous one first waits for that one's work.
struct Stream {
  void* handle = nullptr;
  bool wait = false;
};

enum class DescriptorType { u8, f32 };

// `rows` SIFT descriptors of 128 values, rows `row_stride` bytes apart (0: packed). Every value
// is a whole number 0..255, f32 ones too.
struct DescriptorView {
  const void* data = nullptr;
  int rows = 0;
  DescriptorType type = DescriptorType::u8;
  std::size_t row_stride = 0;
  MemoryPlace place;
};

// Which implementation runs a call. Empty fields leave it to kbench: the fastest registered
// variant for this machine and input (compare --list names them all).
struct Choice {
  std::string variant;  // a registry name, e.g. "cuda-u8-vec"
  std::string backend;  // "serial", "openmp" or "cuda"
  std::string layer;    // "sequential", "native_cpu", "portable" or "native_cuda"
};

struct ContextOptions {
  int device = 0;  // the CUDA device the context's device work runs on, where there is one
};

// What a call ran: the variant and its times (compute alone, and with transfers). A call on
// device views is not timed (it may still be running when it returns): its times are 0.
struct CallInfo {
  std::string algorithm, variant, layer, backend;
  double compute_ms = 0, total_ms = 0;
  std::string detail;  // what the run found beyond its result (e.g. how much was pruned)
};

// Owns what is expensive and per device: Kokkos (started by the first context unless the caller
// started it, and finalised at exit after the last one), and the choice of variant per input
// shape (made at a shape's first call). Movable, not copyable.
// Threads: a Context is used by one thread at a time. Several contexts may run calls at once
// from several threads (one per thread, on one device or several), with the same results as one
// thread; calls that run a portable (Kokkos) variant take turns, since Kokkos 3.4 has one
// instance of each execution space per process, and on a thread other than the one that started
// Kokkos the portable host variants are not chosen (Kokkos 3.4 runs its host spaces only there;
// its CUDA space runs from any thread). A context shared between threads needs the caller's
// lock.
class Context {
 public:
  Context();
  explicit Context(const ContextOptions& options);
  ~Context();
  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ContextOptions& options() const;
  // The variant and times of this context's last call.
  const CallInfo& last_call() const;

  struct State;
  State& state();

 private:
  std::unique_ptr<State> state_;
};

}  // namespace kbench
