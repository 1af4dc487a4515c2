// lbp: Local Binary Pattern image and histogram of an image, on the fastest variant this machine
// offers.
//
//   lbp in.png out.png [--hist hist.csv] [--uniform | --rotation-invariant] [--scale]
//       [--border clamp|crop] [--backend B] [--variant NAME] [--verbose] [--quiet]
#include <CLI/CLI.hpp>

#include <string>

#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/image_write.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/lbp.hpp"
#include "tool_support.hpp"

namespace {

constexpr const char* kProgram = "lbp";

// One line per bin: "bin,count", after a header line.
std::string histogram_csv(const std::vector<std::uint32_t>& histogram) {
  std::string text = "bin,count\n";
  for (std::size_t b = 0; b < histogram.size(); ++b) {
    text += std::to_string(b) + "," + std::to_string(histogram[b]) + "\n";
  }
  return text;
}

// Labels 0 .. bins − 1 spread over 0 .. 255 (label × 255 / (bins − 1), rounded), so that a viewer
// shows them; the 256 plain codes stay as they are.
kbench::ImageU8 spread_labels(kbench::ImageU8 codes, int bins) {
  for (auto& v : codes.data) v = std::uint8_t((int(v) * 255 + (bins - 1) / 2) / (bins - 1));
  return codes;
}

}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path, hist_path, border = "clamp";
  bool uniform = false, rotation_invariant = false, scale = false;
  kbench::tools::RunOptions run;
  CLI::App app{
      "Local Binary Pattern: each pixel's 8 neighbours (clockwise from the top-left, bit set when "
      "neighbour >= centre) give an 8-bit code, written as a gray image; the histogram of the "
      "codes goes to a CSV file. Colour images are converted to gray with BT.601 luma; an alpha "
      "channel is ignored."};
  kbench::tools::add_image_paths(
      app, in_path, out_path, "Code image to write (.png, .pgm; - writes PGM to standard output)");
  app.add_option("--hist", hist_path,
                 "Write the histogram here as CSV (header bin,count; one line per bin; - for "
                 "standard output)");
  auto* uniform_flag = app.add_flag(
      "--uniform", uniform,
      "Uniform patterns: pixels hold labels 0..58 (58 = non-uniform), 59 histogram bins");
  app.add_flag("--rotation-invariant", rotation_invariant,
               "Pixels hold the index 0..35 of the smallest bit rotation of the code among the 36 "
               "such codes in increasing order; 36 histogram bins")
      ->excludes(uniform_flag);
  app.add_flag("--scale", scale,
               "Write labels spread over 0..255 (label x 255 / (bins - 1), rounded) so a viewer "
               "shows them; without it the image holds the raw labels, which look black for "
               "--uniform and --rotation-invariant. The histogram is unchanged");
  app.add_option("--border", border, "crop (codes only pixels with 8 neighbours inside) or clamp")
      ->check(CLI::IsMember({"crop", "clamp"}))
      ->capture_default_str();
  kbench::tools::add_run_options(app, run);
  if (const auto status = kbench::tools::parse_command_line(app, kProgram, argc, argv)) {
    return *status;
  }
  kbench::tools::enable_progress(run);

  return kbench::tools::run_guarded(kProgram, [&] {
    kbench::check_distinct_paths({{in_path, "the input image"}},
                                 {{out_path, "the code image"}, {hist_path, "--hist"}});
    kbench::output_image_format(out_path, 1);
    kbench::OutputFile codes_out(out_path);
    std::unique_ptr<kbench::OutputFile> hist_out;
    if (!hist_path.empty()) hist_out = std::make_unique<kbench::OutputFile>(hist_path);

    const kbench::LbpOptions options{uniform              ? kbench::LbpMapping::uniform
                                     : rotation_invariant ? kbench::LbpMapping::rotation_invariant
                                                          : kbench::LbpMapping::plain,
                                     kbench::parse_border(border)};
    kbench::ImageU8 image;
    {
      kbench::tools::Progress reading(kProgram, "reading " + kbench::output_name(in_path));
      image = kbench::read_image(in_path);
    }
    const kbench::ImageSize size =
        kbench::lbp_output_size(image.width, image.height, options.border);
    kbench::LbpResult result;
    result.codes = kbench::ImageU8(size.width, size.height, 1);
    result.histogram.resize(std::size_t(kbench::lbp_bin_count(options.mapping)));
    const kbench::KokkosRuntime kokkos(argc, argv);
    kbench::Context context;
    const std::string what =
        "coding " + std::to_string(image.width) + "x" + std::to_string(image.height);
    kbench::tools::call(kProgram, context, run, what, [&](const kbench::Choice& choice) {
      kbench::lbp(context, kbench::image_view(image), kbench::image_view(result.codes),
                  result.histogram.data(), options, choice);
    });
    if (scale) {
      result.codes = spread_labels(std::move(result.codes), kbench::lbp_bin_count(options.mapping));
    }

    kbench::tools::Progress writing(kProgram, "writing " + kbench::output_name(out_path));
    std::vector<kbench::PendingOutput> outputs{
        {&codes_out, [&](kbench::OutputFile& f) { kbench::write_image(f, result.codes); }}};
    if (hist_out) {
      outputs.push_back({hist_out.get(),
                         [&](kbench::OutputFile& f) { f.write(histogram_csv(result.histogram)); }});
    }
    kbench::write_and_commit(outputs);
    return 0;
  });
}
