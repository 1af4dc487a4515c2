#include "kbench/cemd_mpi.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "kbench/error.hpp"

namespace kbench {

namespace {

static_assert(std::is_standard_layout<Top2>::value && sizeof(Top2) == 2 * sizeof(std::uint64_t),
              "the MPI datatype of Top2 is two contiguous 64-bit keys");

// The rank as launchers put it in the environment: Open MPI's mpirun, then PMIx and PMI
// launchers (Slurm's srun, MPICH's Hydra). Any of them set means a launcher started us.
constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(status, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(std::string(call) + " failed" +
              (length > 0 ? ": " + std::string(text, std::size_t(length)) : std::string()));
}

// The reduction's operation: per query, the smallest two keys of both lists.
void merge_top2_op(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
  merge_top2_lists(static_cast<Top2*>(inout), static_cast<const Top2*>(in), std::size_t(*length));
}

// A committed datatype freed when the exchange that needs it ends (also by an exception).
class CommittedType {
 public:
  CommittedType(int count, MPI_Datatype element) {
    check(MPI_Type_contiguous(count, element, &type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  CommittedType(const CommittedType&) = delete;
  CommittedType& operator=(const CommittedType&) = delete;
  ~CommittedType() { MPI_Type_free(&type_); }
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// The whole matrix one process may hold, as validate_cemd_input allows it for one process.
constexpr std::uint64_t kMaxGatheredElements = std::uint64_t(1) << 32;

}  // namespace

bool MpiShardGroup::launched() {
  return std::any_of(std::begin(kRankVariables), std::end(kRankVariables),
                     [](const char* name) { return std::getenv(name) != nullptr; });
}

int MpiShardGroup::launcher_rank() {
  for (const char* name : kRankVariables) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

MpiShardGroup::MpiShardGroup(int* argc, char*** argv) {
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  rank_ = launcher_rank();
  try {
    set_up(provided);
  } catch (const Error& e) {
    // Without a group the program cannot abort the job, and the other ranks may wait for this one.
    std::fprintf(stderr, "MPI set-up failed on rank %d: %s\n", rank_, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
}

void MpiShardGroup::set_up(int provided) {
  // From here on a failed call returns its status, which check() turns into an Error.
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  if (provided < MPI_THREAD_FUNNELED) {
    throw Error("the MPI library offers no thread support, but GPU threads run beside MPI");
  }
  serialized_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  const int rank_status = MPI_Comm_rank(node, &node_rank_);
  const int size_status = MPI_Comm_size(node, &node_size_);
  MPI_Comm_free(&node);
  check(rank_status, "MPI_Comm_rank");
  check(size_status, "MPI_Comm_size");
  check(MPI_Type_contiguous(kDescriptorBytes, MPI_UINT8_T, &descriptor_type_),
        "MPI_Type_contiguous");
  check(MPI_Type_commit(&descriptor_type_), "MPI_Type_commit");
  check(MPI_Type_contiguous(2, MPI_UINT64_T, &top2_type_), "MPI_Type_contiguous");
  check(MPI_Type_commit(&top2_type_), "MPI_Type_commit");
  check(MPI_Op_create(&merge_top2_op, /*commute=*/1, &top2_merge_op_), "MPI_Op_create");
}

MpiShardGroup::~MpiShardGroup() {
  if (top2_merge_op_ != MPI_OP_NULL) MPI_Op_free(&top2_merge_op_);
  if (top2_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&top2_type_);
  if (descriptor_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&descriptor_type_);
  // No rank enters MPI_Finalize before all are done: a rank that aborts while another is inside
  // MPI_Finalize makes Open MPI 4.1's mpirun (Debian's, with PMIx 4.2) hang or crash in its own
  // teardown; aborting while the others wait in this barrier ends the job cleanly.
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

void MpiShardGroup::broadcast(DescriptorSet& set) {
  check(MPI_Bcast(&set.count, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (rank_ != 0) set.values.resize(std::size_t(set.count) * kDescriptorBytes);
  // Counted in descriptors, so a set above 2^31 bytes still has an int count.
  check(MPI_Bcast(set.values.data(), set.count, descriptor_type_, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

void MpiShardGroup::broadcast(std::int64_t& value) {
  check(MPI_Bcast(&value, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

bool MpiShardGroup::all_true(bool mine) {
  int mine_flag = mine ? 1 : 0, all = 0;
  check(MPI_Allreduce(&mine_flag, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
  return all != 0;
}

void MpiShardGroup::barrier() {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void MpiShardGroup::reduce_top2(std::vector<Top2>& top2) {
  const int count = int(top2.size());
  if (rank_ == 0) {
    check(
        MPI_Reduce(MPI_IN_PLACE, top2.data(), count, top2_type_, top2_merge_op_, 0, MPI_COMM_WORLD),
        "MPI_Reduce");
  } else {
    check(MPI_Reduce(top2.data(), nullptr, count, top2_type_, top2_merge_op_, 0, MPI_COMM_WORLD),
          "MPI_Reduce");
  }
}

std::vector<float> MpiShardGroup::gather_matrix(std::vector<float> block, int queries,
                                                RowRange shard, std::int64_t database) {
  if (block.size() != std::size_t(queries) * std::size_t(shard.count)) {
    throw Error("rank " + std::to_string(rank_) + "'s block of the distance matrix has " +
                std::to_string(block.size()) + " values instead of " + std::to_string(queries) +
                " x " + std::to_string(shard.count));
  }
  // Checked on rank 0 only: its abort ends the others, which wait in the gather, with one line.
  if (rank_ == 0 && std::uint64_t(queries) * std::uint64_t(database) > kMaxGatheredElements) {
    throw Error(
        "the all-pairs matrix of " + std::to_string(queries) + " x " + std::to_string(database) +
        " descriptors has more than 2^32 elements, more " +
        "than rank 0 gathers; ask for the nearest two per query instead, or split the sets");
  }
  const CommittedType column(queries, MPI_FLOAT);
  if (rank_ != 0) {
    check(MPI_Gatherv(block.data(), shard.count, column.get(), nullptr, nullptr, nullptr,
                      column.get(), 0, MPI_COMM_WORLD),
          "MPI_Gatherv");
    return {};
  }
  // Database rows fit an int (the readers refuse more), so every count and offset does.
  std::vector<int> counts(static_cast<std::size_t>(size_)), offsets(counts.size());
  for (int r = 0; r < size_; ++r) {
    const RowRange range = shard_rows(database, size_, r);
    counts[r] = range.count;
    offsets[r] = int(range.first);
  }
  const std::size_t width = std::size_t(database);
  std::vector<float> blocks(std::size_t(queries) * width);
  check(MPI_Gatherv(block.data(), shard.count, column.get(), blocks.data(), counts.data(),
                    offsets.data(), column.get(), 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
  block = {};
  // Rank r's block is queries × counts[r], row-major, from column offsets[r] on.
  std::vector<float> matrix(std::size_t(queries) * width);
  for (int r = 0; r < size_; ++r) {
    const std::size_t count = std::size_t(counts[r]);
    const float* source = blocks.data() + std::size_t(offsets[r]) * std::size_t(queries);
    for (std::size_t q = 0; q < std::size_t(queries); ++q) {
      std::copy_n(source + q * count, count, matrix.data() + q * width + std::size_t(offsets[r]));
    }
  }
  return matrix;
}

double MpiShardGroup::max_over_ranks(double value) {
  double largest = value;
  check(MPI_Reduce(&value, &largest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
  return largest;
}

void MpiShardGroup::abort(const char* program, const std::string& message) {
  // One line per rank even if two of its threads fail at once.
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program, rank_, message.c_str());
    std::fflush(stderr);
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  // MPI_Abort does not return on Open MPI; should a library return, this rank still ends.
  std::_Exit(1);
}

}  // namespace kbench
