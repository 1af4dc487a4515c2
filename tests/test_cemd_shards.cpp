// The database cut into shards (as over MPI ranks or GPUs) gives the one-process result bit for
// bit: even and uneven cuts, more shards than rows, exact ties across shards.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>

#include "kbench/cemd_shards.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"

using namespace kbench;

namespace {

// `distinct` generated rows written `copies` times in a row: rows i, i + distinct, ... are equal.
DescriptorSet repeated_database(int distinct, int copies, std::uint64_t seed) {
  const DescriptorSet one = generated_descriptors(distinct, seed);
  DescriptorSet set;
  set.count = distinct * copies;
  for (int k = 0; k < copies; ++k) {
    set.values.insert(set.values.end(), one.values.begin(), one.values.end());
  }
  return set;
}

RowReader reader_of(const DescriptorSet& database) {
  return [&database](std::int64_t first, int count) {
    DescriptorSet part;
    part.count = count;
    part.values.assign(database.values.begin() + first * kDescriptorBytes,
                       database.values.begin() + (first + count) * kDescriptorBytes);
    return part;
  };
}

// The result of matching over `shards` shards, merged as the MPI reduction merges them.
ShardResult sharded(const DescriptorSet& queries, const DescriptorSet& database, int shards,
                    const ShardOptions& options) {
  ShardResult merged;
  merged.top2.assign(std::size_t(queries.count), Top2{});
  merged.matrix.resize(options.params.all_pairs ? std::size_t(queries.count) * database.count : 0);
  for (int s = 0; s < shards; ++s) {
    const RowRange range = shard_rows(database.count, shards, s);
    const ShardResult part = match_shard(queries, range, reader_of(database), options);
    REQUIRE(part.top2.size() == std::size_t(queries.count));
    merge_top2_lists(merged.top2.data(), part.top2.data(), merged.top2.size());
    if (!options.params.all_pairs) continue;
    REQUIRE(part.matrix.size() == std::size_t(queries.count) * range.count);
    for (int q = 0; q < queries.count; ++q) {
      for (int d = 0; d < range.count; ++d) {
        merged.matrix[std::size_t(q) * database.count + range.first + d] =
            part.matrix[std::size_t(q) * range.count + d];
      }
    }
  }
  return merged;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("shards cover the rows in order, as evenly as possible", "[cemd_shards]") {
  for (std::int64_t rows : {0, 1, 2, 7, 37, 1000}) {
    for (int shards : {1, 2, 3, 5, 8, 40}) {
      INFO(rows << " rows, " << shards << " shards");
      std::int64_t next = 0;
      for (int s = 0; s < shards; ++s) {
        const RowRange r = shard_rows(rows, shards, s);
        CHECK(r.first == next);
        CHECK(r.count == rows / shards + (s < rows % shards ? 1 : 0));
        next = r.first + r.count;
      }
      CHECK(next == rows);
    }
  }
  CHECK_THROWS_AS(shard_rows(10, 0, 0), Error);
  CHECK_THROWS_AS(shard_rows(10, 3, 3), Error);
  CHECK_THROWS_AS(shard_rows(-1, 3, 0), Error);
}

TEST_CASE("merging top-2 lists keeps the smallest keys, ties to the smallest row",
          "[cemd_shards]") {
  const std::uint64_t a = cemd_key(1.5f, 7), b = cemd_key(1.5f, 3), c = cemd_key(1.25f, 9),
                      d = cemd_key(2.0f, 1);
  // Each list is a shard's best two, in order.
  const std::vector<Top2> first = {{a, d}, {c, kNoCemdKey}, {kNoCemdKey, kNoCemdKey}};
  const std::vector<Top2> second = {{c, b}, {b, a}, {d, kNoCemdKey}};
  std::vector<Top2> left = first, other_order = second;
  merge_top2_lists(left.data(), second.data(), left.size());
  merge_top2_lists(other_order.data(), first.data(), other_order.size());
  for (const auto& merged : {left, other_order}) {
    CHECK(merged[0].best == c);
    CHECK(merged[0].second == b);  // 1.5 at row 3 before 1.5 at row 7
    CHECK(merged[1].best == c);
    CHECK(merged[1].second == b);
    CHECK(merged[2].best == d);
    CHECK(merged[2].second == kNoCemdKey);
  }
  const CemdResult result = result_from_top2(left, 10);
  CHECK(result.neighbours[0].best_index == 9);
  CHECK(result.neighbours[0].second_index == 3);
  CHECK(result.neighbours[0].second_distance == 1.5f);
  CHECK(result.neighbours[2].second_index == -1);
}

TEST_CASE("sharded matching equals one process bit for bit, ties and empty shards included",
          "[cemd_shards]") {
  const DescriptorSet database = repeated_database(7, 3, 5);  // 21 rows, each row 3 times
  const DescriptorSet queries = generated_queries(database, 23, 6);
  for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                              DescriptorDistance::l2}) {
    for (const bool all_pairs : {false, true}) {
      ShardOptions options;
      options.params.distance = distance;
      options.params.all_pairs = all_pairs;
      for (const auto& v : variants<Cemd>()) {
        const CemdInput whole_input{queries, database, options.params};
        if (!runs_here(v) || !v.handles(whole_input)) continue;
        options.variant = v.name;
        INFO(to_string(distance) << (all_pairs ? " all pairs" : " nearest two") << ", variant "
                                 << v.name);
        const ShardResult whole = sharded(queries, database, 1, options);
        const CemdResult result = result_from_top2(whole.top2, database.count);
        // Every row has twins 7 and 14 rows on: the best is in the first copy, and the second
        // is at the same distance (its twin, unless another first-copy row ties exactly).
        for (const CemdNeighbours& n : result.neighbours) {
          CHECK(n.best_index < 7);
          CHECK((n.second_index == n.best_index + 7 || n.second_index < 7));
          CHECK(n.second_distance == n.best_distance);
        }
        if (!all_pairs) {
          // The variant's own neighbours, unsharded, are the same.
          const CemdResult own = run_once(v, whole_input);
          CHECK(result == own);
        }
        for (int shards : {2, 3, 4, 7, 25}) {
          INFO(shards << " shards");
          const ShardResult cut = sharded(queries, database, shards, options);
          CHECK(result_from_top2(cut.top2, database.count) == result);
          if (all_pairs) CHECK(same_bits(cut.matrix, whole.matrix));
        }
      }
    }
  }
}

TEST_CASE("a shard matched piece by piece for a progress line gives the same bits",
          "[cemd_shards]") {
  const DescriptorSet database = repeated_database(9, 3, 11);  // 27 rows, each row 3 times
  const DescriptorSet queries = generated_queries(database, 13, 12);
  for (const bool all_pairs : {false, true}) {
    ShardOptions options;
    options.params.all_pairs = all_pairs;
    for (const auto& v : variants<Cemd>()) {
      if (!runs_here(v) || !v.handles(CemdInput{queries, database, options.params})) continue;
      options.variant = v.name;
      options.progress = nullptr;
      const RowRange shard{2, 25};
      const ShardResult whole = match_shard(queries, shard, reader_of(database), options);
      for (const int piece_rows : {1, 4, 7, 24, 25, 100}) {
        INFO("variant " << v.name << (all_pairs ? ", all pairs" : "") << ", pieces of "
                        << piece_rows);
        std::vector<std::int64_t> told;
        options.progress = [&](std::int64_t rows) { told.push_back(rows); };
        options.progress_rows = piece_rows;
        const ShardResult pieces = match_shard(queries, shard, reader_of(database), options);
        CHECK(result_from_top2(pieces.top2, database.count) ==
              result_from_top2(whole.top2, database.count));
        if (all_pairs) CHECK(same_bits(pieces.matrix, whole.matrix));
        CHECK(pieces.variant == whole.variant);
        // Every row is told once, a piece at a time.
        CHECK(std::accumulate(told.begin(), told.end(), std::int64_t(0)) == shard.count);
        CHECK(told.size() == std::size_t((shard.count + piece_rows - 1) / piece_rows));
      }
    }
  }
}

TEST_CASE("an empty shard has no candidates and runs nothing", "[cemd_shards]") {
  const DescriptorSet queries = generated_descriptors(4, 1);
  const ShardResult empty = match_shard(
      queries, RowRange{5, 0},
      [](std::int64_t, int) -> DescriptorSet { throw Error("an empty shard must not read rows"); },
      ShardOptions{});
  CHECK(empty.variant.empty());
  REQUIRE(empty.top2.size() == 4);
  for (const Top2& t : empty.top2) CHECK((t.best == kNoCemdKey && t.second == kNoCemdKey));
}

TEST_CASE("variant selection refuses what cannot run and says why", "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(5, 2);
  const CemdInput input{generated_descriptors(3, 3), database, {}};
  CHECK_THROWS_WITH(select_cemd_variant(input, "no-such-variant", "", false),
                    Catch::Contains("no-such-variant"));
  const Variant<Cemd>& reference = variants<Cemd>().front();
  CHECK(&select_cemd_variant(input, reference.name, "", false) == &reference);
  CHECK_THROWS_WITH(select_cemd_variant(input, reference.name, "cuda", false),
                    Catch::Contains("backend"));
  CHECK_THROWS_WITH(select_cemd_variant(input, reference.name, "", true),
                    Catch::Contains("not a native CUDA variant"));
  CHECK(select_cemd_variant(input, "", "serial", false).backend == Backend::serial);
  if (!gpu_available()) {
    CHECK_THROWS_WITH(select_cemd_variant(input, "", "cuda", false), Catch::Contains("GPU"));
    ShardOptions two_gpus;
    two_gpus.gpus = 2;
    CHECK_THROWS_WITH(match_shard(input.queries, RowRange{0, 5}, reader_of(database), two_gpus),
                      Catch::Contains("GPU"));
  }
}
