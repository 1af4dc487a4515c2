// lbp: Local Binary Pattern image and histogram of an image, on the fastest variant this machine
// offers.
//
//   lbp in.png out.png [--hist hist.csv] [--uniform | --rotation-invariant] [--border clamp|crop]
//       [--backend B] [--variant NAME] [--verbose]
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <string>

#include "kbench/error.hpp"
#include "kbench/image_io.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/lbp.hpp"
#include "variant_options.hpp"

namespace {

// One line per bin: "bin,count", after a header line.
std::string histogram_csv(const std::vector<std::uint32_t>& histogram) {
  std::string text = "bin,count\n";
  for (std::size_t b = 0; b < histogram.size(); ++b) {
    text += std::to_string(b) + "," + std::to_string(histogram[b]) + "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path, hist_path, border = "clamp";
  bool uniform = false, rotation_invariant = false;
  CLI::App app{
      "Local Binary Pattern: each pixel's 8 neighbours (clockwise from the top-left, bit set when "
      "neighbour >= centre) give an 8-bit code, written as a gray image; the histogram of the "
      "codes goes to a CSV file. Colour images are converted to gray with BT.601 luma."};
  app.add_option("input", in_path, "Image to read (PNG, JPEG, BMP, PPM, PGM)")->required();
  app.add_option("output", out_path, "Code image to write (.png, .pgm)")->required();
  app.add_option("--hist", hist_path, "Write the histogram here as CSV (bin,count)");
  auto* uniform_flag = app.add_flag(
      "--uniform", uniform,
      "Uniform patterns: pixels hold labels 0..58 (58 = non-uniform), 59 histogram bins");
  app.add_flag("--rotation-invariant", rotation_invariant,
               "Pixels hold the smallest bit rotation of the code; 36 histogram bins, one per "
               "such code in increasing order")
      ->excludes(uniform_flag);
  app.add_option("--border", border, "crop (codes only pixels with 8 neighbours inside) or clamp")
      ->check(CLI::IsMember({"crop", "clamp"}))
      ->capture_default_str();
  kbench::tools::VariantOptions run;
  kbench::tools::add_variant_options(app, run);
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);

  const kbench::KokkosRuntime kokkos("lbp", argc, argv);
  try {
    kbench::LbpParams params;
    params.border = kbench::parse_border(border);
    params.mapping = uniform              ? kbench::LbpMapping::uniform
                     : rotation_invariant ? kbench::LbpMapping::rotation_invariant
                                          : kbench::LbpMapping::plain;
    const kbench::LbpInput input{kbench::to_gray(kbench::read_image(in_path)), params};
    kbench::validate_lbp_input(input);
    const kbench::LbpResult result = kbench::tools::run_call<kbench::Lbp>("lbp", input, run);
    kbench::write_image(out_path, result.codes);
    if (!hist_path.empty()) {
      try {
        kbench::write_text_file(hist_path, histogram_csv(result.histogram));
      } catch (const kbench::Error&) {
        std::filesystem::remove(out_path);  // both outputs or neither
        throw;
      }
    }
  } catch (const kbench::Error& e) {
    std::cerr << "lbp: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
