#pragma once
// SAD full-search template matching of a gray query Q (r rows × c columns) over a gray target T
// (m × n): the SAD map
//   S(i, j) = Σ_{k<r, l<c} |T(i + k, j + l) − Q(k, l)|,   0 <= i <= m − r, 0 <= j <= n − c,
// held in 32-bit integers, and its argmin. Ties go to the smallest row, then the smallest column,
// in every variant: all of them compare candidates through sad_key(), a 64-bit key ordered by
// (score, row, col). Every variant is bit-identical to the sequential reference.
//
// Map-writing variants produce the map when SadParams::want_map is set (and compute it, without
// handing it back, when not); the fused variants never write a map and handle only inputs with
// want_map == false (their `supports` predicate says so). The top-k best positions with a minimum
// separation come from the map on the host, through top_matches().

#include <cstdint>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/host_device.hpp"
#include "kbench/image.hpp"
#include "kbench/registry.hpp"

namespace kbench {

struct SadParams {
  bool want_map = true;
  int top_k = 1;           // positions top_matches() returns; more than 1 needs the map
  int min_separation = 0;  // in pixels; 0 means the query's size (boxes may not overlap)
};

struct SadInput {
  ImageU8 target;  // 1 channel (gray)
  ImageU8 query;   // 1 channel (gray)
  SadParams params;
};

struct SadMatch {
  int row = 0;
  int col = 0;
  std::int32_t score = 0;
};

inline bool operator==(const SadMatch& a, const SadMatch& b) {
  return a.row == b.row && a.col == b.col && a.score == b.score;
}

struct SadResult {
  std::vector<std::int32_t> map;  // map_height × map_width, row-major; empty when !want_map
  int map_width = 0;
  int map_height = 0;
  SadMatch best;
};

inline bool operator==(const SadResult& a, const SadResult& b) {
  return a.map_width == b.map_width && a.map_height == b.map_height && a.best == b.best &&
         a.map == b.map;
}

struct SadMapView;

// A full search on device views (Variant::on_views), queued on work.stream: the SAD of the gray
// `query` at every position of the gray `target` (one channel, one frame each, any row pitch),
// into `map` when map->data is set, and the smallest sad_key() of the search into `best_key`
// (one 64-bit word of device memory, written).
struct SadViewCall {
  ConstImageView target;
  ConstImageView query;
  const SadMapView* map = nullptr;
  std::uint64_t* best_key = nullptr;
  ViewWork work;
};

// The sad algorithm as the registry sees it.
struct Sad {
  static constexpr const char* name = "sad";
  using Input = SadInput;
  using Output = SadResult;
  using ViewCall = SadViewCall;
  // The sequential reference's map (always computed) and argmin.
  using Reference = SadResult;

  // The report's Algorithms 1-2: the plain SAD map, then the argmin scan.
  static Reference reference(const Input& input);
  // Bit-identical argmin, and map when want_map; max_error counts the differing map elements
  // (plus one for a differing argmin).
  static CheckResult check(const Input& input, const Reference& reference, const Output& out);
  // Target, query and (when wanted) map once each; one operation is one byte-SAD
  // |T − Q| accumulated, r·c of them per map element.
  static Workload workload(const Input& input);
};

// Sizes of one problem, taken from a validated input.
struct SadShape {
  int target_width, target_height;  // n, m
  int query_width, query_height;    // c, r
  int map_width, map_height;        // n − c + 1, m − r + 1

  std::size_t map_size() const { return std::size_t(map_width) * std::size_t(map_height); }
};

// The sizes of a search on views.
inline SadShape shape_of(const SadViewCall& call) {
  return {call.target.width,
          call.target.height,
          call.query.width,
          call.query.height,
          call.target.width - call.query.width + 1,
          call.target.height - call.query.height + 1};
}

// Throws Error for an empty or multi-channel image, a query larger than the target, a query
// whose SAD could overflow 32 bits, a map too large to index, or bad top-k parameters.
SadShape validate_sad_input(const SadInput& input);
// The same for the images alone (sad-pruned has its own rules for the parameters).
SadShape validate_sad_images(const SadInput& input);

// Matches `query` in `target` (RGB or gray; converted to gray) with the fastest variant this
// build and machine offer for `params` (a fused variant when the map is not wanted).
SadResult match_template(const ImageU8& target, const ImageU8& query, const SadParams& params);

// The k best positions of a map, best first, greedily: a position is kept when it lies at least
// `separation_rows` rows or `separation_cols` columns away from every position kept before it
// (non-maximum suppression). Fewer than k come back when the map has no more such positions.
std::vector<SadMatch> top_matches(const std::vector<std::int32_t>& map, int width, int height,
                                  int k, int separation_rows, int separation_cols);
// The same for a result with its map, with input.params' top_k and min_separation (0: the
// query's height and width).
std::vector<SadMatch> top_matches(const SadResult& result, const SadInput& input);

// A generated problem whose answer is known: a synthetic gray target, and a query cut from it at
// a seeded position with seeded noise of ±noise grey levels added.
struct SadCase {
  SadInput input;
  SadMatch cut;  // where the query was cut (score: the SAD the noise makes there)
};
SadCase generated_sad_case(int target_width, int target_height, int query_width, int query_height,
                           std::uint64_t seed, int noise = 2);
// The same with a given target (gray or RGB; converted to gray).
SadCase cut_sad_case(const ImageU8& target, int query_width, int query_height, std::uint64_t seed,
                     int noise = 2);

// --- Shared by every layer -------------------------------------------------------------------

// A candidate's key: score in the high 32 bits, the row-major map index (row · map_width + col)
// in the low ones, so the smallest key is the smallest score, then row, then column.
KBENCH_HOST_DEVICE std::uint64_t sad_key(std::int32_t score, std::uint32_t index) {
  return (std::uint64_t(std::uint32_t(score)) << 32) | index;
}
constexpr std::uint64_t kNoSadKey = ~std::uint64_t(0);  // above every real key

KBENCH_HOST_DEVICE std::uint64_t sad_min(std::uint64_t a, std::uint64_t b) {
  return a < b ? a : b;
}

// Throws Error when `key` is kNoSadKey (no position was reduced).
SadMatch match_from_key(std::uint64_t key, int map_width);

// --- Library calls --------------------------------------------------------------------------

// A SAD map: map_height × map_width 32-bit scores, rows `pitch` bytes apart (0: packed).
struct SadMapView {
  std::int32_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::size_t pitch = 0;
  MemoryPlace place;
};

struct SadMapOptions {
  Stream stream;  // device views: the stream the call is queued on
};

// The SAD of `query` at every position of `target` into `map`, which is (target width − query
// width + 1) × (target height − query height + 1). Colour host images are compared in gray
// (BT.601); device views are gray, and the call is queued on options.stream.
void sad_map(Context& context, const ConstImageView& target, const ConstImageView& query,
             const SadMapView& map, const SadMapOptions& options = {}, const Choice& choice = {});

enum class MatchMethod { automatic, full, pruned };

struct MatchOptions {
  int top = 1;         // positions to return
  int separation = 0;  // least distance between them in pixels; 0: the query's size; 1: none
  // automatic: the exact bound-pruned search for one position and for several without
  // separation, full search (which needs the whole map) for several kept apart.
  MatchMethod method = MatchMethod::automatic;
  // Device views: the stream the search is queued on; the call waits for it, since it returns
  // the positions. On device views the search is full search.
  Stream stream;
};

// The best `top` positions of `query` in `target` (row, column of the query's top-left corner,
// SAD score), best first, ties to the smallest row, then column. A `choice` naming a sad-pruned
// variant runs the pruned search, a sad variant full search.
std::vector<SadMatch> match(Context& context, const ConstImageView& target,
                            const ConstImageView& query, const MatchOptions& options = {},
                            const Choice& choice = {});

}  // namespace kbench
