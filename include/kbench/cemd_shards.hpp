#pragma once
// Matching queries against a database cut into shards (contiguous row ranges: one per MPI rank,
// and within a rank one per GPU) and merging the shards' nearest two exactly as one process finds
// them. Every candidate is a 64-bit key (distance bits, row in the whole database), so the merged
// two are the smallest keys whatever the cut, ties going to the smallest row; each pair's
// distance has the same bits in every shard, so the result is bit-identical for any cut.

#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "kbench/cemd.hpp"

namespace kbench {

struct RowRange {
  std::int64_t first = 0;
  int count = 0;
};

// Shard `shard` of `rows` rows cut into `shards` contiguous ranges as evenly as possible: the
// first rows % shards shards get one row more. Shards beyond the rows are empty.
RowRange shard_rows(std::int64_t rows, int shards, int shard);

// Where a shard's database rows come from.
struct RowSource {
  // Reads rows [first, first + count) of the whole database into `into` (count ×
  // kDescriptorBytes bytes); throws Error when it cannot.
  std::function<void(std::int64_t first, int count, std::uint8_t* into)> read;
  // Whether a read costs only its own rows and reads of disjoint rows may run at once (a binary
  // file read by byte ranges, memory). Then each part is read a piece at a time, on several
  // threads, beside the matching; otherwise (text files, scanned from their start) each part is
  // read whole, by one call, before its first piece is matched.
  bool by_range = true;
};

// How a process matches its shard.
struct ShardOptions {
  CemdParams params;    // distance and ratio; all_pairs: the shard's distance matrix too
  std::string variant;  // a registry name; empty: the preferred variant that can run here
  std::string backend;  // "serial", "openmp" or "cuda"; empty: any
  // More than one: the shard is cut again over GPUs first_gpu .. first_gpu + gpus − 1, one host
  // thread each, every one running a native CUDA variant (Kokkos drives one GPU per process).
  int gpus = 1;
  int first_gpu = 0;
  // Each part (the shard, or a GPU's cut of it) is matched in pieces of piece_rows rows (0:
  // automatic_piece_sizes, for PieceTarget::device where the variant runs on device views), each
  // piece's candidates merged as shards' are, so any cut gives the same bits. Read by range,
  // piece i + 1 is read (and on device views copied to the GPU) while piece i is matched (two
  // pieces in memory), by reader_threads threads (0: default_reader_threads(1, gpus)).
  int piece_rows = 0;
  int reader_threads = 0;
  // When set, told of the rows of every piece matched.
  std::function<void(std::int64_t rows)> progress;
};

struct ShardResult {
  std::vector<Top2> top2;     // per query, candidates numbered as rows of the whole database
  std::vector<float> matrix;  // queries × shard rows, row-major, when params.all_pairs
  std::string variant;        // the variant that ran; empty for an empty shard
  // Wall times (several GPUs: the slowest GPU's each). seconds: the matching itself: the
  // variant's runs on the pieces, copies included; on device views, where each piece's matching
  // is queued (CemdPieceMatcher) as soon as its rows are on the GPU, the set-up (device buffers,
  // the queries' upload) and the span from the first piece in hand to the matches' download,
  // each piece's copy to the GPU being part of its reading. A CUDA variant's device is
  // initialised (its context made) before, untimed, as a process's is at its start.
  // read_seconds: every piece's read (from its first reader thread's start to its last one's
  // end; a text part: its read whole) and, on device views, each piece's copy to the GPU through
  // the reader threads' page-locked staging chunks, and the chunks' making.
  // waited_seconds: the matching thread waiting for rows that the matching did not hide: every
  // piece's wait for the host variants (the first piece's, and any later piece got ready slower
  // than the one before it was matched); on device views the first piece's only (a later piece
  // late enough to leave the GPU without work lengthens `seconds`).
  double seconds = 0, read_seconds = 0, waited_seconds = 0;
  int pieces = 0;  // pieces matched (several GPUs: the most of one GPU)
  // Work left running when the result is returned, beside the caller's merging and writing: the
  // release of the staging chunks and their streams (on device views). Destroying the result
  // waits for it.
  std::vector<std::future<void>> releasing;
};

// Where a part's pieces are matched: in host memory, or copied to a GPU for device views (into
// two device buffers, so they are bounded smaller).
enum class PieceTarget { host, device };

// The pieces' sizes of a part of `rows` rows when none is asked for: steady pieces of about a
// quarter of the part within fixed bounds (a smaller most for `device`), after a short ramp from
// a quarter of one (reading the first piece is what the matching cannot hide); cemd_shards.cpp
// says why.
std::vector<int> automatic_piece_sizes(int rows, PieceTarget target = PieceTarget::host);

// Reader threads per part when none is asked for: the CPUs this process may run on (a launcher
// that bound it to fewer than the machine's has shared them already; else they are shared with
// the other `ranks_on_node` ranks), divided among its `parts` GPU threads; at least 1 and at most
// kMostDefaultReaderThreads.
int default_reader_threads(int ranks_on_node, int parts);

// The most reader threads a part may be given.
constexpr int kMaxReaderThreads = 256;
// The most a part gets by default: eight read a GPU's pieces faster than its link takes them (and
// a host's faster than it matches them); more only contend for the GPU driver, which sets up and
// waits for each thread's copies, and for the cores the queries' reading needs.
constexpr int kMostDefaultReaderThreads = 8;

// The variant named (checked to run here on this input, on `backend` when given) or else the
// preferred one; with native_cuda_only, only native CUDA variants. Throws Error saying why none.
const Variant<Cemd>& select_cemd_variant(const CemdInput& input, const std::string& variant,
                                         const std::string& backend, bool native_cuda_only);

// Queries that may still be on their way when a shard's matching starts (being read, or
// broadcast from another rank, on another thread): their count now, the descriptors when
// `arrived` is ready. The matching reads its first rows meanwhile.
struct PendingQueries {
  int count = 0;
  std::shared_future<const DescriptorSet*> arrived;

  // Queries already in hand.
  static PendingQueries ready(const DescriptorSet& queries);
  // Waits for them: the `count` queries, or the exception that stopped them, thrown.
  const DescriptorSet& wait() const;
};

// Matches `queries` against database rows `shard`, read from `rows` (per GPU when
// options.gpus > 1, each GPU thread reading its own part). An empty shard gives no candidates
// and reads nothing. A failure on any thread, a reader's included, is thrown here once every
// thread has stopped.
ShardResult match_shard(const PendingQueries& queries, RowRange shard, const RowSource& rows,
                        const ShardOptions& options);
ShardResult match_shard(const DescriptorSet& queries, RowRange shard, const RowSource& rows,
                        const ShardOptions& options);

// Per query, into[q] = the smallest two of into[q] and other[q] (shards, GPUs, MPI ranks).
void merge_top2_lists(Top2* into, const Top2* other, std::size_t queries);

// The nearest-two result from merged keys of a database of `database` rows.
CemdResult result_from_top2(const std::vector<Top2>& top2, int database);

// The processes that share one match. This base is a process alone, for which every exchange is
// a no-op; MpiShardGroup (cemd_mpi.hpp) is the ranks of an MPI job, rank 0 the one that reads
// the queries and writes the results.
class ShardGroup {
 public:
  virtual ~ShardGroup() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // This process's rank among those on its machine, for choosing its GPU, and their number.
  virtual int node_rank() const { return 0; }
  virtual int node_size() const { return 1; }
  // Whether broadcast() may be called on a thread other than the main one while the main thread
  // makes no other exchange (MPI: the library gave MPI_THREAD_SERIALIZED or more).
  virtual bool broadcasts_on_any_thread() const { return true; }
  // Rank 0's value, on every rank.
  virtual void broadcast(DescriptorSet& /*set*/) {}
  virtual void broadcast(std::int64_t& /*value*/) {}
  // Whether `mine` is true on every rank, on every rank.
  virtual bool all_true(bool mine) { return mine; }
  // Returns once every rank has called it.
  virtual void barrier() {}
  // On rank 0: per query, the smallest two of every rank's candidates.
  virtual void reduce_top2(std::vector<Top2>& /*top2*/) {}
  // On rank 0: the queries × database matrix from every rank's block of columns `shard`
  // (queries × shard.count); empty elsewhere.
  virtual std::vector<float> gather_matrix(std::vector<float> block, int /*queries*/,
                                           RowRange /*shard*/, std::int64_t /*database*/) {
    return block;
  }
  // On rank 0: the largest of every rank's value.
  virtual double max_over_ranks(double value) { return value; }
};

// CUDA devices this build and machine have (0 without CUDA; never throws).
int cuda_device_count();
// The calling thread's current CUDA device; throws Error without CUDA.
int cuda_current_device();
// Makes `device` the calling thread's CUDA device; Error without CUDA or for a bad id.
void use_cuda_device(int device);

}  // namespace kbench
