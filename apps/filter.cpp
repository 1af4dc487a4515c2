// filter: convolves an image with a mask, on the fastest variant this machine offers.
//
//   filter in.png out.png [--mask sharpen|FILE] [--border clamp|crop] [--backend B]
//          [--variant NAME] [--verbose] [--quiet]
#include <CLI/CLI.hpp>

#include "kbench/conv.hpp"
#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/image_write.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "tool_support.hpp"

namespace {

constexpr const char* kProgram = "filter";

bool has_alpha(const kbench::ImageU8& image) {
  return image.channels == 2 || image.channels == 4;
}

// The image's channels [first, first + count).
kbench::ImageU8 channels_of(const kbench::ImageU8& image, int first, int count) {
  kbench::ImageU8 out(image.width, image.height, count);
  for (std::size_t i = 0; i < image.pixel_count(); ++i) {
    for (int c = 0; c < count; ++c)
      out.data[i * count + c] = image.data[i * image.channels + first + c];
  }
  return out;
}

// The filtered colour channels with the input's alpha channel beside them, cut to the output's
// size (the crop border drops the same `inset` pixels on every side).
kbench::ImageU8 with_alpha(const kbench::ImageU8& colour, const kbench::ImageU8& input, int inset) {
  kbench::ImageU8 out(colour.width, colour.height, colour.channels + 1);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      for (int c = 0; c < colour.channels; ++c) out.at(x, y, c) = colour.at(x, y, c);
      out.at(x, y, colour.channels) = input.at(x + inset, y + inset, input.channels - 1);
    }
  }
  return out;
}

bool is_builtin_mask(const std::string& name) {
  for (const auto& n : kbench::builtin_mask_names()) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path, mask_name = "gaussian", border = "clamp";
  kbench::tools::RunOptions run;
  CLI::App app{
      "Convolves an image with an N×N mask. Colour channels are convolved; an alpha channel (gray "
      "+ alpha, RGBA) is passed through unchanged. Results are rounded and clamped to 0..255."};
  app.add_option("input", in_path, "Image to read (PNG, JPEG, BMP, PPM, PGM; - for standard input)")
      ->required();
  app.add_option("output", out_path,
                 "Image to write (.png, .ppm, .pgm; - writes PPM/PGM to standard output)")
      ->required();
  app.add_option("--mask", mask_name,
                 "Built-in mask (identity, box, gaussian, sharpen, edge, emboss) or a mask file: "
                 "N×N numbers for an odd N up to 63, row by row, separated by spaces, tabs, "
                 "commas, semicolons or line ends; '#' starts a comment. Weights are used as "
                 "given (not normalised)")
      ->capture_default_str();
  app.add_option("--border", border,
                 "clamp (edge pixels repeated; same size) or crop (the output shrinks by the "
                 "mask's radius on each side)")
      ->check(CLI::IsMember({"crop", "clamp"}))
      ->capture_default_str();
  kbench::tools::add_run_options(app, run);
  if (const auto status = kbench::tools::parse_command_line(app, kProgram, argc, argv)) {
    return *status;
  }
  kbench::tools::enable_progress(run);

  return kbench::tools::run_guarded(kProgram, [&] {
    std::vector<kbench::NamedPath> inputs{{in_path, "the input image"}};
    if (!is_builtin_mask(mask_name)) inputs.push_back({mask_name, "the mask file"});
    kbench::check_distinct_paths(inputs, {{out_path, "the output image"}});
    kbench::OutputFile out(out_path);
    const kbench::Mask mask = kbench::load_mask(mask_name);
    kbench::ImageU8 image;
    {
      kbench::tools::Progress reading(kProgram, "reading " + kbench::output_name(in_path));
      image = kbench::read_image(in_path);
    }
    const bool alpha = has_alpha(image);
    kbench::output_image_format(out_path, image.channels);
    const kbench::ConvInput input{alpha ? channels_of(image, 0, image.channels - 1) : image, mask,
                                  kbench::parse_border(border)};
    kbench::validate_conv_input(input);
    const kbench::KokkosRuntime kokkos(argc, argv);
    kbench::ImageU8 result = kbench::tools::run_call<kbench::Conv>(
        kProgram, input, run,
        "convolving " + std::to_string(image.width) + "x" + std::to_string(image.height));
    if (alpha) {
      result = with_alpha(result, image, input.border == kbench::Border::crop ? mask.radius() : 0);
    }
    kbench::tools::Progress writing(kProgram, "writing " + kbench::output_name(out_path));
    kbench::write_and_commit(
        {{&out, [&](kbench::OutputFile& f) { kbench::write_image(f, result); }}});
    return 0;
  });
}
