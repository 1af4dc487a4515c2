#pragma once
// The fused full search of cuda-regblock-vsad-p32 (argmin only, no map) as a building block of
// other native CUDA algorithms: sad-pruned falls back to it when its bounds prune too little, and
// its kernels read the packed rows this class uploads.

#include <cstdint>
#include <vector>

#include "kbench/sad.hpp"
#include "native_cuda/cuda_support.hpp"

namespace kbench::cuda {

// Packed words per thread of the full search (4 positions a word): rows are padded for reads of
// this many words from any thread's first word (see target()).
constexpr int kFullSearchWords = 8;

// Target words of one thread's row through 16-byte read-only loads (x a multiple of 4, the row
// 16-byte aligned), for accumulate_sad_row.
template <int kWords>
struct GlobalTarget {
  const std::uint32_t* __restrict__ row;
  __device__ __forceinline__ void load(int x, std::uint32_t (&out)[kWords]) const {
    const uint4* at = reinterpret_cast<const uint4*>(row + x);
#pragma unroll
    for (int v = 0; v < kWords / 4; ++v) {
      const uint4 words = __ldg(at + v);
      out[4 * v] = words.x;
      out[4 * v + 1] = words.y;
      out[4 * v + 2] = words.z;
      out[4 * v + 3] = words.w;
    }
  }
};

class SadFullSearch {
 public:
  // Validates the input (validate_sad_input) and packs its target and query on the host.
  explicit SadFullSearch(const SadInput& input);

  // Copies the packed rows to the device.
  void upload();

  // Lowers *best (not reset here) with atomicMin to the smallest sad_key() over every position,
  // in `stream` order. With a non-null `gate` the kernel's blocks return at once unless
  // *gate > gate_above when it runs: earlier kernels decide on the device, with no round trip
  // to the host. With `after_previous`, the gated kernel is launched as a programmatic dependent
  // of the kernel before it (cuda::launch).
  void search(unsigned long long* best, cudaStream_t stream,
              const unsigned long long* gate = nullptr, unsigned long long gate_above = 0,
              bool after_previous = false) const;

  const SadShape& shape() const { return shape_; }
  // Packed target rows (pack_rows), pitch_words() words each, 16-byte aligned. A thread of
  // positions 4·kFullSearchWords·g .. + 4·kFullSearchWords − 1 may read kFullSearchWords-word
  // groups from word kFullSearchWords·g as accumulate_sad_row does, and any window its words
  // and the one after them, for shifting to any byte offset.
  const std::uint32_t* target() const { return target_.get(); }
  int pitch_words() const { return pitch_words_; }
  // Packed query rows, query_words() words each, bytes past the query's width zero.
  const std::uint32_t* query() const { return query_.get(); }
  int query_words() const { return query_words_; }

 private:
  SadShape shape_;
  int pitch_words_, query_words_;
  bool constant_query_;
  std::uint64_t id_;  // which query the module's constant memory holds (search)
  static std::uint64_t last_id_;
  std::vector<std::uint32_t> packed_target_, packed_query_;
  DeviceBuffer<std::uint32_t> target_, query_;
};

}  // namespace kbench::cuda
