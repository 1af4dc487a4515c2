// Native CPU sad:
// - omp: the report's OpenMP map (collapse(2), static schedule);
// - omp-blocked: a cache-blocked map that keeps a tile's target rows and the current query row in
//   L1 while they are reused;
// - omp-simd-<level>: packed SAD instructions (psadbw at 16, vpsadbw at 32 and 64
//   bytes) on register blocks of map positions, one variant per CpuLevel compiled with that
//   level's target (sad_simd_level.inc), each runnable where cpu_supports() says so; the generic
//   one runs everywhere. Rows are split statically over the threads, and each thread first
//   touches the map rows and target rows it works on.
#include <algorithm>
#include <cstdlib>
#include <memory>

#include "host_kernels/sad.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_sad_bytes.hpp"
#include "kbench/error.hpp"

namespace kbench {
namespace {

using namespace host_sad;

void omp_map(const SadInput& input, const SadShape& s, std::int32_t* map) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < s.map_height; ++i) {
    for (int j = 0; j < s.map_width; ++j)
      map[std::size_t(i) * s.map_width + j] = sad_at(input, s, i, j);
  }
}

// The SIMD variants' padded copies of target and query, with zeros around them so a register
// block may read past the map's edge and a chunk past the query's width. The buffers belong to
// SimdMapRunner.
struct SimdSadLayout {
  std::uint8_t* target;
  std::size_t target_pitch;  // bytes per padded target row
  int target_rows;           // the target's, plus a register block's overhang below it
  std::uint8_t* query;
  int query_width;
  int query_pitch;          // the query's width rounded up to whole chunks
  int whole_chunk_bytes;    // bytes of a query row in chunks that need no mask
  std::uint8_t* tail_mask;  // one chunk: 0xFF over the tail's query bytes, 0 past them
  int band_rows;            // query rows per pass over a map row (they stay in L1)
};

}  // namespace

// Every level's kernel, compiled for that level (see sad_simd_level.inc), on the level's register
// block (cpu_simd::SadBlockShape).
namespace sad_simd_generic {
using Bytes = cpu_simd::GenericBytes<>;
constexpr int kRows = cpu_simd::SadBlockShape<Bytes>::kRows;
constexpr int kPositions = cpu_simd::SadBlockShape<Bytes>::kPositions;
#include "native_cpu/sad_simd_level.inc"
}  // namespace sad_simd_generic

#if defined(KBENCH_X86_PACKED_SAD)
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")
namespace sad_simd_avx2 {
using Bytes = cpu_simd::Avx2Bytes;
constexpr int kRows = cpu_simd::SadBlockShape<Bytes>::kRows;
constexpr int kPositions = cpu_simd::SadBlockShape<Bytes>::kPositions;
#include "native_cpu/sad_simd_level.inc"
}  // namespace sad_simd_avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
namespace sad_simd_avx512 {
using Bytes = cpu_simd::Avx512Bytes;
constexpr int kRows = cpu_simd::SadBlockShape<Bytes>::kRows;
constexpr int kPositions = cpu_simd::SadBlockShape<Bytes>::kPositions;
#include "native_cpu/sad_simd_level.inc"
}  // namespace sad_simd_avx512
#pragma GCC pop_options
#endif

namespace {

template <class Kernel>
class SimdMapRunner final : public Runner<Sad> {
 public:
  explicit SimdMapRunner(const SadInput& input) : input_(input), shape_(validate_sad_input(input)) {
    const SadShape& s = shape_;
    constexpr int kChunk = Kernel::kChunkBytes;
    const cpu_simd::PaddedSadSizes sizes(s.target_width, s.query_width, kChunk,
                                         Kernel::kBlockPositions, kCacheLineBytes);
    layout_.target_pitch = sizes.target_pitch;
    layout_.target_rows = s.target_height + Kernel::kBlockRows - 1;
    layout_.query_width = s.query_width;
    layout_.query_pitch = sizes.query_pitch;
    layout_.whole_chunk_bytes = sizes.whole_chunk_bytes;
    layout_.band_rows = sizes.band_rows;
    target_ = allocate_untouched<std::uint8_t>(layout_.target_pitch * layout_.target_rows,
                                               "the padded SAD target");
    query_ = allocate_untouched<std::uint8_t>(
        std::size_t(layout_.query_pitch) * std::size_t(s.query_height), "the padded SAD query");
    tail_mask_ = allocate_untouched<std::uint8_t>(kChunk, "the SAD tail mask");
    map_ = allocate_untouched<std::int32_t>(s.map_size(), "the SAD map");
    layout_.target = target_.get();
    layout_.query = query_.get();
    layout_.tail_mask = tail_mask_.get();
  }
  // By row blocks, split over the threads as fill() splits them: the first touch of each map page.
  void poison(std::uint8_t byte) override {
    const SadShape& s = shape_;
    const int row_blocks = (s.map_height + Kernel::kBlockRows - 1) / Kernel::kBlockRows;
    std::uint8_t* map = reinterpret_cast<std::uint8_t*>(map_.get());
    const std::size_t block_bytes =
        std::size_t(Kernel::kBlockRows) * s.map_width * sizeof(std::int32_t);
    const std::size_t map_bytes = s.map_size() * sizeof(std::int32_t);
#pragma omp parallel for schedule(static)
    for (int block = 0; block < row_blocks; ++block) {
      const std::size_t start = block * block_bytes;
      std::fill(map + start, map + std::min(map_bytes, start + block_bytes), byte);
    }
    std::fill_n(reinterpret_cast<std::uint8_t*>(&best_), sizeof best_, byte);
  }
  void compute() override {
    Kernel::prepare(input_, shape_, layout_);
    best_ = match_from_key(Kernel::fill(layout_, shape_, map_.get()), shape_.map_width);
  }
  void download(SadResult& out) override {
    out.map_width = shape_.map_width;
    out.map_height = shape_.map_height;
    out.best = best_;
    if (input_.params.want_map) {
      out.map.assign(map_.get(), map_.get() + shape_.map_size());
    } else {
      out.map.clear();
    }
  }

 private:
  const SadInput& input_;
  SadShape shape_;
  SimdSadLayout layout_{};
  HostBuffer<std::uint8_t> target_, query_, tail_mask_;
  HostBuffer<std::int32_t> map_;
  SadMatch best_;
};

}  // namespace

void register_sad_native_cpu(VariantList<Sad>& list) {
  // The blocked map is compare's checking reference where the sequential one is too slow; the
  // SIMD variants are the fastest CPU paths, the highest level this CPU has first.
  const auto add = [&](const char* name, Variant<Sad>::Make make,
                       std::function<bool(const SadInput&)> supports, int rank) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    std::move(supports), rank});
  };
  add("omp", make_runner<MapRunner<omp_map, omp_argmin>>, {}, 1);
  add("omp-blocked", make_runner<MapRunner<blocked_map, omp_argmin>>, {}, 2);
  add("omp-simd-generic", make_runner<SimdMapRunner<sad_simd_generic::Kernel>>, {}, 3);
#if defined(KBENCH_X86_PACKED_SAD)
  add("omp-simd-avx2", make_runner<SimdMapRunner<sad_simd_avx2::Kernel>>,
      supports_level(sad_simd_avx2::Kernel::level), 4);
  add("omp-simd-avx512", make_runner<SimdMapRunner<sad_simd_avx512::Kernel>>,
      supports_level(sad_simd_avx512::Kernel::level), 5);
#endif
}

}  // namespace kbench
