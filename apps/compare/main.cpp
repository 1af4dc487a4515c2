// compare: checks and times every variant of an algorithm on one input.
//
//   compare --algo conv|lbp --size 4k [--image photo.png] [--border crop] [--mask sharpen|FILE]
//           [--mapping uniform] [--backend cuda] [--variant NAME]... [--reps 20]
//           [--json results.jsonl] [--list]
//   compare --algo conv --size 30000x30000 --check-rows 64 --backend cuda   (images > 2^31 bytes)
//   compare --algo sad --size test3 [--no-map] [--image target.png [--query query.png]]
//   compare --algo cemd --size 4Mi|64Kix1Mi|NxM [--mode raw | --metric l2] [--all-pairs]
//           [--ratio 0.8]
//   compare --algo cemd --query q.npy --database d.npy [--mode raw | --metric l2] [--all-pairs]
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "compare/inputs.hpp"
#include "kbench/error.hpp"
#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/registry.hpp"
#include "tool_support.hpp"

namespace kbench::compare {

ImageU8 load_or_generate(const Options& options, int channels, std::string* name) {
  ImageU8 image;
  if (!options.image_path.empty()) {
    image = read_image(options.image_path);
    const auto slash = options.image_path.find_last_of('/');
    *name = slash == std::string::npos ? options.image_path : options.image_path.substr(slash + 1);
  } else {
    const ImageSize size = parse_image_size(options.size);
    image = synthetic_image(size.width, size.height, 3, options.seed);
    *name = options.size;
  }
  if (channels == 1) return to_gray(image);
  if (image.channels == 3) return image;
  ImageU8 rgb(image.width, image.height, 3);
  for (std::size_t i = 0; i < image.pixel_count(); ++i) {
    for (int c = 0; c < 3; ++c) {
      rgb.data[i * 3 + c] = image.data[i * image.channels + (image.channels < 3 ? 0 : c)];
    }
  }
  return rgb;
}

// Portable variants also say whether their kernels use target-specific instructions and whether
// their schedule is a simple one.
void print_registry() {
  const int name_width = variant_column();
  std::printf("%-10s %-*s %-11s %-7s %-10s %s\n", "algo", name_width, "variant", "layer", "backend",
              "kind", "portable build");
  for (const auto& v : all_variants()) {
    std::string build;
    if (v.layer == Layer::portable) {
      build =
          std::string(to_string(v.isa)) + " instructions" + (v.simple ? ", simple schedule" : "");
    }
    std::printf("%-10s %-*s %-11s %-7s %-10s %s\n", v.algorithm.c_str(), name_width, v.name.c_str(),
                to_string(v.layer), to_string(v.backend), v.end_to_end ? "end-to-end" : "kernel",
                build.c_str());
  }
}

}  // namespace kbench::compare

int main(int argc, char** argv) {
  using namespace kbench::compare;
  Options options;
  bool list = false, list_cases = false;
  CLI::App app{
      "Checks every variant of an algorithm against the sequential reference, then times "
      "the correct ones.\nKokkos options (--kokkos-threads=N, ...) pass through."};
  app.add_option("--algo", options.algorithm, "Algorithm")
      ->check(CLI::IsMember(kbench::algorithm_names()))
      ->capture_default_str();
  app.add_option(
         "--size", options.size,
         "Generated input size: 480p, 720p, 1080p, 4k, 8k or WxH (sad: also test1, test2, test3; "
         "cemd: 4Mi or NxM descriptors, e.g. 64Kix1Mi)")
      ->capture_default_str();
  app.add_option("--image", options.image_path, "Use this image instead of a generated one");
  app.add_option("--query", options.query_path,
                 "sad: query image to find in --image (default: cut from it, with noise); cemd: "
                 "query descriptor file (.npy, .key, .csv; with --database)");
  app.add_option("--border", options.border, "conv, lbp: crop (output shrinks) or clamp")
      ->check(CLI::IsMember({"crop", "clamp"}))
      ->capture_default_str();
  app.add_option("--backend", options.backends,
                 "Only variants of these backends (serial, openmp, cuda)")
      ->check(CLI::IsMember({"serial", "openmp", "cuda"}));
  app.add_option("--variant", options.variants, "Only these variants (see --list)");
  app.add_option("--reps", options.timing.reps, "Timed repetitions per variant")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--json", options.json_path, "Append one JSON line per variant to this file");
  app.add_option("--seed", options.seed, "Seed of generated inputs")->capture_default_str();
  app.add_option("--budget-ms", options.timing.budget_ms,
                 "Time one variant for about this long at most (fewer reps for slow ones)")
      ->capture_default_str();
  app.add_flag("--check-only", options.check_only,
               "Check every variant against the reference; time none");
  app.add_option("--check-rows", options.check_rows,
                 "conv, lbp: check outputs on this many sampled rows (the first, the last and "
                 "seeded ones; lbp: and the whole histogram) instead of the whole reference, for "
                 "images too large for it; single-core variants then run only where --variant "
                 "names them")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--batch", options.batch,
                 "conv, lbp: frames per call; every variant frame by frame, and the library's "
                 "call on device views with all frames at once (<variant>-views)")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_flag("--list", list, "Print the variant registry and exit");
  app.add_flag("--list-cases", list_cases, "Print the algorithm's standard cases and exit");
  app.add_flag("-q,--quiet", options.quiet,
               "No progress line (on stderr, shown when stderr is a terminal and stdout is not)");
  const auto entries = algorithm_entries();
  for (const auto& entry : entries) entry.add_options(app);
  if (const auto status = kbench::tools::parse_command_line(app, "compare", argc, argv)) {
    return *status;
  }
  // The table and the per-variant lines go to stdout; a progress line on the same terminal would
  // overwrite them, so it is drawn only when stdout goes elsewhere.
  kbench::tools::Progress::enabled() =
      !options.quiet && kbench::tools::Progress::terminal() && ::isatty(STDOUT_FILENO) == 0;

  const bool image_algorithm = options.algorithm == "conv" || options.algorithm == "lbp";
  if (options.check_rows > 0 && !image_algorithm) {
    std::cerr << "compare: --check-rows applies to conv and lbp, not " << options.algorithm << '\n';
    return kbench::tools::kExitUsage;
  }
  if (options.batch > 1 && (!image_algorithm || options.check_rows > 0)) {
    std::cerr << "compare: --batch applies to conv and lbp, without --check-rows\n";
    return kbench::tools::kExitUsage;
  }

  // Listings need no execution space, so they work where a backend cannot start.
  if (list) {
    print_registry();
    return 0;
  }
  if (list_cases) {
    for (const auto& entry : entries) {
      if (options.algorithm != entry.name) continue;
      for (const char* c : entry.cases) std::printf("%s\n", c);
    }
    return 0;
  }
  return kbench::tools::run_guarded("compare", [&] {
    const kbench::KokkosRuntime kokkos(argc, argv);
    kbench::check_distinct_paths({{options.image_path, "--image"}, {options.query_path, "--query"}},
                                 {{options.json_path, "--json"}});
    for (const auto& entry : entries) {
      if (options.algorithm == entry.name) return entry.run(options);
    }
    throw kbench::UsageError("compare does not know the algorithm '" + options.algorithm + "'");
  });
}
