// compare --algo sad: its options and input, and the cases sad-pruned shares with it: the
// report's test1..test3 (a synthetic target and a query cut from it, so the answer is known), the
// pruned-matching paper's photo sizes (photo2306-q64 to photo3072-q128: a photo-like scene and a
// query with Gaussian noise of --noise σ), WxH targets or image files; "-nomap" (--no-map) asks
// for the argmin only. Above --max-sequential-gsad the single-core variants are skipped and the
// checking reference comes from omp-blocked, after it has matched the sequential reference on a
// crop of the same target with the same query. In full: docs/sad.md#what-it-is
#include <algorithm>

#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sad_cases.hpp"
#include "kbench/image_io.hpp"
#include "kbench/sad.hpp"
#include "kbench/sad_pruned.hpp"

namespace kbench::compare {
namespace {

SadCaseOptions sad_options;

void add_sad_options(CLI::App& app) {
  app.add_option(
      "--query-size", sad_options.query_size,
      "sad, sad-pruned: WxH of the query cut from a WxH or --image target (default: a tenth)");
  app.add_flag("--no-map", sad_options.no_map,
               "sad: argmin only (fused variants run; map variants keep their map)");
  app.add_option(
         "--max-sequential-gsad", sad_options.max_sequential_gsad,
         "sad, sad-pruned: skip the single-core variants above this many G byte-SADs and check "
         "against omp-blocked instead")
      ->capture_default_str();
  app.add_option("--noise", sad_options.noise,
                 "sad, sad-pruned: standard deviation of the Gaussian noise added to a cut query "
                 "(default: ±2 uniform for test1-3, σ 5 for the photo cases)")
      ->check(CLI::Range(0.0, 1000.0));
}

struct NamedCase {
  const char* name;
  int width, height, query;
  bool photo;  // photo-like scene (else the report's synthetic image)
};
constexpr NamedCase kNamedCases[] = {
    {"test1", 1500, 1500, 150, false},         {"test2", 2000, 2000, 200, false},
    {"test3", 2500, 2500, 250, false},         {"photo2306-q64", 2306, 1535, 64, true},
    {"photo2306-q128", 2306, 1535, 128, true}, {"photo3072-q64", 3072, 2304, 64, true},
    {"photo3072-q128", 3072, 2304, 128, true}};
constexpr double kPhotoNoise = 5.0;  // σ of the photo cases' query noise by default

ImageU8 crop(const ImageU8& image, int x0, int y0, int width, int height) {
  ImageU8 out(width, height, image.channels);
  for (int y = 0; y < height; ++y) {
    std::copy_n(&image.at(x0, y0 + y, 0), std::size_t(width) * image.channels, &out.at(0, y, 0));
  }
  return out;
}

// omp-blocked's result for `input` (with its map), once omp-blocked has matched the sequential
// reference on a crop of the target around `centre` with (up to) 64 × 64 positions.
SadResult checked_cpu_reference(const SadInput& input, const SadMatch& centre,
                                std::string* crop_text) {
  const Variant<Sad>& cpu = find_variant<Sad>("omp-blocked");
  SadInput small;
  small.query = input.query;
  const int w = std::min(input.target.width, input.query.width + 63);
  const int h = std::min(input.target.height, input.query.height + 63);
  const int x0 = std::clamp(centre.col - 32, 0, input.target.width - w);
  const int y0 = std::clamp(centre.row - 32, 0, input.target.height - h);
  small.target = crop(input.target, x0, y0, w, h);
  *crop_text = std::to_string(w) + "x" + std::to_string(h) + " crop at (row " + std::to_string(y0) +
               ", col " + std::to_string(x0) + ")";
  const CheckResult check = Sad::check(small, Sad::reference(small), run_checked(cpu, small));
  if (!check.ok) {
    throw Error("omp-blocked differs from the sequential reference on the " + *crop_text + ": " +
                check.detail + "; no trusted reference for this case");
  }
  SadInput full = input;
  full.params.want_map = true;
  return run_once(cpu, full);
}

}  // namespace

SadCaseOptions& sad_case_options() {
  return sad_options;
}

SadProblem build_sad_case(const Options& options, bool no_map) {
  const SadCaseOptions& opt = sad_options;
  if (!options.query_path.empty() && options.image_path.empty()) {
    throw Error("--query needs --image (the target to search)");
  }
  SadProblem problem;
  problem.known = true;
  std::string size = options.size;
  const std::string suffix = "-nomap";
  if (size.size() > suffix.size() &&
      size.compare(size.size() - suffix.size(), suffix.size(), suffix) == 0) {
    size.resize(size.size() - suffix.size());
    no_map = true;
  }
  const auto query_size = [&](const ImageU8& target) {
    if (!opt.query_size.empty()) return parse_image_size(opt.query_size);
    return ImageSize{std::max(1, target.width / 10), std::max(1, target.height / 10)};
  };
  // A query cut from `target`: ±2 uniform noise unless --noise (or the case) gives a σ.
  const auto cut = [&](const ImageU8& target, int qw, int qh, double default_sigma) {
    const double sigma = opt.noise >= 0 ? opt.noise : default_sigma;
    return sigma >= 0 ? cut_sad_case_gaussian(target, qw, qh, options.seed, sigma)
                      : cut_sad_case(target, qw, qh, options.seed);
  };
  SadCase c;
  if (!options.image_path.empty()) {
    ImageU8 target = load_or_generate(options, 1, &problem.name);
    if (!options.query_path.empty()) {
      c.input.target = std::move(target);
      c.input.query = to_gray(read_image(options.query_path));
      problem.known = false;
    } else {
      const ImageSize q = query_size(target);
      c = cut(target, q.width, q.height, -1);
    }
  } else {
    const NamedCase* named = nullptr;
    for (const NamedCase& n : kNamedCases) {
      if (size == n.name) named = &n;
    }
    if (named) {
      const ImageU8 target =
          named->photo ? photo_like_scene(named->width, named->height, options.seed)
                       : to_gray(synthetic_image(named->width, named->height, 3, options.seed));
      c = cut(target, named->query, named->query, named->photo ? kPhotoNoise : -1);
    } else {
      const ImageSize t = parse_image_size(size);
      const ImageU8 target = to_gray(synthetic_image(t.width, t.height, 3, options.seed));
      const ImageSize q = query_size(target);
      c = cut(target, q.width, q.height, -1);
    }
    problem.name = size;
  }
  problem.input = std::move(c.input);
  problem.cut = c.cut;
  problem.input.params.want_map = !no_map;
  if (opt.noise >= 0) {
    char noise[32];
    std::snprintf(noise, sizeof noise, "-s%g", opt.noise);
    problem.name += noise;
  }
  if (no_map) problem.name += suffix;
  const SadShape s = validate_sad_input(problem.input);
  problem.description = std::to_string(s.target_width) + "x" + std::to_string(s.target_height) +
                        " target, " + std::to_string(s.query_width) + "x" +
                        std::to_string(s.query_height) + " query" +
                        (problem.known ? " cut at (row " + std::to_string(problem.cut.row) +
                                             ", col " + std::to_string(problem.cut.col) + ")"
                                       : std::string());
  return problem;
}

std::function<SadResult()> trusted_sad_reference(const SadProblem& problem, bool* too_slow) {
  const double gsad = Sad::workload(problem.input).operations / 1e9;
  *too_slow = gsad > sad_options.max_sequential_gsad;
  return [&problem, slow = *too_slow]() {
    std::string crop_text;
    SadResult reference = slow ? checked_cpu_reference(problem.input, problem.cut, &crop_text)
                               : Sad::reference(problem.input);
    if (slow)
      std::printf("omp-blocked matched the sequential reference on the %s\n", crop_text.c_str());
    std::printf("the reference's argmin: (row %d, col %d), score %d", reference.best.row,
                reference.best.col, reference.best.score);
    if (problem.known) {
      const bool found =
          reference.best.row == problem.cut.row && reference.best.col == problem.cut.col;
      std::printf("; the query was cut at (row %d, col %d): %s", problem.cut.row, problem.cut.col,
                  found ? "found" : "NOT FOUND");
    }
    std::printf("\n");
    return reference;
  };
}

std::string too_slow_for_one_core(const SadInput& input) {
  char reason[160];
  std::snprintf(reason, sizeof reason,
                "one core is too slow for %.3g G byte-SADs (> --max-sequential-gsad %g); "
                "see test1",
                Sad::workload(input).operations / 1e9, sad_options.max_sequential_gsad);
  return reason;
}

namespace {

int run_sad(const Options& options) {
  Case<Sad> problem;
  SadProblem built = build_sad_case(options, sad_options.no_map);
  problem.input = built.input;
  problem.name = built.name;
  problem.description =
      built.description + (problem.input.params.want_map ? ", map + argmin" : ", argmin only");
  bool sequential_too_slow = false;
  problem.reference = trusted_sad_reference(built, &sequential_too_slow);
  problem.reference_source = sequential_too_slow
                                 ? "omp-blocked (after it matches the sequential reference on a "
                                   "crop of the target)"
                                 : "the sequential reference";
  if (sequential_too_slow) {
    problem.skip = [text = too_slow_for_one_core(problem.input)](const Variant<Sad>& v) {
      return v.layer == Layer::sequential || v.backend == Backend::serial ? text : std::string();
    };
  }
  return run(options, problem);
}

}  // namespace

AlgorithmEntry sad_entry() {
  return {Sad::name, {"test1", "test2", "test3", "test3-nomap"}, add_sad_options, run_sad};
}

}  // namespace kbench::compare
