// Native CPU cemd.
// - omp: CPU-FINAL's per-pair distance, OpenMP over queries.
// - omp-blocked: the prefix form (cemd.hpp) in float lanes. Each descriptor's cells become running
//   sums once per run; the database is stored in blocks of kLanes rows, value-major
//   ([value][lane]), so one pass over a block computes kLanes distances in SIMD registers. Threads
//   own tiles of queries and walk the database in tiles that stay in cache while every query of
//   the tile passes over them; each query's nearest two are kept as it goes (no matrix unless
//   all_pairs). Every value is an exact integer below 2^24, so the results equal CPU-FINAL's bit
//   for bit.
#include "sequential/cemd_host.hpp"

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

// Database rows computed together (one pass over a block), queries per thread tile, and database
// blocks per cache tile (kTileBlocks · 128 · kLanes floats: 256 KiB).
constexpr int kLanes = 8;
constexpr int kQueryTile = 16;
constexpr int kTileBlocks = 64;
constexpr int kBlockFloats = kDescriptorBytes * kLanes;

template <DescriptorDistance kDistance>
void prefix_row(const std::uint8_t* row, float* out) {
  for (int c = 0; c < kCemdCells; ++c) {
    float cell[kCemdBins];
    prefix_cell<kDistance>(row + c * kCemdBins, cell);
    std::copy_n(cell, kCemdBins, out + c * kCemdBins);
  }
}

// The kLanes distances of one query (its 128 prefix floats) to one database block.
template <DescriptorDistance kDistance>
inline void block_distances(const float* query, const float* block, float (&out)[kLanes]) {
  float acc[kLanes] = {};
  for (int c = 0; c < kCemdCells; ++c) {
    float f[kCemdBins];
    for (int i = 0; i < kCemdBins; ++i) f[i] = query[c * kCemdBins + i];
    const float* cell = block + c * kCemdBins * kLanes;
#pragma omp simd
    for (int lane = 0; lane < kLanes; ++lane) {
      float g[kCemdBins];
      for (int i = 0; i < kCemdBins; ++i) g[i] = cell[i * kLanes + lane];
      acc[lane] += prefix_cell_term<kDistance>(f, g);
    }
  }
  for (int lane = 0; lane < kLanes; ++lane)
    out[lane] = prefix_distance_from_sum<kDistance>(acc[lane]);
}

class OmpBlocked {
 public:
  explicit OmpBlocked(const CemdInput& input)
      : blocks_((input.database.count + kLanes - 1) / kLanes),
        queries_(allocate_samples<float>(std::size_t(input.queries.count) * kDescriptorBytes,
                                         "cemd query prefix sums")),
        database_(allocate_samples<float>(std::size_t(blocks_) * kBlockFloats,
                                          "cemd database prefix sums")) {}

  void run(const CemdInput& input, CemdResult& out) {
    with_distance(input.params.distance, [&](auto distance) {
      prepare<distance.value>(input);
      match<distance.value>(input, out);
    });
  }

 private:
  template <DescriptorDistance kDistance>
  void prepare(const CemdInput& input) {
    const int n = input.queries.count, m = input.database.count;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
      for (int q = 0; q < n; ++q) {
        prefix_row<kDistance>(input.queries.row(q),
                              queries_.data() + std::size_t(q) * kDescriptorBytes);
      }
#pragma omp for schedule(static)
      for (int b = 0; b < blocks_; ++b) {
        float* block = database_.data() + std::size_t(b) * kBlockFloats;
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

  template <DescriptorDistance kDistance>
  void match(const CemdInput& input, CemdResult& out) const {
    const int n = input.queries.count, m = input.database.count;
    const int query_tiles = (n + kQueryTile - 1) / kQueryTile;
    const bool all_pairs = input.params.all_pairs;
#pragma omp parallel for schedule(dynamic, 1)
    for (int tile = 0; tile < query_tiles; ++tile) {
      const int q0 = tile * kQueryTile;
      const int q1 = std::min(n, q0 + kQueryTile);
      Top2 top[kQueryTile];
      for (int b0 = 0; b0 < blocks_; b0 += kTileBlocks) {
        const int b1 = std::min(blocks_, b0 + kTileBlocks);
        for (int q = q0; q < q1; ++q) {
          const float* query = queries_.data() + std::size_t(q) * kDescriptorBytes;
          float* row = all_pairs ? out.matrix.data() + std::size_t(q) * m : nullptr;
          Top2& t = top[q - q0];
          for (int b = b0; b < b1; ++b) {
            float d[kLanes];
            block_distances<kDistance>(query, database_.data() + std::size_t(b) * kBlockFloats, d);
            const int lanes = std::min(kLanes, m - b * kLanes);
            for (int lane = 0; lane < lanes; ++lane) {
              if (all_pairs) {
                row[b * kLanes + lane] = d[lane];
              } else {
                top2_insert(t, cemd_key(d[lane], std::uint32_t(b * kLanes + lane)));
              }
            }
          }
        }
      }
      if (!all_pairs) {
        for (int q = q0; q < q1; ++q) out.neighbours[std::size_t(q)] = neighbours_from(top[q - q0]);
      }
    }
  }

  int blocks_;
  std::vector<float> queries_;   // query q's 128 prefix floats at q · 128
  std::vector<float> database_;  // block b's value v of lane l at (b · 128 + v) · kLanes + l
};

}  // namespace

void register_cemd_native_cpu(VariantList<Cemd>& list) {
  const auto add = [&](const char* name, Variant<Cemd>::Make make, int preference) {
    list.push_back(
        {name, Layer::native_cpu, Backend::openmp, false, std::move(make), {}, preference});
  };
  add("omp", make_runner<HostRunner<OmpFinal>>, 10);
  add("omp-blocked", make_runner<HostRunner<OmpBlocked>>, 11);
}

}  // namespace kbench
