#pragma once
// What every portable (Kokkos) variant shares: the execution spaces this build has, their
// registry backend, host/device buffers that skip copies when the space can read host memory, and
// what the calls on device views need (an instance on the caller's stream, frames' extents).

#include <Kokkos_Core.hpp>
#include <Kokkos_Graph.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kbench/device_memory.hpp"
#include "kbench/error.hpp"
#include "kbench/grid.hpp"
#include "kbench/image.hpp"
#include "kbench/isa.hpp"
#include "kbench/registry.hpp"

namespace kbench::portable {

template <class Exec>
constexpr Backend backend_of() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same<Exec, Kokkos::Cuda>::value) return Backend::cuda;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if (std::is_same<Exec, Kokkos::OpenMP>::value) return Backend::openmp;
#endif
  return Backend::serial;
}

// An execution space as a type only: the registry is built before Kokkos is initialised, when
// constructing a space instance (Kokkos::Cuda{}) prints an error.
template <class Exec>
struct Space {
  using type = Exec;
};

// Calls f(Space<Exec>{}) once for every execution space the variants are built for.
template <class F>
void for_each_exec_space(F&& f) {
#if defined(KOKKOS_ENABLE_SERIAL)
  f(Space<Kokkos::Serial>{});
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  f(Space<Kokkos::OpenMP>{});
#endif
#if defined(KOKKOS_ENABLE_CUDA)
  f(Space<Kokkos::Cuda>{});
#endif
}

template <Isa kIsa>
using IsaTag = std::integral_constant<Isa, kIsa>;

// Calls f(IsaTag<Isa::tuned>{}), then f(IsaTag<Isa::plain>{}): a schedule whose kernels use
// kbench's helpers is registered in both builds, the plain one named `<schedule>-plain-<backend>`.
// It gets the tuned build's rank and comes after it, so the user calls never
// pick it. On host backends the two builds are mostly the same code (the helpers' host forms are
// plain C++ already; sad4's psadbw is the exception), and the OpenMP rows show that.
template <class F>
void for_each_isa(F&& f) {
  f(IsaTag<Isa::tuned>{});
  f(IsaTag<Isa::plain>{});
}

// Work items that Exec runs at once: on GPUs, blocks of `threads_per_block` with
// `blocks_per_multiprocessor` resident on each multiprocessor (what a kernel's launch bounds
// promise); on host backends, one per thread.
template <class Exec>
long long resident_items(int threads_per_block, int blocks_per_multiprocessor) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    return (long long)Exec().cuda_device_prop().multiProcessorCount * threads_per_block *
           blocks_per_multiprocessor;
  }
#endif
  (void)threads_per_block;
  (void)blocks_per_multiprocessor;
  return Exec().concurrency();
}

// Teams of `team_threads` threads with `scratch_bytes` of team scratch each that Exec runs at
// once: on GPUs what the multiprocessors' shared memory, thread slots and block slots allow
// together (a block's shared memory is its scratch, the team header that Kokkos 3.4's
// ParallelFor<TeamPolicy> puts before it, and the runtime's reservation); on host backends, one
// per thread.
template <class Exec>
long long resident_teams(int team_threads, std::size_t scratch_bytes) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
    const cudaDeviceProp& p = Exec().cuda_device_prop();
    const std::size_t per_block =
        scratch_bytes + sizeof(double) * (team_threads + 2) + p.reservedSharedMemPerBlock;
    long long per_sm =
        std::min(p.maxThreadsPerMultiProcessor / team_threads, p.maxBlocksPerMultiProcessor);
    per_sm = std::min(per_sm, (long long)(p.sharedMemPerMultiprocessor / per_block));
    return std::max(1LL, per_sm) * p.multiProcessorCount;
  }
#endif
  (void)team_threads;
  (void)scratch_bytes;
  return Exec().concurrency();
}

// Kokkos 3.4 launches a rank-2 MDRange on CUDA with one block per tile in grid y as in grid x,
// capped only at the x limit (2^31 − 1), while CUDA allows at most 65535 blocks in y: a range
// taller than that many tiles fails to launch. Ranges over image rows therefore launch in chunks
// (kbench::row_chunks), one chunk up to 262140 rows of 4-row tiles.
using kbench::row_chunks;
using kbench::LaunchRows;

template <class Exec>
constexpr bool reads_host_memory() {
  return Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
}

// 16 bytes that load and store as one unit where the hardware has 16-byte accesses.
struct alignas(16) Bytes16 {
  std::uint32_t word[4];
};

// Rows of every pitched image in Exec's memory start this many bytes apart at least, so that
// kernels load and store whole 16-byte vectors at any width: a row's last vector runs into the
// padding, whose bytes no result reads.
constexpr std::size_t kRowAlignBytes = 16;

inline std::size_t row_pitch(std::size_t row_bytes) {
  return (row_bytes + kRowAlignBytes - 1) / kRowAlignBytes * kRowAlignBytes;
}

template <class T>
using HostView = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Host memory that Exec's copies read and write at the link's full speed: page-locked (Kokkos'
// CUDA host-pinned space) for CUDA, plain host memory elsewhere. End-to-end variants keep the
// user's images there, as a program that streams frames would (the native ones: cudaMallocHost).
template <class Exec>
struct PinnedHost {
  using space = Kokkos::HostSpace;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct PinnedHost<Kokkos::Cuda> {
  using space = Kokkos::CudaHostPinnedSpace;
};
#endif
template <class Exec, class T = std::uint8_t>
using PinnedHostView = Kokkos::View<T*, typename PinnedHost<Exec>::space>;

// An input array in Exec's memory: the host array itself where Exec reads host memory, else a
// device copy refreshed by upload().
template <class T, class Exec>
class InputBuffer {
 public:
  using View = Kokkos::View<const T*, typename Exec::memory_space,
                            Kokkos::MemoryTraits<Kokkos::RandomAccess>>;

  InputBuffer(const T* host, std::size_t count, const char* label) : host_(host, count) {
    if constexpr (reads_host_memory<Exec>()) {
      view_ = View(host, count);
    } else {
      device_ = allocate(label, count);
      view_ = device_;
    }
  }
  void upload() {
    if constexpr (!reads_host_memory<Exec>()) Kokkos::deep_copy(device_, host_);
  }
  const View& view() const { return view_; }

 private:
  using DeviceView = Kokkos::View<T*, typename Exec::memory_space>;
  static DeviceView allocate(const char* label, std::size_t count) {
    try {
      return DeviceView(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), count);
    } catch (const std::exception& e) {
      throw OutOfMemory(std::string("cannot allocate ") + std::to_string(count * sizeof(T)) +
                        " bytes for " + label + " in " + Exec::name() + " memory: " + e.what());
    }
  }

  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host_;
  DeviceView device_;
  View view_;
};

// An output array in Exec's memory; download() copies it into a host array.
template <class T, class Exec>
class OutputBuffer {
 public:
  using View = Kokkos::View<T*, typename Exec::memory_space>;

  OutputBuffer(std::size_t count, const char* label) {
    try {
      view_ = View(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), count);
    } catch (const std::exception& e) {
      throw OutOfMemory(std::string("cannot allocate ") + std::to_string(count * sizeof(T)) +
                        " bytes for " + label + " in " + Exec::name() + " memory: " + e.what());
    }
  }
  void poison(std::uint8_t byte) {
    Kokkos::deep_copy(Exec{},
                      Kokkos::View<std::uint8_t*, typename Exec::memory_space,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          reinterpret_cast<std::uint8_t*>(view_.data()), view_.size() * sizeof(T)),
                      byte);
    Exec{}.fence();
  }
  void download(T* host) const { Kokkos::deep_copy(HostView<T>(host, view_.size()), view_); }
  const View& view() const { return view_; }

 private:
  View view_;
};

// Byte x of row y, from rows `from_pitch` bytes apart to rows `to_pitch` apart.
//
// Kernels in this folder's headers that several source files instantiate with the same template
// arguments are named functors, never KOKKOS_LAMBDA: in a CUDA build nvcc gives each file its own
// copy of an extended lambda's host-side call pointers (set when the lambda is made), while the
// linker keeps one file's copy of the Kokkos code that calls through them. On a host backend a
// lambda made in one file is then called through another file's pointers, still null (as
// sad-pruned's top-k full search on OpenMP showed: perf/notes/sad-pruned.md).
template <class To, class From>
struct RepitchRows {
  To to;
  From from;
  std::size_t to_pitch, from_pitch;
  KOKKOS_INLINE_FUNCTION void operator()(int x, int y) const {
    to(pitched_index(to_pitch, x, y)) = from(pitched_index(from_pitch, x, y));
  }
};

// A u8 image in Exec's memory with rows pitch() bytes apart (row_pitch), while the host image
// keeps the user's tight rows. upload() and download() move it through a tight staging array in
// Exec's memory (the host array itself where Exec reads host memory) and a kernel that spreads or
// gathers the rows: Kokkos 3.4's deep_copy moves only contiguous views between memory spaces.
template <class Exec>
class PitchedImage {
 public:
  using Memory = typename Exec::memory_space;
  using View = Kokkos::View<std::uint8_t*, Memory>;

  // The padding starts as zeros (the view is initialised) and stays so for inputs.
  PitchedImage(int row_bytes, int rows, const char* label)
      : row_bytes_(row_bytes),
        rows_(rows),
        pitch_(row_pitch(std::size_t(row_bytes))),
        label_(label),
        view_(allocate<std::uint8_t>(pitch_ * std::size_t(rows), true)) {
    if constexpr (!reads_host_memory<Exec>()) {
      staging_ = allocate<std::uint8_t>(std::size_t(row_bytes) * std::size_t(rows), false);
    }
  }

  void upload(const std::uint8_t* host) {
    const Tight tight = tight_view(host);
    if constexpr (!reads_host_memory<Exec>()) {
      Kokkos::deep_copy(staging_, HostView<const std::uint8_t>(host, staging_.size()));
    }
    const RepitchRows<View, Tight> spread{view_, tight, pitch_, std::size_t(row_bytes_)};
    for (const LaunchRows& rows : row_chunks(rows_, kCopyTileRows)) {
      Kokkos::parallel_for("spread_rows", rows_policy(rows), spread);
    }
    Exec{}.fence();
  }

  void download(std::uint8_t* host) const {
    const Tight tight = tight_view(host);
    const RepitchRows<Tight, View> gather{tight, view_, std::size_t(row_bytes_), pitch_};
    for (const LaunchRows& rows : row_chunks(rows_, kCopyTileRows)) {
      Kokkos::parallel_for("gather_rows", rows_policy(rows), gather);
    }
    Exec{}.fence();
    if constexpr (!reads_host_memory<Exec>()) {
      Kokkos::deep_copy(HostView<std::uint8_t>(host, staging_.size()), staging_);
    }
  }

  void poison(std::uint8_t byte) {
    Kokkos::deep_copy(Exec{}, view_, byte);
    Exec{}.fence();
  }

  const View& view() const { return view_; }
  // The image as kernels read an input.
  Kokkos::View<const std::uint8_t*, Memory, Kokkos::MemoryTraits<Kokkos::RandomAccess>> input()
      const {
    return view_;
  }
  std::size_t pitch() const { return pitch_; }

 private:
  using Tight = Kokkos::View<std::uint8_t*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  // Every byte of every row, x fastest, in tiles of two warps' bytes of 4 rows (coalesced on
  // GPUs, no division per byte).
  using RowsPolicy =
      Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
  static constexpr int kCopyTileBytes = 64;
  static constexpr int kCopyTileRows = 4;
  // One of row_chunks().
  RowsPolicy rows_policy(const LaunchRows& rows) const {
    return RowsPolicy({0, rows.begin}, {row_bytes_, rows.end}, {kCopyTileBytes, kCopyTileRows});
  }

  // The tight rows in Exec's memory: `host` itself, or the staging array.
  Tight tight_view(const std::uint8_t* host) const {
    if constexpr (reads_host_memory<Exec>()) {
      return Tight(const_cast<std::uint8_t*>(host), std::size_t(row_bytes_) * std::size_t(rows_));
    } else {
      (void)host;
      return Tight(staging_.data(), staging_.size());
    }
  }

  template <class T>
  Kokkos::View<T*, Memory> allocate(std::size_t count, bool zeroed) const {
    try {
      return zeroed
                 ? Kokkos::View<T*, Memory>(std::string(label_), count)
                 : Kokkos::View<T*, Memory>(
                       Kokkos::view_alloc(std::string(label_), Kokkos::WithoutInitializing), count);
    } catch (const std::exception& e) {
      throw OutOfMemory(std::string("cannot allocate ") + std::to_string(count * sizeof(T)) +
                        " bytes for " + label_ + " in " + Exec::name() + " memory: " + e.what());
    }
  }

  int row_bytes_, rows_;
  std::size_t pitch_;
  const char* label_;
  View view_;
  View staging_;
};

// How a runner enqueues a chain of kernels, each after the one before. StreamLaunch: a
// Kokkos::parallel_for each, the way Kokkos launches by default. GraphLaunch: the chain's next node
// in a Kokkos graph (Kokkos::Experimental::Graph), which the runner builds once and submits whole
// each run; on CUDA that is one CUDA graph, whose kernels the device starts one after another
// without a launch from the host each. branch() gives a launcher whose kernels need only those
// enqueued so far: in a graph they may run beside the ones enqueued through the original from then
// on; on a stream everything still runs in turn.
struct StreamLaunch {
  StreamLaunch branch() const { return {}; }

  template <class Policy, class Kernel>
  void parallel_for(const std::string& name, const Policy& policy, const Kernel& kernel) {
    Kokkos::parallel_for(name, policy, kernel);
  }
};

template <class Exec>
class GraphLaunch {
 public:
  explicit GraphLaunch(Kokkos::Experimental::GraphNodeRef<Exec> root) : last_(std::move(root)) {}

  GraphLaunch branch() const { return *this; }

  template <class Policy, class Kernel>
  void parallel_for(const std::string& name, const Policy& policy, const Kernel& kernel) {
    last_ = last_.then_parallel_for(name, policy, kernel);
  }

 private:
  Kokkos::Experimental::GraphNodeRef<Exec> last_;  // the node the next kernel follows
};

// ---- Calls on device views (Variant::on_views) ------------------------------------------------

// An instance of Exec that queues its work on the caller's `stream` (a cudaStream_t; null is
// CUDA's legacy default stream). Defined for Kokkos::Cuda, the one space with streams.
template <class Exec>
Exec stream_instance(void* stream);

#if defined(KOKKOS_ENABLE_CUDA)
// Streams whose instance is kept; a call on a further stream drops the oldest instance made.
constexpr std::size_t kKeptStreamInstances = 16;

// Kokkos 3.4's Kokkos::Cuda(stream) sets up an instance of its own (it synchronises the device,
// allocates scratch memory and zeroes it), so each stream's instance is made at its first call
// and kept until Kokkos finalises. A null stream takes Kokkos' default instance, which launches
// on stream 0, the legacy default stream (kbench is built without per-thread default streams);
// Kokkos::Cuda(nullptr) would set up Kokkos' process-wide state a second time.
template <>
inline Kokkos::Cuda stream_instance<Kokkos::Cuda>(void* stream) {
  if (!stream) return Kokkos::Cuda();
  struct Kept {
    std::mutex mutex;
    std::vector<std::pair<void*, Kokkos::Cuda>> instances;  // oldest first
    bool emptied_at_finalize = false;
  };
  // Never destroyed: a Kokkos::Cuda may not outlive Kokkos, so the finalize hook empties it.
  static Kept* const kept = new Kept;
  const std::lock_guard<std::mutex> lock(kept->mutex);
  for (const auto& entry : kept->instances) {
    if (entry.first == stream) return entry.second;
  }
  if (!kept->emptied_at_finalize) {
    Kokkos::push_finalize_hook([] {
      const std::lock_guard<std::mutex> hook_lock(kept->mutex);
      kept->instances.clear();
    });
    kept->emptied_at_finalize = true;
  }
  if (kept->instances.size() == kKeptStreamInstances)
    kept->instances.erase(kept->instances.begin());
  kept->instances.emplace_back(stream, Kokkos::Cuda(static_cast<cudaStream_t>(stream)));
  return kept->instances.back().second;
}
#endif

// The bytes of one frame of `layout` that a kernel reaching `reach` bytes into each of `rows`
// rows spans.
inline std::size_t frame_span(const FrameLayout& layout, int rows, std::size_t reach) {
  return std::size_t(rows - 1) * layout.pitch + reach;
}

// The layout's pitch as the int that kernels' shapes hold.
inline int int_pitch(const FrameLayout& layout) {
  if (layout.pitch > std::size_t(INT_MAX)) {
    throw Error("a row pitch of " + std::to_string(layout.pitch) +
                " bytes is more than the portable kernels take (" + std::to_string(INT_MAX) + ")");
  }
  return int(layout.pitch);
}

// An unmanaged rank-1 view of the same extent `count` elements further on: a kernel's views of
// frame 0 moved to another frame.
template <class View>
KOKKOS_INLINE_FUNCTION View shifted(const View& view, std::size_t count) {
  return View(view.data() + count, view.extent(0));
}

}  // namespace kbench::portable
