// What every sad variant shares: validation, the reference, the check, top-k selection and the
// generated cases whose answer is known.
#include <algorithm>
#include <climits>
#include <functional>
#include <string>

#include "host_kernels/sad.hpp"
#include "kbench/detail/sad_words.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/random.hpp"
#include "kbench/sad.hpp"
#include "kbench/system_info.hpp"

namespace kbench {
namespace {

std::string dims(const ImageU8& image) {
  return std::to_string(image.width) + "x" + std::to_string(image.height);
}

void require_gray(const ImageU8& image, const char* what) {
  // Shapes only: a view's shape without its pixels (a device view's) validates like the image.
  if (image.width <= 0 || image.height <= 0) {
    throw Error(std::string("the ") + what + " image is empty (" + dims(image) + ")");
  }
  if (image.channels != 1) {
    throw Error(std::string("the ") + what + " image has " + std::to_string(image.channels) +
                " channels; sad matches gray images (convert with to_gray)");
  }
  checked_sample_count(image.width, image.height, 1, 1);
}

// RGB (or gray with alpha) to gray; gray and empty images pass through for validation to judge.
ImageU8 gray(const ImageU8& image) {
  return image.channels > 1 && !image.data.empty() ? to_gray(image) : image;
}

}  // namespace

SadShape validate_sad_images(const SadInput& input) {
  require_gray(input.target, "target");
  require_gray(input.query, "query");
  const ImageU8& t = input.target;
  const ImageU8& q = input.query;
  if (q.width > t.width || q.height > t.height) {
    throw Error("the query " + dims(q) + " is larger than the target " + dims(t));
  }
  // Scores are 32-bit: r·c·255 must fit.
  if (std::int64_t(q.width) * q.height > INT32_MAX / 255) {
    throw Error("the query " + dims(q) + " has more than " + std::to_string(INT32_MAX / 255) +
                " pixels; its SAD could overflow 32 bits");
  }
  const SadShape shape{
      t.width, t.height, q.width, q.height, t.width - q.width + 1, t.height - q.height + 1};
  // Argmin keys hold the map index in 32 bits.
  if (shape.map_size() > std::size_t(UINT32_MAX)) {
    throw Error("the SAD map of a " + dims(q) + " query in a " + dims(t) +
                " target has more than 2^32 positions");
  }
  return shape;
}

SadShape validate_sad_input(const SadInput& input) {
  const SadShape shape = validate_sad_images(input);
  const SadParams& p = input.params;
  if (p.top_k < 1) throw Error("top-k must be at least 1, not " + std::to_string(p.top_k));
  if (p.top_k > 1 && !p.want_map) throw Error("top-k above 1 needs the SAD map (want_map)");
  if (p.min_separation < 0) {
    throw Error("the minimum separation must be 0 (the query size) or more, not " +
                std::to_string(p.min_separation));
  }
  return shape;
}

SadMatch match_from_key(std::uint64_t key, int map_width) {
  if (key == kNoSadKey) throw Error("sad: no map position was reduced to an argmin");
  const std::uint32_t index = std::uint32_t(key);
  return {int(index / std::uint32_t(map_width)), int(index % std::uint32_t(map_width)),
          std::int32_t(key >> 32)};
}

std::vector<std::uint32_t> pack_rows(const ImageU8& image, int pitch_words, int rows) {
  std::vector<std::uint32_t> words =
      allocate_samples<std::uint32_t>(std::size_t(pitch_words) * rows, "packed image rows");
  std::fill(words.begin(), words.end(), 0u);
  for (int y = 0; y < std::min(rows, image.height); ++y) {
    for (int x = 0; x < image.width; ++x) {
      words[std::size_t(y) * pitch_words + x / 4] |= std::uint32_t(image.at(x, y, 0))
                                                     << (8 * (x % 4));
    }
  }
  return words;
}

Sad::Reference Sad::reference(const SadInput& input) {
  const SadShape s = validate_sad_input(input);
  SadResult result;
  result.map_width = s.map_width;
  result.map_height = s.map_height;
  result.map = allocate_samples<std::int32_t>(s.map_size(), "the SAD reference map");
  host_sad::plain_map(input, s, result.map.data());
  result.best = host_sad::scan_argmin(result.map.data(), s);
  return result;
}

CheckResult Sad::check(const SadInput& input, const Reference& reference, const SadResult& out) {
  CheckResult result;
  const std::size_t expected_size = input.params.want_map ? reference.map.size() : 0;
  if (out.map_width != reference.map_width || out.map_height != reference.map_height ||
      out.map.size() != expected_size) {
    result.detail = "map is " + std::to_string(out.map_width) + "x" +
                    std::to_string(out.map_height) + " with " + std::to_string(out.map.size()) +
                    " elements, expected " + std::to_string(reference.map_width) + "x" +
                    std::to_string(reference.map_height) + " with " + std::to_string(expected_size);
    result.max_error = double(std::max(expected_size, out.map.size()));
    return result;
  }
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < out.map.size(); ++i) {
    if (out.map[i] != reference.map[i] && differing++ == 0) first = i;
  }
  if (differing) {
    const std::size_t w = std::size_t(out.map_width);
    result.detail = std::to_string(differing) + " map elements differ; first at (row " +
                    std::to_string(first / w) + ", col " + std::to_string(first % w) +
                    "): " + std::to_string(out.map[first]) + ", reference " +
                    std::to_string(reference.map[first]);
  }
  if (!(out.best == reference.best)) {
    ++differing;
    if (!result.detail.empty()) result.detail += "; ";
    result.detail += "argmin (row " + std::to_string(out.best.row) + ", col " +
                     std::to_string(out.best.col) + ", score " + std::to_string(out.best.score) +
                     "), reference (row " + std::to_string(reference.best.row) + ", col " +
                     std::to_string(reference.best.col) + ", score " +
                     std::to_string(reference.best.score) + ")";
  }
  result.max_error = double(differing);
  result.ok = differing == 0;
  return result;
}

Workload Sad::workload(const SadInput& input) {
  const SadShape s = validate_sad_input(input);
  const double map_bytes = input.params.want_map ? 4.0 * double(s.map_size()) : 0.0;
  return {double(input.target.sample_count()) + double(input.query.sample_count()) + map_bytes,
          double(s.map_size()) * s.query_width * s.query_height, "sad"};
}

std::vector<SadMatch> top_matches(const std::vector<std::int32_t>& map, int width, int height,
                                  int k, int separation_rows, int separation_cols) {
  if (width < 1 || height < 1 || map.size() != std::size_t(width) * height) {
    throw Error("top_matches: the map has " + std::to_string(map.size()) + " elements, not " +
                std::to_string(width) + "x" + std::to_string(height));
  }
  if (k < 1 || separation_rows < 1 || separation_cols < 1) {
    throw Error("top_matches: k and the separations must be at least 1");
  }
  // A min-heap of keys pops positions in (score, row, col) order; only the suppressed
  // neighbourhoods of the kept positions are popped besides them.
  std::vector<std::uint64_t> heap(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) heap[i] = sad_key(map[i], std::uint32_t(i));
  const auto later = std::greater<std::uint64_t>();
  std::make_heap(heap.begin(), heap.end(), later);
  std::vector<SadMatch> kept;
  while (int(kept.size()) < k && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const SadMatch candidate = match_from_key(heap.back(), width);
    heap.pop_back();
    const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const SadMatch& m) {
      return std::abs(m.row - candidate.row) < separation_rows &&
             std::abs(m.col - candidate.col) < separation_cols;
    });
    if (!suppressed) kept.push_back(candidate);
  }
  return kept;
}

std::vector<SadMatch> top_matches(const SadResult& result, const SadInput& input) {
  const SadParams& p = input.params;
  const int rows = p.min_separation > 0 ? p.min_separation : input.query.height;
  const int cols = p.min_separation > 0 ? p.min_separation : input.query.width;
  return top_matches(result.map, result.map_width, result.map_height, p.top_k, rows, cols);
}

SadCase cut_sad_case(const ImageU8& target, int query_width, int query_height, std::uint64_t seed,
                     int noise) {
  SadCase c;
  c.input.target = gray(target);
  if (query_width < 1 || query_height < 1 || query_width > target.width ||
      query_height > target.height) {
    throw Error("cannot cut a " + std::to_string(query_width) + "x" + std::to_string(query_height) +
                " query from a " + dims(target) + " target");
  }
  SplitMix64 random(seed ^ 0x5ad5ad5ad5ad5adull);
  c.cut.row = random.between(0, target.height - query_height);
  c.cut.col = random.between(0, target.width - query_width);
  c.input.query = ImageU8(query_width, query_height, 1);
  for (int y = 0; y < query_height; ++y) {
    for (int x = 0; x < query_width; ++x) {
      const int v =
          c.input.target.at(c.cut.col + x, c.cut.row + y, 0) + random.between(-noise, noise);
      c.input.query.at(x, y, 0) = std::uint8_t(std::clamp(v, 0, 255));
    }
  }
  const SadShape s = validate_sad_input(c.input);
  c.cut.score = host_sad::sad_at(c.input, s, c.cut.row, c.cut.col);
  return c;
}

SadCase generated_sad_case(int target_width, int target_height, int query_width, int query_height,
                           std::uint64_t seed, int noise) {
  return cut_sad_case(synthetic_image(target_width, target_height, 3, seed), query_width,
                      query_height, seed, noise);
}

SadResult match_template(const ImageU8& target, const ImageU8& query, const SadParams& params) {
  const SadInput input{gray(target), gray(query), params};
  validate_sad_input(input);
  return run_once(best_variant<Sad>(input, gpu_available()), input);
}

}  // namespace kbench
