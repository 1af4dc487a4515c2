// What every cemd variant shares: names of the distances, validation, the reference (the literal
// minimum over rotations, in double), the check, the workload, the top-2 helpers, the user call
// and the seeded SIFT-like descriptors.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "kbench/cemd.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/image.hpp"
#include "kbench/random.hpp"
#include "kbench/system_info.hpp"

namespace kbench {

const char* to_string(DescriptorDistance distance) {
  switch (distance) {
    case DescriptorDistance::cemd_normalised:
      return "normalised";
    case DescriptorDistance::cemd_raw:
      return "raw";
    case DescriptorDistance::l2:
      return "l2";
  }
  return "?";
}

DescriptorDistance parse_descriptor_distance(const std::string& name) {
  if (name == "normalised" || name == "normalized") return DescriptorDistance::cemd_normalised;
  if (name == "raw") return DescriptorDistance::cemd_raw;
  if (name == "l2") return DescriptorDistance::l2;
  throw Error("descriptor distance '" + name + "' is not normalised, raw or l2");
}

namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The largest all-pairs matrix validation accepts: 2^32 floats (16 GiB) — beyond that the
// nearest-two operation is the way.
constexpr std::uint64_t kMaxMatrixElements = std::uint64_t(1) << 32;

void require_set(const DescriptorSet& set, const char* what) {
  if (set.count < 1) {
    throw Error(std::string("the ") + what + " descriptor set is empty (" +
                std::to_string(set.count) + " descriptors)");
  }
  // A count without values (a device view's shape) validates like the set.
  const std::uint64_t expected = std::uint64_t(set.count) * kDescriptorBytes;
  if (!set.values.empty() && set.values.size() != expected) {
    throw Error(std::string("the ") + what + " descriptor set holds " +
                std::to_string(set.values.size()) + " values, not " + std::to_string(set.count) +
                " descriptors x " + std::to_string(kDescriptorBytes) + " = " +
                std::to_string(expected));
  }
}

// Σ_i |D(i) − D(k)| minimised over the 8 starting bins k: the paper's CPU-INITIAL form.
std::int64_t literal_min_over_rotations(const std::int64_t (&d)[kCemdBins]) {
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  for (int k = 0; k < kCemdBins; ++k) {
    std::int64_t sum = 0;
    for (int i = 0; i < kCemdBins; ++i) sum += std::llabs(d[i] - d[k]);
    best = std::min(best, sum);
  }
  return best;
}

// Relative difference of a float result from the reference; a zero reference needs a zero result.
double relative_error(float out, double reference) {
  if (reference == 0.0) return out == 0.0f ? 0.0 : std::numeric_limits<double>::infinity();
  const double e = std::fabs(double(out) - reference) / std::fabs(reference);
  return std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
}

std::string text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

// The reference's ranking key: the float every variant produces for raw and l2, the double
// distance for the normalised mode (see CemdReference).
struct RankedCandidate {
  double distance = std::numeric_limits<double>::infinity();
  std::int32_t index = -1;
};

bool ranks_before(const RankedCandidate& a, const RankedCandidate& b, DescriptorDistance mode) {
  if (b.index < 0) return a.index >= 0;
  if (a.index < 0) return false;
  if (mode == DescriptorDistance::cemd_normalised) {
    return a.distance != b.distance ? a.distance < b.distance : a.index < b.index;
  }
  return cemd_key(float(a.distance), std::uint32_t(a.index)) <
         cemd_key(float(b.distance), std::uint32_t(b.index));
}

}  // namespace

bool operator==(const CemdNeighbours& a, const CemdNeighbours& b) {
  return a.best_index == b.best_index && a.second_index == b.second_index &&
         same_bits(a.best_distance, b.best_distance) &&
         same_bits(a.second_distance, b.second_distance);
}

bool operator==(const CemdResult& a, const CemdResult& b) {
  if (a.queries != b.queries || a.database != b.database || a.matrix.size() != b.matrix.size() ||
      a.neighbours != b.neighbours) {
    return false;
  }
  return a.matrix.empty() ||
         std::memcmp(a.matrix.data(), b.matrix.data(), a.matrix.size() * sizeof(float)) == 0;
}

void validate_cemd_input(const CemdInput& input) {
  require_set(input.queries, "query");
  require_set(input.database, "database");
  const float ratio = input.params.ratio;
  if (!(ratio > 0.0f && ratio <= 1.0f)) {
    throw Error("the ratio test's ratio must be in (0, 1], not " + text(ratio));
  }
  if (input.params.all_pairs) {
    const std::uint64_t elements = std::uint64_t(input.queries.count) * input.database.count;
    if (elements > kMaxMatrixElements) {
      throw Error("the all-pairs matrix of " + std::to_string(input.queries.count) + " x " +
                  std::to_string(input.database.count) + " descriptors has more than 2^32 " +
                  "elements; ask for the nearest two per query instead, or split the sets");
    }
  }
}

double reference_distance(const std::uint8_t* a, const std::uint8_t* b,
                          DescriptorDistance distance) {
  if (distance == DescriptorDistance::l2) {
    std::int64_t sum = 0;
    for (int i = 0; i < kDescriptorBytes; ++i) {
      const std::int64_t d = std::int64_t(a[i]) - std::int64_t(b[i]);
      sum += d * d;
    }
    return std::sqrt(double(sum));
  }
  const bool scaled = distance == DescriptorDistance::cemd_normalised;
  std::int64_t raw_sum = 0;
  double scaled_sum = 0.0;
  for (int c = 0; c < kCemdCells; ++c) {
    const std::uint8_t* f = a + c * kCemdBins;
    const std::uint8_t* g = b + c * kCemdBins;
    std::int64_t mass_f = 0, mass_g = 0;
    for (int i = 0; i < kCemdBins; ++i) {
      mass_f += f[i];
      mass_g += g[i];
    }
    // Cross-scaled (f·|g|, g·|f|) in the normalised mode, the values as they are in the raw one.
    const std::int64_t scale_f = scaled ? mass_g : 1, scale_g = scaled ? mass_f : 1;
    std::int64_t d[kCemdBins];
    std::int64_t running = 0;
    for (int i = 0; i < kCemdBins; ++i) {
      running += f[i] * scale_f - g[i] * scale_g;
      d[i] = running;
    }
    const std::int64_t numerator = literal_min_over_rotations(d);
    if (!scaled) {
      raw_sum += numerator;
    } else if (mass_f != 0 && mass_g != 0) {
      scaled_sum += double(numerator) / double(mass_f * mass_g);
    }
  }
  return scaled ? scaled_sum : double(raw_sum);
}

Cemd::Reference Cemd::reference(const CemdInput& input) {
  validate_cemd_input(input);
  const DescriptorDistance mode = input.params.distance;
  const int n = input.queries.count, m = input.database.count;
  CemdReference r;
  r.queries = n;
  r.database = m;
  if (input.params.all_pairs) {
    r.matrix = allocate_samples<double>(std::size_t(n) * std::size_t(m), "the cemd reference");
  }
  r.neighbours.resize(std::size_t(n));
  r.best_distance.resize(std::size_t(n));
  r.second_distance.resize(std::size_t(n));
  for (int q = 0; q < n; ++q) {
    RankedCandidate best, second;
    for (int j = 0; j < m; ++j) {
      const RankedCandidate c{reference_distance(input.queries.row(q), input.database.row(j), mode),
                              j};
      if (input.params.all_pairs) r.matrix[std::size_t(q) * m + j] = c.distance;
      if (ranks_before(c, best, mode)) {
        second = best;
        best = c;
      } else if (ranks_before(c, second, mode)) {
        second = c;
      }
    }
    CemdNeighbours& out = r.neighbours[std::size_t(q)];
    out.best_index = best.index;
    out.best_distance = float(best.distance);
    out.second_index = second.index;
    out.second_distance = float(second.distance);  // +inf without a second descriptor
    r.best_distance[std::size_t(q)] = best.distance;
    r.second_distance[std::size_t(q)] = second.distance;
  }
  return r;
}

namespace {

// Accumulates the check's failures: a count, the largest relative error and the first detail.
struct Findings {
  std::size_t failures = 0;
  double max_error = 0.0;
  std::string first;

  void error(double e) { max_error = std::max(max_error, e); }
  void fail(const std::string& what) {
    if (failures++ == 0) first = what;
  }
};

// Whether a float distance matches the reference's: the same bits as the float the exact value
// rounds to (raw, l2), or within the tolerance (normalised).
bool distance_matches(float out, double reference, DescriptorDistance mode, Findings& f) {
  const double e = relative_error(out, reference);
  f.error(e);
  if (mode == DescriptorDistance::cemd_normalised) return e <= kCemdRelativeTolerance;
  return same_bits(out, float(reference));
}

std::string query_text(int q) {
  return "query " + std::to_string(q);
}

void check_neighbours(const CemdInput& input, const CemdReference& reference, const CemdResult& out,
                      Findings& f) {
  const DescriptorDistance mode = input.params.distance;
  const int m = input.database.count;
  for (int q = 0; q < reference.queries; ++q) {
    const CemdNeighbours& n = out.neighbours[std::size_t(q)];
    const CemdNeighbours& expected = reference.neighbours[std::size_t(q)];
    const std::string where = query_text(q);
    // Indices first: in range, distinct, in key order; a second one exactly when m > 1.
    if (n.best_index < 0 || n.best_index >= m) {
      f.fail(where + ": best index " + std::to_string(n.best_index) + " outside [0, " +
             std::to_string(m) + ")");
      continue;
    }
    if (m == 1) {
      if (n.second_index != -1 || !(std::isinf(n.second_distance) && n.second_distance > 0)) {
        f.fail(where + ": a database of one descriptor has no second neighbour, but got index " +
               std::to_string(n.second_index) + " at " + text(n.second_distance));
      }
    } else if (n.second_index < 0 || n.second_index >= m || n.second_index == n.best_index) {
      f.fail(where + ": second index " + std::to_string(n.second_index) + " (best " +
             std::to_string(n.best_index) + ") is not another index in [0, " + std::to_string(m) +
             ")");
      continue;
    } else if (!(cemd_key(n.best_distance, std::uint32_t(n.best_index)) <
                 cemd_key(n.second_distance, std::uint32_t(n.second_index)))) {
      f.fail(where + ": best (" + std::to_string(n.best_index) + ", " + text(n.best_distance) +
             ") does not rank before second (" + std::to_string(n.second_index) + ", " +
             text(n.second_distance) + ")");
    }
    const auto check_one = [&](const char* which, std::int32_t index, float distance,
                               std::int32_t expected_index, double expected_distance) {
      if (mode != DescriptorDistance::cemd_normalised) {
        // Exact distances: the same index and the same bits.
        if (index != expected_index || !distance_matches(distance, expected_distance, mode, f)) {
          f.fail(where + ": " + which + " (" + std::to_string(index) + ", " + text(distance) +
                 "), reference (" + std::to_string(expected_index) + ", " +
                 text(expected_distance) + ")");
        }
        return;
      }
      // Float rounding may choose between near-ties: the chosen index's reference distance must
      // be within the tolerance of the reference's choice, and the reported distance within the
      // tolerance of the chosen index's reference distance.
      const double own = reference_distance(input.queries.row(q), input.database.row(index), mode);
      const bool own_ok = distance_matches(distance, own, mode, f);
      const double choice_error =
          std::fabs(own - expected_distance) / std::max(std::fabs(expected_distance), 1e-300);
      const bool choice_ok = own == expected_distance || choice_error <= kCemdRelativeTolerance;
      if (!own_ok || !choice_ok) {
        f.fail(where + ": " + which + " (" + std::to_string(index) + ", " + text(distance) +
               ", reference distance of that index " + text(own) + "), reference " + which + " (" +
               std::to_string(expected_index) + ", " + text(expected_distance) + ")");
      }
    };
    check_one("best", n.best_index, n.best_distance, expected.best_index,
              reference.best_distance[std::size_t(q)]);
    if (m > 1) {
      check_one("second", n.second_index, n.second_distance, expected.second_index,
                reference.second_distance[std::size_t(q)]);
    }
  }
}

void check_matrix(const CemdInput& input, const CemdReference& reference, const CemdResult& out,
                  Findings& f) {
  const DescriptorDistance mode = input.params.distance;
  const std::size_t m = std::size_t(out.database);
  for (std::size_t i = 0; i < std::size_t(reference.queries) * m; ++i) {
    if (!distance_matches(out.matrix[i], reference.matrix[i], mode, f)) {
      f.fail("(query " + std::to_string(i / m) + ", database " + std::to_string(i % m) +
             "): " + text(out.matrix[i]) + ", reference " + text(reference.matrix[i]));
    }
  }
}

}  // namespace

CheckResult Cemd::check(const CemdInput& input, const Reference& reference, const CemdResult& out) {
  CheckResult result;
  const int n = input.queries.count, m = input.database.count;
  const bool all_pairs = input.params.all_pairs;
  const std::size_t matrix_size = all_pairs ? std::size_t(n) * std::size_t(m) : 0;
  const std::size_t neighbour_count = all_pairs ? 0 : std::size_t(n);
  if (out.queries != n || out.database != m || out.matrix.size() != matrix_size ||
      out.neighbours.size() != neighbour_count) {
    result.detail = "the result is " + std::to_string(out.queries) + " x " +
                    std::to_string(out.database) + " with " + std::to_string(out.matrix.size()) +
                    " matrix elements and " + std::to_string(out.neighbours.size()) +
                    " neighbour pairs; expected " + std::to_string(n) + " x " + std::to_string(m) +
                    " with " + std::to_string(matrix_size) + " and " +
                    std::to_string(neighbour_count);
    result.max_error = std::numeric_limits<double>::infinity();
    return result;
  }
  if (reference.queries < 1 || reference.queries > n || reference.database != m ||
      (all_pairs && reference.matrix.size() != std::size_t(reference.queries) * m) ||
      (!all_pairs && reference.neighbours.size() < std::size_t(reference.queries))) {
    throw Error("cemd check: the reference (" + std::to_string(reference.queries) + " x " +
                std::to_string(reference.database) + ") does not belong to this " +
                std::to_string(n) + " x " + std::to_string(m) + " input");
  }
  Findings f;
  if (all_pairs) {
    check_matrix(input, reference, out, f);
  } else {
    check_neighbours(input, reference, out, f);
  }
  result.max_error = f.max_error;
  result.ok = f.failures == 0;
  if (!result.ok) {
    result.detail = std::to_string(f.failures) + (all_pairs ? " distances" : " queries") +
                    " differ (" + to_string(input.params.distance) +
                    (input.params.distance == DescriptorDistance::cemd_normalised
                         ? ", relative tolerance " + text(kCemdRelativeTolerance)
                         : std::string(", exact")) +
                    "); first: " + f.first;
  }
  if (reference.queries < n) {
    const std::string sampled = "checked the first " + std::to_string(reference.queries) + " of " +
                                std::to_string(n) + " queries";
    result.detail = result.detail.empty() ? sampled : result.detail + " (" + sampled + ")";
  }
  return result;
}

Workload Cemd::workload(const CemdInput& input) {
  const double n = input.queries.count, m = input.database.count;
  const double output_bytes =
      input.params.all_pairs ? n * m * sizeof(float) : n * sizeof(CemdNeighbours);
  return {(n + m) * kDescriptorBytes + output_bytes, n * m, "cmp"};
}

CemdNeighbours neighbours_from(const Top2& t) {
  if (t.best == kNoCemdKey) throw Error("cemd: no database descriptor was compared with a query");
  CemdNeighbours n;
  n.best_index = std::int32_t(std::uint32_t(t.best));
  n.best_distance = cemd_key_distance(t.best);
  if (t.second == kNoCemdKey) {
    n.second_index = -1;
    n.second_distance = std::numeric_limits<float>::infinity();
  } else {
    n.second_index = std::int32_t(std::uint32_t(t.second));
    n.second_distance = cemd_key_distance(t.second);
  }
  return n;
}

CemdResult match_descriptors(const CemdInput& input) {
  validate_cemd_input(input);
  return run_once(best_variant<Cemd>(input, gpu_available()), input);
}

// --- Generated descriptors ------------------------------------------------------------------

namespace {

// SIFT's normalisation (Lowe 2004, §6.1): unit length, clip at 0.2 against large gradients,
// renormalise, then OpenCV's scaling to bytes.
constexpr double kSiftClip = 0.2;
constexpr double kSiftByteScale = 512.0;
// The shape of the generated cells.
constexpr double kEmptyCellProbability = 0.12;  // flat patches: no gradient in the cell
constexpr int kMaxPeaks = 3;                    // dominant orientations per cell
constexpr double kPeakSpread = 0.7;             // Gaussian spread of a peak, in bins
constexpr double kFloorProbability = 0.25;      // chance of a small background value in a bin
constexpr double kFloorLevel = 0.05;            // its size against the cell's strongest peak

void sift_normalise(std::array<double, kDescriptorBytes>& v, std::uint8_t* out) {
  const auto normalise = [&] {
    double norm = 0.0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (norm > 0.0) {
      for (double& x : v) x /= norm;
    }
  };
  normalise();
  for (double& x : v) x = std::min(x, kSiftClip);
  normalise();
  for (int i = 0; i < kDescriptorBytes; ++i) {
    out[i] = std::uint8_t(std::clamp(std::lround(v[std::size_t(i)] * kSiftByteScale), 0L, 255L));
  }
}

void generate_descriptor(SplitMix64& random, std::uint8_t* out) {
  std::array<double, kDescriptorBytes> v{};
  // The patch's dominant gradient orientation; cells peak near it, as neighbouring cells of a
  // real keypoint do.
  const double base = random.uniform() * kCemdBins;
  for (int c = 0; c < kCemdCells; ++c) {
    if (random.uniform() < kEmptyCellProbability) continue;
    const double strength = 0.2 + random.uniform();
    const int peaks = random.between(1, kMaxPeaks);
    for (int p = 0; p < peaks; ++p) {
      const double centre =
          p == 0 ? base + (random.uniform() - 0.5) * 2.0 : random.uniform() * kCemdBins;
      const double height = strength * (p == 0 ? 1.0 : 0.3 + 0.5 * random.uniform());
      for (int b = 0; b < kCemdBins; ++b) {
        double distance = std::fabs(b - centre);
        distance = std::fmod(distance, double(kCemdBins));
        distance = std::min(distance, kCemdBins - distance);  // around the circle
        v[std::size_t(c * kCemdBins + b)] +=
            height * std::exp(-distance * distance / (2.0 * kPeakSpread * kPeakSpread));
      }
    }
    for (int b = 0; b < kCemdBins; ++b) {
      if (random.uniform() < kFloorProbability) {
        v[std::size_t(c * kCemdBins + b)] += kFloorLevel * strength * random.uniform();
      }
    }
  }
  sift_normalise(v, out);
}

DescriptorSet empty_set(int count) {
  if (count < 1) throw Error("cannot generate " + std::to_string(count) + " descriptors");
  DescriptorSet set;
  set.count = count;
  set.values = allocate_samples<std::uint8_t>(std::size_t(count) * kDescriptorBytes,
                                              "generated descriptors");
  return set;
}

// Seeds of different streams from one user seed.
constexpr std::uint64_t kDescriptorStream = 0xce3dce3dce3dce3dull;
constexpr std::uint64_t kQueryStream = 0x9e3e9e3e9e3e9e3eull;

// Query perturbation: ±kNoise on non-zero values, a small value in an empty bin now and then,
// and a circular shift of every cell's bins (a rotated keypoint) for some queries.
constexpr int kNoise = 6;
constexpr double kNewValueProbability = 0.02;
constexpr int kNewValueMax = 12;
constexpr double kRotationProbability = 0.1;

}  // namespace

DescriptorSet generated_descriptors(int count, std::uint64_t seed) {
  DescriptorSet set = empty_set(count);
  SplitMix64 random(seed ^ kDescriptorStream);
  for (int i = 0; i < count; ++i) {
    generate_descriptor(random, set.values.data() + std::size_t(i) * kDescriptorBytes);
  }
  return set;
}

DescriptorSet generated_queries(const DescriptorSet& database, int count, std::uint64_t seed,
                                double unrelated_fraction) {
  require_set(database, "database");
  if (!(unrelated_fraction >= 0.0 && unrelated_fraction <= 1.0)) {
    throw Error("the fraction of unrelated queries must be in [0, 1], not " +
                text(unrelated_fraction));
  }
  DescriptorSet set = empty_set(count);
  SplitMix64 random(seed ^ kQueryStream);
  for (int q = 0; q < count; ++q) {
    std::uint8_t* out = set.values.data() + std::size_t(q) * kDescriptorBytes;
    if (random.uniform() < unrelated_fraction) {
      generate_descriptor(random, out);
      continue;
    }
    const std::uint8_t* source = database.row(random.between(0, database.count - 1));
    const int shift =
        random.uniform() < kRotationProbability ? random.between(1, kCemdBins - 1) : 0;
    for (int c = 0; c < kCemdCells; ++c) {
      for (int b = 0; b < kCemdBins; ++b) {
        int v = source[c * kCemdBins + (b + shift) % kCemdBins];
        if (v > 0) {
          v += random.between(-kNoise, kNoise);
        } else if (random.uniform() < kNewValueProbability) {
          v = random.between(1, kNewValueMax);
        }
        out[c * kCemdBins + b] = std::uint8_t(std::clamp(v, 0, 255));
      }
    }
  }
  return set;
}

}  // namespace kbench
