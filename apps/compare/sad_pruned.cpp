// compare --algo sad-pruned: the sad cases (see sad.cpp; argmin only, or with --top K the best K
// positions without separation), checked against full search's argmin (or its map's K smallest
// scores), and, unless --no-baseline, the full-search variants timed on the same input right
// after, so the speedup of pruning over full search comes from one run.
#include "kbench/sad_pruned.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sad_cases.hpp"
#include "kbench/cpu_features.hpp"

namespace kbench::compare {
namespace {

struct PrunedOptions {
  bool no_baseline = false;
  int top = 1;
} pruned_options;

// Full-search variants that answer the same question, one per layer and backend: the fastest of
// each (on the CPU, the SIMD full search of the highest level this CPU has); the portable ones
// that write the map when the question needs it.
std::vector<std::string> baselines(bool map) {
  const std::string portable = map ? "kokkos-team-" : "kokkos-fused-";
  return {"seq", simd_variant_name(cpu_level()), portable + "openmp", portable + "cuda",
          "cuda-regblock-vsad-p32"};
}
// Above this σ the sequential pruned variants refine nearly every window of a large case, which
// costs a sequential full search.
constexpr double kSequentialNoiseLimit = 20.0;

void add_pruned_options(CLI::App& app) {
  app.add_flag("--no-baseline", pruned_options.no_baseline,
               "sad-pruned: do not time the full-search variants on the same input");
  app.add_option("--top", pruned_options.top,
                 "sad-pruned: find the best K positions without separation (the K smallest "
                 "scores, as match --top K --separation 1), against full search with its map")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
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
  const int top = pruned_options.top;
  SadProblem built = build_sad_case(options, top == 1);
  const double sigma = sad_case_options().noise;
  std::string asked = ", argmin only";
  if (top > 1) {
    // Full search answers it from its map: the reference and the baseline write one.
    built.input.params.want_map = true;
    built.input.params.top_k = top;
    built.input.params.min_separation = 1;
    built.name += "-top" + std::to_string(top);
    asked = ", the best " + std::to_string(top) + " without separation";
  }
  SadInput pruned_input = built.input;
  pruned_input.params.want_map = false;
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
  problem.input = pruned_input;
  problem.name = built.name;
  problem.description = built.description + asked;
  problem.reference_source = too_slow ? "omp-blocked full search" : "sequential full search";
  problem.reference = [&] {
    full = full_reference();
    have_full = true;
    if (top == 1) return SadPruned::Reference{full.best};
    return top_matches(full.map, full.map_width, full.map_height, top, 1, 1);
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
  baseline.variants = baselines(top > 1);
  Case<Sad> same;
  same.input = built.input;
  same.name = built.name;
  same.description = built.description +
                     (top > 1 ? ", the map (its best positions: on the host)" : ", argmin only");
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
