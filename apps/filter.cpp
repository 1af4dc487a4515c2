// filter: convolves an image with a mask, on the fastest variant this machine offers.
//
//   filter in.png out.png [--mask sharpen|FILE] [--border clamp|crop] [--backend B]
//          [--variant NAME] [--verbose]
#include <CLI/CLI.hpp>

#include <iostream>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/image_io.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "variant_options.hpp"

int main(int argc, char** argv) {
  std::string in_path, out_path, mask_name = "gaussian", border = "clamp";
  CLI::App app{
      "Convolves an image with an N×N mask (built-in: identity, box, gaussian, sharpen, "
      "edge, emboss; or a file of N×N numbers)."};
  app.add_option("input", in_path, "Image to read (PNG, JPEG, BMP, PPM, PGM)")->required();
  app.add_option("output", out_path, "Image to write (.png, .ppm, .pgm)")->required();
  app.add_option("--mask", mask_name, "Built-in mask name or mask file")->capture_default_str();
  app.add_option("--border", border, "crop (output shrinks by the mask radius) or clamp")
      ->check(CLI::IsMember({"crop", "clamp"}))
      ->capture_default_str();
  kbench::tools::VariantOptions run;
  kbench::tools::add_variant_options(app, run);
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);

  const kbench::KokkosRuntime kokkos("filter", argc, argv);
  try {
    const kbench::ConvInput input{kbench::read_image(in_path), kbench::load_mask(mask_name),
                                  kbench::parse_border(border)};
    kbench::validate_conv_input(input);
    kbench::write_image(out_path, kbench::tools::run_call<kbench::Conv>("filter", input, run));
  } catch (const kbench::Error& e) {
    std::cerr << "filter: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
