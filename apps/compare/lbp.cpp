// compare --algo lbp: its options and input.
#include "kbench/lbp.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sampled_rows.hpp"

namespace kbench::compare {
namespace {

struct LbpOptions {
  std::string mapping = "plain";
} lbp_options;

void add_lbp_options(CLI::App& app) {
  app.add_option("--mapping", lbp_options.mapping,
                 "lbp: plain (256 bins), uniform (59) or rotation-invariant (36)")
      ->check(CLI::IsMember({"plain", "uniform", "rotation-invariant"}))
      ->capture_default_str();
}

int run_lbp(const Options& options) {
  Case<Lbp> problem;
  problem.input.gray = load_or_generate(options, 1, &problem.name);
  problem.input.params.border = parse_border(options.border);
  problem.input.params.mapping = parse_lbp_mapping(lbp_options.mapping);
  validate_lbp_input(problem.input);
  const ImageU8& gray = problem.input.gray;
  problem.description = std::to_string(gray.width) + "x" + std::to_string(gray.height) + " gray " +
                        options.border + " " + lbp_options.mapping;
  const ImageSize out = lbp_output_size(gray.width, gray.height, problem.input.params.border);
  use_sampled_rows(options, problem, out.height, double(gray.sample_count()),
                   double(out.width) * out.height);
  return run(options, problem);
}

}  // namespace

AlgorithmEntry lbp_entry() {
  // The small-image sweep (perf/lbp_size_sweep.sh) passes its sizes through --size.
  // Video formats, then camera frames (DESIGN.md): rows that are no multiple of 16 bytes.
  return {Lbp::name,
          {"480p", "1080p", "4k", "3000x2000", "4032x3024", "6000x4000", "2306x1535", "3072x2304"},
          add_lbp_options,
          run_lbp};
}

}  // namespace kbench::compare
