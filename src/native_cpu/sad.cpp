// Native CPU sad: the report's OpenMP map (collapse(2), static schedule) and a cache-blocked map
// that keeps a tile's target rows and the current query row in L1 while they are reused.
#include "sequential/sad_host.hpp"

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

// Tiles of kTileRows × kTileCols positions, query row by query row: target row i + k serves the
// tile's rows i at consecutive k while it is still in L1, and query row k serves the whole tile.
constexpr int kTileRows = 8, kTileCols = 128;

void blocked_map(const SadInput& input, const SadShape& s, std::int32_t* map) {
  const std::uint8_t* target = input.target.data.data();
  const std::uint8_t* query = input.query.data.data();
  const int tiles_y = (s.map_height + kTileRows - 1) / kTileRows;
  const int tiles_x = (s.map_width + kTileCols - 1) / kTileCols;
#pragma omp parallel for collapse(2) schedule(static)
  for (int ty = 0; ty < tiles_y; ++ty) {
    for (int tx = 0; tx < tiles_x; ++tx) {
      const int i0 = ty * kTileRows, j0 = tx * kTileCols;
      const int rows = std::min(kTileRows, s.map_height - i0);
      const int cols = std::min(kTileCols, s.map_width - j0);
      std::int32_t acc[kTileRows][kTileCols] = {};
      for (int k = 0; k < s.query_height; ++k) {
        const std::uint8_t* query_row = query + std::size_t(k) * s.query_width;
        for (int ii = 0; ii < rows; ++ii) {
          const std::uint8_t* target_row = target + std::size_t(i0 + ii + k) * s.target_width + j0;
          for (int jj = 0; jj < cols; ++jj) {
            acc[ii][jj] += row_sad(target_row + jj, query_row, s.query_width);
          }
        }
      }
      for (int ii = 0; ii < rows; ++ii) {
        std::copy_n(acc[ii], cols, map + std::size_t(i0 + ii) * s.map_width + j0);
      }
    }
  }
}

SadMatch omp_argmin(const std::int32_t* map, const SadShape& s) {
  std::uint64_t best = kNoSadKey;
  const std::int64_t size = std::int64_t(s.map_size());
#pragma omp parallel for schedule(static) reduction(min : best)
  for (std::int64_t index = 0; index < size; ++index) {
    best = sad_min(best, sad_key(map[index], std::uint32_t(index)));
  }
  return match_from_key(best, s.map_width);
}

}  // namespace

void register_sad_native_cpu(VariantList<Sad>& list) {
  // The blocked map is the fastest CPU path; compare also uses it for the checking reference
  // where the sequential one is too slow.
  const auto add = [&](const char* name, Variant<Sad>::Make make, int preference) {
    list.push_back(
        {name, Layer::native_cpu, Backend::openmp, false, std::move(make), {}, preference});
  };
  add("omp", make_runner<MapRunner<omp_map, omp_argmin>>, 10);
  add("omp-blocked", make_runner<MapRunner<blocked_map, omp_argmin>>, 11);
}

}  // namespace kbench
