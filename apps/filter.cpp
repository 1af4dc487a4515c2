// filter: convolves an image with a mask, on the fastest variant this machine offers.
//
//   filter in.png out.png [--mask sharpen|FILE] [--border clamp|crop] [--backend B]
//          [--variant NAME] [--verbose] [--quiet]
#include <CLI/CLI.hpp>

#include "kbench/context.hpp"
#include "kbench/conv.hpp"
#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/image_write.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "tool_support.hpp"

namespace {
constexpr const char* kProgram = "filter";
}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path, mask_name = "gaussian", border = "clamp";
  kbench::tools::RunOptions run;
  CLI::App app{
      "Convolves an image with an N×N mask. Colour channels are convolved; an alpha channel (gray "
      "+ alpha, RGBA) is passed through unchanged. Results are rounded and clamped to 0..255."};
  kbench::tools::add_image_paths(
      app, in_path, out_path,
      "Image to write (.png, .ppm, .pgm; - writes PPM/PGM to standard output)");
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
    if (!kbench::is_builtin_mask(mask_name)) inputs.push_back({mask_name, "the mask file"});
    kbench::check_distinct_paths(inputs, {{out_path, "the output image"}});
    kbench::OutputFile out(out_path);
    const kbench::Mask mask = kbench::load_mask(mask_name);
    kbench::ImageU8 image;
    {
      kbench::tools::Progress reading(kProgram, "reading " + kbench::output_name(in_path));
      image = kbench::read_image(in_path);
    }
    kbench::output_image_format(out_path, image.channels);
    const kbench::Border border_kind = kbench::parse_border(border);
    const kbench::ImageSize size =
        kbench::conv_output_size(image.width, image.height, mask, border_kind);
    kbench::ImageU8 result(size.width, size.height, image.channels);
    const kbench::KokkosRuntime kokkos(argc, argv);
    kbench::Context context;
    const std::string what =
        "convolving " + std::to_string(image.width) + "x" + std::to_string(image.height);
    kbench::tools::call(kProgram, context, run, what, [&](const kbench::Choice& choice) {
      kbench::conv(context, kbench::image_view(image), kbench::image_view(result), mask,
                   {border_kind}, choice);
    });
    kbench::tools::Progress writing(kProgram, "writing " + kbench::output_name(out_path));
    kbench::write_and_commit(
        {{&out, [&](kbench::OutputFile& f) { kbench::write_image(f, result); }}});
    return 0;
  });
}
