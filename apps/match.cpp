// match: finds a query image in a target image by SAD, on the fastest variant this machine
// offers, and prints the best positions. The best position, or several without separation
// (--separation 1), come from exact bound-pruned matching (sad-pruned) by default; several
// positions kept apart (non-maximum suppression, which needs the whole SAD map) from full search.
//
//   match target.png query.png [--top 5] [--separation N] [--method auto|full|pruned]
//         [--backend B] [--variant NAME] [--verbose] [-o annotated.png]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/image_io.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/sad.hpp"
#include "kbench/sad_pruned.hpp"
#include "variant_options.hpp"

namespace {

// The target as RGB with a 2-pixel box outline of the query's size at every match: the best in
// red, the others in yellow.
kbench::ImageU8 annotate(const kbench::ImageU8& target, int box_width, int box_height,
                         const std::vector<kbench::SadMatch>& matches) {
  kbench::ImageU8 out(target.width, target.height, 3);
  for (std::size_t i = 0; i < target.pixel_count(); ++i) {
    for (int k = 0; k < 3; ++k) {
      out.data[i * 3 + k] = target.data[i * target.channels + (target.channels >= 3 ? k : 0)];
    }
  }
  for (std::size_t m = matches.size(); m-- > 0;) {
    const std::uint8_t colour[3] = {255, std::uint8_t(m == 0 ? 0 : 220), 0};
    const auto paint = [&](int x, int y) {
      if (x < 0 || y < 0 || x >= out.width || y >= out.height) return;
      for (int k = 0; k < 3; ++k) out.at(x, y, k) = colour[k];
    };
    const int x0 = matches[m].col, y0 = matches[m].row;
    const int x1 = x0 + box_width - 1, y1 = y0 + box_height - 1;
    for (int t = 0; t < 2; ++t) {
      for (int x = x0; x <= x1; ++x) {
        paint(x, y0 + t);
        paint(x, y1 - t);
      }
      for (int y = y0; y <= y1; ++y) {
        paint(x0 + t, y);
        paint(x1 - t, y);
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_path, query_path, out_path;
  kbench::SadParams params;
  CLI::App app{
      "Finds a query image in a target image (sum of absolute differences over every position, "
      "in gray) and prints the best positions: row and column of the query's top-left corner, "
      "and the SAD score (lower is better)."};
  app.add_option("target", target_path, "Image to search (PNG, JPEG, BMP, PPM, PGM)")->required();
  app.add_option("query", query_path, "Image to find; not larger than the target")->required();
  app.add_option("--top", params.top_k, "Number of best positions to report")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--separation", params.min_separation,
                 "Minimum distance in pixels between reported positions (0: the query's size, "
                 "so boxes do not overlap)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  std::string method = "auto";
  app.add_option("--method", method,
                 "auto: pruned for the best position and for several without separation "
                 "(--separation 1), full search for several kept apart; full; pruned (exact: the "
                 "same answer as full search). A --variant of sad-pruned or sad chooses the "
                 "method too")
      ->check(CLI::IsMember({"auto", "full", "pruned"}))
      ->capture_default_str();
  kbench::tools::VariantOptions run;
  kbench::tools::add_variant_options(app, run);
  app.add_option("-o,--output", out_path, "Write the target with boxes drawn (.png, .ppm)");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);

  const kbench::KokkosRuntime kokkos("match", argc, argv);
  try {
    const kbench::ImageU8 target = kbench::read_image(target_path);
    const kbench::ImageU8 query = kbench::read_image(query_path);
    // A variant named chooses its algorithm, and so the method.
    bool pruned_variant = false;
    for (const auto& v : kbench::variants<kbench::SadPruned>()) {
      pruned_variant = pruned_variant || v.name == run.variant;
    }
    if (!run.variant.empty() && method != "auto" && pruned_variant != (method == "pruned")) {
      throw kbench::Error("--variant " + run.variant + " is not a " + method +
                          (method == "pruned" ? " (sad-pruned)" : " search (sad)") + " variant");
    }
    // Pruning answers the best position and the best several without separation; several kept
    // apart need the whole map's non-maximum suppression.
    const bool prunable = params.top_k == 1 || params.min_separation == 1;
    const bool pruned = method == "pruned" || pruned_variant ||
                        (method == "auto" && run.variant.empty() && prunable);
    if (pruned && !prunable) {
      throw kbench::Error(
          "pruned matching finds several positions only without separation (--separation 1); "
          "use --method full");
    }
    // Full search: one position needs only the argmin (fused); several need the map.
    params.want_map = !pruned && params.top_k > 1;
    const kbench::SadInput input{kbench::to_gray(target), kbench::to_gray(query), params};
    std::vector<kbench::SadMatch> matches;
    if (pruned) {
      kbench::validate_sad_pruned_input(input);
      const kbench::SadPrunedResult result =
          kbench::tools::run_call<kbench::SadPruned>("match", input, run);
      matches = params.top_k > 1 ? result.top : std::vector<kbench::SadMatch>{result.best};
      if (run.verbose) {
        const kbench::PruneStats& st = result.stats;
        std::fprintf(stderr, "match: pruned: %.4f%% of %llu windows pruned by the first bounds%s\n",
                     100.0 * double(st.windows - st.after_bounds) / double(st.windows),
                     (unsigned long long)st.windows,
                     st.full_search ? "; too few: searched in full" : "");
      }
    } else {
      kbench::validate_sad_input(input);
      const kbench::SadResult result = kbench::tools::run_call<kbench::Sad>("match", input, run);
      matches = {result.best};
      if (params.top_k > 1) matches = kbench::top_matches(result, input);
    }
    std::printf("%-5s %6s %6s %12s\n", "rank", "row", "col", "score");
    for (std::size_t m = 0; m < matches.size(); ++m) {
      std::printf("%-5zu %6d %6d %12d\n", m + 1, matches[m].row, matches[m].col, matches[m].score);
    }
    if (!out_path.empty()) {
      kbench::write_image(out_path, annotate(target, query.width, query.height, matches));
    }
  } catch (const kbench::Error& e) {
    std::cerr << "match: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
