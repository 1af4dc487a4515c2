// cemd-match: matches query SIFT descriptors against a database by circular earth mover's
// distance (or L2), with Lowe's ratio test, on the fastest variant this machine offers, and writes
// each query's nearest two as CSV.
//
//   cemd-match query.npy database.npy -o matches.csv [--mode normalised|raw] [--metric cemd|l2]
//              [--ratio 0.8] [--all-pairs matrix.csv] [--backend serial|openmp|cuda]
//              [--variant NAME] [--gpus-per-rank G] [--verbose]
//   mpirun -np N cemd-match ...   (builds with KBENCH_MPI: the database sharded over the ranks)
//
// Under an MPI launcher every rank reads only its rows of the database, rank 0 reads the queries
// and broadcasts them, the ranks' nearest two are merged on rank 0 with the tie rule of one
// process (so the file is byte-identical for any rank count) and rank 0 writes the results. A
// rank uses GPU (node rank × G) .. + G − 1 of its machine; G > 1 drives them from one host
// thread each with a native CUDA variant. Any rank's error ends the whole job with a message
// naming the rank, and no result file is written.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "kbench/cemd_shards.hpp"
#include "kbench/descriptor_io.hpp"
#include "kbench/error.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/registry.hpp"
#if defined(KBENCH_HAVE_MPI)
#include "kbench/cemd_mpi.hpp"
#endif

namespace {

constexpr const char* kProgram = "cemd-match";

struct Options {
  std::string query_path, database_path, output_path, matrix_path;
  std::string metric = "cemd", mode = "normalised";
  kbench::ShardOptions shard;
  bool verbose = false;
};

using Clock = std::chrono::steady_clock;

// The CUDA device this process's main thread (and Kokkos) uses, or −1 for none; sets it.
int place_on_gpus(const kbench::ShardGroup& group, Options& options) {
  const int available = kbench::cuda_device_count();
  const int per_rank = options.shard.gpus;
  const bool host_only = options.shard.backend == "serial" || options.shard.backend == "openmp";
  if (per_rank > 1 && (available == 0 || host_only)) {
    throw kbench::Error("--gpus-per-rank " + std::to_string(per_rank) +
                        " needs CUDA GPUs and the cuda backend; this build or machine has none");
  }
  if (available == 0 || host_only) return -1;
  int device = 0;
  if (per_rank > 1) {
    options.shard.first_gpu = group.node_rank() * per_rank;
    if (options.shard.first_gpu + per_rank > available) {
      throw kbench::Error("node rank " + std::to_string(group.node_rank()) + " with " +
                          std::to_string(per_rank) + " GPUs per rank needs GPUs " +
                          std::to_string(options.shard.first_gpu) + " to " +
                          std::to_string(options.shard.first_gpu + per_rank - 1) +
                          ", but this machine has " + std::to_string(available));
    }
    device = options.shard.first_gpu;
  } else {
    // Ranks beyond the GPU count share them round-robin.
    device = group.node_rank() % available;
  }
  kbench::use_cuda_device(device);
  return device;
}

void run(kbench::ShardGroup& group, const Options& options) {
  const Clock::time_point start = Clock::now();
  kbench::DescriptorSet queries;
  std::int64_t rows = 0;
  if (group.rank() == 0) {
    queries = kbench::read_descriptors(options.query_path);
    rows = kbench::count_descriptors(options.database_path);
  }
  group.broadcast(queries);
  group.broadcast(rows);
  // A file header that disagrees with rank 0's (another copy of the file on this machine) would
  // shift the rows this rank reads; CSV files are not counted again (that reads them whole).
  if (group.rank() != 0 &&
      kbench::descriptor_file_format(options.database_path) != kbench::DescriptorFileFormat::csv) {
    const std::int64_t here = kbench::count_descriptors(options.database_path);
    if (here != rows) {
      throw kbench::Error("'" + options.database_path + "' holds " + std::to_string(here) +
                          " descriptors here, but " + std::to_string(rows) + " on rank 0");
    }
  }
  const kbench::RowRange shard = kbench::shard_rows(rows, group.size(), group.rank());
  const kbench::RowReader read_rows = [&](std::int64_t first, int count) {
    return kbench::read_descriptor_rows(options.database_path, first, count);
  };
  kbench::ShardResult local = kbench::match_shard(queries, shard, read_rows, options.shard);
  group.reduce_top2(local.top2);
  std::vector<float> matrix;
  if (options.shard.params.all_pairs) {
    matrix = group.gather_matrix(std::move(local.matrix), queries.count, shard, rows);
  }
  const double slowest = group.max_over_ranks(local.seconds);
  if (group.rank() != 0) return;

  kbench::CemdResult result = kbench::result_from_top2(local.top2, int(rows));
  result.matrix = std::move(matrix);
  kbench::write_matches_csv(options.output_path, result, options.shard.params.ratio);
  if (!options.matrix_path.empty()) {
    kbench::write_distance_matrix_csv(options.matrix_path, result);
  }
  int accepted = 0;
  for (const auto& n : result.neighbours)
    accepted += kbench::ratio_accepted(n, options.shard.params.ratio);
  if (options.verbose) {
    const double comparisons = double(queries.count) * double(rows);
    const kbench::Backend backend = kbench::find_variant<kbench::Cemd>(local.variant).backend;
    std::printf("%s: variant %s (%s) on rank 0, %d rank(s)", kProgram, local.variant.c_str(),
                kbench::to_string(backend), group.size());
    if (backend == kbench::Backend::cuda) std::printf(" x %d GPU(s)", options.shard.gpus);
    std::printf(", distance %s\n", kbench::to_string(options.shard.params.distance));
    std::printf(
        "%s: %.4g comparisons in %.4f s (slowest rank and GPU, copies included): %.4g "
        "comparisons/s; %.4f s from start to written file\n",
        kProgram, comparisons, slowest, slowest > 0 ? comparisons / slowest : 0.0,
        std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::printf("%s: %d queries, %lld database descriptors, %d accepted matches (ratio %g) -> %s\n",
              kProgram, queries.count, static_cast<long long>(rows), accepted,
              double(options.shard.params.ratio), options.output_path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "Matches query SIFT descriptors against a database by circular earth mover's distance "
      "(Rabin et al.) or L2 and writes, per query, the nearest two database descriptors and "
      "Lowe's ratio test as CSV (query,index,distance,second_index,second_distance,accepted; "
      "0-based rows). Descriptor files: .npy (uint8 or float32, N x 128), Lowe's .key, CSV. "
      "Under mpirun the database is sharded over the ranks.\nKokkos options "
      "(--kokkos-threads=N, ...) pass through."};
  app.allow_extras();
  app.add_option("query", options.query_path, "Query descriptors (.npy, .key, .csv)")->required();
  app.add_option("database", options.database_path, "Database descriptors (.npy, .key, .csv)")
      ->required();
  app.add_option("-o,--output", options.output_path, "Matches CSV to write")->required();
  app.add_option("--metric", options.metric, "Distance: circular EMD or Euclidean")
      ->check(CLI::IsMember({"cemd", "l2"}))
      ->capture_default_str();
  app.add_option("--mode", options.mode,
                 "CEMD mode: cells as distributions (normalised) or raw values (raw)")
      ->check(CLI::IsMember({"normalised", "raw"}))
      ->capture_default_str();
  app.add_option("--ratio", options.shard.params.ratio,
                 "Lowe's ratio test: a match is accepted when best < ratio x second")
      ->capture_default_str();
  app.add_option("--all-pairs", options.matrix_path,
                 "Also write the queries x database distance matrix as CSV");
  app.add_option("--backend", options.shard.backend, "Only variants of this backend")
      ->check(CLI::IsMember({"serial", "openmp", "cuda"}));
  app.add_option("--variant", options.shard.variant,
                 "Run this registry variant (compare --list shows them)");
  app.add_option("--gpus-per-rank", options.shard.gpus,
                 "GPUs each process drives, one host thread each (native CUDA variants)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_flag("--verbose", options.verbose, "Print the variant, sizes, time and rate");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
#if defined(KBENCH_HAVE_MPI)
    // Every rank parses the same line: one of them says what is wrong.
    if (kbench::MpiShardGroup::launcher_rank() != 0) return e.get_exit_code();
#endif
    return app.exit(e);
  }
  for (const auto& extra : app.remaining()) {
    if (extra.rfind("--kokkos-", 0) != 0) {
      std::cerr << kProgram << ": unknown option '" << extra << "' (see --help)\n";
      return 2;
    }
  }
  if (options.metric == "l2" && app.count("--mode")) {
    std::cerr << kProgram << ": --mode applies to --metric cemd only\n";
    return 2;
  }
  options.shard.params.distance =
      kbench::parse_descriptor_distance(options.metric == "l2" ? "l2" : options.mode);
  options.shard.params.all_pairs = !options.matrix_path.empty();

  std::unique_ptr<kbench::ShardGroup> group;
#if defined(KBENCH_HAVE_MPI)
  if (kbench::MpiShardGroup::launched()) {
    try {
      group = std::make_unique<kbench::MpiShardGroup>(&argc, &argv);
    } catch (const kbench::Error& e) {
      std::cerr << kProgram << ": rank " << kbench::MpiShardGroup::launcher_rank() << ": "
                << e.what() << '\n';
      return 1;
    }
  }
#endif
  if (!group) group = std::make_unique<kbench::ShardGroup>();
  // One line naming the rank; under MPI it ends every rank.
  const auto fail = [&](const std::string& message) {
#if defined(KBENCH_HAVE_MPI)
    if (auto* mpi = dynamic_cast<kbench::MpiShardGroup*>(group.get()))
      mpi->abort(kProgram, message);
#endif
    std::cerr << kProgram << ": " << message << '\n';
    return 1;
  };

  // The GPU is chosen before Kokkos starts, and Kokkos is told to use it.
  std::vector<std::string> kokkos_args(argv, argv + argc);
  try {
    const int device = place_on_gpus(*group, options);
    const bool chosen_by_user = std::any_of(kokkos_args.begin(), kokkos_args.end(), [](auto& a) {
      return a.rfind("--kokkos-device-id", 0) == 0;
    });
    if (device >= 0 && !chosen_by_user) {
      kokkos_args.push_back("--kokkos-device-id=" + std::to_string(device));
    }
  } catch (const kbench::Error& e) {
    return fail(e.what());
  }
  std::vector<char*> kokkos_argv;
  for (auto& a : kokkos_args) kokkos_argv.push_back(a.data());
  int kokkos_argc = int(kokkos_argv.size());
  kokkos_argv.push_back(nullptr);
  const kbench::KokkosRuntime kokkos(kProgram, kokkos_argc, kokkos_argv.data());
  try {
    run(*group, options);
  } catch (const std::bad_alloc&) {
    return fail("out of host memory");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}
