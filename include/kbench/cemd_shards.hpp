#pragma once
// Matching queries against a database cut into shards (contiguous row ranges: one per MPI rank,
// and within a rank one per GPU) and merging the shards' nearest two exactly as one process finds
// them. Every candidate is a 64-bit key (distance bits, row in the whole database), so the merged
// two are the smallest keys whatever the cut, ties going to the smallest row; each pair's
// distance has the same bits in every shard, so the result is bit-identical for any cut.

#include <cstdint>
#include <functional>
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

// How a process matches its shard.
struct ShardOptions {
  CemdParams params;    // distance and ratio; all_pairs: the shard's distance matrix too
  std::string variant;  // a registry name; empty: the preferred variant that can run here
  std::string backend;  // "serial", "openmp" or "cuda"; empty: any
  // More than one: the shard is cut again over GPUs first_gpu .. first_gpu + gpus − 1, one host
  // thread each, every one running a native CUDA variant (Kokkos drives one GPU per process).
  int gpus = 1;
  int first_gpu = 0;
  // When set, told of every `progress_rows` database rows matched (the variant then runs on the
  // rows a piece at a time, each piece's candidates merged as shards' are: the same result).
  std::function<void(std::int64_t rows)> progress;
  int progress_rows = 0;
};

struct ShardResult {
  std::vector<Top2> top2;     // per query, candidates numbered as rows of the whole database
  std::vector<float> matrix;  // queries × shard rows, row-major, when params.all_pairs
  std::string variant;        // the variant that ran; empty for an empty shard
  double seconds = 0;         // wall time of the variant's run, copies included (several GPUs:
                              // the slowest GPU's)
};

// Reads `count` database rows from row `first` of the whole database.
using RowReader = std::function<DescriptorSet(std::int64_t first, int count)>;

// The variant named (checked to run here on this input, on `backend` when given) or else the
// preferred one; with native_cuda_only, only native CUDA variants. Throws Error saying why none.
const Variant<Cemd>& select_cemd_variant(const CemdInput& input, const std::string& variant,
                                         const std::string& backend, bool native_cuda_only);

// Matches `queries` against database rows `shard`, read through `read_rows` (per GPU when
// options.gpus > 1, each thread reading its own rows). An empty shard gives no candidates.
ShardResult match_shard(const DescriptorSet& queries, RowRange shard, const RowReader& read_rows,
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
  // This process's rank among those on its machine, for choosing its GPU.
  virtual int node_rank() const { return 0; }
  // Rank 0's value, on every rank.
  virtual void broadcast(DescriptorSet& /*set*/) {}
  virtual void broadcast(std::int64_t& /*value*/) {}
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
// Makes `device` the calling thread's CUDA device; Error without CUDA or for a bad id.
void use_cuda_device(int device);

}  // namespace kbench
