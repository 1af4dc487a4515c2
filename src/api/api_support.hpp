#pragma once
// What the library calls share: checking views, copying between views and the registry's host
// types, and choosing and running a variant through the context.

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <mutex>
#include <string>

#include "kbench/cemd.hpp"
#include "kbench/context.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/image.hpp"
#include "kbench/system_info.hpp"

namespace kbench::api {

// Refuses device memory where a call takes host views only.
void require_host(const MemoryPlace& place, const char* what);
// Refuses a view that is not a usable image: `what` names the argument ("in", "codes").
void check_image_view(const ConstImageView& view, const char* what);
// A view's name and where its memory is.
struct NamedPlace {
  const char* name;
  MemoryPlace place;
};
// True when the call's views are on the device: refuses views of mixed places, and device views
// of another device than the context's or where kbench has no CUDA.
bool device_call(Context& context, std::initializer_list<NamedPlace> views);
inline bool device_call(Context& context, const ConstImageView& in, const ImageView& out,
                        const char* out_name) {
  return device_call(context, {{"in", in.place}, {out_name, out.place}});
}
// The context's device scratch memory, ready for a call on `stream` (the device made current).
ViewWork begin_device_call(Context& context, const Stream& stream);

// An image of this shape without pixels, for choosing a variant.
inline ImageU8 image_shape(int width, int height, int channels) {
  ImageU8 image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  return image;
}

// Host views through a variant that takes device views: `in` copied into the context's device
// scratch memory, `run(device_in, device_out, work)` queued on the legacy default stream, the
// result copied into `out` and waited for. Times the parts into the call's CallInfo.
template <class Algorithm, class Run>
void through_device(Context& context, const Variant<Algorithm>& variant, const ConstImageView& in,
                    const ImageView& out, const Run& run);
// After a call on device views: waits when asked, and records what ran.
void end_device_call(Context& context, const Stream& stream, CallInfo info);
// Refuses an output view of another shape than `width` × `height` × `channels` × `frames`, or
// one that overlaps `input`.
void check_output_view(const ImageView& view, const char* what, int width, int height, int channels,
                       int frames, const ConstImageView& input);
// The distance in bytes between rows of `row_bytes` whose caller gave `stride` (0: packed);
// refuses a stride shorter than a row or not a multiple of the `element` size.
std::size_t checked_stride(const std::string& what, std::size_t stride, std::size_t row_bytes,
                           std::size_t element);
// Refuses a descriptor view that is not `rows` readable descriptors.
void check_descriptor_view(const DescriptorView& view, const char* what);

// Frame `frame` of `view` as a packed host image.
ImageU8 image_of(const ConstImageView& view, int frame);
// The same in the context's staging image, which is kept between calls (allocated again only
// for a new shape); hand it back with return_staging when the call is done with it.
ImageU8 staged_frame(Context& context, const ConstImageView& view, int frame);
void return_staging(Context& context, ImageU8&& image);
// Writes `image` into frame `frame` of `view`.
void write_frame(const ImageU8& image, const ImageView& view, int frame);
// The descriptors of `view`, checked to be whole numbers 0..255.
DescriptorSet descriptors_of(const DescriptorView& view, const char* what);

// The context's cached variant for `key` (the algorithm, the choice and the input's shape), or
// the one `choice` selects for `input`, cached under `key`.
const void* cached_variant(Context& context, const std::string& key);
void cache_variant(Context& context, const std::string& key, const void* variant);
void record_call(Context& context, CallInfo info);
// Adds what the last call found to its CallInfo.
void describe_call(Context& context, std::string detail);

// A key naming a choice, for the cache.
std::string choice_key(const char* algorithm, const Choice& choice);

// False on a thread that may not use Kokkos' host spaces: Kokkos 3.4 keeps its OpenMP instance
// per thread, and host Views are initialised through it, so only the thread that started Kokkos
// can run a portable variant on a host backend (its CUDA ones run from any thread).
bool kokkos_host_usable_here();

// The variant for `choice` and `input` (cached under the choice and `shape`); with `on_views`,
// among the variants that take device views.
template <class Algorithm>
const Variant<Algorithm>& choose(Context& context, const typename Algorithm::Input& input,
                                 const Choice& choice, const std::string& shape,
                                 bool on_views = false) {
  const bool host_kokkos_here = kokkos_host_usable_here();
  const std::string key = choice_key(Algorithm::name, choice) + "|" + shape +
                          (host_kokkos_here ? "" : "|other thread") + (on_views ? "|views" : "");
  if (const void* cached = cached_variant(context, key)) {
    return *static_cast<const Variant<Algorithm>*>(cached);
  }
  VariantChoice<Algorithm> wanted{choice.variant, choice.backend, {}, {}};
  wanted.only = [layer = choice.layer, host_kokkos_here, on_views](const Variant<Algorithm>& v) {
    const bool host_kokkos = v.layer == Layer::portable && v.backend != Backend::cuda;
    return (layer.empty() || layer == to_string(v.layer)) && (host_kokkos_here || !host_kokkos) &&
           (!on_views || v.on_views);
  };
  wanted.only_what = (choice.layer.empty() ? std::string() : choice.layer + " ") +
                     (on_views ? "device-view " : "") +
                     (host_kokkos_here ? ""
                                       : "(on this thread: not a Kokkos host variant, which "
                                         "Kokkos 3.4 runs only on the thread that started "
                                         "it)");
  const Variant<Algorithm>& variant = select_variant(input, wanted, gpu_available());
  cache_variant(context, key, &variant);
  return variant;
}

// Kokkos 3.4's execution spaces are one instance each per process, not safe to launch on from
// two threads at once: calls through the portable layer take this lock.
std::mutex& kokkos_mutex();

// Runs `work` (which runs or queues `variant`), holding kokkos_mutex() when it is a portable
// variant.
template <class Algorithm, class Work>
void in_kokkos_turn(const Variant<Algorithm>& variant, const Work& work) {
  std::unique_lock<std::mutex> lock(kokkos_mutex(), std::defer_lock);
  if (variant.layer == Layer::portable) lock.lock();
  work();
}

// What a call of `variant` ran, with its times.
template <class Algorithm>
CallInfo call_info(const Variant<Algorithm>& variant, double compute_ms, double total_ms) {
  return {Algorithm::name,
          variant.name,
          to_string(variant.layer),
          to_string(variant.backend),
          compute_ms,
          total_ms,
          ""};
}

// Runs `queue` (which queues `variant`'s work on views on the call's stream) and records the
// call.
template <class Algorithm, class Queue>
void run_on_views(Context& context, const Variant<Algorithm>& variant, const Queue& queue,
                  const Stream& stream) {
  in_kokkos_turn(variant, queue);
  end_device_call(context, stream, call_info(variant, 0, 0));
}

template <class Algorithm>
typename Algorithm::Output run(Context& context, const Variant<Algorithm>& variant,
                               const typename Algorithm::Input& input) {
  RunTimes times;
  typename Algorithm::Output out;
  in_kokkos_turn(variant, [&] { out = run_once(variant, input, &times); });
  record_call(context, call_info(variant, times.compute_ms, times.total_ms));
  return out;
}

template <class Algorithm, class Run>
void through_device(Context& context, const Variant<Algorithm>& variant, const ConstImageView& in,
                    const ImageView& out, const Run& run) {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  const ScopedDevice on(context.options().device);
  const Clock::time_point start = Clock::now();
  const ViewWork work = begin_device_call(context, Stream{});
  const MemoryPlace device = MemoryPlace::cuda(context.options().device);
  const auto packed = [&](const auto& view, const char* name) {
    const std::size_t bytes = view.row_bytes() * std::size_t(view.height) * view.frames;
    return ImageView{static_cast<std::uint8_t*>(work.scratch->bytes(name, bytes)),
                     view.width,
                     view.height,
                     view.channels,
                     0,
                     view.frames,
                     0,
                     device};
  };
  const ImageView device_in = packed(in, "host call input");
  const ImageView device_out = packed(out, "host call output");
  void* staging = work.scratch->staging(
      std::max(in.row_bytes() * std::size_t(in.height), out.row_bytes() * std::size_t(out.height)) *
      std::size_t(in.frames));
  upload_staged(device_in, in, staging, work.stream);
  synchronize(work.stream);
  const Clock::time_point computing = Clock::now();
  in_kokkos_turn(variant, [&] { run(ConstImageView(device_in), device_out, work); });
  synchronize(work.stream);
  const Clock::time_point computed = Clock::now();
  download_staged(out, device_out, staging, work.stream);
  record_call(context, call_info(variant, ms(computing, computed), ms(start, Clock::now())));
}

}  // namespace kbench::api
