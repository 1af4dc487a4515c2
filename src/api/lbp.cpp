// kbench::lbp on views: each frame, in gray, through the chosen LBP variant.
#include <algorithm>
#include <vector>

#include "api_support.hpp"
#include "kbench/lbp.hpp"

namespace kbench {

void lbp(Context& context, const ConstImageView& in, const ImageView& codes,
         std::uint32_t* histogram, const LbpOptions& options, const Choice& choice) {
  api::check_image_view(in, "in");
  const ImageSize size = lbp_output_size(in.width, in.height, options.border);
  api::check_output_view(codes, "codes", size.width, size.height, 1, in.frames, in);
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
      variant = &api::choose<Lbp>(context, input, choice,
                                  std::to_string(in.width) + "x" + std::to_string(in.height) +
                                      to_string(options.mapping) + to_string(options.border));
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
