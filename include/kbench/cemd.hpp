#pragma once
// Circular earth mover's distance (CEMD) between SIFT descriptors: the all-pairs distance
// matrix, and the nearest two database descriptors per query (best and second-best, ties to the
// smallest database index) with Lowe's ratio test.
//
// A SIFT descriptor is 128 u8 values: 4×4 spatial cells × 8 orientation bins, value (cell, bin)
// at index cell·8 + bin (the OpenCV/VLFeat layout). Each cell is a circular histogram, and the
// descriptor distance is the sum over the 16 cells of the cells' circular EMD (Rabin, Delon,
// Gousseau, ICPR 2008): for f, g of equal mass, with D(i) = Σ_{j≤i} (f(j) − g(j)),
// CEMD(f, g) = Σ_i |D(i) − median(D)| = (sum of the 4 largest D) − (sum of the 4 smallest D).
// The definitions' sources and forms: docs/cemd.md#what-it-is

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/host_device.hpp"
#include "kbench/registry.hpp"

namespace kbench {

constexpr int kCemdCells = 16;
constexpr int kCemdBins = 8;
constexpr int kDescriptorBytes = kCemdCells * kCemdBins;  // 128
// Largest relative difference between a float-summed normalised distance and the double one.
constexpr double kCemdRelativeTolerance = 1e-6;

// Real cells rarely have equal mass, so there are two CEMD distances (and plain L2 beside them):
// - cemd_normalised (default; the paper's distance): each cell as a distribution. Exact on
//   integers by cross-scaling: the cell term is CEMD(f·|g|, g·|f|) / (|f|·|g|), |·| the cell's
//   sum, numerator and denominator exact u32 (|D| ≤ 8·255·2040), and 0 when either cell is empty.
//   The quotient is formed in float by cemd_cell_quotient() and the 16 terms summed in float in
//   cell order, so every variant that uses these helpers gets the same bits; the reference does
//   the same sums in double, and float results stay within kCemdRelativeTolerance of it.
//   Invariant to rotating all cells' bins by the same shift.
// - cemd_raw: the D form on the raw values; every step an integer, so distances are exact
//   integers (as floats: the largest, 16·4·2·2040, is far below 2^24). Not rotation-invariant
//   when masses differ.
// - l2: the Euclidean distance sqrt(Σ (a − b)²) (the sum is an exact integer), for comparison.
enum class DescriptorDistance { cemd_normalised, cemd_raw, l2 };
const char* to_string(DescriptorDistance distance);
// "normalised", "raw" or "l2"; throws Error for anything else.
DescriptorDistance parse_descriptor_distance(const std::string& name);

// N descriptors of 128 u8 values, row-major.
struct DescriptorSet {
  int count = 0;
  std::vector<std::uint8_t> values;  // count × kDescriptorBytes

  const std::uint8_t* row(int i) const { return values.data() + std::size_t(i) * kDescriptorBytes; }
};

struct CemdParams {
  DescriptorDistance distance = DescriptorDistance::cemd_normalised;
  bool all_pairs = false;  // the N × M matrix; otherwise the nearest two per query
  float ratio = 0.8f;      // Lowe's ratio test: accepted when best < ratio · second
};

struct CemdInput {
  DescriptorSet queries;
  DescriptorSet database;
  CemdParams params;
};

// A query's nearest two database descriptors. second_index is −1 (and second_distance +inf)
// when the database has a single descriptor.
struct CemdNeighbours {
  std::int32_t best_index = -1;
  float best_distance = 0;
  std::int32_t second_index = -1;
  float second_distance = 0;
};

struct CemdResult {
  int queries = 0, database = 0;
  std::vector<float> matrix;               // queries × database, row-major, when all_pairs
  std::vector<CemdNeighbours> neighbours;  // one per query, when !all_pairs
};

// Bitwise equality (unwritten floats poisoned with different bytes must differ, NaN included).
bool operator==(const CemdNeighbours& a, const CemdNeighbours& b);
bool operator==(const CemdResult& a, const CemdResult& b);

// The reference: distances in double (exact integers for cemd_raw and the l2 sums), and, per
// query, the best two by (distance, index). For cemd_raw and l2 the ranking key is the float
// distance every variant produces (exact for raw; for l2 the correctly rounded square root, so
// near-ties that round together go to the smaller index, as in the variants); for
// cemd_normalised it is the double distance. Neighbours are filled in both operations.
//
// A sampled reference covers only the first `queries` queries of its input (compare builds one
// where the full reference would take too long); Cemd::check then checks only those rows.
struct CemdReference {
  int queries = 0, database = 0;
  std::vector<double> matrix;  // queries × database, when all_pairs
  std::vector<CemdNeighbours> neighbours;
  std::vector<double> best_distance, second_distance;  // per query, in double
};

// A cemd on device views (Variant::on_views), queued on work.stream. Both sets are packed u8
// rows of kDescriptorBytes in device memory. With `matrix` set, every query's distance to every
// database row into matrix[q · matrix_stride / 4 + d] (matrix_stride in bytes); else each
// query's nearest two as cemd_key()s into keys[2q] (best) and keys[2q + 1] (second), written.
struct CemdViewCall {
  const std::uint8_t* queries = nullptr;
  int query_rows = 0;
  const std::uint8_t* database = nullptr;
  int database_rows = 0;
  DescriptorDistance distance = DescriptorDistance::cemd_normalised;
  float* matrix = nullptr;
  std::size_t matrix_stride = 0;
  std::uint64_t* keys = nullptr;
  ViewWork work;
};

// The cemd algorithm as the registry sees it.
struct Cemd {
  static constexpr const char* name = "cemd";
  using Input = CemdInput;
  using Output = CemdResult;
  using ViewCall = CemdViewCall;
  using Reference = CemdReference;

  // The plain reference: the literal minimum over the 8 rotations per cell, in double.
  static Reference reference(const Input& input);
  // cemd_raw and l2: bit-identical distances and indices. cemd_normalised: every distance within
  // kCemdRelativeTolerance of the reference, and a best (second) index whose reference distance
  // is within that tolerance of the reference's best (second) distance, so float rounding may
  // choose between near-ties. max_error is the largest relative distance error.
  static CheckResult check(const Input& input, const Reference& reference, const Output& out);
  // Both sets read once (plus the matrix or the neighbours written); one operation is one
  // descriptor comparison.
  static Workload workload(const Input& input);
};

// Throws Error for an empty query or database set, a set whose value count is not count × 128,
// a bad ratio (not in (0, 1]), or a matrix too large to index or allocate.
void validate_cemd_input(const CemdInput& input);

// Matches `input.queries` against `input.database` with the fastest variant this build and
// machine offer (the user call behind cemd-match).
CemdResult match_descriptors(const CemdInput& input);

// Lowe's ratio test on a query's neighbours; false when there is no second neighbour. Inline so
// that descriptor_io.cpp (its one user outside the engine) links without the CEMD engine.
inline bool ratio_accepted(const CemdNeighbours& n, float ratio) {
  return n.second_index >= 0 && n.best_distance < ratio * n.second_distance;
}

// One pair's distance as the reference computes it, in double: per cell the literal minimum over
// the 8 rotations k of Σ_i |D(i) − D(k)| (normalised: the exact numerator over the exact
// denominator, in double; raw: the exact integer), summed in cell order; l2: the square root of
// the exact sum.
double reference_distance(const std::uint8_t* a, const std::uint8_t* b,
                          DescriptorDistance distance);

// Seeded SIFT-like descriptors: a few dominant orientations per cell, sparse, normalised to unit
// length, clipped at 0.2, renormalised and scaled by 512 into 0..255 as SIFT does.
DescriptorSet generated_descriptors(int count, std::uint64_t seed);
// A query set made of perturbed copies of seeded database rows (so that matches exist), plus
// unrelated descriptors for the given fraction.
DescriptorSet generated_queries(const DescriptorSet& database, int count, std::uint64_t seed,
                                double unrelated_fraction = 0.25);

// --- Shared by every layer -------------------------------------------------------------------

// A candidate's key: the distance's bits in the high 32 bits (non-negative floats order as
// their bit patterns), the database index in the low ones; the smallest key is the smallest
// distance, then index.
KBENCH_HOST_DEVICE std::uint64_t cemd_key(float distance, std::uint32_t index) {
  std::uint32_t bits;
  std::memcpy(&bits, &distance, sizeof bits);
  return (std::uint64_t(bits) << 32) | index;
}
constexpr std::uint64_t kNoCemdKey = ~std::uint64_t(0);
KBENCH_HOST_DEVICE float cemd_key_distance(std::uint64_t key) {
  const std::uint32_t bits = std::uint32_t(key >> 32);
  float d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// A key of a piece's row (numbered from 0 in the piece) as one of row first_row + index of the
// whole database (their sum below 2^32); no key stays none.
KBENCH_HOST_DEVICE std::uint64_t cemd_key_from_row(std::uint64_t key, std::uint32_t first_row) {
  return key == kNoCemdKey ? key : key + first_row;
}

// The two smallest keys seen so far.
struct Top2 {
  std::uint64_t best = kNoCemdKey, second = kNoCemdKey;
};
KBENCH_HOST_DEVICE void top2_insert(Top2& t, std::uint64_t key) {
  if (key < t.best) {
    t.second = t.best;
    t.best = key;
  } else if (key < t.second) {
    t.second = key;
  }
}
// top2_insert(t, cemd_key(distance, index)), skipping the key when the distance is above the
// current second's (such a key cannot enter; an empty second, kNoCemdKey, reads as NaN and lets
// every distance in).
KBENCH_HOST_DEVICE void top2_offer(Top2& t, float distance, std::uint32_t index) {
  if (!(distance > cemd_key_distance(t.second))) top2_insert(t, cemd_key(distance, index));
}
// The two smallest of two lists of distinct keys (database shards, threads, MPI ranks).
KBENCH_HOST_DEVICE Top2 top2_merge(Top2 a, const Top2& b) {
  top2_insert(a, b.best);
  top2_insert(a, b.second);
  return a;
}
// A query's neighbours from its top-2 keys.
CemdNeighbours neighbours_from(const Top2& t);
// The other way: a query's nearest two in a piece of a database (indices within the piece; no
// second: −1) as keys of rows numbered from `first_row`.
inline Top2 top2_of(std::int64_t first_row, std::int32_t best_index, float best_distance,
                    std::int32_t second_index, float second_distance) {
  Top2 t;
  t.best = cemd_key(best_distance, std::uint32_t(first_row + best_index));
  if (second_index >= 0) {
    t.second = cemd_key(second_distance, std::uint32_t(first_row + second_index));
  }
  return t;
}
// Every query's neighbours from keys laid out as the GPU variants keep them: query q's best in
// keys[2q], its second in keys[2q + 1] (any 64-bit key type: CUDA's atomics want unsigned long
// long).
template <class Key>
std::vector<CemdNeighbours> neighbours_from_keys(const Key* keys, int queries) {
  static_assert(sizeof(Key) == sizeof(std::uint64_t), "cemd keys are 64 bits");
  std::vector<CemdNeighbours> neighbours(static_cast<std::size_t>(queries));
  for (int q = 0; q < queries; ++q) {
    Top2 t;
    t.best = keys[2 * std::size_t(q)];
    t.second = keys[2 * std::size_t(q) + 1];
    neighbours[std::size_t(q)] = neighbours_from(t);
  }
  return neighbours;
}

// Cumulative differences D(i) = Σ_{j≤i} (a(j) − b(j)) of one cell, then
// Σ_i |D(i) − median(D)| = (sum of the 4 largest D) − (sum of the 4 smallest D), with a sorting
// network that needs no branch. T holds |D|: int for these sizes.
template <class T>
KBENCH_HOST_DEVICE T circular_emd_of_cumulative(T (&d)[kCemdBins]) {
  // Batcher's odd-even merge sort for 8 values: 19 compare-exchanges.
  const auto cx = [&](int i, int j) {
    const T lo = d[i] < d[j] ? d[i] : d[j];
    const T hi = d[i] < d[j] ? d[j] : d[i];
    d[i] = lo;
    d[j] = hi;
  };
  cx(0, 1), cx(2, 3), cx(4, 5), cx(6, 7);
  cx(0, 2), cx(1, 3), cx(4, 6), cx(5, 7);
  cx(1, 2), cx(5, 6);
  cx(0, 4), cx(1, 5), cx(2, 6), cx(3, 7);
  cx(2, 4), cx(3, 5);
  cx(1, 2), cx(3, 4), cx(5, 6);
  return (d[4] + d[5] + d[6] + d[7]) - (d[0] + d[1] + d[2] + d[3]);
}

// Raw-mode cell term: the D form on the values as they are.
KBENCH_HOST_DEVICE std::uint32_t cemd_cell_raw(const std::uint8_t* f, const std::uint8_t* g) {
  int d[kCemdBins];
  int running = 0;
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins; ++i) {
    running += int(f[i]) - int(g[i]);
    d[i] = running;
  }
  return std::uint32_t(circular_emd_of_cumulative(d));
}

// Normalised-mode cell term's numerator CEMD(f·|g|, g·|f|) for cell masses mass_f = |f|,
// mass_g = |g|: exact (≤ 8 · 2 · 8 · 255 · 2040 < 2^31).
KBENCH_HOST_DEVICE std::uint32_t cemd_cell_scaled(const std::uint8_t* f, const std::uint8_t* g,
                                                  int mass_f, int mass_g) {
  int d[kCemdBins];
  int running = 0;
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins; ++i) {
    running += int(f[i]) * mass_g - int(g[i]) * mass_f;
    d[i] = running;
  }
  return std::uint32_t(circular_emd_of_cumulative(d));
}

// numerator / (|f|·|g|) in float (each conversion and the division correctly rounded, so the
// same bits on every IEEE machine); 0 when either cell is empty.
KBENCH_HOST_DEVICE float cemd_cell_quotient(std::uint32_t numerator, int mass_f, int mass_g) {
  const std::uint32_t denominator = std::uint32_t(mass_f) * std::uint32_t(mass_g);
  return denominator == 0 ? 0.0f : float(numerator) / float(denominator);
}

KBENCH_HOST_DEVICE int cell_mass(const std::uint8_t* cell) {
  int sum = 0;
  KBENCH_UNROLL
  for (int i = 0; i < kCemdBins; ++i) sum += cell[i];
  return sum;
}

// One pair's distance, the way every variant's result must come out: cell terms in cell order,
// summed in float (raw: summed exactly in integers, then converted).
KBENCH_HOST_DEVICE float descriptor_distance(const std::uint8_t* a, const std::uint8_t* b,
                                             DescriptorDistance distance) {
  if (distance == DescriptorDistance::l2) {
    std::uint32_t sum = 0;
    for (int i = 0; i < kDescriptorBytes; ++i) {
      const int d = int(a[i]) - int(b[i]);
      sum += std::uint32_t(d * d);
    }
    return std::sqrt(float(sum));
  }
  if (distance == DescriptorDistance::cemd_raw) {
    std::uint32_t sum = 0;
    for (int c = 0; c < kCemdCells; ++c) sum += cemd_cell_raw(a + c * kCemdBins, b + c * kCemdBins);
    return float(sum);
  }
  float sum = 0.0f;
  for (int c = 0; c < kCemdCells; ++c) {
    const std::uint8_t* f = a + c * kCemdBins;
    const std::uint8_t* g = b + c * kCemdBins;
    const int mf = cell_mass(f), mg = cell_mass(g);
    sum += cemd_cell_quotient(cemd_cell_scaled(f, g, mf, mg), mf, mg);
  }
  return sum;
}

// The largest Euclidean squared sum (all-0 against all-255), and how far apart two squared sums
// (integers 0..kMaxL2Sum) can be and still have the same float distance (correctly rounded
// square roots): sums more than this apart never tie, so a matcher may turn candidates away on
// their exact sums.
constexpr int kMaxL2Sum = kDescriptorBytes * 255 * 255;
constexpr int kL2TieReach = 1;

// --- Library calls --------------------------------------------------------------------------

struct CemdMatchOptions {
  DescriptorDistance distance = DescriptorDistance::cemd_normalised;
  float ratio = 0.8f;  // Lowe's ratio test, in (0, 1]
  // Device views: the stream the call is queued on (cemd_match waits for it, since it returns
  // the matches).
  Stream stream;
};

// A queries × database matrix of distances, rows `row_stride` bytes apart (0: packed).
struct DistanceMatrixView {
  float* data = nullptr;
  int rows = 0;
  int cols = 0;
  std::size_t row_stride = 0;
  MemoryPlace place;
};

// A query's nearest two database rows and Lowe's ratio test; second_index is −1 for a database
// of one row.
struct CemdMatch {
  std::int32_t index = -1;
  float distance = 0;
  std::int32_t second_index = -1;
  float second_distance = 0;
  bool accepted = false;
};
inline bool operator==(const CemdMatch& a, const CemdMatch& b) {
  return a.index == b.index && a.distance == b.distance && a.second_index == b.second_index &&
         a.second_distance == b.second_distance && a.accepted == b.accepted;
}

// Per query, its nearest two database descriptors (ties to the smallest row).
std::vector<CemdMatch> cemd_match(Context& context, const DescriptorView& queries,
                                  const DescriptorView& database,
                                  const CemdMatchOptions& options = {}, const Choice& choice = {});

// Per query, its nearest two database descriptors over a database matched a piece at a time (one
// larger than the device's memory, or read while the piece before is matched). add() matches a
// piece whose first row is row `first_row` of the whole database and merges its candidates into
// each query's nearest two so far; matches() returns them as cemd_match over the whole database
// with the same variant would (ties to the smallest row, whatever the pieces). On device views
// add() is queued on options.stream and returns at once, the nearest two so far staying on the
// device: the piece's memory must stay unchanged until the stream has passed the call (a
// DeviceEvent recorded after it). Host views are matched within add(). The queries (a view of one
// place with every piece's) must outlive the matcher; rows are numbered below 2^31.
class CemdPieceMatcher {
 public:
  CemdPieceMatcher(Context& context, const DescriptorView& queries,
                   const CemdMatchOptions& options = {}, const Choice& choice = {});
  ~CemdPieceMatcher();
  CemdPieceMatcher(const CemdPieceMatcher&) = delete;
  CemdPieceMatcher& operator=(const CemdPieceMatcher&) = delete;

  void add(const DescriptorView& piece, std::int64_t first_row);
  // Waits for the queued pieces; throws Error when none was added.
  std::vector<CemdMatch> matches();
  // The same as each query's two smallest keys (distance bits and row), the form in which other
  // matchers' candidates (database shards, GPUs, MPI ranks) merge with them by top2_merge.
  std::vector<Top2> keys();

 private:
  Context& context_;
  DescriptorView queries_;
  CemdMatchOptions options_;
  Choice choice_;
  bool any_ = false;
  std::vector<Top2> host_;  // host views: the nearest two so far
  DeviceMemory device_;     // device views: the same as cemd keys, two per query
};

// Every query's distance to every database row into `matrix` (queries.rows × database.rows), on
// the views' device when they are device views.
void cemd_all_pairs(Context& context, const DescriptorView& queries, const DescriptorView& database,
                    const DistanceMatrixView& matrix, const CemdMatchOptions& options = {},
                    const Choice& choice = {});

}  // namespace kbench
