#pragma once
// The ranks of an MPI job as a ShardGroup: rank r matches database rows shard_rows(rows, size, r),
// rank 0 reads the queries, merges every rank's nearest two and writes the result.
//
// Every MPI call is checked (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and a failed one throws Error;
// the program then calls abort(), which ends every rank, so a rank that fails while the others
// wait in a collective never leaves them hanging. Only plain C MPI calls are used (no C++
// bindings), so the code compiles with any C++17 compiler, nvcc_wrapper included.

#include <mpi.h>

#include <string>

#include "kbench/cemd_shards.hpp"

namespace kbench {

class MpiShardGroup : public ShardGroup {
 public:
  // True when an MPI launcher (mpirun, srun with PMI/PMIx) started this process.
  static bool launched();
  // This process's rank as the launcher's environment gives it, before MPI_Init (0 when none).
  static int launcher_rank();

  // Initialises MPI (asking for SERIALIZED, so that the queries' broadcast can run on a thread
  // of its own beside the main one's matching; FUNNELED at least: GPU and reader threads never
  // call MPI) and the datatypes and reduction the exchanges use. Throws Error when MPI cannot
  // start; a failure after MPI_Init says so on stderr and ends the job.
  MpiShardGroup(int* argc, char*** argv);
  MpiShardGroup(const MpiShardGroup&) = delete;
  MpiShardGroup& operator=(const MpiShardGroup&) = delete;
  // Frees the datatypes and the reduction, waits for every rank and finalises MPI.
  ~MpiShardGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_rank() const override { return node_rank_; }
  int node_size() const override { return node_size_; }
  bool broadcasts_on_any_thread() const override { return serialized_; }
  void broadcast(DescriptorSet& set) override;
  void broadcast(std::int64_t& value) override;
  bool all_true(bool mine) override;
  void barrier() override;
  // MPI_Reduce with a commutative operation that keeps the two smallest keys: the smallest two
  // of a set do not depend on the order it is merged in, so any rank count gives the same bits.
  void reduce_top2(std::vector<Top2>& top2) override;
  // MPI_Gatherv of the ranks' column blocks, counted in database columns (one column: `queries`
  // floats), so counts and displacements fit an int for every database the readers accept;
  // rank 0 then places each block's rows into the queries × database matrix. Refused, on rank
  // 0, above the one-process matrix limit of 2^32 elements.
  std::vector<float> gather_matrix(std::vector<float> block, int queries, RowRange shard,
                                   std::int64_t database) override;
  double max_over_ranks(double value) override;

  // Prints "PROGRAM: rank R: MESSAGE" on stderr and ends every rank of the job (MPI_Abort).
  [[noreturn]] void abort(const char* program, const std::string& message);

 private:
  void set_up(int provided);

  int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1;
  bool serialized_ = false;  // the library gave MPI_THREAD_SERIALIZED or more
  MPI_Datatype descriptor_type_ = MPI_DATATYPE_NULL;  // 128 bytes: one descriptor
  MPI_Datatype top2_type_ = MPI_DATATYPE_NULL;        // one Top2: two 64-bit keys
  MPI_Op top2_merge_op_ = MPI_OP_NULL;
};

}  // namespace kbench
