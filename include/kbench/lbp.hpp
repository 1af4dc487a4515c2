#pragma once
// Local Binary Pattern: an 8-bit code per pixel of a u8 gray image, and a histogram of the codes.
//
// Gray input: RGB images become gray through to_gray (integer ITU-R BT.601 luma,
// Y = (299 R + 587 G + 114 B + 500) / 1000), so every layer sees the same samples.
//
// Neighbours: the 8 pixels at radius 1, clockwise from the top-left one. Bit k of the code comes
// from neighbour k at (x + lbp_dx(k), y + lbp_dy(k)):
//
//     bit 0  bit 1  bit 2          (-1,-1) (0,-1) (1,-1)
//     bit 7    c    bit 3    =     (-1, 0)   c    (1, 0)
//     bit 6  bit 5  bit 4          (-1, 1) (0, 1) (1, 1)
//
// and is 1 when neighbour >= centre (unsigned comparison), so a flat region codes as 255.
// Because the neighbours go round the circle in order, rotating the neighbourhood by 45° rotates
// the code's bits by one place.
//
// Border::crop codes only the pixels whose 8 neighbours lie inside the image (the output is
// (W−2)×(H−2), output (x, y) is input (x + 1, y + 1); images smaller than 3×3 are refused);
// Border::clamp codes every pixel, a neighbour outside the image repeating the nearest edge pixel.
//
// Mappings (what the output pixel holds, and the histogram's bins):
//   plain               the code itself; 256 bins, bin = code.
//   uniform             the uniform-pattern label; 59 bins. A code is uniform when its bits,
//                       read round the circle, change at most twice; the 58 uniform codes take
//                       labels 0..57 in increasing code order, every other code label 58. The
//                       output pixel is the label, and the histogram is over labels.
//   rotation_invariant  the smallest of the code's 8 bit rotations (36 distinct values); the
//                       output pixel is that code (0..255), the histogram has 36 bins, one per
//                       rotation-invariant code in increasing code order.
//
// Every variant is bit-identical to the reference: codes and histogram.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/conv.hpp"  // Border, parse_border, clamp_coordinate
#include "kbench/device_memory.hpp"
#include "kbench/host_device.hpp"
#include "kbench/image.hpp"
#include "kbench/isa.hpp"
#include "kbench/registry.hpp"

namespace kbench {

enum class LbpMapping { plain, uniform, rotation_invariant };

LbpMapping parse_lbp_mapping(const std::string& text);
const char* to_string(LbpMapping mapping);

struct LbpParams {
  Border border = Border::clamp;
  LbpMapping mapping = LbpMapping::plain;
};

struct LbpInput {
  ImageU8 gray;  // one channel
  LbpParams params;
};

struct LbpResult {
  ImageU8 codes;                         // one channel, the mapped code per output pixel
  std::vector<std::uint32_t> histogram;  // lbp_bin_count(mapping) bins
};

// An lbp on views (Variant::on_views): the codes of every frame of the gray `in` into `codes`,
// and frame f's histogram into histograms[f × bins ...] (zeroed by the call first).
struct LbpViewCall {
  ConstImageView in;
  ImageView codes;
  std::uint32_t* histograms = nullptr;
  LbpParams params;
  ViewWork work;
};

inline bool operator==(const LbpResult& a, const LbpResult& b) {
  return a.codes == b.codes && a.histogram == b.histogram;
}

// The lbp algorithm as the registry sees it.
struct Lbp {
  static constexpr const char* name = "lbp";
  using Input = LbpInput;
  using Output = LbpResult;
  using ViewCall = LbpViewCall;
  // The plain sequential result; every variant must equal it exactly.
  using Reference = LbpResult;

  static Reference reference(const Input& input);
  // ok only when codes and histogram are identical; max_error counts the differing elements
  // (output pixels plus histogram bins).
  static CheckResult check(const Input& input, const Reference& reference, const Output& out);
  // Input and output pixels once each (plus the histogram); one code per output pixel.
  static Workload workload(const Input& input);

  // The reference's codes of some output rows and its whole histogram, where the codes image is
  // more than a check should hold (2.5 GB for 50000×50000): `codes` holds output row rows[k] at
  // row k.
  struct RowsReference {
    std::vector<int> rows;
    ImageU8 codes;
    std::vector<std::uint32_t> histogram;
  };
  // Throws Error for a row outside the output.
  static RowsReference reference_rows(const Input& input, std::vector<int> rows);
  // check() on the reference's rows of `out` and the whole histogram.
  static CheckResult check_rows(const Input& input, const RowsReference& reference,
                                const Output& out);
};

constexpr int kLbpCodes = 256;

// 256, 59 or 36.
int lbp_bin_count(LbpMapping mapping);

// What a mapping makes of each code: the output pixel and the histogram bin. Plain is the
// identity; variants may skip the lookup for it.
struct LbpTables {
  std::uint8_t value[kLbpCodes];
  std::uint8_t bin[kLbpCodes];
  int bins;
};
LbpTables lbp_tables(LbpMapping mapping);

// Output size for `border`; throws Error for an empty image, a crop of an image smaller than
// 3×3, or more coded pixels than a 32-bit histogram bin can count.
ImageSize lbp_output_size(int width, int height, Border border);
// Also checks that the image has one channel.
void validate_lbp_input(const LbpInput& input);
// An output of the right shape for `input`: codes image and zeroed histogram.
LbpResult make_lbp_output(const LbpInput& input);

// The turns of a runner's two result histograms (native CUDA and portable runners). Each call
// adds into the half that is zero and its kernel zeroes the other half for the next call, so
// repeated calls need no clearing pass of their own (a cudaMemsetAsync before each kernel is a
// sizeable share of a call: perf/notes/lbp.md). Poisoning writes both halves, so the call
// after it clears its own half first.
class LbpHistogramTurns {
 public:
  struct Turn {
    int add_into, clear_for_next;  // halves: 0 or 1
    bool clear_first;              // add_into holds poison and must be zeroed before the kernel
  };
  void poisoned() { clean_ = false; }
  Turn next() {
    const Turn turn{current_, 1 - current_, !clean_};
    current_ = 1 - current_;
    clean_ = true;
    return turn;
  }
  // The half holding the last call's histogram.
  int last() const { return 1 - current_; }

 private:
  int current_ = 0;
  bool clean_ = false;
};

// LBP of `image` (converted to gray when it has colour) on the fastest variant this build and
// machine offer.
LbpResult local_binary_pattern(const ImageU8& image, const LbpParams& params);

// ---- Helpers every layer shares: the neighbour order, the comparison, the mappings. ----

// Neighbour k's offset from the centre (see the table above).
KBENCH_HOST_DEVICE constexpr int lbp_dx(int k) {
  constexpr int dx[8] = {-1, 0, 1, 1, 1, 0, -1, -1};
  return dx[k];
}
KBENCH_HOST_DEVICE constexpr int lbp_dy(int k) {
  constexpr int dy[8] = {-1, -1, -1, 0, 1, 1, 1, 0};
  return dy[k];
}

// The one comparison: bit set when the neighbour is at least the centre.
KBENCH_HOST_DEVICE constexpr bool lbp_bit_set(std::uint8_t neighbour, std::uint8_t centre) {
  return neighbour >= centre;
}

template <int K, class Sample>
KBENCH_HOST_DEVICE unsigned lbp_bit(const Sample& sample, std::uint8_t centre) {
  constexpr int dx = lbp_dx(K), dy = lbp_dy(K);
  return unsigned(lbp_bit_set(sample(dx, dy), centre)) << K;
}

template <class Sample, int... K>
KBENCH_HOST_DEVICE std::uint8_t lbp_code(const Sample& sample, std::integer_sequence<int, K...>) {
  const std::uint8_t centre = sample(0, 0);
  return std::uint8_t((lbp_bit<K>(sample, centre) | ...));
}

// The code of one pixel; sample(dx, dy) returns the sample at offset (dx, dy) from the centre.
// The 8 comparisons are unrolled at compile time.
template <class Sample>
KBENCH_HOST_DEVICE std::uint8_t lbp_code(const Sample& sample) {
  return lbp_code(sample, std::make_integer_sequence<int, 8>{});
}

// Number of 0↔1 changes going once round the code's 8 bits.
KBENCH_HOST_DEVICE constexpr int lbp_transitions(unsigned code) {
  const unsigned rotated = ((code >> 1) | (code << 7)) & 0xFFu;
  int count = 0;
  for (unsigned diff = (code ^ rotated) & 0xFFu; diff; diff &= diff - 1) ++count;
  return count;
}

// The smallest of the code's 8 bit rotations.
KBENCH_HOST_DEVICE constexpr unsigned lbp_min_rotation(unsigned code) {
  unsigned best = code;
  for (int r = 1; r < 8; ++r) {
    const unsigned rotated = ((code >> r) | (code << (8 - r))) & 0xFFu;
    if (rotated < best) best = rotated;
  }
  return best;
}

// ---- Four codes at once in 32-bit words (SWAR), for kernels that load 4+ bytes at a time. ----
// Bytes are little-endian: byte i of a word is the sample at column (first column + i).

// The 4 bytes starting `bytes` (0..3) into the 8 bytes lo, hi.
KBENCH_HOST_DEVICE std::uint32_t lbp_bytes_at(std::uint32_t lo, std::uint32_t hi, int bytes) {
  return bytes == 0 ? lo : (lo >> (8 * bytes)) | (hi << (32 - 8 * bytes));
}

// 0x80 in each byte where n >= c, unsigned, else 0: lbp_bit_set on 4 bytes. The low 7 bits
// compare through a subtraction that cannot borrow across bytes; the top bits decide when they
// differ.
KBENCH_HOST_DEVICE std::uint32_t lbp_bytes_ge(std::uint32_t n, std::uint32_t c) {
  const std::uint32_t low_ge = (n | 0x80808080u) - (c & 0x7F7F7F7Fu);
  return ((n & ~c) | (~(n ^ c) & low_ge)) & 0x80808080u;
}

template <int K>
KBENCH_HOST_DEVICE std::uint32_t lbp_bit4(const std::uint32_t (&lo)[3],
                                          const std::uint32_t (&hi)[3], std::uint32_t centre) {
  constexpr int dx = lbp_dx(K), dy = lbp_dy(K);
  return lbp_bytes_ge(lbp_bytes_at(lo[dy + 1], hi[dy + 1], dx + 1), centre) >> (7 - K);
}

template <int... K>
KBENCH_HOST_DEVICE std::uint32_t lbp_codes4(const std::uint32_t (&lo)[3],
                                            const std::uint32_t (&hi)[3],
                                            std::integer_sequence<int, K...>) {
  const std::uint32_t centre = lbp_bytes_at(lo[1], hi[1], 1);
  return (lbp_bit4<K>(lo, hi, centre) | ...);
}

#if defined(__CUDA_ARCH__)
// On GPUs the comparisons run as pairs of fp16 numbers, on the FMA pipe, which issues twice as
// fast as the integer pipe the SWAR comparisons above load. A sample b becomes the fp16 number
// 1024 + b (bits 0x64bb: exact, as is all the arithmetic below). Pixels 0-1 and 2-3 are pairs A
// and B; sample pair (i, i + 1) of a row is the fp16x2 word lbp_pair_*(i).

// fp16x2 1024 + byte i, 1024 + byte i + 1 of `word` (i = 0..2).
__device__ __forceinline__ std::uint32_t lbp_half_pair(std::uint32_t word, int i) {
  return __byte_perm(word, 0x64646464u, unsigned(i) | 4u << 4 | unsigned(i + 1) << 8 | 4u << 12);
}

// The five sample pairs of one row the two pixel pairs read: (0,1) … (4,5).
struct LbpRowPairs {
  std::uint32_t p[5];
};

__device__ __forceinline__ LbpRowPairs lbp_row_pairs(std::uint32_t lo, std::uint32_t hi) {
  const std::uint32_t mid = __funnelshift_r(lo, hi, 16);  // samples 2..5
  return {{lbp_half_pair(lo, 0), lbp_half_pair(lo, 1), lbp_half_pair(lo, 2), lbp_half_pair(mid, 1),
           lbp_half_pair(mid, 2)}};
}

// code + (neighbour ≥ centre ? 2^K : 0) for both pixels of a pair: neighbour + (1 − centre)
// saturated to [0, 1] is 1 exactly when the integer difference is at least 0.
template <int K>
__device__ __forceinline__ std::uint32_t lbp_add_bit2(std::uint32_t code, std::uint32_t neighbour,
                                                      std::uint32_t one_minus_centre) {
  constexpr std::uint32_t kWeight = 0x3C00u + (std::uint32_t(K) << 10);  // fp16 2^K
  std::uint32_t ge, sum;
  asm("add.sat.f16x2 %0, %1, %2;" : "=r"(ge) : "r"(neighbour), "r"(one_minus_centre));
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(sum)
      : "r"(ge), "r"(kWeight | kWeight << 16), "r"(code));
  return sum;
}

template <int... K>
__device__ __forceinline__ std::uint32_t lbp_codes4_half(const std::uint32_t (&lo)[3],
                                                         const std::uint32_t (&hi)[3],
                                                         std::integer_sequence<int, K...>) {
  const LbpRowPairs rows[3] = {lbp_row_pairs(lo[0], hi[0]), lbp_row_pairs(lo[1], hi[1]),
                               lbp_row_pairs(lo[2], hi[2])};
  // 1 − (1024 + c) for the centres, samples (1, 2) and (3, 4) of the middle row.
  constexpr std::uint32_t kOnes = 0x3C003C00u, kMinusOnes = 0xBC00BC00u;
  std::uint32_t one_minus_a, one_minus_b;
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(one_minus_a)
      : "r"(rows[1].p[1]), "r"(kMinusOnes), "r"(kOnes));
  asm("fma.rn.f16x2 %0, %1, %2, %3;"
      : "=r"(one_minus_b)
      : "r"(rows[1].p[3]), "r"(kMinusOnes), "r"(kOnes));
  // Codes start at 1024 (0x6400), so each half ends as 0x64cc.
  std::uint32_t code_a = 0x64006400u, code_b = 0x64006400u;
  ((code_a = lbp_add_bit2<K>(code_a, rows[lbp_dy(K) + 1].p[lbp_dx(K) + 1], one_minus_a),
    code_b = lbp_add_bit2<K>(code_b, rows[lbp_dy(K) + 1].p[lbp_dx(K) + 3], one_minus_b)),
   ...);
  return __byte_perm(code_a, code_b, 0x6420u);  // the low byte of each half
}
#endif

// Codes of 4 horizontally adjacent pixels, byte i = code of pixel i. Row r (0 above, 1 through,
// 2 below the centres) holds 8 samples in lo[r], hi[r], starting one column left of pixel 0.
// Isa::plain takes the SWAR comparisons on CUDA devices too.
template <Isa kIsa = Isa::tuned>
KBENCH_HOST_DEVICE std::uint32_t lbp_codes4(const std::uint32_t (&lo)[3],
                                            const std::uint32_t (&hi)[3]) {
#if defined(__CUDA_ARCH__)
  if constexpr (kIsa == Isa::tuned)
    return lbp_codes4_half(lo, hi, std::make_integer_sequence<int, 8>{});
#endif
  return lbp_codes4(lo, hi, std::make_integer_sequence<int, 8>{});
}

// --- Library call ---------------------------------------------------------------------------

struct LbpOptions {
  LbpMapping mapping = LbpMapping::plain;
  Border border = Border::clamp;
  Stream stream;  // for device views
};

// The LBP codes of every frame of `in` into `codes` (1 channel, lbp_output_size, the input's
// frames) and, when `histogram` is not null, frame f's histogram into histogram[f × bins ...],
// bins = lbp_bin_count(mapping). Colour frames are converted to gray with BT.601 luma first
// (an alpha channel is ignored). `in`, `codes` and `histogram` are all in host memory, or all on
// the context's CUDA device; device input is gray (one channel).
void lbp(Context& context, const ConstImageView& in, const ImageView& codes,
         std::uint32_t* histogram, const LbpOptions& options = {}, const Choice& choice = {});

}  // namespace kbench
