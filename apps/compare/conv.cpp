// compare --algo conv: the input from options.
#include "kbench/conv.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"

namespace kbench::compare {

int run_conv(const Options& options, const ConvOptions& conv) {
  Case<Conv> problem;
  problem.input.image = load_or_generate(options, conv.channels, &problem.name);
  problem.input.mask = load_mask(conv.mask);
  problem.input.border = parse_border(conv.border);
  validate_conv_input(problem.input);
  const ImageU8& image = problem.input.image;
  problem.description = std::to_string(image.width) + "x" + std::to_string(image.height) + "x" +
                        std::to_string(image.channels) + " " + conv.mask + " " +
                        std::to_string(problem.input.mask.size) + "x" +
                        std::to_string(problem.input.mask.size) + " " + conv.border;
  return run(options, problem);
}

}  // namespace kbench::compare
