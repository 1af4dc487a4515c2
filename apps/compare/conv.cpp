// compare --algo conv: its options and input.
#include "kbench/conv.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sampled_rows.hpp"

namespace kbench::compare {
namespace {

struct ConvOptions {
  std::string mask = "gaussian";
  int channels = 3;
} conv_options;

void add_conv_options(CLI::App& app) {
  app.add_option("--mask", conv_options.mask, "conv: built-in mask name or mask file")
      ->capture_default_str();
  app.add_option("--channels", conv_options.channels, "conv: 1 (gray) or 3 (RGB)")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
}

int run_conv(const Options& options) {
  const ConvOptions& conv = conv_options;
  Case<Conv> problem;
  problem.input.image = load_or_generate(options, conv.channels, &problem.name);
  problem.input.mask = load_mask(conv.mask);
  problem.input.border = parse_border(options.border);
  validate_conv_input(problem.input);
  const ImageU8& image = problem.input.image;
  problem.description = std::to_string(image.width) + "x" + std::to_string(image.height) + "x" +
                        std::to_string(image.channels) + " " + conv.mask + " " +
                        std::to_string(problem.input.mask.size) + "x" +
                        std::to_string(problem.input.mask.size) + " " + options.border;
  const ImageSize out =
      conv_output_size(image.width, image.height, problem.input.mask, problem.input.border);
  use_sampled_rows(options, problem, out.height, double(image.sample_count()),
                   double(out.width) * out.height * image.channels);
  return run(options, problem);
}

}  // namespace

AlgorithmEntry conv_entry() {
  // Video formats, then camera frames (DESIGN.md): rows that are no multiple of 16 bytes.
  return {Conv::name,
          {"480p", "1080p", "4k", "3000x2000", "4032x3024", "6000x4000", "2306x1535", "3072x2304"},
          add_conv_options,
          run_conv};
}

}  // namespace kbench::compare
