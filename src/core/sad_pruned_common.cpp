// What every sad-pruned variant shares: validation, the full-search reference and the check,
// the strip layout and sums, the integral image, and the photo-like cases.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

#include "host_kernels/sad.hpp"
#include "kbench/error.hpp"
#include "kbench/random.hpp"
#include "kbench/sad_pruned.hpp"

namespace kbench {

bool operator==(const SadPrunedResult& a, const SadPrunedResult& b) {
  return a.best == b.best && a.top == b.top && a.stats.windows == b.stats.windows &&
         a.stats.after_bounds == b.stats.after_bounds && a.stats.full_search == b.stats.full_search;
}

SadShape validate_sad_pruned_input(const SadInput& input) {
  const SadShape shape = validate_sad_images(input);
  if (input.params.top_k < 1) {
    throw Error("top-k must be at least 1, not " + std::to_string(input.params.top_k));
  }
  if (input.params.want_map) {
    throw Error("sad-pruned writes no SAD map (use sad full search for it)");
  }
  if (input.params.top_k > 1 && input.params.min_separation != 1) {
    throw Error(
        "sad-pruned finds the top-k positions without separation only (min_separation 1): "
        "non-maximum suppression needs the SAD map (use sad full search)");
  }
  return shape;
}

bool sad_pruned_argmin(const SadInput& input) {
  return input.params.top_k == 1;
}

SadShape validate_sad_pruned_argmin(const SadInput& input) {
  const SadShape shape = validate_sad_pruned_input(input);
  if (!sad_pruned_argmin(input)) {
    throw Error(
        "this sad-pruned variant finds the argmin only (top-k 1); the portable and native CPU "
        "ones find the top-k");
  }
  return shape;
}

SadPruned::Reference SadPruned::reference(const SadInput& input) {
  validate_sad_pruned_input(input);
  if (input.params.top_k == 1) return {Sad::reference(input).best};
  SadInput with_map = input;
  with_map.params.want_map = true;
  const SadResult full = Sad::reference(with_map);
  return top_matches(full.map, full.map_width, full.map_height, input.params.top_k, 1, 1);
}

namespace {

std::string describe(const SadMatch& m) {
  return "(row " + std::to_string(m.row) + ", col " + std::to_string(m.col) + ", score " +
         std::to_string(m.score) + ")";
}

}  // namespace

CheckResult SadPruned::check(const SadInput& input, const Reference& reference,
                             const SadPrunedResult& out) {
  const std::vector<SadMatch> found =
      input.params.top_k == 1 ? std::vector<SadMatch>{out.best} : out.top;
  CheckResult result;
  result.ok = found == reference && (found.empty() || out.best == found.front());
  result.max_error = result.ok ? 0.0 : 1.0;
  if (result.ok) return result;
  if (found.size() != reference.size()) {
    result.detail = std::to_string(found.size()) + " positions, full search " +
                    std::to_string(reference.size());
    return result;
  }
  for (std::size_t m = 0; m < found.size(); ++m) {
    if (found[m] == reference[m]) continue;
    result.detail = "position " + std::to_string(m + 1) + " " + describe(found[m]) +
                    ", full search " + describe(reference[m]);
    return result;
  }
  result.detail = "best " + describe(out.best) + " is not the first position";
  return result;
}

Workload SadPruned::workload(const SadInput& input) {
  const SadShape s = validate_sad_pruned_input(input);
  return {double(input.target.sample_count()) + double(input.query.sample_count()),
          double(s.map_size()) * s.query_width * s.query_height, "sad"};
}

StripLayout strip_layout(const SadShape& s) {
  StripLayout strips;
  strips.rows = std::min(kPruneStripRows, s.query_height);
  strips.count = (s.query_height + strips.rows - 1) / strips.rows;
  strips.query_rows = s.query_height;
  return strips;
}

int prune_segment_rows(const SadShape& s, int column_tiles, int teams) {
  const int bands = prune_bands(s.map_height);
  const int segments = std::clamp(teams / column_tiles, 1, std::min(bands, 65535));
  return (bands + segments - 1) / segments * kPruneChunkRows;
}

std::vector<std::uint32_t> query_strip_sums(const ImageU8& query, const StripLayout& strips) {
  std::vector<std::uint32_t> sums(std::size_t(strips.count), 0u);
  for (int k = 0; k < strips.count; ++k) {
    for (int y = strips.begin(k); y < strips.end(k); ++y) {
      for (int x = 0; x < query.width; ++x) sums[std::size_t(k)] += query.at(x, y, 0);
    }
  }
  return sums;
}

std::vector<int> strip_order(const ImageU8& query, const StripLayout& strips) {
  std::vector<std::uint64_t> texture(std::size_t(strips.count), 0);
  for (int k = 0; k < strips.count; ++k) {
    for (int y = strips.begin(k); y < strips.end(k); ++y) {
      for (int x = 0; x < query.width; ++x) {
        const int here = query.at(x, y, 0);
        if (x + 1 < query.width) texture[std::size_t(k)] += std::abs(query.at(x + 1, y, 0) - here);
        if (y + 1 < strips.end(k))
          texture[std::size_t(k)] += std::abs(query.at(x, y + 1, 0) - here);
      }
    }
  }
  std::vector<int> order(std::size_t(strips.count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return texture[std::size_t(a)] > texture[std::size_t(b)]; });
  return order;
}

std::vector<std::uint32_t> integral_image(const ImageU8& image) {
  const std::size_t pitch = std::size_t(image.width) + 1;
  std::vector<std::uint32_t> table = allocate_samples<std::uint32_t>(
      pitch * (std::size_t(image.height) + 1), "the integral image");
  std::fill_n(table.begin(), pitch, 0u);
  for (int y = 0; y < image.height; ++y) {
    std::uint32_t row_sum = 0;
    std::uint32_t* above = table.data() + std::size_t(y) * pitch;
    std::uint32_t* row = above + pitch;
    row[0] = 0;
    for (int x = 0; x < image.width; ++x) {
      row_sum += image.at(x, y, 0);
      row[x + 1] = above[x + 1] + row_sum;  // wraps modulo 2^32 on purpose
    }
  }
  return table;
}

namespace {

// Value noise: seeded lattice values, smoothly interpolated; about ±1 at cell scale `cell`.
class ValueNoise {
 public:
  ValueNoise(std::uint64_t seed, double cell) : seed_(seed), cell_(cell) {}
  double operator()(double x, double y) const {
    const double gx = x / cell_, gy = y / cell_;
    const long long ix = (long long)std::floor(gx), iy = (long long)std::floor(gy);
    const double fx = smooth(gx - double(ix)), fy = smooth(gy - double(iy));
    const double top = lerp(lattice(ix, iy), lattice(ix + 1, iy), fx);
    const double bottom = lerp(lattice(ix, iy + 1), lattice(ix + 1, iy + 1), fx);
    return lerp(top, bottom, fy);
  }

 private:
  static double smooth(double t) { return t * t * (3 - 2 * t); }
  static double lerp(double a, double b, double t) { return a + (b - a) * t; }
  double lattice(long long x, long long y) const {
    SplitMix64 h(seed_ ^ (std::uint64_t(x) * 0x9E3779B97F4A7C15ull) ^
                 (std::uint64_t(y) * 0xC2B2AE3D27D4EB4Full));
    return 2.0 * h.uniform() - 1.0;
  }
  std::uint64_t seed_;
  double cell_;
};

// A standard normal sample (Box–Muller).
double gaussian(SplitMix64& random) {
  const double u1 = 1.0 - random.uniform();  // (0, 1]
  const double u2 = random.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

ImageU8 photo_like_scene(int width, int height, std::uint64_t seed) {
  ImageU8 image(width, height, 1);
  SplitMix64 random(seed ^ 0x9b07051cee5ce5eull);
  const double size = std::min(width, height);
  std::vector<float> v(image.pixel_count());
  // Shading: a base level and three slow waves across the frame.
  struct Wave {
    double kx, ky, phase, amplitude;
  };
  Wave waves[3];
  for (Wave& w : waves) {
    const double angle = 6.283185307179586 * random.uniform();
    const double period = size * (0.5 + 1.5 * random.uniform());
    w = {std::cos(angle) * 6.283185307179586 / period, std::sin(angle) * 6.283185307179586 / period,
         6.283185307179586 * random.uniform(), 15 + 20 * random.uniform()};
  }
  const double base = 90 + 60 * random.uniform();
  const ValueNoise clouds(random.next(), size / 6);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double s = base + 25 * clouds(x, y);
      for (const Wave& w : waves) s += w.amplitude * std::cos(w.kx * x + w.ky * y + w.phase);
      v[std::size_t(y) * width + x] = float(s);
    }
  }
  // Objects, painted back to front over their bounding boxes: ellipses and rotated rectangles
  // with flat, graded, striped or textured fills.
  const int objects = 30 + int(double(width) * height / 60000.0);
  for (int o = 0; o < objects; ++o) {
    const double cx = random.uniform() * width, cy = random.uniform() * height;
    const double rx = size * (0.01 + 0.12 * random.uniform() * random.uniform() + 0.005);
    const double ry = rx * (0.4 + 1.2 * random.uniform());
    const double angle = 3.141592653589793 * random.uniform();
    const double ca = std::cos(angle), sa = std::sin(angle);
    const bool ellipse = random.uniform() < 0.5;
    const int fill = int(random.next() % 4);
    const double level = 20 + 215 * random.uniform();
    const double amplitude = 10 + 40 * random.uniform();
    const double gx = (random.uniform() - 0.5) * 2 * amplitude / rx;
    const double gy = (random.uniform() - 0.5) * 2 * amplitude / ry;
    const double period = 3 + 30 * random.uniform();
    const ValueNoise texture(random.next(), 1.5 + 10 * random.uniform());
    const double extent = std::max(rx, ry);
    const int x0 = std::max(0, int(cx - extent)), x1 = std::min(width - 1, int(cx + extent));
    const int y0 = std::max(0, int(cy - extent)), y1 = std::min(height - 1, int(cy + extent));
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        const double dx = x - cx, dy = y - cy;
        const double u = (ca * dx + sa * dy) / rx, w = (-sa * dx + ca * dy) / ry;
        const bool inside = ellipse ? u * u + w * w <= 1 : std::abs(u) <= 1 && std::abs(w) <= 1;
        if (!inside) continue;
        double s = level;
        switch (fill) {
          case 1:
            s += gx * dx + gy * dy;
            break;
          case 2:
            s += amplitude * std::sin(6.283185307179586 * (ca * dx + sa * dy) / period);
            break;
          case 3:
            s += amplitude * texture(x, y);
            break;
          default:
            break;
        }
        v[std::size_t(y) * width + x] = float(s);
      }
    }
  }
  // Fine grain everywhere, as sensors and surfaces give.
  const ValueNoise grain(random.next(), 2.5);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double s = v[std::size_t(y) * width + x] + 4 * grain(x, y);
      image.at(x, y, 0) = std::uint8_t(std::clamp(std::lround(s), 0L, 255L));
    }
  }
  return image;
}

SadCase cut_sad_case_gaussian(const ImageU8& target, int query_width, int query_height,
                              std::uint64_t seed, double sigma) {
  if (!(sigma >= 0) || sigma > 1000) {
    throw Error("the noise's standard deviation must be in 0..1000, not " + std::to_string(sigma));
  }
  SadCase c = cut_sad_case(target, query_width, query_height, seed, 0);
  SplitMix64 random(seed ^ 0x6a05e5eed6a05e5eull);
  for (int y = 0; y < query_height; ++y) {
    for (int x = 0; x < query_width; ++x) {
      const double v = c.input.query.at(x, y, 0) + sigma * gaussian(random);
      c.input.query.at(x, y, 0) = std::uint8_t(std::clamp(std::lround(v), 0L, 255L));
    }
  }
  const SadShape s = validate_sad_input(c.input);
  c.cut.score = host_sad::sad_at(c.input, s, c.cut.row, c.cut.col);
  return c;
}

}  // namespace kbench
