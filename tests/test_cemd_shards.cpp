// The database cut into shards (as over MPI ranks or GPUs) gives the one-process result bit for
// bit: even and uneven cuts, more shards than rows, exact ties across shards.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "kbench/cemd_shards.hpp"
#include "kbench/descriptor_io.hpp"
#include "kbench/descriptor_write.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"
#include "temp_files.hpp"

using namespace kbench;
using kbench::testing::TempDir;

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

RowSource reader_of(const DescriptorSet& database, bool by_range = true) {
  RowSource source;
  source.read = [&database](std::int64_t first, int count, std::uint8_t* into) {
    // Called on reader threads, where Catch's assertions may not run.
    if (first < 0 || count < 0 || first + count > database.count) throw Error("rows out of range");
    std::copy_n(database.values.begin() + first * kDescriptorBytes,
                std::size_t(count) * kDescriptorBytes, into);
  };
  source.by_range = by_range;
  return source;
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
        options.piece_rows = piece_rows;
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

namespace {

// A shard's matching with the pieces and reader threads given, its candidates as a result.
CemdResult matched(const DescriptorSet& queries, const DescriptorSet& database, RowRange shard,
                   const RowSource& rows, ShardOptions options, int piece_rows, int threads) {
  options.piece_rows = piece_rows;
  options.reader_threads = threads;
  return result_from_top2(match_shard(queries, shard, rows, options).top2, database.count);
}

}  // namespace

TEST_CASE("pieces read on several threads beside the matching give the same bits for any cut",
          "[cemd_shards]") {
  const DescriptorSet database = repeated_database(9, 3, 13);  // 27 rows, each row 3 times
  const DescriptorSet queries = generated_queries(database, 11, 14);
  const RowRange shard{2, 25};
  for (const bool all_pairs : {false, true}) {
    for (const char* variant : {"", "seq-final"}) {
      ShardOptions options;
      options.params.all_pairs = all_pairs;
      options.variant = variant;
      const ShardResult whole = match_shard(queries, shard, reader_of(database), options);
      const CemdResult expected = result_from_top2(whole.top2, database.count);
      CHECK(whole.pieces == 1);
      for (const bool by_range : {true, false}) {
        for (const int threads : {1, 2, 3, 8}) {
          // One-row pieces, pieces that do not divide the 25 rows, one piece, more than the rows.
          for (const int piece_rows : {1, 4, 7, 24, 25, 100}) {
            INFO((*variant ? variant : "preferred variant")
                 << (all_pairs ? ", all pairs" : "") << (by_range ? ", by range" : ", whole")
                 << ", " << threads << " reader threads, pieces of " << piece_rows);
            options.piece_rows = piece_rows;
            options.reader_threads = threads;
            std::int64_t told = 0;
            options.progress = [&](std::int64_t rows) { told += rows; };
            const ShardResult cut =
                match_shard(queries, shard, reader_of(database, by_range), options);
            CHECK(result_from_top2(cut.top2, database.count) == expected);
            if (all_pairs) CHECK(same_bits(cut.matrix, whole.matrix));
            CHECK(cut.variant == whole.variant);
            CHECK(cut.pieces == (shard.count + piece_rows - 1) / piece_rows);
            CHECK(told == shard.count);
            CHECK(cut.waited_seconds >= 0);
            CHECK(cut.read_seconds >= 0);
            options.progress = nullptr;
          }
        }
      }
    }
  }
}

TEST_CASE("each piece is read in contiguous slices, one thread each, every row once",
          "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(30, 21);
  const DescriptorSet queries = generated_queries(database, 5, 22);
  const RowRange shard{3, 25};
  for (const int threads : {1, 3, 5}) {
    for (const int piece_rows : {2, 7, 25}) {
      INFO(threads << " reader threads, pieces of " << piece_rows);
      struct Call {
        std::int64_t first;
        int count;
        std::thread::id thread;
      };
      std::mutex mutex;
      std::vector<Call> calls;
      const RowSource memory = reader_of(database);
      RowSource recording;
      recording.read = [&](std::int64_t first, int count, std::uint8_t* into) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          calls.push_back({first, count, std::this_thread::get_id()});
        }
        memory.read(first, count, into);
      };
      ShardOptions options;
      options.variant = "seq-final";
      options.piece_rows = piece_rows;
      options.reader_threads = threads;
      match_shard(queries, shard, recording, options);
      std::sort(calls.begin(), calls.end(),
                [](const Call& a, const Call& b) { return a.first < b.first; });
      std::int64_t next = shard.first;
      for (const Call& c : calls) {
        CHECK(c.first == next);  // no row read twice, none skipped
        CHECK(c.count >= 1);
        next = c.first + c.count;
      }
      CHECK(next == shard.first + shard.count);
      // Per piece, as many slices as threads (or rows), each on a thread of its own.
      for (int first = 0; first < shard.count; first += piece_rows) {
        const int rows = std::min(piece_rows, shard.count - first);
        std::set<std::thread::id> piece_threads;
        int slices = 0;
        for (const Call& c : calls) {
          if (c.first >= shard.first + first && c.first < shard.first + first + rows) {
            piece_threads.insert(c.thread);
            ++slices;
          }
        }
        CHECK(slices == std::min(threads, rows));
        CHECK(int(piece_threads.size()) == slices);
      }
    }
  }
}

TEST_CASE("the next piece is read while one is matched", "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(20, 23);
  const DescriptorSet queries = generated_queries(database, 4, 24);
  const RowSource memory = reader_of(database);
  std::mutex mutex;
  std::condition_variable changed;
  bool second_piece_reading = false;
  RowSource watched;
  watched.read = [&](std::int64_t first, int count, std::uint8_t* into) {
    if (first >= 5) {
      std::lock_guard<std::mutex> lock(mutex);
      second_piece_reading = true;
      changed.notify_all();
    }
    memory.read(first, count, into);
  };
  ShardOptions options;
  options.variant = "seq-final";
  options.piece_rows = 5;
  options.reader_threads = 1;
  bool overlapped = false;
  int pieces = 0;
  // Told after the first piece is matched, before the second is asked for: its read has begun
  // only if it runs beside the matching (a read after it would come too late: no hang, false).
  options.progress = [&](std::int64_t) {
    if (pieces++ > 0) return;
    std::unique_lock<std::mutex> lock(mutex);
    overlapped =
        changed.wait_for(lock, std::chrono::seconds(10), [&] { return second_piece_reading; });
  };
  const ShardResult result = match_shard(queries, RowRange{0, 20}, watched, options);
  CHECK(overlapped);
  CHECK(result.pieces == 4);
  CHECK(result_from_top2(result.top2, database.count) ==
        matched(queries, database, RowRange{0, 20}, memory, ShardOptions{}, 0, 1));
}

TEST_CASE(
    "queries on their way: the first rows are read before they arrive, the result as with "
    "them in hand; their failure or a wrong count is thrown",
    "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(23, 41);
  const DescriptorSet queries = generated_queries(database, 7, 42);
  const RowRange shard{0, 23};
  const RowSource memory = reader_of(database);
  std::mutex mutex;
  std::condition_variable changed;
  bool rows_read = false;
  std::atomic<int> reading{0};
  RowSource watched;
  watched.read = [&](std::int64_t first, int count, std::uint8_t* into) {
    ++reading;
    memory.read(first, count, into);
    --reading;
    const std::lock_guard<std::mutex> lock(mutex);
    rows_read = true;
    changed.notify_all();
  };
  ShardOptions options;
  options.variant = "seq-final";
  options.piece_rows = 5;
  options.reader_threads = 2;

  // Sent only once rows have been read (or after 10 s: then the check below fails, no hang).
  std::promise<const DescriptorSet*> arrived;
  bool read_first = false;
  std::thread sender([&] {
    std::unique_lock<std::mutex> lock(mutex);
    read_first = changed.wait_for(lock, std::chrono::seconds(10), [&] { return rows_read; });
    lock.unlock();
    arrived.set_value(&queries);
  });
  const ShardResult late = match_shard(PendingQueries{queries.count, arrived.get_future().share()},
                                       shard, watched, options);
  sender.join();
  CHECK(read_first);
  CHECK(result_from_top2(late.top2, database.count) ==
        result_from_top2(match_shard(queries, shard, memory, options).top2, database.count));

  std::promise<const DescriptorSet*> lost;
  lost.set_exception(std::make_exception_ptr(Error("the queries were lost")));
  CHECK_THROWS_WITH(match_shard(PendingQueries{queries.count, lost.get_future().share()}, shard,
                                watched, options),
                    Catch::Contains("the queries were lost"));
  CHECK(reading == 0);  // no reader left running

  std::promise<const DescriptorSet*> fewer;
  fewer.set_value(&queries);
  CHECK_THROWS_WITH(match_shard(PendingQueries{queries.count + 1, fewer.get_future().share()},
                                shard, watched, options),
                    Catch::Contains("7 queries arrived where 8 were counted"));
}

TEST_CASE("a reader's failure on any thread is thrown as an Error once every thread stopped",
          "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(27, 25);
  const DescriptorSet queries = generated_queries(database, 6, 26);
  const RowRange shard{2, 25};
  // The first piece's rows, a middle one's, the last piece's.
  for (const int bad_row : {2, 13, 26}) {
    for (const bool by_range : {true, false}) {
      for (const int threads : {1, 2, 4}) {
        for (const int piece_rows : {1, 5, 25}) {
          INFO("bad row " << bad_row << (by_range ? ", by range, " : ", whole, ") << threads
                          << " threads, pieces of " << piece_rows);
          const RowSource memory = reader_of(database, by_range);
          std::atomic<int> reading{0};
          RowSource failing;
          failing.by_range = by_range;
          failing.read = [&](std::int64_t first, int count, std::uint8_t* into) {
            ++reading;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            --reading;
            if (bad_row >= first && bad_row < first + count) {
              throw Error("row " + std::to_string(bad_row) + " cannot be read");
            }
            memory.read(first, count, into);
          };
          ShardOptions options;
          options.variant = "seq-final";
          options.piece_rows = piece_rows;
          options.reader_threads = threads;
          CHECK_THROWS_WITH(match_shard(queries, shard, failing, options),
                            Catch::Contains("row " + std::to_string(bad_row) + " cannot be read"));
          CHECK(reading == 0);  // no reader left running
        }
      }
    }
  }
}

namespace {

// The automatic pieces of a part of `rows` rows, at most `most` rows each: they cover the part;
// parts under two least pieces are one piece; larger ones ramp up from a quarter of the steady
// piece (about a quarter of the part), each at most twice the one before, to the steady piece;
// none below the least piece or above the most, but for the last one, which may hold a rest
// below the least.
constexpr int kLeastPieceRows = 1 << 17, kMostHostPieceRows = 1 << 22,
              kMostDevicePieceRows = 1 << 20;
void check_piece_sizes(const std::vector<int>& sizes, int rows, int most) {
  constexpr int least = kLeastPieceRows;
  REQUIRE(!sizes.empty());
  CHECK(std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0)) == rows);
  if (rows < 2 * least) CHECK(sizes.size() == 1);
  const int steady = int(std::clamp<std::int64_t>((std::int64_t(rows) + 3) / 4, least, most));
  if (rows >= 2 * least) CHECK(sizes.front() == std::max(least, steady / 4));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool last = i + 1 == sizes.size();
    if (!last) CHECK(sizes[i] >= least);
    CHECK(sizes[i] <= steady + (last ? least : 0));
    if (i > 0) CHECK(sizes[i] <= 2 * sizes[i - 1] + (last ? least : 0));
  }
}

}  // namespace

TEST_CASE("reader threads and pieces are checked, and their defaults fit the machine",
          "[cemd_shards]") {
  const DescriptorSet database = generated_descriptors(8, 27);
  const DescriptorSet queries = generated_descriptors(3, 28);
  ShardOptions options;
  for (const int threads : {-1, kMaxReaderThreads + 1}) {
    options.reader_threads = threads;
    CHECK_THROWS_WITH(match_shard(queries, RowRange{0, 8}, reader_of(database), options),
                      Catch::Contains("reader threads"));
  }
  options.reader_threads = kMaxReaderThreads;
  CHECK_NOTHROW(match_shard(queries, RowRange{0, 8}, reader_of(database), options));
  options.reader_threads = 0;
  options.piece_rows = -1;
  CHECK_THROWS_WITH(match_shard(queries, RowRange{0, 8}, reader_of(database), options),
                    Catch::Contains("rows per piece"));

  for (const int ranks : {1, 2, 1000}) {
    for (const int parts : {1, 4, 1000}) {
      const int threads = default_reader_threads(ranks, parts);
      CHECK(threads >= 1);
      CHECK(threads <= kMostDefaultReaderThreads);
      CHECK(threads <= std::max(1, int(std::thread::hardware_concurrency()) / parts));
    }
  }
  CHECK(default_reader_threads(1, 1) >= default_reader_threads(2, 1));
  for (const int rows :
       {1, 2, 25, 1 << 17, (1 << 18) + 5, (1 << 22) + 3, 1 << 24, 1 << 25, INT_MAX}) {
    INFO(rows << " rows");
    const std::vector<int> sizes = automatic_piece_sizes(rows);
    check_piece_sizes(sizes, rows, kMostHostPieceRows);
    if (rows >= 8 * kLeastPieceRows && rows <= 4 * kMostHostPieceRows) CHECK(sizes.size() <= 7);
  }
  // A 4 Mi-row part (16 Mi rows on four GPUs): 256 Ki, 512 Ki, then 1 Mi rows.
  std::vector<int> expected = {1 << 18, 1 << 19, 1 << 20, 1 << 20, 1 << 20, 1 << 18};
  CHECK(automatic_piece_sizes(1 << 22) == expected);
  expected = {1 << 17, 1 << 18, 1 << 19, 1 << 19, (1 << 19) + (1 << 17) - 1};
  CHECK(automatic_piece_sizes((1 << 21) - 1) == expected);
}

TEST_CASE("automatic pieces for a GPU are at most 1 Mi rows, ramping up as the host's",
          "[cemd_shards]") {
  for (const int rows : {1, 25, 1 << 17, (1 << 18) + 5, 1 << 20, 1 << 22, (1 << 22) + 3, 1 << 24,
                         (1 << 25) + 7, INT_MAX}) {
    INFO(rows << " rows");
    const std::vector<int> sizes = automatic_piece_sizes(rows, PieceTarget::device);
    check_piece_sizes(sizes, rows, kMostDevicePieceRows);
    // Up to four steady pieces of the most, the host's pieces.
    if (rows <= 4 * kMostDevicePieceRows) CHECK(sizes == automatic_piece_sizes(rows));
  }
  // A 16 Mi-row part (the 2 GiB database on one GPU): 256 Ki, 512 Ki, fifteen of 1 Mi, and the
  // last 256 Ki, where the host's pieces go up to 4 Mi.
  std::vector<int> expected = {1 << 18, 1 << 19};
  expected.insert(expected.end(), 15, 1 << 20);
  expected.push_back(1 << 18);
  CHECK(automatic_piece_sizes(1 << 24, PieceTarget::device) == expected);
  CHECK(automatic_piece_sizes(1 << 24) ==
        std::vector<int>{1 << 20, 1 << 21, 1 << 22, 1 << 22, 1 << 22, 1 << 20});
  // A rest below the least piece joins the last one: 4 Mi + 3 rows.
  expected = {1 << 18, 1 << 19, 1 << 20, 1 << 20, 1 << 20, (1 << 18) + 3};
  CHECK(automatic_piece_sizes((1 << 22) + 3, PieceTarget::device) == expected);
}

TEST_CASE("pieces staged to a GPU a chunk at a time on each reader thread give the same bits",
          "[cemd_shards]") {
  if (!gpu_available()) return;  // rows are staged for copies to a GPU only
  // 640 Ki rows in automatic pieces for a GPU (pieces 2 and 3 outgrow pieces 0 and 1, whose
  // device buffers they reuse), each cut into one slice per reader thread, the slices cut into
  // staging chunks: at 3 and 7 threads no slice is a whole number of chunks.
  constexpr int kRows = 640 * 1024;
  const std::vector<int> sizes = {128 * 1024, 160 * 1024, 160 * 1024, 192 * 1024};
  REQUIRE(automatic_piece_sizes(kRows, PieceTarget::device) == sizes);
  const DescriptorSet database = generated_descriptors(kRows, 29);
  // Queries equal to rows in each piece, across slices, and the first and last rows.
  const std::vector<int> rows = {0,      70000,  200000, 300000,   430000,
                                 500000, 630000, 640000, kRows - 1};
  DescriptorSet queries;
  queries.count = int(rows.size());
  for (const int row : rows) {
    const auto first = database.values.begin() + std::ptrdiff_t(row) * kDescriptorBytes;
    queries.values.insert(queries.values.end(), first, first + kDescriptorBytes);
  }
  const RowRange shard{0, kRows};
  for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                              DescriptorDistance::l2}) {
    ShardOptions options;
    options.params.distance = distance;
    for (const auto& v : variants<Cemd>()) {
      if (v.backend != Backend::cuda || !runs_here(v) || !v.on_views ||
          !v.handles(CemdInput{queries, database, options.params})) {
        continue;
      }
      options.variant = v.name;
      options.piece_rows = kRows;
      options.reader_threads = 1;
      const ShardResult whole = match_shard(queries, shard, reader_of(database), options);
      const CemdResult result = result_from_top2(whole.top2, database.count);
      for (std::size_t q = 0; q < rows.size(); ++q) {
        INFO(to_string(distance) << ", variant " << v.name << ", query " << q);
        CHECK(result.neighbours[q].best_index == rows[q]);
        CHECK(result.neighbours[q].best_distance == 0.0f);
      }
      options.piece_rows = 0;
      for (const bool by_range : {true, false}) {
        for (const int threads : {3, 7, 16}) {
          INFO(to_string(distance)
               << ", variant " << v.name << (by_range ? ", by range" : ", whole") << ", " << threads
               << " reader threads");
          options.reader_threads = threads;
          const ShardResult automatic =
              match_shard(queries, shard, reader_of(database, by_range), options);
          CHECK(automatic.pieces == int(sizes.size()));
          CHECK(result_from_top2(automatic.top2, database.count) == result);
        }
      }
    }
  }
}

TEST_CASE("a process's GPUs, one host thread each, give one GPU's bits", "[cemd_shards]") {
  if (cuda_device_count() < 2) {
    WARN("fewer than two GPUs here: --gpus-per-rank is not tested");
    return;
  }
  // Every row three times, 7001 rows apart: the twins of a row lie on other GPUs and in other
  // pieces, so ties are broken across the GPUs' parts as in one part.
  const DescriptorSet database = repeated_database(7001, 3, 31);
  const DescriptorSet queries = generated_queries(database, 517, 32);
  const RowRange shard{0, database.count};
  const int gpus = std::min(cuda_device_count(), 4);
  for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                              DescriptorDistance::l2}) {
    ShardOptions options;
    options.params.distance = distance;
    options.piece_rows = 4000;
    for (const auto& v : variants<Cemd>()) {
      if (v.layer != Layer::native_cuda || !runs_here(v) ||
          !v.handles(CemdInput{queries, database, options.params})) {
        continue;
      }
      INFO(to_string(distance) << ", variant " << v.name);
      options.variant = v.name;
      options.gpus = 1;
      const CemdResult one = result_from_top2(
          match_shard(queries, shard, reader_of(database), options).top2, database.count);
      for (const CemdNeighbours& n : one.neighbours) {
        CHECK(n.best_index < 7001);
        CHECK(n.second_distance == n.best_distance);
      }
      for (int g = 2; g <= gpus; ++g) {
        INFO(g << " GPUs");
        options.gpus = g;
        const ShardResult several = match_shard(queries, shard, reader_of(database), options);
        CHECK(result_from_top2(several.top2, database.count) == one);
        CHECK(cuda_current_device() == 0);  // the caller's GPU stays its own
      }
    }
  }
}

TEST_CASE("a .npy database read by range on several threads matches as one read", "[cemd_shards]") {
  TempDir dir;
  const DescriptorSet database = repeated_database(50, 2, 29);
  const DescriptorSet queries = generated_queries(database, 9, 30);
  for (const NpyValueType type : {NpyValueType::u8, NpyValueType::f32}) {
    const std::string path = dir.file(type == NpyValueType::u8 ? "u8.npy" : "f32.npy");
    write_descriptors_npy(path, database, type);
    RowSource file;
    file.read = [&](std::int64_t first, int count, std::uint8_t* into) {
      read_descriptor_rows_into(path, first, count, into);
    };
    file.by_range = descriptor_rows_by_range(descriptor_file_format(path));
    CHECK(file.by_range);
    const CemdResult expected =
        matched(queries, database, RowRange{0, 100}, reader_of(database), ShardOptions{}, 0, 1);
    for (const int threads : {1, 3, 8}) {
      for (const int piece_rows : {1, 9, 33, 100}) {
        INFO(threads << " reader threads, pieces of " << piece_rows);
        for (int shards : {1, 3}) {
          std::vector<Top2> merged(std::size_t(queries.count), Top2{});
          for (int s = 0; s < shards; ++s) {
            ShardOptions options;
            options.piece_rows = piece_rows;
            options.reader_threads = threads;
            const ShardResult part =
                match_shard(queries, shard_rows(database.count, shards, s), file, options);
            merge_top2_lists(merged.data(), part.top2.data(), merged.size());
          }
          CHECK(result_from_top2(merged, database.count) == expected);
        }
      }
    }
  }
  // A file cut short under the reader threads fails the match with the reader's message.
  const std::string bytes = kbench::testing::read_bytes(dir.file("u8.npy"));
  kbench::testing::write_bytes(dir.file("short.npy"), bytes.substr(0, bytes.size() - 300));
  RowSource cut;
  cut.read = [&](std::int64_t first, int count, std::uint8_t* into) {
    read_descriptor_rows_into(dir.file("short.npy"), first, count, into);
  };
  ShardOptions options;
  options.piece_rows = 9;
  options.reader_threads = 3;
  CHECK_THROWS_WITH(match_shard(queries, RowRange{0, 100}, cut, options),
                    Catch::Contains("truncated"));
}

TEST_CASE("an empty shard has no candidates and runs nothing", "[cemd_shards]") {
  const DescriptorSet queries = generated_descriptors(4, 1);
  RowSource refusing;
  refusing.read = [](std::int64_t, int, std::uint8_t*) {
    throw Error("an empty shard must not read rows");
  };
  const ShardResult empty = match_shard(queries, RowRange{5, 0}, refusing, ShardOptions{});
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
