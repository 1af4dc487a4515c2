// cemd-generate: writes seeded SIFT-like descriptor sets as .npy files, for tests and
// benchmarks of cemd-match, on every core.
//
//   cemd-generate --database d.npy --rows 16777216 [--queries q.npy --query-rows 65536]
//                 [--seed 1] [--copies 1] [--unrelated 0.25] [--f32] [--quiet]
//
// The database is made in chunks of kChunkRows rows, chunk c from generated_descriptors() with a
// seed derived from (seed, c), so a file depends only on the options, not on the thread count.
// Queries are perturbed copies of random database rows (plus --unrelated new ones), made the same
// way. --copies K writes the database K times in a row, so rows i, i + rows, ... are identical
// (exact ties, for tests). Sizes: 128 bytes a row (512 with --f32) plus a 128-byte header:
// 16 Mi rows are 2 GiB.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "kbench/cemd.hpp"
#include "kbench/descriptor_write.hpp"
#include "kbench/file_io.hpp"
#include "kbench/random.hpp"
#include "tool_support.hpp"

namespace {

constexpr const char* kProgram = "cemd-generate";
constexpr int kChunkRows = 1 << 16;

// A chunk's seed: the mixed (seed, chunk) pair, so chunk streams do not overlap.
std::uint64_t chunk_seed(std::uint64_t seed, int chunk) {
  constexpr std::uint64_t kChunkMultiplier = 0xd1b54a32d192ed03ull;
  return kbench::SplitMix64(seed * kChunkMultiplier + std::uint64_t(chunk)).next();
}

// `rows` rows made chunk by chunk by make(chunk_rows, chunk_seed) on every core.
template <class Make>
kbench::DescriptorSet generate_in_chunks(int rows, std::uint64_t seed, const Make& make,
                                         const std::string& what) {
  kbench::tools::Progress progress(kProgram, "generating " + what, rows, "rows");
  kbench::DescriptorSet set;
  set.count = rows;
  set.values.resize(std::size_t(rows) * kbench::kDescriptorBytes);
  const int chunks = (rows + kChunkRows - 1) / kChunkRows;
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  const auto work = [&] {
    try {
      for (int c = next++; c < chunks && !failed; c = next++) {
        const int first = c * kChunkRows;
        const int count = std::min(kChunkRows, rows - first);
        const kbench::DescriptorSet part = make(count, chunk_seed(seed, c));
        std::copy(part.values.begin(), part.values.end(),
                  set.values.begin() + std::size_t(first) * kbench::kDescriptorBytes);
        progress.advance(count);
      }
    } catch (...) {
      if (!failed.exchange(true)) failure = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  const int workers = std::max(1, std::min<int>(chunks, int(std::thread::hardware_concurrency())));
  for (int t = 0; t < workers; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  return set;
}

// The report goes to stderr when a file went to standard output.
void report(std::FILE* to, const std::string& path, const kbench::DescriptorSet& set, bool f32) {
  const double bytes = double(set.values.size()) * (f32 ? 4 : 1);
  std::fprintf(to, "%s: wrote %s (%d x 128 %s, %.3g MiB)\n", kProgram,
               kbench::output_name(path).c_str(), set.count, f32 ? "float32" : "uint8",
               bytes / (1024.0 * 1024.0));
}

}  // namespace

int main(int argc, char** argv) {
  std::string database_path, query_path, seed_text = "1";
  int rows = 0, query_rows = 0, copies = 1;
  double unrelated = 0.25;
  bool f32 = false;
  kbench::tools::RunOptions run;
  CLI::App app{"Writes seeded SIFT-like descriptor sets as .npy files (for cemd-match)."};
  app.add_option("--database", database_path, "Database .npy to write (- for standard output)")
      ->required();
  app.add_option("--rows", rows, "Distinct database descriptors")
      ->required()
      ->check(CLI::Range(1, INT32_MAX));
  app.add_option("--queries", query_path, "Query .npy to write (needs --query-rows)");
  app.add_option("--query-rows", query_rows, "Query descriptors")->check(CLI::Range(1, INT32_MAX));
  app.add_option("--seed", seed_text, "Seed, a whole number from 0 to 2^64 - 1")
      ->check(kbench::tools::whole_number_u64())
      ->capture_default_str();
  app.add_option("--copies", copies, "Write the database this many times in a row (exact ties)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--unrelated", unrelated, "Fraction of queries unrelated to the database")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--f32", f32, "Write float32 values instead of uint8");
  kbench::tools::add_quiet(app, run);
  if (const auto status = kbench::tools::parse_command_line(app, kProgram, argc, argv)) {
    return *status;
  }
  kbench::tools::enable_progress(run);
  if (query_path.empty() != (query_rows == 0)) {
    std::fprintf(stderr, "%s: --queries and --query-rows go together\n", kProgram);
    return kbench::tools::kExitUsage;
  }
  if (std::int64_t(rows) * copies > INT32_MAX) {
    std::fprintf(stderr, "%s: --rows x --copies must stay below 2^31\n", kProgram);
    return kbench::tools::kExitUsage;
  }
  const std::uint64_t seed = std::stoull(seed_text);
  return kbench::tools::run_guarded(kProgram, [&] {
    const auto start = std::chrono::steady_clock::now();
    kbench::check_distinct_paths({}, {{database_path, "--database"}, {query_path, "--queries"}});
    kbench::OutputFile database_out(database_path);
    std::unique_ptr<kbench::OutputFile> query_out;
    if (!query_path.empty()) query_out = std::make_unique<kbench::OutputFile>(query_path);
    const kbench::NpyValueType type = f32 ? kbench::NpyValueType::f32 : kbench::NpyValueType::u8;
    kbench::DescriptorSet database = generate_in_chunks(
        rows, seed, [](int n, std::uint64_t s) { return kbench::generated_descriptors(n, s); },
        "the database");
    kbench::DescriptorSet queries;
    if (query_out) {
      queries = generate_in_chunks(
          query_rows, ~seed,
          [&](int n, std::uint64_t s) {
            return kbench::generated_queries(database, n, s, unrelated);
          },
          "the queries");
    }
    if (copies > 1) {
      kbench::DescriptorSet repeated;
      repeated.count = rows * copies;
      repeated.values.reserve(std::size_t(repeated.count) * kbench::kDescriptorBytes);
      for (int k = 0; k < copies; ++k) {
        repeated.values.insert(repeated.values.end(), database.values.begin(),
                               database.values.end());
      }
      database = std::move(repeated);
    }
    {
      kbench::tools::Progress writing(kProgram, "writing the files");
      std::vector<kbench::PendingOutput> outputs{
          {&database_out,
           [&](kbench::OutputFile& f) { kbench::write_descriptors_npy(f, database, type); }}};
      if (query_out) {
        outputs.push_back({query_out.get(), [&](kbench::OutputFile& f) {
                             kbench::write_descriptors_npy(f, queries, type);
                           }});
      }
      kbench::write_and_commit(outputs);
    }
    std::FILE* to = database_out.in_place() && database_path == "-" ? stderr
                    : query_out && query_path == "-"                ? stderr
                                                                    : stdout;
    if (query_out) report(to, query_path, queries, f32);
    report(to, database_path, database, f32);
    std::fprintf(to, "%s: %.2f s\n", kProgram,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
  });
}
