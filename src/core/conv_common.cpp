// What every conv variant shares: validation, output shapes and the double reference (masks are
// in mask_io.cpp).
#include <algorithm>
#include <cmath>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"

namespace kbench {

Border parse_border(const std::string& text) {
  if (text == "crop") return Border::crop;
  if (text == "clamp") return Border::clamp;
  throw Error("border '" + text + "' is not crop or clamp");
}

const char* to_string(Border border) {
  return border == Border::crop ? "crop" : "clamp";
}

ImageSize conv_output_size(int width, int height, const Mask& mask, Border border) {
  if (mask.size < 1 || mask.size % 2 == 0 || mask.size > kMaxMaskSize ||
      mask.weights.size() != std::size_t(mask.size) * mask.size) {
    throw Error("a mask is an odd N×N square with N <= " + std::to_string(kMaxMaskSize));
  }
  if (mask.size > width || mask.size > height) {
    throw Error("mask " + std::to_string(mask.size) + "x" + std::to_string(mask.size) +
                " is larger than the image " + std::to_string(width) + "x" +
                std::to_string(height));
  }
  if (border == Border::clamp) return {width, height};
  return {width - 2 * mask.radius(), height - 2 * mask.radius()};
}

void validate_conv_input(const ConvInput& input) {
  checked_sample_count(input.image.width, input.image.height, input.image.channels, 1);
  conv_output_size(input.image.width, input.image.height, input.mask, input.border);
}

ImageU8 make_conv_output(const ConvInput& input) {
  const ImageSize size =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  return ImageU8(size.width, size.height, input.image.channels);
}

namespace {

// Output row y of the double-precision reference: out_width × channels values into `values`.
void reference_row(const ConvInput& input, const ImageSize& size, int y, double* values) {
  const ImageU8& in = input.image;
  const int n = input.mask.size;
  const int r = input.mask.radius();
  // Crop output (x, y) sits at input (x + r, y + r).
  const int shift = input.border == Border::crop ? r : 0;
  for (int x = 0; x < size.width; ++x) {
    for (int c = 0; c < in.channels; ++c) {
      double sum = 0.0;
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i) {
          const int sx = clamp_coordinate(x + shift + i - r, in.width);
          const int sy = clamp_coordinate(y + shift + j - r, in.height);
          sum += double(input.mask.weights[j * n + i]) * in.at(sx, sy, c);
        }
      }
      values[std::size_t(x) * in.channels + c] = sum;
    }
  }
}

// The output's shape against `input`'s: an empty string when it is right, else what is wrong.
std::string shape_mismatch(const ConvInput& input, const ImageU8& out) {
  const ImageSize size =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  if (out.width == size.width && out.height == size.height &&
      out.channels == input.image.channels) {
    return "";
  }
  return "output is " + std::to_string(out.width) + "x" + std::to_string(out.height) + "x" +
         std::to_string(out.channels) + ", expected " + std::to_string(size.width) + "x" +
         std::to_string(size.height) + "x" + std::to_string(input.image.channels);
}

// Compares rows of `out` with reference rows: reference row k (row_samples values from
// reference + k · row_samples) is output row row_of(k). The worst sample decides.
template <class RowOf>
CheckResult compare_rows(const ImageU8& out, const double* reference, std::size_t rows,
                         RowOf row_of) {
  const std::size_t row_samples = std::size_t(out.width) * out.channels;
  CheckResult result;
  std::size_t worst_row = 0, worst_sample = 0;
  for (std::size_t k = 0; k < rows; ++k) {
    const std::uint8_t* got = &out.at(0, row_of(k), 0);
    const double* want = reference + k * row_samples;
    for (std::size_t i = 0; i < row_samples; ++i) {
      const double expected = std::min(255.0, std::max(0.0, std::round(want[i])));
      const double error = std::abs(double(got[i]) - expected);
      if (error > result.max_error) {
        result.max_error = error;
        worst_row = k;
        worst_sample = i;
      }
    }
  }
  result.ok = result.max_error <= kConvToleranceGrey;
  if (!result.ok) {
    const int y = row_of(worst_row);
    const int x = int(worst_sample / out.channels), c = int(worst_sample % out.channels);
    result.detail = "sample (x=" + std::to_string(x) + ", y=" + std::to_string(y) +
                    ", c=" + std::to_string(c) + ") is " + std::to_string(int(out.at(x, y, c))) +
                    ", reference " +
                    std::to_string(reference[worst_row * row_samples + worst_sample]);
  }
  return result;
}

}  // namespace

Conv::Reference Conv::reference(const ConvInput& input) {
  validate_conv_input(input);
  const ImageSize size =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  const std::size_t row_samples = std::size_t(size.width) * input.image.channels;
  std::vector<double> out =
      allocate_samples<double>(row_samples * size.height, "the conv reference");
  for (int y = 0; y < size.height; ++y) {
    reference_row(input, size, y, out.data() + std::size_t(y) * row_samples);
  }
  return out;
}

CheckResult Conv::check(const ConvInput& input, const Reference& reference, const ImageU8& out) {
  CheckResult result;
  result.detail = shape_mismatch(input, out);
  if (!result.detail.empty()) return result;
  return compare_rows(out, reference.data(), std::size_t(out.height),
                      [](std::size_t k) { return int(k); });
}

Conv::RowsReference Conv::reference_rows(const ConvInput& input, std::vector<int> rows) {
  validate_conv_input(input);
  const ImageSize size =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  const std::size_t row_samples = std::size_t(size.width) * input.image.channels;
  if (rows.empty()) throw Error("a reference of sampled rows needs at least one row");
  RowsReference reference;
  reference.values = allocate_samples<double>(row_samples * rows.size(), "the conv reference rows");
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] < 0 || rows[k] >= size.height) {
      throw Error("row " + std::to_string(rows[k]) + " is outside the " +
                  std::to_string(size.height) + " rows of the conv output");
    }
    reference_row(input, size, rows[k], reference.values.data() + k * row_samples);
  }
  reference.rows = std::move(rows);
  return reference;
}

CheckResult Conv::check_rows(const ConvInput& input, const RowsReference& reference,
                             const ImageU8& out) {
  CheckResult result;
  result.detail = shape_mismatch(input, out);
  if (!result.detail.empty()) return result;
  return compare_rows(out, reference.values.data(), reference.rows.size(),
                      [&](std::size_t k) { return reference.rows[k]; });
}

Workload Conv::workload(const ConvInput& input) {
  const ImageSize out =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  const double out_samples = double(out.width) * out.height * input.image.channels;
  return {double(input.image.sample_count()) + out_samples,
          2.0 * input.mask.size * input.mask.size * out_samples, "flop"};
}

ImageU8 convolve(const ImageU8& image, const Mask& mask, Border border) {
  ConvInput input{image, mask, border};
  validate_conv_input(input);
  return run_once(best_variant<Conv>(input, gpu_available()), input);
}

}  // namespace kbench
