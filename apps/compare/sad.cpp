// compare --algo sad: its options and input.
//
// Cases: test1, test2, test3 (the report's 1500²/150², 2000²/200², 2500²/250²: a synthetic gray
// target and a query cut from it at a seeded position with ±2 grey levels of noise, so the
// answer is known), WxH targets with --query-size, or --image [--query] files. A "-nomap" suffix
// (or --no-map) asks for the argmin only: the fused variants run then, and the map-writing ones
// compute their map without handing it back.
//
// The sequential reference needs r·c byte-SADs per map position: 3.2e11 at test3, minutes on one
// core per run. Above --max-sequential-gsad the single-core variants (the sequential layer and
// the Serial backend) are skipped (their rows say so; test1 times them) and the checking
// reference comes from omp-blocked, after omp-blocked has matched the sequential reference on a
// crop of the same target with the same query.
#include <algorithm>

#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "kbench/image_io.hpp"
#include "kbench/sad.hpp"

namespace kbench::compare {
namespace {

struct SadOptions {
  std::string query_size;
  bool no_map = false;
  double max_sequential_gsad = 50.0;
} sad_options;

void add_sad_options(CLI::App& app) {
  app.add_option("--query-size", sad_options.query_size,
                 "sad: WxH of the query cut from a WxH or --image target (default: a tenth)");
  app.add_flag("--no-map", sad_options.no_map,
               "sad: argmin only (fused variants run; map variants keep their map)");
  app.add_option("--max-sequential-gsad", sad_options.max_sequential_gsad,
                 "sad: skip the single-core variants above this many G byte-SADs and check "
                 "against omp-blocked instead")
      ->capture_default_str();
}

struct NamedCase {
  const char* name;
  int target, query;
};
constexpr NamedCase kNamedCases[] = {
    {"test1", 1500, 150}, {"test2", 2000, 200}, {"test3", 2500, 250}};

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

int run_sad(const Options& options) {
  const SadOptions& opt = sad_options;
  if (!options.query_path.empty() && options.image_path.empty()) {
    throw Error("--query needs --image (the target to search)");
  }
  Case<Sad> problem;
  bool no_map = opt.no_map;
  bool known = true;
  SadMatch cut;
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
  if (!options.image_path.empty()) {
    ImageU8 target = load_or_generate(options, 1, &problem.name);
    if (!options.query_path.empty()) {
      problem.input.target = std::move(target);
      problem.input.query = to_gray(read_image(options.query_path));
      known = false;
    } else {
      const ImageSize q = query_size(target);
      SadCase c = cut_sad_case(target, q.width, q.height, options.seed);
      problem.input = std::move(c.input);
      cut = c.cut;
    }
  } else {
    const NamedCase* named = nullptr;
    for (const NamedCase& n : kNamedCases) {
      if (size == n.name) named = &n;
    }
    SadCase c;
    if (named) {
      c = generated_sad_case(named->target, named->target, named->query, named->query,
                             options.seed);
    } else {
      const ImageSize t = parse_image_size(size);
      const ImageU8 target = to_gray(synthetic_image(t.width, t.height, 3, options.seed));
      const ImageSize q = query_size(target);
      c = cut_sad_case(target, q.width, q.height, options.seed);
    }
    problem.input = std::move(c.input);
    cut = c.cut;
    problem.name = size;
  }
  problem.input.params.want_map = !no_map;
  if (no_map) problem.name += suffix;
  const SadShape s = validate_sad_input(problem.input);
  problem.description =
      std::to_string(s.target_width) + "x" + std::to_string(s.target_height) + " target, " +
      std::to_string(s.query_width) + "x" + std::to_string(s.query_height) + " query" +
      (known ? " cut at (row " + std::to_string(cut.row) + ", col " + std::to_string(cut.col) + ")"
             : std::string()) +
      (no_map ? ", argmin only" : ", map + argmin");

  const double gsad = Sad::workload(problem.input).operations / 1e9;
  const bool sequential_too_slow = gsad > opt.max_sequential_gsad;
  if (sequential_too_slow) {
    char reason[160];
    std::snprintf(reason, sizeof reason,
                  "one core is too slow for %.3g G byte-SADs (> --max-sequential-gsad %g); "
                  "see test1",
                  gsad, opt.max_sequential_gsad);
    problem.skip = [text = std::string(reason)](const Variant<Sad>& v) {
      return v.layer == Layer::sequential || v.backend == Backend::serial ? text : std::string();
    };
  }
  std::string crop_text;
  problem.reference_source = sequential_too_slow
                                 ? "omp-blocked (after it matches the sequential reference on a "
                                   "crop of the target)"
                                 : "the sequential reference";
  problem.reference = [&]() {
    SadResult reference = sequential_too_slow
                              ? checked_cpu_reference(problem.input, cut, &crop_text)
                              : Sad::reference(problem.input);
    if (sequential_too_slow) {
      std::printf("omp-blocked matched the sequential reference on the %s\n", crop_text.c_str());
    }
    std::printf("the reference's argmin: (row %d, col %d), score %d", reference.best.row,
                reference.best.col, reference.best.score);
    if (known) {
      const bool found = reference.best.row == cut.row && reference.best.col == cut.col;
      std::printf("; the query was cut at (row %d, col %d): %s", cut.row, cut.col,
                  found ? "found" : "NOT FOUND");
    }
    std::printf("\n");
    return reference;
  };
  return run(options, problem);
}

}  // namespace

AlgorithmEntry sad_entry() {
  return {Sad::name, {"test1", "test2", "test3", "test3-nomap"}, add_sad_options, run_sad};
}

}  // namespace kbench::compare
