#include "kbench/context.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "api_support.hpp"
#include "kbench/kokkos_runtime.hpp"

namespace kbench {

namespace {

// Kokkos for every context of the process: started by the first one unless the program started
// it, and finalised at exit (Kokkos 4 cannot be started twice, so it is not finalised when the
// contexts come and go).
void start_kokkos() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Kokkos::is_initialized()) return;
    static char program[] = "kbench";
    char* arguments[] = {program, nullptr};
    int count = 1;
    static std::unique_ptr<KokkosRuntime> runtime;
    runtime = std::make_unique<KokkosRuntime>(count, arguments);
    std::atexit([] { runtime.reset(); });
  });
}

}  // namespace

struct Context::State {
  ContextOptions options;
  CallInfo last_call;
  std::unordered_map<std::string, const void*> variants;
  ImageU8 staging;                         // the input frame's host copy, kept between calls
  std::unique_ptr<DeviceScratch> scratch;  // made at the first call on device views
};

Context::Context() : Context(ContextOptions{}) {}

Context::Context(const ContextOptions& options) : state_(std::make_unique<State>()) {
  if (options.device < 0) {
    throw Error("ContextOptions::device is " + std::to_string(options.device) +
                "; CUDA devices are numbered from 0");
  }
  state_->options = options;
  start_kokkos();
}

Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

const ContextOptions& Context::options() const {
  return state_->options;
}

const CallInfo& Context::last_call() const {
  return state_->last_call;
}

Context::State& Context::state() {
  if (!state_) throw Error("this kbench::Context was moved from");
  return *state_;
}

namespace api {

namespace {

std::string shape_text(int width, int height, int channels, int frames) {
  return std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels) +
         (frames > 1 ? " (" + std::to_string(frames) + " frames)" : "");
}

std::string place_text(const MemoryPlace& place) {
  return place.on_host() ? "host memory" : "CUDA device " + std::to_string(place.device);
}

// Calls index rows with 32-bit pitches.
constexpr std::size_t kMaxPitch = std::size_t(1) << 31;

}  // namespace

void require_host(const MemoryPlace& place, const char* what) {
  if (!place.on_host()) {
    throw Error(std::string(what) +
                ": a CUDA device view; this call takes host views (copy the data to the host "
                "first)");
  }
}

void check_image_view(const ConstImageView& view, const char* what) {
  const std::string name = what;
  if (!view.data) throw Error(name + ": the view has no data (null pointer)");
  if (view.width <= 0 || view.height <= 0) {
    throw Error(name + ": " + std::to_string(view.width) + " x " + std::to_string(view.height) +
                " has no pixels");
  }
  if (view.channels < 1 || view.channels > 4) {
    throw Error(name + ": " + std::to_string(view.channels) + " channels; images have 1 to 4");
  }
  if (view.frames < 1) throw Error(name + ": " + std::to_string(view.frames) + " frames");
  if (view.pitch != 0 && view.pitch < view.row_bytes()) {
    throw Error(name + ": a row pitch of " + std::to_string(view.pitch) + " bytes is less than a " +
                "row's " + std::to_string(view.row_bytes()) + " bytes");
  }
  if (view.row_pitch() >= kMaxPitch) {
    throw Error(name + ": a row pitch of " + std::to_string(view.row_pitch()) +
                " bytes; rows must be less than 2^31 bytes apart");
  }
  if (view.frames > 1 && view.frame_stride != 0 &&
      view.frame_stride < view.row_pitch() * std::size_t(view.height)) {
    throw Error(name + ": a frame stride of " + std::to_string(view.frame_stride) +
                " bytes is less than a frame's " +
                std::to_string(view.row_pitch() * std::size_t(view.height)) + " bytes");
  }
  checked_sample_count(view.width, view.height, view.channels, 1);
  if (!view.place.on_host() && !built_with_cuda()) {
    throw Error(name + ": a CUDA device view, but this kbench was built without CUDA");
  }
}

bool device_call(Context& context, std::initializer_list<NamedPlace> views) {
  const NamedPlace& first = *views.begin();
  for (const NamedPlace& view : views) {
    if (view.place.on_host() != first.place.on_host() || view.place.device != first.place.device) {
      throw Error(std::string(first.name) + " is in " + place_text(first.place) + " and " +
                  view.name + " in " + place_text(view.place) +
                  "; a call takes views of one place");
    }
  }
  if (first.place.on_host()) return false;
  const int device = context.options().device;
  if (first.place.device != device) {
    throw Error("the views are on CUDA device " + std::to_string(first.place.device) +
                "; this context runs on device " + std::to_string(device) +
                " (ContextOptions::device)");
  }
  return true;
}

ViewWork begin_device_call(Context& context, const Stream& stream) {
  auto& scratch = context.state().scratch;
  if (!scratch) scratch = std::make_unique<DeviceScratch>(context.options().device);
  scratch->begin(stream.handle);
  return {stream.handle, scratch.get()};
}

void end_device_call(Context& context, const Stream& stream, CallInfo info) {
  if (stream.wait) synchronize(stream.handle);
  record_call(context, std::move(info));
}

void check_output_view(const ImageView& view, const char* what, int width, int height, int channels,
                       int frames, const ConstImageView& input) {
  check_image_view(view, what);
  if (view.width != width || view.height != height || view.channels != channels ||
      view.frames != frames) {
    throw Error(std::string(what) + ": the view is " +
                shape_text(view.width, view.height, view.channels, view.frames) +
                "; this call writes " + shape_text(width, height, channels, frames));
  }
  const auto* out_begin = view.data;
  const auto* out_end = view.row(view.frames - 1, view.height - 1) + view.row_bytes();
  const auto* in_begin = input.data;
  const auto* in_end = input.row(input.frames - 1, input.height - 1) + input.row_bytes();
  if (out_begin < in_end && in_begin < out_end) {
    throw Error(std::string(what) +
                ": the output view overlaps the input; give it memory of "
                "its own");
  }
}

void check_descriptor_view(const DescriptorView& view, const char* what) {
  const std::string name = what;
  if (!view.data) throw Error(name + ": the view has no data (null pointer)");
  if (view.rows <= 0) throw Error(name + ": " + std::to_string(view.rows) + " descriptors");
  const std::size_t element = view.type == DescriptorType::u8 ? 1 : 4;
  checked_stride(name, view.row_stride, element * kDescriptorBytes, element);
}

std::size_t checked_stride(const std::string& what, std::size_t stride, std::size_t row_bytes,
                           std::size_t element) {
  if (stride != 0 && (stride < row_bytes || stride % element != 0)) {
    throw Error(what + ": a row stride of " + std::to_string(stride) + " bytes; a row holds " +
                std::to_string(row_bytes) + " bytes and the stride must be a multiple of " +
                std::to_string(element));
  }
  return stride ? stride : row_bytes;
}

ImageU8 image_of(const ConstImageView& view, int frame) {
  ImageU8 image(view.width, view.height, view.channels);
  copy_host_rows(image.data.data(), view.row_bytes(), view.row(frame, 0), view.row_pitch(),
                 view.row_bytes(), view.height);
  return image;
}

ImageU8 staged_frame(Context& context, const ConstImageView& view, int frame) {
  ImageU8 image = std::move(context.state().staging);
  // A call that threw before handing the buffer back leaves a moved-from image, whose sizes may
  // still say the shape: its sample count tells.
  if (image.data.size() != std::size_t(view.width) * view.height * view.channels) image = {};
  reshape(image, view.width, view.height, view.channels);
  copy_host_rows(image.data.data(), view.row_bytes(), view.row(frame, 0), view.row_pitch(),
                 view.row_bytes(), view.height);
  return image;
}

void return_staging(Context& context, ImageU8&& image) {
  context.state().staging = std::move(image);
}

void write_frame(const ImageU8& image, const ImageView& view, int frame) {
  copy_host_rows(view.row(frame, 0), view.row_pitch(), image.data.data(), view.row_bytes(),
                 view.row_bytes(), view.height);
}

DescriptorSet descriptors_of(const DescriptorView& view, const char* what) {
  DescriptorSet set;
  set.count = view.rows;
  set.values.resize(std::size_t(view.rows) * kDescriptorBytes);
  const std::size_t element = view.type == DescriptorType::u8 ? 1 : 4;
  const std::size_t stride =
      checked_stride(what, view.row_stride, element * kDescriptorBytes, element);
  const auto* bytes = static_cast<const unsigned char*>(view.data);
  for (int r = 0; r < view.rows; ++r) {
    const unsigned char* row = bytes + std::size_t(r) * stride;
    std::uint8_t* out = set.values.data() + std::size_t(r) * kDescriptorBytes;
    if (view.type == DescriptorType::u8) {
      std::memcpy(out, row, kDescriptorBytes);
      continue;
    }
    for (int c = 0; c < kDescriptorBytes; ++c) {
      float value;
      std::memcpy(&value, row + std::size_t(c) * 4, 4);
      if (!(value >= 0.f && value <= 255.f) || value != std::floor(value)) {
        throw Error(std::string(what) + ": value at row " + std::to_string(r) + ", column " +
                    std::to_string(c) + " is " + std::to_string(value) +
                    "; descriptor values are whole numbers 0..255");
      }
      out[c] = std::uint8_t(value);
    }
  }
  return set;
}

bool kokkos_host_usable_here() {
#if defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION < 40000
  return Kokkos::OpenMP::impl_is_initialized();
#else
  return true;
#endif
}

std::mutex& kokkos_mutex() {
  static std::mutex mutex;
  return mutex;
}

const void* cached_variant(Context& context, const std::string& key) {
  const auto& variants = context.state().variants;
  const auto found = variants.find(key);
  return found == variants.end() ? nullptr : found->second;
}

void cache_variant(Context& context, const std::string& key, const void* variant) {
  context.state().variants[key] = variant;
}

void record_call(Context& context, CallInfo info) {
  context.state().last_call = std::move(info);
}

void describe_call(Context& context, std::string detail) {
  context.state().last_call.detail = std::move(detail);
}

std::string choice_key(const char* algorithm, const Choice& choice) {
  return std::string(algorithm) + "|" + choice.variant + "|" + choice.backend + "|" + choice.layer;
}

}  // namespace api
}  // namespace kbench
