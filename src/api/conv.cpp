// kbench::conv on views: each frame through the chosen conv variant, an alpha channel passed
// through.
#include <vector>

#include "api_support.hpp"
#include "kbench/conv.hpp"

namespace kbench {
namespace {

bool has_alpha(int channels) {
  return channels == 2 || channels == 4;
}

// The image's first `count` channels.
ImageU8 colour_of(const ImageU8& image, int count) {
  ImageU8 out(image.width, image.height, count);
  for (std::size_t i = 0; i < image.pixel_count(); ++i) {
    for (int c = 0; c < count; ++c) out.data[i * count + c] = image.data[i * image.channels + c];
  }
  return out;
}

// The filtered colour with the input's alpha channel beside it, cut to the output's size (the
// crop border drops `inset` pixels on every side).
ImageU8 with_alpha(const ImageU8& colour, const ImageU8& input, int inset) {
  ImageU8 out(colour.width, colour.height, colour.channels + 1);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      for (int c = 0; c < colour.channels; ++c) out.at(x, y, c) = colour.at(x, y, c);
      out.at(x, y, colour.channels) = input.at(x + inset, y + inset, input.channels - 1);
    }
  }
  return out;
}

// The shape a variant is chosen for.
std::string shape_of(const ConstImageView& in, int channels, const Mask& mask, Border border) {
  return std::to_string(in.width) + "x" + std::to_string(in.height) + "x" +
         std::to_string(channels) + "/" + std::to_string(mask.size) + to_string(border);
}

// Every frame in one call of a variant that takes views; an alpha channel is convolved with the
// colour, then replaced by the input's.
void conv_views(const Variant<Conv>& variant, const ConvViewCall& call) {
  variant.on_views(call);
  if (has_alpha(call.in.channels)) {
    const int inset = call.border == Border::crop ? call.mask->radius() : 0;
    copy_last_channel_async(call.in, inset, call.out, call.work.stream);
  }
}

void conv_on_device(Context& context, const ConstImageView& in, const ImageView& out,
                    const Mask& mask, const ConvOptions& options, const Choice& choice) {
  const ScopedDevice on(context.options().device);
  const Variant<Conv>& variant = api::choose<Conv>(
      context, ConvInput{api::image_shape(in.width, in.height, in.channels), mask, options.border},
      choice, shape_of(in, in.channels, mask, options.border), true);
  const ViewWork work = api::begin_device_call(context, options.stream);
  api::run_on_views(
      context, variant,
      [&] {
        conv_views(variant, {in, out, &mask, options.border, work});
      },
      options.stream);
}

}  // namespace

void conv(Context& context, const ConstImageView& in, const ImageView& out, const Mask& mask,
          const ConvOptions& options, const Choice& choice) {
  api::check_image_view(in, "in");
  const ImageSize size = conv_output_size(in.width, in.height, mask, options.border);
  api::check_output_view(out, "out", size.width, size.height, in.channels, in.frames, in);
  if (api::device_call(context, in, out, "out")) {
    conv_on_device(context, in, out, mask, options, choice);
    return;
  }
  const bool alpha = has_alpha(in.channels);
  const int colours = alpha ? in.channels - 1 : in.channels;
  const int inset = options.border == Border::crop ? mask.radius() : 0;
  const Variant<Conv>& variant = api::choose<Conv>(
      context, ConvInput{api::image_shape(in.width, in.height, colours), mask, options.border},
      choice, shape_of(in, colours, mask, options.border));
  if (variant.backend == Backend::cuda && variant.on_views) {
    api::through_device(
        context, variant, in, out,
        [&](const ConstImageView& device_in, const ImageView& device_out, const ViewWork& work) {
          conv_views(variant, {device_in, device_out, &mask, options.border, work});
        });
    return;
  }
  // Frame by frame; every frame is computed before any is written, so a failure leaves `out` as
  // it was.
  std::vector<ImageU8> results;
  for (int f = 0; f < in.frames; ++f) {
    ConvInput input{ImageU8{}, mask, options.border};
    ImageU8 frame = api::staged_frame(context, in, f);
    if (alpha) {
      input.image = colour_of(frame, in.channels - 1);
    } else {
      input.image = std::move(frame);
    }
    ImageU8 result = api::run(context, variant, input);
    results.push_back(alpha ? with_alpha(result, frame, inset) : std::move(result));
    api::return_staging(context, alpha ? std::move(frame) : std::move(input.image));
  }
  for (int f = 0; f < in.frames; ++f) api::write_frame(results[f], out, f);
}

}  // namespace kbench
