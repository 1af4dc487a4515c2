// cemd-match: matches query SIFT descriptors against a database by circular earth mover's
// distance (or L2), with Lowe's ratio test, on the fastest variant this machine offers, and writes
// each query's nearest two as CSV.
//
//   cemd-match query.npy database.npy -o matches.csv [--mode normalised|raw] [--metric cemd|l2]
//              [--ratio 0.8] [--all-pairs matrix.csv] [--backend serial|openmp|cuda]
//              [--variant NAME] [--gpus-per-rank G] [--reader-threads T] [--piece-rows P]
//              [--verbose] [--quiet]
//   mpirun -np N cemd-match ...   (builds with KBENCH_MPI: the database sharded over the ranks)
//
// Under MPI, rank 0 merges the ranks' nearest two with the tie rule of one process, so the file
// is byte-identical for any rank count. How the ranks share the work, and their GPUs and errors:
// docs/cemd.md#many-gpus-and-nodes
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>

#include "kbench/cemd_shards.hpp"
#include "kbench/descriptor_io.hpp"
#include "kbench/descriptor_write.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/file_io.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/registry.hpp"
#include "kbench/system_info.hpp"
#include "tool_support.hpp"
#if defined(KBENCH_HAVE_MPI)
#include "kbench/cemd_mpi.hpp"
#endif

namespace {

constexpr const char* kProgram = "cemd-match";

struct Options {
  std::string query_path, database_path, output_path, matrix_path;
  kbench::tools::DistanceOptions distance;
  kbench::ShardOptions shard;
  kbench::tools::RunOptions run;
};

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

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

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1ull << 30));
  return text;
}

// --all-pairs keeps the queries × database matrix in rank 0's memory and writes it as text:
// refused before any matching when either cannot fit.
void check_matrix_fits(const Options& options, std::int64_t queries, std::int64_t rows) {
  const std::uint64_t memory = std::uint64_t(queries) * std::uint64_t(rows) * sizeof(float);
  const std::uint64_t available = kbench::available_host_memory();
  const std::string shape = std::to_string(queries) + " x " + std::to_string(rows);
  if (available > 0 && memory > available) {
    throw kbench::Error("--all-pairs: the " + shape + " distance matrix needs " + gib(memory) +
                        " of memory, and this machine has " + gib(available) + " available");
  }
  const std::uint64_t least_file = kbench::least_matrix_csv_bytes(queries, rows);
  const std::uint64_t free_space = kbench::free_bytes_for(options.matrix_path);
  if (least_file > free_space) {
    throw kbench::Error("--all-pairs: the " + shape + " matrix takes at least " + gib(least_file) +
                        " as CSV, and " + kbench::output_name(options.matrix_path) +
                        "'s file system has " + gib(free_space) + " free");
  }
}

// What the reader did with a text file (a header line, a byte-order mark), for --verbose.
void print_reader_notes(const std::string& path, const kbench::DescriptorFileNotes& notes) {
  if (notes.bom_skipped) {
    std::fprintf(stderr, "%s: %s: skipped a UTF-8 byte-order mark\n", kProgram,
                 kbench::output_name(path).c_str());
  }
  if (notes.header_skipped) {
    std::fprintf(stderr, "%s: %s: line %lld is a header and was skipped (%s)\n", kProgram,
                 kbench::output_name(path).c_str(), static_cast<long long>(notes.header_line),
                 notes.header_reason.c_str());
  }
}

// Whether the queries can be counted before they are read: a regular .npy file, by its header.
// Then their reading (and broadcast) runs beside the start of the matching.
bool counted_before_read(const std::string& path) {
  std::error_code error;
  return path != "-" && std::filesystem::is_regular_file(path, error) &&
         kbench::descriptor_file_format(path) == kbench::DescriptorFileFormat::npy;
}

// One rank driving several GPUs makes each one's context at its start, as Kokkos makes the first
// one's, so that no GPU's set-up falls inside the matching; the main thread's GPU stays current.
void make_other_gpus_ready(const kbench::ShardOptions& shard) {
  if (shard.gpus < 2) return;
  for (int g = 1; g < shard.gpus; ++g) kbench::initialise_device(shard.first_gpu + g);
  kbench::use_cuda_device(shard.first_gpu);
}

// `launched`: the process's start, for the start-up's time (MPI, Kokkos, the GPUs' contexts and
// the wait for every rank), which ends where the run starts.
void run(kbench::ShardGroup& group, Options& options, Clock::time_point launched) {
  const Clock::time_point start = Clock::now();
  kbench::DescriptorSet queries;
  std::int64_t rows = 0, query_count = 0;
  // Rank 0's choice, on every rank (another rank's own path may be read otherwise).
  bool queries_in_hand = group.rank() != 0 || !counted_before_read(options.query_path);
  const auto read_queries = [&] {
    kbench::DescriptorFileNotes notes;
    queries = kbench::read_descriptors(options.query_path, &notes);
    if (options.run.verbose) print_reader_notes(options.query_path, notes);
  };
  if (group.rank() == 0) {
    if (queries_in_hand) {
      read_queries();
      query_count = queries.count;
    } else {
      query_count = kbench::count_descriptors(options.query_path);
    }
    rows = kbench::count_descriptors(options.database_path);
    if (options.run.verbose) {
      print_reader_notes(options.database_path,
                         kbench::describe_descriptor_file(options.database_path));
    }
    if (options.shard.params.all_pairs) check_matrix_fits(options, query_count, rows);
  }
  group.broadcast(rows);
  group.broadcast(query_count);
  std::int64_t in_hand = queries_in_hand;
  group.broadcast(in_hand);
  queries_in_hand = in_hand != 0;
  const Clock::time_point counted = Clock::now();
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
  kbench::RowSource source;
  source.read = [&](std::int64_t first, int count, std::uint8_t* into) {
    kbench::read_descriptor_rows_into(options.database_path, first, count, into);
  };
  source.by_range =
      kbench::descriptor_rows_by_range(kbench::descriptor_file_format(options.database_path));
  if (options.shard.reader_threads == 0) {
    options.shard.reader_threads =
        kbench::default_reader_threads(group.node_size(), options.shard.gpus);
  }
  // The queries on every rank, on a thread of their own beside the matching's start (its first
  // rows' reading) where the group allows. Where rank 0 only counted them (a regular .npy file),
  // every rank reads the file itself if it can, and the copies stand when every rank read the
  // same bytes (their digests agree); otherwise rank 0's are broadcast.
  std::promise<const kbench::DescriptorSet*> arrived;
  const kbench::PendingQueries arriving{int(query_count), arrived.get_future().share()};
  double delivery_seconds = 0;
  bool read_by_every_rank = false;
  const auto deliver_queries = [&] {
    const Clock::time_point from = Clock::now();
    try {
      bool read_here = false;
      if (!queries_in_hand && group.rank() == 0) {
        read_queries();
        read_here = true;
      } else if (!queries_in_hand) {
        try {
          read_here = counted_before_read(options.query_path) &&
                      kbench::count_descriptors(options.query_path) == query_count;
          if (read_here) queries = kbench::read_descriptors(options.query_path);
        } catch (const kbench::Error&) {
          read_here = false;
        }
      }
      if (!queries_in_hand && group.size() > 1) {
        const std::int64_t digest =
            read_here ? std::int64_t(kbench::descriptor_digest(queries)) : 0;
        std::int64_t rank0_digest = digest;
        group.broadcast(rank0_digest);
        read_by_every_rank = group.all_true(read_here && digest == rank0_digest);
      }
      if (!read_by_every_rank) group.broadcast(queries);
      arrived.set_value(&queries);
    } catch (...) {
      arrived.set_exception(std::current_exception());
      throw;
    }
    delivery_seconds = seconds_between(from, Clock::now());
  };
  std::future<void> delivery;
  if (group.broadcasts_on_any_thread()) {
    delivery = std::async(std::launch::async, deliver_queries);
  } else {
    deliver_queries();
  }
  kbench::ShardResult local;
  {
    // Rank 0 shows its own shard's progress.
    kbench::tools::Progress progress(kProgram, "matching", shard.count, "database rows");
    if (group.rank() == 0 && kbench::tools::Progress::enabled()) {
      options.shard.progress = [&](std::int64_t done) { progress.advance(done); };
    }
    local = kbench::match_shard(arriving, shard, source, options.shard);
  }
  // Before the next exchange, and with its failure, if any, thrown here.
  if (delivery.valid()) delivery.get();
  const Clock::time_point matched = Clock::now();
  group.reduce_top2(local.top2);
  std::vector<float> matrix;
  if (options.shard.params.all_pairs) {
    matrix = group.gather_matrix(std::move(local.matrix), queries.count, shard, rows);
  }
  const double slowest = group.max_over_ranks(local.seconds);
  const double slowest_start = group.max_over_ranks(seconds_between(launched, start));
  const double slowest_read = group.max_over_ranks(local.read_seconds);
  const double longest_wait = group.max_over_ranks(local.waited_seconds);
  const double most_pieces = group.max_over_ranks(double(local.pieces));
  const Clock::time_point merged = Clock::now();
  // The other ranks keep their teardown (their GPUs' contexts and memory freed) until rank 0's
  // file is written: run beside the writing, it slows it.
  if (group.rank() != 0) {
    group.barrier();
    return;
  }

  kbench::CemdResult result = kbench::result_from_top2(local.top2, int(rows));
  result.matrix = std::move(matrix);
  // The outputs are opened only now, so that no rank's failure before this point (which ends
  // every rank, this one perhaps by SIGKILL) can leave a temporary file.
  kbench::OutputFile matches_out(options.output_path);
  std::unique_ptr<kbench::OutputFile> matrix_out;
  if (!options.matrix_path.empty()) {
    matrix_out = std::make_unique<kbench::OutputFile>(options.matrix_path);
  }
  const float ratio = options.shard.params.ratio;
  std::vector<kbench::PendingOutput> pending{
      {&matches_out, [&](kbench::OutputFile& f) { kbench::write_matches_csv(f, result, ratio); }}};
  if (matrix_out) {
    pending.push_back({matrix_out.get(), [&](kbench::OutputFile& f) {
                         kbench::tools::Progress writing(kProgram, "writing the matrix",
                                                         queries.count, "queries");
                         kbench::write_distance_matrix_csv(
                             f, result, [&](int done) { writing.advance(done); });
                       }});
  }
  kbench::write_and_commit(pending);
  const Clock::time_point written = Clock::now();
  group.barrier();
  int accepted = 0;
  for (const auto& n : result.neighbours) accepted += kbench::ratio_accepted(n, ratio);
  if (options.run.verbose) {
    const double comparisons = double(queries.count) * double(rows);
    const kbench::Variant<kbench::Cemd>& variant =
        kbench::find_variant<kbench::Cemd>(local.variant);
    const std::string where = std::to_string(group.size()) + " rank(s)" +
                              (variant.backend == kbench::Backend::cuda
                                   ? " x " + std::to_string(options.shard.gpus) + " GPU(s)"
                                   : std::string());
    char text[320];
    std::snprintf(text, sizeof text,
                  "%.4g comparisons in %.4f s (slowest rank and GPU, copies included): %.4g "
                  "comparisons/s; %s, distance %s; %.4f s from start to written file",
                  comparisons, slowest, slowest > 0 ? comparisons / slowest : 0.0, where.c_str(),
                  kbench::to_string(options.shard.params.distance),
                  seconds_between(start, Clock::now()));
    kbench::tools::print_variant_line(kProgram, kbench::Cemd::name, variant.name,
                                      kbench::to_string(variant.layer),
                                      kbench::to_string(variant.backend), text);
    std::fprintf(
        stderr,
        "%s: database rows read in %.4f s (slowest rank and GPU; %s, %d reader "
        "thread(s) per GPU or rank, up to %.0f piece(s)); matching waited %.4f s for "
        "rows (the reading it did not hide)\n",
        kProgram, slowest_read,
        source.by_range ? "by byte range beside the matching" : "whole, before the matching",
        source.by_range ? options.shard.reader_threads : 1, most_pieces, longest_wait);
    // Where the time from start to written file went, on this rank (rank 0).
    // What the queries' span beside the start held (one process: their read, none where the
    // files' count read them).
    const char* const queries_how = group.size() == 1    ? "read"
                                    : queries_in_hand    ? "broadcast"
                                    : read_by_every_rank ? "read by every rank"
                                                         : "read and broadcast";
    std::fprintf(stderr,
                 "%s: started in %.4f s (slowest rank, before the start: MPI, Kokkos, each GPU's "
                 "context, the wait for every rank)\n",
                 kProgram, slowest_start);
    std::fprintf(stderr,
                 "%s: from start to written file: files counted %.4f s, shard matched %.4f s "
                 "(this rank: queries %s %.4f s beside its start, matching %.4f s, waiting "
                 "for rows %.4f s), candidates merged %.4f s, files written %.4f s\n",
                 kProgram, seconds_between(start, counted), seconds_between(counted, matched),
                 queries_how, delivery_seconds, local.seconds, local.waited_seconds,
                 seconds_between(matched, merged), seconds_between(merged, written));
  }
  // The summary goes where no output does.
  const bool stdout_taken = options.output_path == "-" || options.matrix_path == "-";
  std::fprintf(stdout_taken ? stderr : stdout,
               "%s: %d queries, %lld database descriptors, %d accepted matches (ratio %g) -> %s\n",
               kProgram, queries.count, static_cast<long long>(rows), accepted, double(ratio),
               kbench::output_name(options.output_path).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Clock::time_point launched = Clock::now();
  Options options;
  CLI::App app{
      "Matches query SIFT descriptors against a database by circular earth mover's distance "
      "(Rabin et al.) or L2 and writes, per query, the nearest two database descriptors and "
      "Lowe's ratio test as CSV (query,index,distance,second_index,second_distance,accepted; "
      "0-based rows). Descriptor files: .npy (uint8 or float32, N x 128), Lowe's .key, CSV (one "
      "descriptor of 128 values a line; a first line of names or of the column numbers 0..127 is "
      "a header). Every value must be a whole number from 0 to 255, float32 ones too (what SIFT "
      "gives); anything else is refused. Under mpirun the database is sharded over the ranks.\n"
      "Kokkos options (--kokkos-threads=N, ...) pass through."};
  app.add_option("query", options.query_path,
                 "Query descriptors (.npy, .key, .csv; - for standard input)")
      ->required();
  app.add_option("database", options.database_path,
                 "Database descriptors (.npy, .key, .csv; a file, read in parts)")
      ->required();
  app.add_option("-o,--output", options.output_path, "Matches CSV to write (- for standard output)")
      ->required();
  kbench::tools::add_distance_options(app, options.distance);
  app.add_option("--ratio", options.shard.params.ratio,
                 "Lowe's ratio test, above 0 and at most 1: a match is accepted when best < ratio "
                 "x second")
      ->check(kbench::tools::ratio_range())
      ->capture_default_str();
  app.add_option("--all-pairs", options.matrix_path,
                 "Also write the queries x database distance matrix as CSV (header "
                 "query,0,1,...; one line per query); refused before matching when it cannot fit "
                 "in memory or on disk");
  app.add_option("--gpus-per-rank", options.shard.gpus,
                 "GPUs each process drives, one host thread each (native CUDA variants)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--reader-threads", options.shard.reader_threads,
                 "Threads reading each GPU's (or a rank's) database rows of a .npy file, beside "
                 "the matching (default: this process's cores divided among its GPUs and the "
                 "ranks on its machine, at most 8)")
      ->envname("KBENCH_READER_THREADS")
      ->check(CLI::Range(1, kbench::kMaxReaderThreads));
  app.add_option("--piece-rows", options.shard.piece_rows,
                 "Database rows per variant run; the next piece is read while one is matched "
                 "(default: a small first piece, then pieces twice the one before, within fixed "
                 "bounds; docs/scale-out.md)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  kbench::tools::add_run_options(app, options.run);
#if defined(KBENCH_HAVE_MPI)
  // Every rank parses the same line: one of them says what is wrong.
  const bool quiet_rank = kbench::MpiShardGroup::launcher_rank() != 0;
#else
  const bool quiet_rank = false;
#endif
  if (const auto status =
          kbench::tools::parse_command_line(app, kProgram, argc, argv, quiet_rank)) {
    return *status;
  }
  if (options.distance.metric == "l2" && app.count("--mode")) {
    if (!quiet_rank) std::fprintf(stderr, "%s: --mode applies to --metric cemd only\n", kProgram);
    return kbench::tools::kExitUsage;
  }
  options.shard.variant = options.run.variant;
  options.shard.backend = options.run.backend;
  options.shard.params.distance =
      kbench::parse_descriptor_distance(options.distance.distance_name());
  options.shard.params.all_pairs = !options.matrix_path.empty();
  // Before the first CUDA call (MPI's included): a context made at the start loads every module
  // then, not at its kernels' first launch inside the matching, unless the user chose otherwise.
  if (options.shard.gpus > 1) setenv("CUDA_MODULE_LOADING", "EAGER", 0);

  std::unique_ptr<kbench::ShardGroup> group;
#if defined(KBENCH_HAVE_MPI)
  if (kbench::MpiShardGroup::launched()) {
    try {
      group = std::make_unique<kbench::MpiShardGroup>(&argc, &argv);
    } catch (const kbench::Error& e) {
      std::fprintf(stderr, "%s: rank %d: %s\n", kProgram, kbench::MpiShardGroup::launcher_rank(),
                   e.what());
      return kbench::tools::kExitFailure;
    }
  }
#endif
  if (!group) group = std::make_unique<kbench::ShardGroup>();
  if (group->rank() == 0) kbench::tools::enable_progress(options.run);
  // One line naming the rank; under MPI it ends every rank.
  const auto fail = [&](const std::string& message, int status) {
#if defined(KBENCH_HAVE_MPI)
    if (auto* mpi = dynamic_cast<kbench::MpiShardGroup*>(group.get()))
      mpi->abort(kProgram, message);
#endif
    std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
    return status;
  };

  // Rank 0 checks its outputs before any work.
  try {
    if (group->rank() == 0) {
      kbench::check_distinct_paths(
          {{options.query_path, "the query file"}, {options.database_path, "the database file"}},
          {{options.output_path, "the matches file (-o)"}, {options.matrix_path, "--all-pairs"}});
      kbench::OutputFile::check_writable(options.output_path);
      if (!options.matrix_path.empty()) kbench::OutputFile::check_writable(options.matrix_path);
    }
  } catch (const kbench::UsageError& e) {
    return fail(e.what(), kbench::tools::kExitUsage);
  } catch (const kbench::Error& e) {
    return fail(e.what(), kbench::tools::kExitFailure);
  }

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
    return fail(e.what(), kbench::tools::kExitFailure);
  }
  std::vector<char*> kokkos_argv;
  for (auto& a : kokkos_args) kokkos_argv.push_back(a.data());
  int kokkos_argc = int(kokkos_argv.size());
  kokkos_argv.push_back(nullptr);
  std::unique_ptr<kbench::KokkosRuntime> kokkos;  // finalised before the group
  std::string message;
  const int status = kbench::tools::run_guarded_message(
      [&] {
        kokkos = std::make_unique<kbench::KokkosRuntime>(kokkos_argc, kokkos_argv.data());
        make_other_gpus_ready(options.shard);
        group->barrier();  // every rank ready: the ranks start together
        run(*group, options, launched);
        return 0;
      },
      &message);
  return status == 0 ? 0 : fail(message, status);
}
