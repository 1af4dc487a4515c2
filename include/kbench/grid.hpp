#pragma once
// Launch shapes for images of any height. CUDA allows at most 65535 blocks in grid y (and z),
// fewer than the row tiles of a tall image (a 600000-row image has 75000 tiles of 8 rows), so a
// launch over rows either strides by the grid, lengthens its blocks' share of rows, or is cut
// into chunks of rows.

#include <vector>

namespace kbench {

constexpr int kMaxGridBlocksY = 65535;

// The fewest rows each block must take for a grid over `rows` rows to fit in grid y.
constexpr int min_rows_per_block(int rows) {
  return int((static_cast<long long>(rows) + kMaxGridBlocksY - 1) / kMaxGridBlocksY);
}

// Rows [begin, end) of one launch.
struct LaunchRows {
  int begin, end;
};

// Consecutive row ranges that cover [0, rows) in order, each at most kMaxGridBlocksY tiles of
// `tile_rows` rows: one range up to 65535 · tile_rows rows.
inline std::vector<LaunchRows> row_chunks(int rows, int tile_rows) {
  const long long chunk = static_cast<long long>(kMaxGridBlocksY) * tile_rows;
  std::vector<LaunchRows> ranges;
  for (long long y0 = 0; y0 < rows; y0 += chunk) {
    ranges.push_back({int(y0), int(y0 + chunk < rows ? y0 + chunk : rows)});
  }
  return ranges;
}

}  // namespace kbench
