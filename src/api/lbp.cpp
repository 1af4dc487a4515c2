// kbench::lbp on views: each frame, in gray, through the chosen LBP variant.
#include <algorithm>
#include <vector>

#include "api_support.hpp"
#include "kbench/lbp.hpp"

namespace kbench {
namespace {

std::string shape_of(const ConstImageView& in, const LbpOptions& options) {
  return std::to_string(in.width) + "x" + std::to_string(in.height) + to_string(options.mapping) +
         to_string(options.border);
}

// Device memory for the histograms of `frames` frames, in the context's scratch memory.
std::uint32_t* histograms_in_scratch(const ViewWork& work, int frames, LbpMapping mapping) {
  const std::size_t bytes = std::size_t(frames) * lbp_bin_count(mapping) * sizeof(std::uint32_t);
  return static_cast<std::uint32_t*>(work.scratch->bytes("lbp histograms", bytes));
}

// `in`'s frames converted to gray into `gray`, as a packed view of it.
ConstImageView gray_frames(const ConstImageView& in, std::vector<std::uint8_t>& gray) {
  const std::size_t frame_bytes = std::size_t(in.width) * std::size_t(in.height);
  gray.resize(frame_bytes * std::size_t(in.frames));
  for (int f = 0; f < in.frames; ++f) {
    const ImageU8 frame = to_gray(api::image_of(in, f));
    std::copy(frame.data.begin(), frame.data.end(), gray.begin() + std::size_t(f) * frame_bytes);
  }
  return {gray.data(), in.width, in.height, 1, 0, in.frames, 0, MemoryPlace::host()};
}

// Every frame in one call of a variant that takes device views; without a histogram output, the
// histograms go to the context's scratch memory.
void lbp_on_device(Context& context, const ConstImageView& in, const ImageView& codes,
                   std::uint32_t* histogram, const LbpOptions& options, const Choice& choice) {
  if (in.channels != 1) {
    throw Error("in: " + std::to_string(in.channels) +
                " channels; lbp on a device view takes gray (one channel)");
  }
  const ScopedDevice on(context.options().device);
  const LbpParams params{options.border, options.mapping};
  const Variant<Lbp>& variant =
      api::choose<Lbp>(context, LbpInput{api::image_shape(in.width, in.height, 1), params}, choice,
                       shape_of(in, options), true);
  const ViewWork work = api::begin_device_call(context, options.stream);
  if (!histogram) histogram = histograms_in_scratch(work, in.frames, options.mapping);
  api::run_on_views(
      context, variant,
      [&] {
        variant.on_views(LbpViewCall{in, codes, histogram, params, work});
      },
      options.stream);
}

}  // namespace

void lbp(Context& context, const ConstImageView& in, const ImageView& codes,
         std::uint32_t* histogram, const LbpOptions& options, const Choice& choice) {
  api::check_image_view(in, "in");
  const ImageSize size = lbp_output_size(in.width, in.height, options.border);
  api::check_output_view(codes, "codes", size.width, size.height, 1, in.frames, in);
  if (api::device_call(context, in, codes, "codes")) {
    lbp_on_device(context, in, codes, histogram, options, choice);
    return;
  }
  const LbpParams params{options.border, options.mapping};
  const std::size_t bins = std::size_t(lbp_bin_count(options.mapping));
  const Variant<Lbp>& variant =
      api::choose<Lbp>(context, LbpInput{api::image_shape(in.width, in.height, 1), params}, choice,
                       shape_of(in, options));
  if (variant.backend == Backend::cuda && variant.on_views) {
    // Host frames, in gray, through the device call: every frame in one launch.
    std::vector<std::uint8_t> gray;
    const ConstImageView gray_in = in.channels == 1 ? in : gray_frames(in, gray);
    api::through_device(
        context, variant, gray_in, codes,
        [&](const ConstImageView& device_in, const ImageView& device_codes, const ViewWork& work) {
          std::uint32_t* counts = histograms_in_scratch(work, in.frames, options.mapping);
          variant.on_views(LbpViewCall{device_in, device_codes, counts, params, work});
          if (histogram) {
            const std::size_t bytes = bins * in.frames * sizeof(std::uint32_t);
            copy_rows_async(histogram, bytes, counts, bytes, bytes, 1, work.stream);
          }
        });
    return;
  }
  // Frame by frame, in gray; every frame is computed before any is written.
  std::vector<LbpResult> results;
  for (int f = 0; f < in.frames; ++f) {
    ImageU8 frame = api::staged_frame(context, in, f);
    LbpInput input{ImageU8{}, params};
    if (in.channels == 1) {
      input.gray = std::move(frame);
    } else {
      input.gray = to_gray(frame);
    }
    validate_lbp_input(input);
    results.push_back(api::run(context, variant, input));
    api::return_staging(context, in.channels == 1 ? std::move(input.gray) : std::move(frame));
  }
  for (int f = 0; f < in.frames; ++f) {
    api::write_frame(results[f].codes, codes, f);
    if (histogram)
      std::copy(results[f].histogram.begin(), results[f].histogram.end(),
                histogram + std::size_t(f) * bins);
  }
}

}  // namespace kbench
