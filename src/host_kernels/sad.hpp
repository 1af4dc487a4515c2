#pragma once
// SAD bodies and the runner shared by the sequential reference and the native CPU layers: those
// layers differ in how they walk the map (plain loops, OpenMP, cache blocks), not in what one
// row of one position sums. The OpenMP cache-blocked walk lives here too, since sad-pruned's
// CPU variant falls back to it.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "kbench/registry.hpp"
#include "kbench/sad.hpp"

namespace kbench::host_sad {

// Σ_l |a[l] − b[l]| over one row; compilers turn it into packed SAD instructions (psadbw).
inline std::int32_t row_sad(const std::uint8_t* a, const std::uint8_t* b, int length) {
  std::int32_t sum = 0;
  for (int l = 0; l < length; ++l) sum += std::abs(int(a[l]) - int(b[l]));
  return sum;
}

// S(i, j): every query row against the target rows below (i, j).
inline std::int32_t sad_at(const SadInput& input, const SadShape& s, int i, int j) {
  const std::uint8_t* target = input.target.data.data();
  const std::uint8_t* query = input.query.data.data();
  std::int32_t sum = 0;
  for (int k = 0; k < s.query_height; ++k) {
    sum += row_sad(target + std::size_t(i + k) * s.target_width + j,
                   query + std::size_t(k) * s.query_width, s.query_width);
  }
  return sum;
}

// The report's Algorithm 1: the plain SAD map.
inline void plain_map(const SadInput& input, const SadShape& s, std::int32_t* map) {
  for (int i = 0; i < s.map_height; ++i) {
    for (int j = 0; j < s.map_width; ++j)
      map[std::size_t(i) * s.map_width + j] = sad_at(input, s, i, j);
  }
}

// The report's Algorithm 2: the argmin scan, under the shared tie rule.
inline SadMatch scan_argmin(const std::int32_t* map, const SadShape& s) {
  std::uint64_t best = kNoSadKey;
  for (std::size_t index = 0; index < s.map_size(); ++index) {
    best = sad_min(best, sad_key(map[index], std::uint32_t(index)));
  }
  return match_from_key(best, s.map_width);
}

// Tiles of kTileRows × kTileCols positions, query row by query row: target row i + k serves the
// tile's rows i at consecutive k while it is still in L1, and query row k serves the whole tile.
constexpr int kTileRows = 8, kTileCols = 128;

inline void blocked_map(const SadInput& input, const SadShape& s, std::int32_t* map) {
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

inline SadMatch omp_argmin(const std::int32_t* map, const SadShape& s) {
  std::uint64_t best = kNoSadKey;
  const std::int64_t size = std::int64_t(s.map_size());
#pragma omp parallel for schedule(static) reduction(min : best)
  for (std::int64_t index = 0; index < size; ++index) {
    best = sad_min(best, sad_key(map[index], std::uint32_t(index)));
  }
  return match_from_key(best, s.map_width);
}

// Runs a map walk `Fill(input, shape, map)` and an argmin `Argmin(map, shape)`. The map is
// always computed; it is handed back when the input asks for it.
template <void (*Fill)(const SadInput&, const SadShape&, std::int32_t*),
          SadMatch (*Argmin)(const std::int32_t*, const SadShape&)>
class MapRunner final : public Runner<Sad> {
 public:
  explicit MapRunner(const SadInput& input)
      : input_(input),
        shape_(validate_sad_input(input)),
        map_(allocate_samples<std::int32_t>(shape_.map_size(), "the SAD map")) {}
  void poison(std::uint8_t byte) override {
    std::fill_n(reinterpret_cast<std::uint8_t*>(map_.data()), map_.size() * sizeof(std::int32_t),
                byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(&best_), sizeof best_, byte);
  }
  void compute() override {
    Fill(input_, shape_, map_.data());
    best_ = Argmin(map_.data(), shape_);
  }
  void download(SadResult& out) override {
    out.map_width = shape_.map_width;
    out.map_height = shape_.map_height;
    out.best = best_;
    if (input_.params.want_map) {
      out.map = map_;
    } else {
      out.map.clear();
    }
  }

 private:
  const SadInput& input_;
  SadShape shape_;
  std::vector<std::int32_t> map_;
  SadMatch best_;
};

}  // namespace kbench::host_sad
