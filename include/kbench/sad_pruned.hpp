#pragma once
// Exact bound-pruned template matching: the argmin of the SAD map (kbench/sad.hpp), bit for bit
// and under the same tie rule (sad_key), found without finishing the SAD of most positions.
//
// With x the query and y_i the query-sized window at position i, the SAD E_i = |x − y_i|₁ is
// bounded below by the norm bound | |x|₁ − |y_i|₁ | (Anderson, Kirtzic, Daescu) and, as its exact
// SAD is summed strip by strip, by the strip bounds of Tombari, Mattoccia, Di Stefano (IEEE PAMI
// 2009). A window leaves once its bound exceeds E_guess, the best exact SAD found so far; the true
// argmin never does, and windows whose bound equals E_guess stay, so ties resolve exactly as in
// full search. The bounds and the papers: docs/sad-pruned.md#what-it-is

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kbench/host_device.hpp"
#include "kbench/image.hpp"
#include "kbench/registry.hpp"
#include "kbench/sad.hpp"

namespace kbench {

// How far pruning got, per run. after_strip[r] counts the windows still alive after the exact
// SAD of the first r + 1 strips in refinement order (strip_order; the last entry: windows whose
// exact SAD was finished). Variants that
// refine all survivors concurrently against a shared, falling E_guess (the GPU ones) count what
// their schedule did, which can vary slightly from run to run; the first two figures cannot.
// cuda-pruned counts the survivors that its polish step refined, before the strip rounds, as
// alive after every strip.
struct PruneStats {
  std::uint64_t windows = 0;       // map positions
  std::uint64_t after_bounds = 0;  // windows left by the first bounds (the paper's step 3)
  std::vector<std::uint64_t> after_strip;
  bool full_search = false;  // the adaptive switch found too few pruned and searched in full
};

struct SadPrunedResult {
  SadMatch best;
  // With top_k above 1: the top_k best positions, best first, as top_matches() gives them with a
  // separation of one pixel (the top_k smallest sad_keys); empty with top_k 1.
  std::vector<SadMatch> top;
  PruneStats stats;
};

// Equal best match and deterministic statistics (windows, after_bounds, full_search).
bool operator==(const SadPrunedResult& a, const SadPrunedResult& b);

// The sad-pruned algorithm as the registry sees it. The input is sad's without the map (want_map
// false): the argmin (top_k 1), or the top_k best positions without separation (min_separation
// 1), which the portable variants find.
struct SadPruned {
  static constexpr const char* name = "sad-pruned";
  using Input = SadInput;
  using Output = SadPrunedResult;
  // The full-search argmin, or its top_k best positions.
  using Reference = std::vector<SadMatch>;

  // sad's plain full search (Sad::reference); compare computes it faster for large cases.
  static Reference reference(const Input& input);
  // The same best position and score (or positions), bit for bit.
  static CheckResult check(const Input& input, const Reference& reference, const Output& out);
  // What full search would move and compute, so that throughput reads as full-search
  // equivalent byte-SADs per second.
  static Workload workload(const Input& input);
};

// Throws Error for what validate_sad_input refuses, for inputs that ask for the map, and for top-k
// above 1 with a separation other than one pixel (non-maximum suppression needs the map).
SadShape validate_sad_pruned_input(const SadInput& input);
// What the variants that find the argmin only (top_k 1) handle; their runners validate with
// validate_sad_pruned_argmin, which also throws Error for top_k above 1.
bool sad_pruned_argmin(const SadInput& input);
SadShape validate_sad_pruned_argmin(const SadInput& input);

// --- Shared by every layer -------------------------------------------------------------------

// The limit of a search for the top k positions without separation: the k-th smallest of the
// exact `keys` of some windows (sorted and freed of copies in place), or kNoSadKey when fewer than
// k differ. At least k windows meet it, and every window within it has a bound within it, so a
// search against it as a fixed E_guess keeps all of the k best.
template <class Key>
Key top_k_limit(std::vector<Key>& keys, std::size_t k) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys.size() >= k ? keys[k - 1] : Key(kNoSadKey);
}

// Query rows per strip (the last strip takes the remainder).
constexpr int kPruneStripRows = 16;
// The OpenMP variant searches in full when more than this fraction of the windows survive the
// first bounds: refining one window at a time reuses far fewer loads than full search's
// register blocking, so refining that many costs about as much as full search.
constexpr double kPruneFullSearchFraction = 0.25;
// The GPU variants refine survivors in units of kPruneUnitWindows neighbouring windows of a map
// row with full search's register-blocked row routine, strip by strip, a unit leaving once every
// window in it is out: a unit costs at most what full search pays for it.
constexpr int kPruneUnitWindows = 16;
// Threads per unit on GPUs: each sums every kPruneUnitLanes-th row of a strip, so the last
// survivors (the match among them) are not one thread's long chain of rows.
constexpr int kPruneUnitLanes = 8;

// The GPU variants refine the (2·kPrunePolishRadius + 1)² windows around the best window after
// the candidates ("polish"): the best-bounded window of a tile is often a pixel or two off the
// match, and a first E close to the minimum prunes much more. Those windows are then settled
// (their SADs finished or proved too large) and stay out of the unit refinement.
constexpr int kPrunePolishRadius = 8;

// Bit p set: window (i, j0 + p) of a unit lies in the polish neighbourhood of window `centre`
// (map index).
KBENCH_HOST_DEVICE unsigned polish_settled_windows(std::uint32_t centre, int map_width, int i,
                                                   int j0) {
  const int ci = int(centre / unsigned(map_width)), cj = int(centre % unsigned(map_width));
  if (i - ci > kPrunePolishRadius || ci - i > kPrunePolishRadius) return 0u;
  const int lo = cj - kPrunePolishRadius - j0 > 0 ? cj - kPrunePolishRadius - j0 : 0;
  const int hi = cj + kPrunePolishRadius - j0 < kPruneUnitWindows - 1 ? cj + kPrunePolishRadius - j0
                                                                      : kPruneUnitWindows - 1;
  return lo <= hi ? ((2u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;
}
static_assert(kPruneUnitWindows < 32, "a unit's windows are bits of a word");

// Bit p set: window p < n of a unit has a bound, bound(p), within limit. Unrolled, so that the
// unit's loads issue together.
template <class Bound>
KBENCH_HOST_DEVICE unsigned unit_windows_within(const Bound& bound, int n, std::uint32_t limit) {
  unsigned inside = 0;
  KBENCH_UNROLL
  for (int p = 0; p < kPruneUnitWindows; ++p) {
    if (p < n && bound(p) <= limit) inside |= 1u << p;
  }
  return inside;
}

constexpr int kPrunePolishSide = 2 * kPrunePolishRadius + 1;
// The neighbourhood's centre, entry e of polish_window (its SAD is final before the polish).
constexpr int kPrunePolishCentre = kPrunePolishSide * kPrunePolishSide / 2;

// Entry e < kPrunePolishSide² of the polish neighbourhood of window `centre` (map index), row by
// row: its map index, or false when it lies off the map.
KBENCH_HOST_DEVICE bool polish_window(std::uint32_t centre, int map_width, int map_height, int e,
                                      std::uint32_t& index) {
  const int i = int(centre / unsigned(map_width)) + e / kPrunePolishSide - kPrunePolishRadius;
  const int j = int(centre % unsigned(map_width)) + e % kPrunePolishSide - kPrunePolishRadius;
  if (i < 0 || j < 0 || i >= map_height || j >= map_width) return false;
  index = std::uint32_t(i) * std::uint32_t(map_width) + std::uint32_t(j);
  return true;
}

// The GPU layers' bound pass: a team walks down kPruneTileColumns window columns through a
// segment of map rows, kPruneChunkRows target rows at a time (a thread each), adding row sums
// into column prefixes of which a shared ring keeps the last two chunks. A pass takes up to
// kPrunePassStrips strips, whose rows fit one chunk; taller queries take several passes.
constexpr int kPrunePassStrips = 8;
constexpr int kPruneChunkRows = 128;
static_assert(kPrunePassStrips * kPruneStripRows <= kPruneChunkRows,
              "a pass's rows fit in one chunk");
// The bound pass keeps the smallest key of each tile of kPruneTileColumns window columns ×
// kPruneChunkRows map rows as a candidate. The tile's smallest bound is in that key, so the
// filter skips a tile without reading its bounds when that bound exceeds E.
constexpr int kPruneTileColumns = 32;
static_assert(kPruneTileColumns % kPruneUnitWindows == 0, "a unit lies in one tile");

// Bands of kPruneChunkRows map rows: the tiles' rows down the map.
KBENCH_HOST_DEVICE int prune_bands(int map_height) {
  return (map_height + kPruneChunkRows - 1) / kPruneChunkRows;
}
// The tile holding window (i, j): band by band, across the map within each.
KBENCH_HOST_DEVICE int prune_tile_of(int i, int j, int column_tiles) {
  return i / kPruneChunkRows * column_tiles + j / kPruneTileColumns;
}

struct StripLayout {
  int count = 0;  // S
  int rows = 0;   // rows of every strip but the last
  int query_rows = 0;

  KBENCH_HOST_DEVICE int begin(int k) const { return k * rows; }
  KBENCH_HOST_DEVICE int end(int k) const { return k + 1 < count ? (k + 1) * rows : query_rows; }
};
StripLayout strip_layout(const SadShape& s);

// Map rows each walking team takes, for `column_tiles` tiles across the map and about `teams`
// teams that run at once: whole chunks, in as few segments as fill those teams (each segment
// sums a pass's rows before its first window), at most 65535.
int prune_segment_rows(const SadShape& s, int column_tiles, int teams);

// |a − b| of two unsigned sums.
KBENCH_HOST_DEVICE std::uint32_t abs_difference(std::uint32_t a, std::uint32_t b) {
  return a > b ? a - b : b - a;
}

// |d − x| of a strip's target sum d and its query sum x, both below 2^31 (16 rows of bytes as wide
// as the query): the absolute value of one signed difference, a single instruction on GPUs.
KBENCH_HOST_DEVICE std::uint32_t strip_term(std::uint32_t d, std::uint32_t x) {
  const std::int32_t difference = std::int32_t(d - x);
  return std::uint32_t(difference < 0 ? -difference : difference);
}

// Per strip of the query, the sum of its bytes |x_k|₁.
std::vector<std::uint32_t> query_strip_sums(const ImageU8& query, const StripLayout& strips);

// The order in which every layer refines a window's strips: the query's most textured strips
// first (the sum of absolute differences between neighbouring pixels within the strip, across
// and down), ties by index. Near the match a photo is smooth, and a window a pixel or two off
// differs from the query by little more than the noise in flat strips, by much more in textured
// ones: taken first, those prune such windows strips earlier (photo3072-q128 at σ 5: the
// windows left after the bounds need 303 K strip SADs in index order, 151 K in this one).
// Exactness holds in any order: the exact SADs of any strips sum to a lower bound of the SAD.
std::vector<int> strip_order(const ImageU8& query, const StripLayout& strips);

// A summed-area table of a gray image, (height + 1) × (width + 1) u32 with a zero first row and
// column. Sums wrap modulo 2^32, and box sums taken from it as differences are still exact
// because every box the algorithm asks for sums to less than 2^31 (validate_sad_input).
std::vector<std::uint32_t> integral_image(const ImageU8& image);

KBENCH_HOST_DEVICE std::uint32_t box_sum(const std::uint32_t* integral, std::size_t pitch, int y0,
                                         int x0, int y1, int x1) {
  return integral[std::size_t(y1) * pitch + x1] - integral[std::size_t(y1) * pitch + x0] -
         integral[std::size_t(y0) * pitch + x1] + integral[std::size_t(y0) * pitch + x0];
}

// A photo-like gray scene for pruning studies (random noise is the norm bounds' worst case,
// photos are not): smooth shading, hard-edged shapes with flat, graded or textured fills,
// gratings and a fine grain; deterministic from the seed.
ImageU8 photo_like_scene(int width, int height, std::uint64_t seed);
// A query cut from `target` at a seeded position with Gaussian noise of standard deviation
// `sigma` added and clamped to 0..255 (the paper's σ); cut.score is the SAD at the cut.
SadCase cut_sad_case_gaussian(const ImageU8& target, int query_width, int query_height,
                              std::uint64_t seed, double sigma);

}  // namespace kbench
