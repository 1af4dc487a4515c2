#pragma once
// Local Binary Pattern: an 8-bit code per pixel of a u8 gray image, and a histogram of the codes.
// Every variant is bit-identical to the reference: codes and histogram.
//
// Neighbours: the 8 pixels at radius 1, clockwise from the top-left one. Bit k of the code comes
// from neighbour k at (x + lbp_dx(k), y + lbp_dy(k)) (kbench/detail/lbp_codes.hpp):
//
//     bit 0  bit 1  bit 2          (-1,-1) (0,-1) (1,-1)
//     bit 7    c    bit 3    =     (-1, 0)   c    (1, 0)
//     bit 6  bit 5  bit 4          (-1, 1) (0, 1) (1, 1)
//
// and is 1 when neighbour >= centre (unsigned comparison), so a flat region codes as 255.
// Because the neighbours go round the circle in order, rotating the neighbourhood by 45° rotates
// the code's bits by one place. Gray input, borders and mappings: LbpInput, LbpParams, LbpMapping.

#include <cstdint>
#include <string>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/conv.hpp"  // Border, parse_border, clamp_coordinate
#include "kbench/device_memory.hpp"
#include "kbench/image.hpp"
#include "kbench/registry.hpp"

namespace kbench {

// Mappings (what the output pixel holds, and the histogram's bins):
//   plain               the code itself; 256 bins, bin = code.
//   uniform             the uniform-pattern label; 59 bins. A code is uniform when its bits,
//                       read round the circle, change at most twice; the 58 uniform codes take
//                       labels 0..57 in increasing code order, every other code label 58. The
//                       output pixel is the label, and the histogram is over labels.
//   rotation_invariant  the smallest of the code's 8 bit rotations (36 distinct values); the
//                       output pixel is that code (0..255), the histogram has 36 bins, one per
//                       rotation-invariant code in increasing code order.
enum class LbpMapping { plain, uniform, rotation_invariant };

LbpMapping parse_lbp_mapping(const std::string& text);
const char* to_string(LbpMapping mapping);

// Border::crop codes only the pixels whose 8 neighbours lie inside the image (the output is
// (W−2)×(H−2), output (x, y) is input (x + 1, y + 1); images smaller than 3×3 are refused);
// Border::clamp codes every pixel, a neighbour outside the image repeating the nearest edge pixel.
struct LbpParams {
  Border border = Border::clamp;
  LbpMapping mapping = LbpMapping::plain;
};

// Gray input: RGB images become gray through to_gray (integer ITU-R BT.601 luma,
// Y = (299 R + 587 G + 114 B + 500) / 1000), so every layer sees the same samples.
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
