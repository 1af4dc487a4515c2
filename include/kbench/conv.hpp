#pragma once
// N×N mask convolution of a u8 image (1 to 4 interleaved channels) with a float mask,
// accumulated in float, rounded to nearest and clamped to 0..255.
//
// The mask is applied as a correlation, the way image editors apply "kernels":
//   out(x, y, c) = Σ_{j,i} mask(i, j) · in(x + i − r, y + j − r, c),   r = (N − 1) / 2
// Border::crop keeps the pixels whose whole window lies inside the image (the output shrinks
// by r on every side); Border::clamp keeps the size and repeats edge pixels.
//
// Tolerance: every variant is within ±1 grey level of the rounded double-precision result.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/host_device.hpp"
#include "kbench/image.hpp"
#include "kbench/registry.hpp"

namespace kbench {

enum class Border { crop, clamp };

struct Mask {
  int size = 0;                // N, odd
  std::vector<float> weights;  // N × N, row-major: weights[j * N + i]

  int radius() const { return size / 2; }
};

constexpr int kMaxMaskSize = 63;
// The largest mask file load_mask reads: 63² numbers with room for comments and long numerals.
// A larger file, or a stream that goes on past it, is refused.
constexpr std::size_t max_mask_file_bytes = std::size_t(1) << 20;

// identity, box, gaussian, sharpen, edge, emboss (3×3).
Mask builtin_mask(const std::string& name);
std::vector<std::string> builtin_mask_names();
bool is_builtin_mask(const std::string& name);
// A built-in name or a mask file: N×N numbers separated by white space, commas or semicolons,
// '#' comments, LF or CRLF line ends, an optional UTF-8 byte order mark.
Mask load_mask(const std::string& name_or_path);
// Parses mask text; `source` names it in error messages. The mask is an odd N×N square, N <=
// kMaxMaskSize, of finite weights.
Mask parse_mask(const std::string& text, const std::string& source);

Border parse_border(const std::string& text);
const char* to_string(Border border);

struct ConvInput {
  ImageU8 image;
  Mask mask;
  Border border = Border::clamp;
};

// A conv on views (Variant::on_views): every frame of `in` into `out`, every channel convolved.
struct ConvViewCall {
  ConstImageView in;
  ImageView out;
  const Mask* mask = nullptr;
  Border border = Border::clamp;
  ViewWork work;
};

// Largest difference from the rounded double-precision result, in grey levels.
constexpr double kConvToleranceGrey = 1.0;

// The conv algorithm as the registry sees it.
struct Conv {
  static constexpr const char* name = "conv";
  using Input = ConvInput;
  using Output = ImageU8;
  using ViewCall = ConvViewCall;
  // The double-precision result before rounding, one value per output sample.
  using Reference = std::vector<double>;

  static Reference reference(const Input& input);
  static CheckResult check(const Input& input, const Reference& reference, const Output& out);
  // Input and output samples once each; a multiply and an add per mask tap and sample.
  static Workload workload(const Input& input);

  // The reference of some output rows, where the whole of it is too large to hold (2.7 G
  // doubles for 30000×30000 RGB): `values` holds output row rows[k] at row k, out_width ×
  // channels values a row.
  struct RowsReference {
    std::vector<int> rows;
    std::vector<double> values;
  };
  // Throws Error for a row outside the output.
  static RowsReference reference_rows(const Input& input, std::vector<int> rows);
  // check() on the reference's rows of `out` only.
  static CheckResult check_rows(const Input& input, const RowsReference& reference,
                                const Output& out);
};

// Output size for `border`; throws Error when the mask is larger than the image or not a
// valid odd square.
ImageSize conv_output_size(int width, int height, const Mask& mask, Border border);
void validate_conv_input(const ConvInput& input);
// An output image of the right size and channel count for `input`.
ImageU8 make_conv_output(const ConvInput& input);

// Convolves with the fastest variant this build and machine offer (native CUDA when a GPU is
// present, else the OpenMP CPU variant).
ImageU8 convolve(const ImageU8& image, const Mask& mask, Border border);

// The accumulated float becomes a pixel: clamped to 0..255 and rounded to nearest (ties to
// even). Adding 2^23 leaves the rounded integer in the low mantissa bits, which avoids the
// float→int conversion instruction, a quarter-rate operation on GPUs.
KBENCH_HOST_DEVICE std::uint8_t conv_to_pixel(float sum) {
  const float clamped = fminf(fmaxf(sum, 0.f), 255.f);
  const float shifted = clamped + 8388608.f;
  std::uint32_t bits;
  memcpy(&bits, &shifted, sizeof bits);
  return std::uint8_t(bits);
}

// Clamps a coordinate into 0..extent−1 (Border::clamp).
KBENCH_HOST_DEVICE int clamp_coordinate(int v, int extent) {
  return v < 0 ? 0 : (v >= extent ? extent - 1 : v);
}

// --- Library call ---------------------------------------------------------------------------

struct ConvOptions {
  Border border = Border::clamp;
  Stream stream;  // for device views
};

// Convolves every frame of `in` (1 to 4 channels) with `mask` into `out`, which has the output's
// size (the input's for clamp, shrunk by the mask's radius on each side for crop) and the
// input's channels and frames. Colour channels are convolved; an alpha channel (the last of 2 or
// 4) is copied through, cropped like the colour. `in` and `out` are both host views or both
// views of the context's CUDA device.
void conv(Context& context, const ConstImageView& in, const ImageView& out, const Mask& mask,
          const ConvOptions& options = {}, const Choice& choice = {});

}  // namespace kbench
