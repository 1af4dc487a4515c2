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
  LbpInput shape{ImageU8{}, params};
  shape.gray.width = in.width;
  shape.gray.height = in.height;
  shape.gray.channels = 1;
  const Variant<Lbp>& variant =
      api::choose<Lbp>(context, shape, choice, shape_of(in, options), true);
  const ViewWork work = api::begin_device_call(context, options.stream);
  if (!histogram) {
    const std::size_t bytes =
        std::size_t(in.frames) * lbp_bin_count(options.mapping) * sizeof(std::uint32_t);
    histogram = static_cast<std::uint32_t*>(work.scratch->bytes("lbp histograms", bytes));
  }
  api::run_on_views(context, variant, LbpViewCall{in, codes, histogram, params, work},
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
  std::vector<LbpResult> results;
  const Variant<Lbp>* variant = nullptr;
  for (int f = 0; f < in.frames; ++f) {
    ImageU8 frame = api::staged_frame(context, in, f);
    LbpInput input{ImageU8{}, params};
    if (in.channels == 1) {
      input.gray = std::move(frame);
    } else {
      input.gray = to_gray(frame);
    }
    validate_lbp_input(input);
    if (!variant) {
      variant = &api::choose<Lbp>(context, input, choice, shape_of(in, options));
    }
    results.push_back(api::run(context, *variant, input));
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
