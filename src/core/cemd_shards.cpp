#include "kbench/cemd_shards.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"
#include "native_cuda/devices.hpp"

namespace kbench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Candidates of rows [first, first + count) from a variant's output: its neighbours, or every
// distance of the matrix.
std::vector<Top2> shard_top2(const CemdResult& out, std::int64_t first, bool all_pairs) {
  std::vector<Top2> top2(std::size_t(out.queries));
  for (int q = 0; q < out.queries; ++q) {
    Top2& t = top2[q];
    if (all_pairs) {
      const float* row = out.matrix.data() + std::size_t(q) * out.database;
      for (int d = 0; d < out.database; ++d)
        top2_insert(t, cemd_key(row[d], std::uint32_t(first + d)));
      continue;
    }
    const CemdNeighbours& n = out.neighbours[q];
    t.best = cemd_key(n.best_distance, std::uint32_t(first + n.best_index));
    if (n.second_index >= 0) {
      t.second = cemd_key(n.second_distance, std::uint32_t(first + n.second_index));
    }
  }
  return top2;
}

// Rows [first, first + count) of `set`.
DescriptorSet rows_of(const DescriptorSet& set, int first, int count) {
  DescriptorSet rows;
  rows.count = count;
  const auto begin = set.values.begin() + std::ptrdiff_t(first) * kDescriptorBytes;
  rows.values.assign(begin, begin + std::ptrdiff_t(count) * kDescriptorBytes);
  return rows;
}

// Copies `block`, a queries × width matrix of distances, into columns [column, column + width)
// of `into`, a queries × into_width one.
void place_columns(const std::vector<float>& block, int queries, int width,
                   std::vector<float>& into, int into_width, int column) {
  for (int q = 0; q < queries; ++q) {
    std::copy_n(block.data() + std::size_t(q) * width, width,
                into.data() + std::size_t(q) * into_width + column);
  }
}

// One variant run on rows `part` (all of them on this thread's device); with a progress callback,
// one run per piece of options.progress_rows rows, on the variant chosen for the whole part.
ShardResult match_part(const DescriptorSet& queries, RowRange part, const RowReader& read_rows,
                       const ShardOptions& options, bool native_cuda_only) {
  ShardResult result;
  result.top2.assign(std::size_t(queries.count), Top2{});
  if (part.count == 0) return result;
  CemdInput input{queries, read_rows(part.first, part.count), options.params};
  if (input.database.count != part.count) {
    throw Error("the database reader returned " + std::to_string(input.database.count) +
                " rows instead of " + std::to_string(part.count));
  }
  validate_cemd_input(input);
  const Variant<Cemd>& variant =
      select_cemd_variant(input, options.variant, options.backend, native_cuda_only);
  result.variant = variant.name;
  const bool all_pairs = options.params.all_pairs;
  const int piece_rows = options.progress && options.progress_rows > 0
                             ? std::min(options.progress_rows, part.count)
                             : part.count;
  if (all_pairs && piece_rows < part.count) {
    result.matrix.resize(std::size_t(queries.count) * std::size_t(part.count));
  }
  for (int first = 0; first < part.count; first += piece_rows) {
    const int count = std::min(piece_rows, part.count - first);
    // The whole part runs on `input` itself; a piece on a copy of its rows.
    CemdInput piece;
    if (count < part.count)
      piece = {queries, rows_of(input.database, first, count), options.params};
    const Clock::time_point start = Clock::now();
    CemdResult out = run_once(variant, count < part.count ? piece : input);
    result.seconds += seconds_since(start);
    const std::vector<Top2> top2 = shard_top2(out, part.first + first, all_pairs);
    merge_top2_lists(result.top2.data(), top2.data(), top2.size());
    if (all_pairs && count == part.count) result.matrix = std::move(out.matrix);
    if (all_pairs && count < part.count) {
      place_columns(out.matrix, queries.count, count, result.matrix, part.count, first);
    }
    if (options.progress) options.progress(count);
  }
  return result;
}

}  // namespace

RowRange shard_rows(std::int64_t rows, int shards, int shard) {
  if (rows < 0 || shards < 1 || shard < 0 || shard >= shards) {
    throw Error("shard " + std::to_string(shard) + " of " + std::to_string(shards) + " over " +
                std::to_string(rows) + " rows does not exist");
  }
  const std::int64_t base = rows / shards, extra = rows % shards;
  RowRange range;
  range.first = shard * base + std::min<std::int64_t>(shard, extra);
  range.count = int(base + (shard < extra ? 1 : 0));
  return range;
}

const Variant<Cemd>& select_cemd_variant(const CemdInput& input, const std::string& variant,
                                         const std::string& backend, bool native_cuda_only) {
  VariantChoice<Cemd> choice{variant, backend, {}, {}};
  if (native_cuda_only) {
    // One process drives several GPUs only through native CUDA variants (Kokkos drives one GPU
    // per process).
    choice.only = [](const Variant<Cemd>& v) { return v.layer == Layer::native_cuda; };
    choice.only_what = "native CUDA";
  }
  return select_variant(input, choice, gpu_available());
}

ShardResult match_shard(const DescriptorSet& queries, RowRange shard, const RowReader& read_rows,
                        const ShardOptions& options) {
  if (options.gpus < 1) throw Error("the number of GPUs per process must be at least 1");
  if (options.gpus == 1) return match_part(queries, shard, read_rows, options, false);

  // One host thread per GPU, each on its own part of the shard.
  const int gpus = options.gpus;
  std::vector<ShardResult> parts(static_cast<std::size_t>(gpus));
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(gpus));
  {
    std::vector<std::thread> threads;
    for (int g = 0; g < gpus; ++g) {
      threads.emplace_back([&, g] {
        try {
          const int device = options.first_gpu + g;
          try {
            use_cuda_device(device);
            RowRange part = shard_rows(shard.count, gpus, g);
            part.first += shard.first;
            parts[g] = match_part(queries, part, read_rows, options, true);
          } catch (const Error& e) {
            throw Error("GPU " + std::to_string(device) + ": " + e.what());
          }
        } catch (...) {
          failures[g] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  // The slowest GPU's variant run, as the slowest rank's across ranks: each thread's file read and
  // device set-up before it are not matching.
  ShardResult result;
  for (const ShardResult& part : parts) result.seconds = std::max(result.seconds, part.seconds);
  result.top2.assign(std::size_t(queries.count), Top2{});
  if (options.params.all_pairs) {
    result.matrix.resize(std::size_t(queries.count) * std::size_t(shard.count));
  }
  int column = 0;
  for (const ShardResult& part : parts) {
    merge_top2_lists(result.top2.data(), part.top2.data(), result.top2.size());
    if (result.variant.empty()) result.variant = part.variant;
    if (!options.params.all_pairs || part.variant.empty()) continue;
    const int width = int(part.matrix.size() / std::size_t(queries.count));
    place_columns(part.matrix, queries.count, width, result.matrix, shard.count, column);
    column += width;
  }
  return result;
}

void merge_top2_lists(Top2* into, const Top2* other, std::size_t queries) {
  for (std::size_t q = 0; q < queries; ++q) into[q] = top2_merge(into[q], other[q]);
}

CemdResult result_from_top2(const std::vector<Top2>& top2, int database) {
  CemdResult result;
  result.queries = int(top2.size());
  result.database = database;
  result.neighbours.reserve(top2.size());
  for (const Top2& t : top2) result.neighbours.push_back(neighbours_from(t));
  return result;
}

int cuda_device_count() {
#if defined(KBENCH_HAVE_CUDA)
  return cuda::device_count();
#else
  return 0;
#endif
}

void use_cuda_device(int device) {
#if defined(KBENCH_HAVE_CUDA)
  cuda::set_device(device);
#else
  throw Error("this build has no CUDA support, so it cannot use GPU " + std::to_string(device));
#endif
}

}  // namespace kbench
