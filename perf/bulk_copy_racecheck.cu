// Whether compute-sanitizer's racecheck takes a bulk copy's completion on an mbarrier as ordering.
// Each block walks tiles of rows through two shared buffers as cuda-tensor's row tiles do: thread
// 0 stages a tile with one bulk copy that completes on the buffer's "full" mbarrier, once every
// warp has arrived on the buffer's "empty" one after reading the tile before; each thread sums
// the words it reads, and the sums are checked against the host's. The two forms differ in the
// copy instruction only: a raw-address copy (cuda-tensor's, through the same bulk_copy.hpp) or
// one through a tensor map. Run both under racecheck to see which one it reports
// (perf/notes/cemd.md).
//
//   bulk-copy-racecheck raw|tensor [TILES_PER_BLOCK]

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "native_cuda/bulk_copy.hpp"

namespace {

namespace bulk = kbench::bulk_copy;

constexpr int kRowWords = 32;  // 128-byte rows
constexpr int kTileRows = 64;  // 8 KiB tiles
constexpr int kTileWords = kRowWords * kTileRows;
constexpr int kThreads = 128, kBlocks = 64;

enum class Copy { raw, tensor };

template <Copy kCopy>
__global__ void __launch_bounds__(kThreads)
    walk_kernel(const std::uint32_t* rows, const __grid_constant__ CUtensorMap map, int tiles,
                unsigned long long* sums) {
#if __CUDA_ARCH__ >= 900  // main() checks the GPU
  constexpr int kWarps = kThreads / 32;
  __shared__ __align__(128) std::uint32_t buffers[2][kTileWords];
  __shared__ std::uint64_t barriers[4];  // full 0, full 1, empty 0, empty 1
  const auto full = [&](int n) { return bulk::shared_address(&barriers[n % 2]); };
  const auto empty = [&](int n) { return bulk::shared_address(&barriers[2 + n % 2]); };
  const int first_row = blockIdx.x * tiles * kTileRows;
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b) {
      bulk::init(full(b), 1);
      bulk::init(empty(b), kWarps);
    }
    bulk::fence_before_copies();
  }
  __syncthreads();

  // Tile n into buffer n % 2, once every warp has read tile n − 2 there.
  const auto stage = [&](int n) {
    if (threadIdx.x == 0 && n < tiles) {
      if (n >= 2) bulk::wait_phase(empty(n), (n - 2) / 2 % 2);
      constexpr std::uint32_t kBytes = kTileWords * sizeof(std::uint32_t);
      bulk::arrive_expecting(full(n), kBytes);
      const int row = first_row + n * kTileRows;
      if constexpr (kCopy == Copy::raw) {
        bulk::copy_to_shared(buffers[n % 2], rows + std::size_t(row) * kRowWords, kBytes, full(n));
      } else {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[%0], [%1, {%2, %3}], [%4];" ::"r"(bulk::shared_address(buffers[n % 2])),
            "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(0), "r"(row), "r"(full(n))
            : "memory");
      }
    }
    __syncwarp();
  };

  unsigned long long sum = 0;
  stage(0);
  for (int n = 0; n < tiles; ++n) {
    stage(n + 1);
    bulk::wait_phase(full(n), n / 2 % 2);
    for (int w = threadIdx.x; w < kTileWords; w += kThreads) sum += buffers[n % 2][w];
    __syncwarp();
    if (threadIdx.x % 32 == 0) bulk::arrive(empty(n));
  }
  atomicAdd(sums + blockIdx.x, sum);
#endif
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "bulk-copy-racecheck: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// A 2-D tensor map over the rows (32 words wide), boxes of one tile.
CUtensorMap tensor_map_of(std::uint32_t* rows, std::uint64_t row_count) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                         cudaEnableDefault, &found),
        "cuTensorMapEncodeTiled");
  if (found != cudaDriverEntryPointSuccess || !function) {
    std::fprintf(stderr, "bulk-copy-racecheck: the driver has no cuTensorMapEncodeTiled\n");
    std::exit(1);
  }
  const auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  CUtensorMap map{};
  const cuuint64_t dims[2] = {kRowWords, row_count};
  const cuuint64_t strides[1] = {kRowWords * sizeof(std::uint32_t)};
  const cuuint32_t box[2] = {kRowWords, kTileRows}, element_strides[2] = {1, 1};
  const CUresult status =
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, rows, dims, strides, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS) {
    std::fprintf(stderr, "bulk-copy-racecheck: cuTensorMapEncodeTiled failed (%d)\n", int(status));
    std::exit(1);
  }
  return map;
}

}  // namespace

int main(int argc, char** argv) {
  const bool tensor = argc > 1 && std::strcmp(argv[1], "tensor") == 0;
  if (argc < 2 || (!tensor && std::strcmp(argv[1], "raw") != 0)) {
    std::fprintf(stderr, "usage: bulk-copy-racecheck raw|tensor [TILES_PER_BLOCK]\n");
    return 2;
  }
  const int tiles = argc > 2 ? std::atoi(argv[2]) : 8;
  if (tiles < 1) {
    std::fprintf(stderr, "bulk-copy-racecheck: TILES_PER_BLOCK must be at least 1\n");
    return 2;
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  if (properties.major < 9) {
    std::fprintf(stderr, "bulk-copy-racecheck: needs bulk copies (compute capability 9.0 on)\n");
    return 1;
  }
  const std::size_t row_count = std::size_t(kBlocks) * tiles * kTileRows;
  std::vector<std::uint32_t> host(row_count * kRowWords);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::uint32_t(i * 2654435761u);
  std::uint32_t* rows = nullptr;
  unsigned long long* sums = nullptr;
  check(cudaMalloc(&rows, host.size() * sizeof(std::uint32_t)), "cudaMalloc");
  check(cudaMalloc(&sums, kBlocks * sizeof(unsigned long long)), "cudaMalloc");
  check(cudaMemcpy(rows, host.data(), host.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  check(cudaMemset(sums, 0, kBlocks * sizeof(unsigned long long)), "cudaMemset");
  const CUtensorMap map = tensor ? tensor_map_of(rows, row_count) : CUtensorMap{};
  if (tensor) {
    walk_kernel<Copy::tensor><<<kBlocks, kThreads>>>(rows, map, tiles, sums);
  } else {
    walk_kernel<Copy::raw><<<kBlocks, kThreads>>>(rows, map, tiles, sums);
  }
  check(cudaGetLastError(), "launch");
  std::vector<unsigned long long> got(kBlocks);
  check(cudaMemcpy(got.data(), sums, kBlocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  int wrong = 0;
  const std::size_t block_words = std::size_t(tiles) * kTileWords;
  for (int b = 0; b < kBlocks; ++b) {
    unsigned long long expected = 0;
    for (std::size_t w = 0; w < block_words; ++w) expected += host[b * block_words + w];
    wrong += got[std::size_t(b)] != expected;
  }
  std::printf("bulk-copy-racecheck: %s copies, %d blocks x %d tiles: %d block sum(s) wrong\n",
              tensor ? "tensor-map" : "raw-address", kBlocks, tiles, wrong);
  cudaFree(rows);
  cudaFree(sums);
  return wrong == 0 ? 0 : 1;
}
