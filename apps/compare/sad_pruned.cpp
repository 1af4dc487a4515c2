// compare --algo sad-pruned: the sad cases (see sad.cpp; argmin only), checked against the
// full-search argmin, and, unless --no-baseline, the full-search variants timed on the same
// input right after, so the speedup of pruning over full search comes from one run.
#include "kbench/sad_pruned.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sad_cases.hpp"
#include "kbench/cpu_features.hpp"

namespace kbench::compare {
namespace {

struct PrunedOptions {
  bool no_baseline = false;
} pruned_options;

// Full-search variants that answer the same question, one per layer and backend: the fastest of
// each (on the CPU, the SIMD full search of the highest level this CPU has).
std::vector<std::string> baselines() {
  return {"seq", simd_variant_name(cpu_level()), "kokkos-fused-openmp", "kokkos-fused-cuda",
          "cuda-regblock-vsad-p32"};
}
// Above this σ the sequential pruned variants refine nearly every window of a large case, which
// costs a sequential full search.
constexpr double kSequentialNoiseLimit = 20.0;

void add_pruned_options(CLI::App& app) {
  app.add_flag("--no-baseline", pruned_options.no_baseline,
               "sad-pruned: do not time the full-search variants on the same input");
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

std::string prune_summary(const SadPrunedResult& out) {
  const PruneStats& st = out.stats;
  std::string text = "pruned by bounds " + percent(st.windows - st.after_bounds, st.windows) +
                     " (" + std::to_string(st.after_bounds) + " of " + std::to_string(st.windows) +
                     " left)";
  if (st.full_search) return text + "; too few pruned: full search";
  text += "; left after strips:";
  for (const std::uint64_t alive : st.after_strip) text += " " + std::to_string(alive);
  return text;
}

int run_sad_pruned(const Options& options) {
  SadProblem built = build_sad_case(options, true);
  const double sigma = sad_case_options().noise;
  bool too_slow = false;
  const auto full_reference = trusted_sad_reference(built, &too_slow);
  // One core prunes well only on photo-like scenes at moderate noise; elsewhere (high σ, the
  // noise-textured test images) it refines nearly every window, a sequential full search.
  const bool photo = built.name.rfind("photo", 0) == 0;
  std::string skip_reason;
  if (too_slow && (!photo || sigma > kSequentialNoiseLimit)) {
    skip_reason = "one core prunes little here (σ above " +
                  std::to_string(int(kSequentialNoiseLimit)) + " or no photo-like scene) and " +
                  too_slow_for_one_core(built.input);
  }
  SadResult full;
  bool have_full = false;
  Case<SadPruned> problem;
  problem.input = built.input;
  problem.name = built.name;
  problem.description = built.description + ", argmin only";
  problem.reference_source = too_slow ? "omp-blocked full search" : "sequential full search";
  problem.reference = [&] {
    full = full_reference();
    have_full = true;
    return SadPruned::Reference{full.best};
  };
  problem.summary = prune_summary;
  if (!skip_reason.empty()) {
    problem.skip = [&](const Variant<SadPruned>& v) {
      return v.layer == Layer::sequential || v.backend == Backend::serial ? skip_reason
                                                                          : std::string();
    };
  }
  int status = run(options, problem);
  if (pruned_options.no_baseline || options.check_only) return status;

  std::printf("\nfull search on the same input:\n");
  Options baseline = options;
  baseline.variants = baselines();
  Case<Sad> same;
  same.input = built.input;
  same.name = built.name;
  same.description = built.description + ", argmin only";
  same.reference_source = "the reference above";
  same.reference = [&] { return have_full ? full : full_reference(); };
  if (too_slow) {
    same.skip = [text = too_slow_for_one_core(built.input)](const Variant<Sad>& v) {
      return v.layer == Layer::sequential || v.backend == Backend::serial ? text : std::string();
    };
  }
  status |= run(baseline, same);
  return status;
}

}  // namespace

AlgorithmEntry sad_pruned_entry() {
  return {SadPruned::name,
          {"test1", "test3", "photo2306-q64", "photo2306-q128", "photo3072-q64", "photo3072-q128"},
          add_pruned_options,
          run_sad_pruned};
}

}  // namespace kbench::compare
