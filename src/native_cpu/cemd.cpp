// Native CPU cemd.
// - omp: CPU-FINAL's per-pair distance, OpenMP over queries.
// - omp-simd-<level>: the prefix form (detail/cemd_prefix.hpp) on float vectors of the CPU level
//   (4 lanes at the baseline, 8 with AVX2, 16 with AVX-512), each lane a database row. Each
//   descriptor's cells become running sums once per run; the database is stored in blocks of
//   one vector's rows, value-major, so one pass over a block computes a vector of distances.
//   Threads own tiles of queries and walk the database in tiles that stay in cache while every
//   query of the tile passes over them; each query's nearest two are kept as it goes (no matrix
//   unless all_pairs). Every value is an exact integer below 2^24, so the results equal
//   CPU-FINAL's bit for bit.
#include "host_kernels/cemd.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cemd_prefix.hpp"
#include "kbench/detail/cpu_vectors.hpp"

namespace kbench {
namespace {

using namespace host_cemd;

struct OmpFinal {
  explicit OmpFinal(const CemdInput& input) : form(input) {}
  void run(const CemdInput& input, CemdResult& out) {
    form.prepare(input);
    with_distance(input.params.distance, [&](auto distance) {
#pragma omp parallel for schedule(dynamic, 4)
      for (int q = 0; q < input.queries.count; ++q) form.fill<distance.value>(input, q, out);
    });
  }

  FinalForm form;
};

// Queries per thread tile, and database bytes per cache tile (the tile's blocks stay in L2 while
// every query of the thread's tile passes over them).
constexpr int kQueryTile = 16;
constexpr std::size_t kTileBytes = 256 * 1024;

template <DescriptorDistance kDistance>
void prefix_row(const std::uint8_t* row, float* out) {
  for (int c = 0; c < kCemdCells; ++c) {
    float cell[kCemdBins];
    prefix_cell<kDistance>(row + c * kCemdBins, cell);
    std::copy_n(cell, kCemdBins, out + c * kCemdBins);
  }
}

// Both sets in the prefix form: query q's 128 floats at q · 128; the database in blocks of kLanes
// rows, value-major, block b's value v of lane l at (b · 128 + v) · kLanes + l, so that one
// vector load gives one value of kLanes rows.
template <int kLanes>
struct PrefixSets {
  static constexpr int kBlockFloats = kDescriptorBytes * kLanes;

  explicit PrefixSets(const CemdInput& input)
      : blocks((input.database.count + kLanes - 1) / kLanes),
        queries(allocate_samples<float>(std::size_t(input.queries.count) * kDescriptorBytes,
                                        "cemd query prefix sums")),
        database(allocate_samples<float>(std::size_t(blocks) * kBlockFloats,
                                         "cemd database prefix sums")) {}

  template <DescriptorDistance kDistance>
  void prepare(const CemdInput& input) {
    const int n = input.queries.count, m = input.database.count;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
      for (int q = 0; q < n; ++q) {
        prefix_row<kDistance>(input.queries.row(q),
                              queries.data() + std::size_t(q) * kDescriptorBytes);
      }
#pragma omp for schedule(static)
      for (int b = 0; b < blocks; ++b) {
        float* block = database.data() + std::size_t(b) * kBlockFloats;
        for (int lane = 0; lane < kLanes; ++lane) {
          // Rows past the end are zero; their distances are never used.
          const int j = std::min(b * kLanes + lane, m - 1);
          float row[kDescriptorBytes];
          prefix_row<kDistance>(input.database.row(j), row);
          for (int v = 0; v < kDescriptorBytes; ++v) {
            block[v * kLanes + lane] = b * kLanes + lane < m ? row[v] : 0.0f;
          }
        }
      }
    }
  }

  int blocks;
  std::vector<float> queries, database;
};

// One thread's work: queries [q0, q1) against the whole database, tile by tile.
struct QueryTile {
  const float* queries;
  const float* database;
  int blocks, m, q0, q1;
  float* matrix;  // the all-pairs matrix, or null for the nearest two
  Top2* top;      // q1 − q0 of them, when matrix is null
};

// The kLanes distances of one query (its 128 prefix floats) to every row of one database block,
// a lane each, through prefix_cell_term on vectors: the same operations as on one float per lane.
template <class Ops, DescriptorDistance kDistance>
[[gnu::always_inline]] inline void block_distances(const float* query, const float* block,
                                                   float (&out)[Ops::kLanes]) {
  using Floats = typename Ops::Floats;
  Floats acc = Ops::zero();
  for (int c = 0; c < kCemdCells; ++c) {
    Floats f[kCemdBins], g[kCemdBins];
    for (int i = 0; i < kCemdBins; ++i) {
      f[i] = Ops::broadcast(query[c * kCemdBins + i]);
      g[i] = Ops::load(block + (c * kCemdBins + i) * Ops::kLanes);
    }
    acc += prefix_cell_term<kDistance>(f, g);
  }
  Ops::store(out, acc);
  for (float& d : out) d = prefix_distance_from_sum<kDistance>(d);
}

template <class Ops, DescriptorDistance kDistance>
[[gnu::always_inline]] inline void match_tile(const QueryTile& t) {
  constexpr int kLanes = Ops::kLanes;
  constexpr int kTileBlocks = int(kTileBytes / (sizeof(float) * kDescriptorBytes * kLanes));
  for (int b0 = 0; b0 < t.blocks; b0 += kTileBlocks) {
    const int b1 = std::min(t.blocks, b0 + kTileBlocks);
    for (int q = t.q0; q < t.q1; ++q) {
      const float* query = t.queries + std::size_t(q) * kDescriptorBytes;
      for (int b = b0; b < b1; ++b) {
        float d[kLanes];
        block_distances<Ops, kDistance>(query,
                                        t.database + std::size_t(b) * kDescriptorBytes * kLanes, d);
        const int lanes = std::min(kLanes, t.m - b * kLanes);
        if (t.matrix) {
          std::copy_n(d, lanes, t.matrix + std::size_t(q) * t.m + std::size_t(b) * kLanes);
        } else {
          for (int lane = 0; lane < lanes; ++lane)
            top2_offer(t.top[q - t.q0], d[lane], std::uint32_t(b * kLanes + lane));
        }
      }
    }
  }
}

#if defined(__CUDACC__)
// nvcc compiles this file in the CUDA build, and its device pass refuses vector types in the
// host-device helpers of detail/cemd_prefix.hpp: the generic level there holds one float per lane.
struct ScalarOps {
  static constexpr int kLanes = 1;
  using Floats = float;
  static Floats zero() { return 0.0f; }
  static Floats broadcast(float v) { return v; }
  static Floats load(const float* p) { return *p; }
  static void store(float* p, Floats v) { *p = v; }
};
using GenericOps = ScalarOps;
#else
using GenericOps = simd::Generic;
#endif

// One entry per level and distance, its target attribute reaching the whole inlined tile
// (detail/cpu_vectors.hpp); a level names its vector operations and its entry.
struct GenericLevel {
  using Ops = GenericOps;
  template <DescriptorDistance kDistance>
  [[gnu::flatten]] static void match(const QueryTile& t) {
    match_tile<Ops, kDistance>(t);
  }
};
#if KBENCH_X86_SIMD
struct Avx2Level {
  using Ops = simd::Avx2;
  template <DescriptorDistance kDistance>
  [[KBENCH_CPU_TARGET_AVX2, gnu::flatten]] static void match(const QueryTile& t) {
    match_tile<Ops, kDistance>(t);
  }
};
struct Avx512Level {
  using Ops = simd::Avx512;
  template <DescriptorDistance kDistance>
  [[KBENCH_CPU_TARGET_AVX512, gnu::flatten]] static void match(const QueryTile& t) {
    match_tile<Ops, kDistance>(t);
  }
};
#endif

// omp-simd-<level>: threads own tiles of queries and walk the database in cache tiles.
template <class Level>
class OmpSimd {
 public:
  explicit OmpSimd(const CemdInput& input) : sets_(input) {}

  void run(const CemdInput& input, CemdResult& out) {
    with_distance(input.params.distance, [&](auto distance) {
      sets_.template prepare<distance.value>(input);
      match(input, out, Level::template match<distance.value>);
    });
  }

 private:
  void match(const CemdInput& input, CemdResult& out, void (*tile_run)(const QueryTile&)) const {
    const int n = input.queries.count, m = input.database.count;
    const int query_tiles = (n + kQueryTile - 1) / kQueryTile;
    const bool all_pairs = input.params.all_pairs;
#pragma omp parallel for schedule(dynamic, 1)
    for (int tile = 0; tile < query_tiles; ++tile) {
      const int q0 = tile * kQueryTile;
      const int q1 = std::min(n, q0 + kQueryTile);
      Top2 top[kQueryTile];
      tile_run({sets_.queries.data(), sets_.database.data(), sets_.blocks, m, q0, q1,
                all_pairs ? out.matrix.data() : nullptr, top});
      if (!all_pairs) {
        for (int q = q0; q < q1; ++q) out.neighbours[std::size_t(q)] = neighbours_from(top[q - q0]);
      }
    }
  }

  PrefixSets<Level::Ops::kLanes> sets_;
};

}  // namespace

void register_cemd_native_cpu(VariantList<Cemd>& list) {
  const auto add = [&](const char* name, Variant<Cemd>::Make make, CpuLevel level, int rank) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    supports_level(level), rank});
  };
  add("omp", make_runner<HostRunner<OmpFinal>>, CpuLevel::generic, 1);
  add("omp-simd-generic", make_runner<HostRunner<OmpSimd<GenericLevel>>>, CpuLevel::generic, 2);
#if KBENCH_X86_SIMD
  add("omp-simd-avx2", make_runner<HostRunner<OmpSimd<Avx2Level>>>, CpuLevel::avx2, 3);
  add("omp-simd-avx512", make_runner<HostRunner<OmpSimd<Avx512Level>>>, CpuLevel::avx512, 4);
#endif
}

}  // namespace kbench
