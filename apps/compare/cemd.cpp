// compare --algo cemd: its options and input. A case is NxM, N queries against M database
// descriptors (Ki and Mi suffixes; 4Mi is the paper's 1Ki × 4Ki), optionally ending in -raw, -l2
// and -all (e.g. 4Mi-raw); the database is generated SIFT-like and the queries are perturbed
// copies of its rows plus unrelated ones, seeded by --seed; --query and --database compare on
// files instead. The reference costs about a microsecond per comparison on one core, so large
// cases skip the single-core variants (above --max-sequential-gcmp; the reference then comes from
// omp-simd-<level>) or every host variant (above --max-host-gcmp; then a sampled reference of the
// first --reference-queries queries). In full: docs/cemd.md#checking-with-compare
#include <algorithm>

#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "kbench/cemd.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/descriptor_io.hpp"
#include "tool_support.hpp"

namespace kbench::compare {
namespace {

struct CemdOptions {
  std::string database_path;
  tools::DistanceOptions distance;
  bool all_pairs = false;
  float ratio = 0.8f;
  double max_sequential_gcmp = 0.02;
  double max_host_gcmp = 2.0;
  int reference_queries = 256;
} cemd_options;

void add_cemd_options(CLI::App& app) {
  app.add_option("--database", cemd_options.database_path,
                 "cemd: database descriptor file (.npy, .key, .csv; with --query)");
  tools::add_distance_options(app, cemd_options.distance, "cemd: ");
  app.add_flag("--all-pairs", cemd_options.all_pairs,
               "cemd: the all-pairs distance matrix instead of the nearest two per query");
  app.add_option("--ratio", cemd_options.ratio, "cemd: Lowe's ratio test, in (0, 1]")
      ->check(tools::ratio_range())
      ->capture_default_str();
  app.add_option("--max-sequential-gcmp", cemd_options.max_sequential_gcmp,
                 "cemd: skip the single-core variants above this many G comparisons and take "
                 "the reference from omp-simd-<level>")
      ->capture_default_str();
  app.add_option("--max-host-gcmp", cemd_options.max_host_gcmp,
                 "cemd: skip every host variant above this many G comparisons and check on a "
                 "sample of queries")
      ->capture_default_str();
  app.add_option("--reference-queries", cemd_options.reference_queries,
                 "cemd: queries in the sampled reference above --max-host-gcmp")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

// "1024", "4Ki", "1Mi" → a count.
int parse_count(const std::string& text, const std::string& size) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  const long long unit = suffix.empty() ? 1 : suffix == "Ki" ? 1024 : suffix == "Mi" ? 1 << 20 : 0;
  const long long value = digits > 0 && digits <= 9 ? std::stoll(text.substr(0, digits)) * unit : 0;
  if (value < 1 || value > std::numeric_limits<int>::max()) {
    throw Error("cemd size '" + size + "': '" + text +
                "' is not a descriptor count (digits with an optional Ki or Mi suffix)");
  }
  return int(value);
}

struct CemdShape {
  int queries, database;
};

// A case name without its -raw/-l2/-all suffixes: 4Mi, 64Kix1Mi or NxM.
CemdShape parse_shape(const std::string& size) {
  if (size == "4Mi") return {1024, 4096};
  const auto x = size.find('x');
  if (x == std::string::npos) {
    throw Error(
        "cemd sizes are 4Mi, NxM (e.g. 64Kix1Mi, 1000x5000) with optional -raw, -l2, "
        "-all suffixes, not '" +
        size + "'");
  }
  return {parse_count(size.substr(0, x), size), parse_count(size.substr(x + 1), size)};
}

// Removes `suffix` from the end of `text`; true when it was there.
bool strip_suffix(std::string& text, const std::string& suffix) {
  if (text.size() <= suffix.size() ||
      text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  text.resize(text.size() - suffix.size());
  return true;
}

std::string file_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool from_files(const Options& options) {
  if (options.query_path.empty() != cemd_options.database_path.empty()) {
    throw Error("cemd: --query and --database go together");
  }
  return !options.query_path.empty();
}

// The descriptor sets of a case: read from --query and --database, or generated (a seeded
// SIFT-like database, and queries perturbed from its rows).
void load_or_generate_descriptors(const Options& options, const CemdShape& shape, CemdInput& input,
                                  std::string* origin) {
  if (from_files(options)) {
    input.queries = read_descriptors(options.query_path);
    input.database = read_descriptors(cemd_options.database_path);
    *origin = "read from " + file_name(options.query_path) + " and " +
              file_name(cemd_options.database_path);
    return;
  }
  input.database = generated_descriptors(shape.database, options.seed);
  input.queries = generated_queries(input.database, shape.queries, options.seed);
  *origin = "generated SIFT-like, seed " + std::to_string(options.seed);
}

// The first `count` queries of an input.
CemdInput first_queries(const CemdInput& input, int count) {
  CemdInput sub = input;
  sub.queries.count = count;
  sub.queries.values.resize(std::size_t(count) * kDescriptorBytes);
  return sub;
}

// A reference for `input` (its first queries, when it covers fewer) made from a trusted
// variant's result; the neighbours' distances recomputed in double.
CemdReference reference_from(const CemdInput& input, const CemdResult& result) {
  CemdReference r;
  r.queries = result.queries;
  r.database = result.database;
  if (input.params.all_pairs) r.matrix.assign(result.matrix.begin(), result.matrix.end());
  r.neighbours = result.neighbours;
  const auto distance = [&](int q, int j) {
    return j < 0 ? std::numeric_limits<double>::infinity()
                 : reference_distance(input.queries.row(q), input.database.row(j),
                                      input.params.distance);
  };
  for (int q = 0; q < int(result.neighbours.size()); ++q) {
    const CemdNeighbours& n = result.neighbours[std::size_t(q)];
    r.best_distance.push_back(distance(q, n.best_index));
    r.second_distance.push_back(distance(q, n.second_index));
  }
  return r;
}

// The CPU variant that gives the reference where one core is too slow: the fastest this CPU runs.
std::string trusted_variant() {
  return simd_variant_name(cpu_level());
}

// trusted_variant()'s result on the first `count` queries, once it has matched the sequential
// reference on the first `verified` of them.
CemdReference trusted_reference(const CemdInput& input, int count, int verified) {
  const Variant<Cemd>& cpu = find_variant<Cemd>(trusted_variant());
  const CemdInput small = first_queries(input, verified);
  const CheckResult check = Cemd::check(small, Cemd::reference(small), run_checked(cpu, small));
  if (!check.ok) {
    throw Error(cpu.name + " differs from the sequential reference on the first " +
                std::to_string(verified) + " queries: " + check.detail +
                "; no trusted reference for this case");
  }
  std::printf("%s matched the sequential reference on the first %d queries\n", cpu.name.c_str(),
              verified);
  const CemdInput sample = first_queries(input, count);
  return reference_from(sample, run_once(cpu, sample));
}

// Comparisons the sequential reference checks trusted_variant() on before trusting it.
constexpr double kVerifiedComparisons = 4.0 * (1 << 20);

int run_cemd(const Options& options) {
  const CemdOptions& opt = cemd_options;
  std::string size = options.size;
  DescriptorDistance distance = parse_descriptor_distance(opt.distance.distance_name());
  bool all_pairs = opt.all_pairs;
  // Suffixes in any order.
  for (bool stripped = true; stripped;) {
    stripped = false;
    if (strip_suffix(size, "-raw")) distance = DescriptorDistance::cemd_raw, stripped = true;
    if (strip_suffix(size, "-l2")) distance = DescriptorDistance::l2, stripped = true;
    if (strip_suffix(size, "-all")) all_pairs = true, stripped = true;
  }
  // Files give the shape; the case is named after them.
  CemdShape shape{};
  if (from_files(options)) {
    size = file_name(options.query_path) + "-x-" + file_name(cemd_options.database_path);
  } else {
    shape = parse_shape(size);
  }
  Case<Cemd> problem;
  std::string origin;
  load_or_generate_descriptors(options, shape, problem.input, &origin);
  problem.input.params.distance = distance;
  problem.input.params.all_pairs = all_pairs;
  problem.input.params.ratio = opt.ratio;
  validate_cemd_input(problem.input);
  const int n = problem.input.queries.count, m = problem.input.database.count;
  problem.name =
      size +
      (distance == DescriptorDistance::cemd_normalised ? ""
                                                       : "-" + std::string(to_string(distance))) +
      (all_pairs ? "-all" : "");
  problem.description = std::to_string(n) + " queries x " + std::to_string(m) + " database, " +
                        to_string(distance) + (all_pairs ? ", all pairs" : ", nearest two") + ", " +
                        origin;

  const double gcmp = Cemd::workload(problem.input).operations / 1e9;
  const bool single_core_too_slow = gcmp > opt.max_sequential_gcmp;
  const bool host_too_slow = gcmp > opt.max_host_gcmp;
  // Empty: the sequential reference itself.
  std::function<CemdReference()> compute_reference;
  problem.reference_source = "the sequential reference";
  if (single_core_too_slow) {
    char reason[200];
    if (host_too_slow) {
      std::snprintf(reason, sizeof reason,
                    "host variants are too slow for %.3g G comparisons (> --max-host-gcmp %g); "
                    "%s gives the sampled reference",
                    gcmp, opt.max_host_gcmp, trusted_variant().c_str());
    } else {
      std::snprintf(reason, sizeof reason,
                    "one core is too slow for %.3g G comparisons (> --max-sequential-gcmp %g); "
                    "see 4Mi",
                    gcmp, opt.max_sequential_gcmp);
    }
    problem.skip = [text = std::string(reason), host_too_slow](const Variant<Cemd>& v) {
      const bool skipped = host_too_slow
                               ? v.backend != Backend::cuda
                               : v.layer == Layer::sequential || v.backend == Backend::serial;
      return skipped ? text : std::string();
    };
    const int reference_queries = host_too_slow ? std::min(n, opt.reference_queries) : n;
    const int verified = std::clamp(int(kVerifiedComparisons / m), 1, reference_queries);
    problem.reference_source = trusted_variant() + " on the first " +
                               std::to_string(reference_queries) +
                               " queries (after it matches the sequential reference on the first " +
                               std::to_string(verified) + ")";
    compute_reference = [&problem, reference_queries, verified]() {
      return trusted_reference(problem.input, reference_queries, verified);
    };
  }
  problem.reference = [&problem, compute_reference, all_pairs, ratio = opt.ratio]() {
    CemdReference r = compute_reference ? compute_reference() : Cemd::reference(problem.input);
    if (!all_pairs) {
      int accepted = 0;
      for (const CemdNeighbours& nb : r.neighbours) accepted += ratio_accepted(nb, ratio);
      std::printf("the reference: %d of %d queries pass the ratio test at %g\n", accepted,
                  r.queries, ratio);
    }
    return r;
  };
  return run(options, problem);
}

}  // namespace

AlgorithmEntry cemd_entry() {
  return {Cemd::name,
          {"4Mi", "4Mi-raw", "4Mi-all", "64Kix1Mi", "64Kix1Mi-raw", "64Kix1Mi-l2"},
          add_cemd_options,
          run_cemd};
}

}  // namespace kbench::compare
