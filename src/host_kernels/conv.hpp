#pragma once
// Per-pixel conv bodies and runners shared by the sequential and native CPU layers: those layers
// differ in how they walk the pixels (plain loops or OpenMP), not in what one pixel computes.

#include <algorithm>
#include <cstdint>

#include "kbench/conv.hpp"
#include "kbench/registry.hpp"

namespace kbench::host_conv {

// Where a variant reads and writes: output (x, y) reads the window centred on input
// (x + shift, y + shift); shift is the radius for Border::crop and 0 for Border::clamp.
struct Geometry {
  int in_width, in_height, out_width, out_height, channels, shift;
};

inline Geometry geometry_of(const ConvInput& input) {
  const ImageSize out =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  return {input.image.width,
          input.image.height,
          out.width,
          out.height,
          input.image.channels,
          input.border == Border::crop ? input.mask.radius() : 0};
}

// Any mask, any border, interleaved samples: all channels of output pixel (x, y).
inline void pixel_aos(const std::uint8_t* in, const Geometry& g, const Mask& mask, int x, int y,
                      std::uint8_t* out) {
  const int n = mask.size, r = mask.radius();
  float sum[4] = {0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j < n; ++j) {
    const int sy = clamp_coordinate(y + g.shift + j - r, g.in_height);
    for (int i = 0; i < n; ++i) {
      const int sx = clamp_coordinate(x + g.shift + i - r, g.in_width);
      const float w = mask.weights[j * n + i];
      const std::uint8_t* px = in + (std::size_t(sy) * g.in_width + sx) * g.channels;
      for (int c = 0; c < g.channels; ++c) sum[c] += w * px[c];
    }
  }
  for (int c = 0; c < g.channels; ++c) out[c] = conv_to_pixel(sum[c]);
}

// Any mask, any border, one plane: output sample (x, y).
inline std::uint8_t pixel_plane(const std::uint8_t* plane, const Geometry& g, const Mask& mask,
                                int x, int y) {
  const int n = mask.size, r = mask.radius();
  float sum = 0.f;
  for (int j = 0; j < n; ++j) {
    const int sy = clamp_coordinate(y + g.shift + j - r, g.in_height);
    for (int i = 0; i < n; ++i) {
      const int sx = clamp_coordinate(x + g.shift + i - r, g.in_width);
      sum += mask.weights[j * n + i] * plane[std::size_t(sy) * g.in_width + sx];
    }
  }
  return conv_to_pixel(sum);
}

// Output pixels whose 3×3 window lies inside the input: x0 <= x < x1, y0 <= y < y1. The
// unrolled variants run their fast body there and the clamped generic body on the rest.
struct Rect {
  int x0, x1, y0, y1;
};

inline Rect interior3(const Geometry& g) {
  const int x0 = std::max(0, 1 - g.shift), y0 = std::max(0, 1 - g.shift);
  const int x1 = std::max(x0, std::min(g.out_width, g.in_width - 1 - g.shift));
  const int y1 = std::max(y0, std::min(g.out_height, g.in_height - 1 - g.shift));
  return {x0, x1, y0, y1};
}

// Calls f(x, y) for every output pixel outside `inner`.
template <class F>
void for_each_border_pixel(const Geometry& g, const Rect& inner, F&& f) {
  for (int y = 0; y < g.out_height; ++y) {
    const bool inner_row = y >= inner.y0 && y < inner.y1;
    for (int x = 0; x < g.out_width; ++x) {
      if (inner_row && x == inner.x0) x = inner.x1;
      if (x < g.out_width) f(x, y);
    }
  }
}

// 3×3 mask, RGB, window inside the image: the mask and channel loops unrolled (the report's UMC).
// `centre` points at the red sample of the window's centre pixel.
inline void pixel_aos_rgb3x3(const std::uint8_t* __restrict__ centre, int row_stride,
                             const float* __restrict__ m, std::uint8_t* __restrict__ out) {
  const std::uint8_t* a = centre - row_stride - 3;
  const std::uint8_t* b = centre - 3;
  const std::uint8_t* c = centre + row_stride - 3;
  const float red = m[0] * a[0] + m[1] * a[3] + m[2] * a[6] + m[3] * b[0] + m[4] * b[3] +
                    m[5] * b[6] + m[6] * c[0] + m[7] * c[3] + m[8] * c[6];
  const float green = m[0] * a[1] + m[1] * a[4] + m[2] * a[7] + m[3] * b[1] + m[4] * b[4] +
                      m[5] * b[7] + m[6] * c[1] + m[7] * c[4] + m[8] * c[7];
  const float blue = m[0] * a[2] + m[1] * a[5] + m[2] * a[8] + m[3] * b[2] + m[4] * b[5] +
                     m[5] * b[8] + m[6] * c[2] + m[7] * c[5] + m[8] * c[8];
  out[0] = conv_to_pixel(red);
  out[1] = conv_to_pixel(green);
  out[2] = conv_to_pixel(blue);
}

// 3×3 mask, one plane, window inside the image: the mask loop unrolled (the report's UM).
inline std::uint8_t pixel_plane3x3(const std::uint8_t* __restrict__ centre, int row_stride,
                                   const float* __restrict__ m) {
  const std::uint8_t* a = centre - row_stride;
  const std::uint8_t* c = centre + row_stride;
  return conv_to_pixel(m[0] * a[-1] + m[1] * a[0] + m[2] * a[1] + m[3] * centre[-1] +
                       m[4] * centre[0] + m[5] * centre[1] + m[6] * c[-1] + m[7] * c[0] +
                       m[8] * c[1]);
}

// Runs a pixel walk over interleaved samples: `Walk(input, geometry, out)` fills out.
template <void (*Walk)(const ConvInput&, const Geometry&, ImageU8&)>
class AosRunner final : public Runner<Conv> {
 public:
  explicit AosRunner(const ConvInput& input)
      : input_(input), geometry_(geometry_of(input)), out_(make_conv_output(input)) {}
  void poison(std::uint8_t byte) override { std::fill(out_.data.begin(), out_.data.end(), byte); }
  void compute() override { Walk(input_, geometry_, out_); }
  void download(ImageU8& out) override { out = out_; }

 private:
  const ConvInput& input_;
  Geometry geometry_;
  ImageU8 out_;
};

// Runs a pixel walk over planar samples; the layout changes outside the timed region.
template <void (*Walk)(const PlanarImageU8&, const Mask&, const Geometry&, PlanarImageU8&)>
class SoaRunner final : public Runner<Conv> {
 public:
  explicit SoaRunner(const ConvInput& input)
      : input_(input),
        geometry_(geometry_of(input)),
        in_(to_planar(input.image)),
        out_(geometry_.out_width, geometry_.out_height, geometry_.channels) {}
  void poison(std::uint8_t byte) override { std::fill(out_.data.begin(), out_.data.end(), byte); }
  void compute() override { Walk(in_, input_.mask, geometry_, out_); }
  void download(ImageU8& out) override { out = to_interleaved(out_); }

 private:
  const ConvInput& input_;
  Geometry geometry_;
  PlanarImageU8 in_;
  PlanarImageU8 out_;
};

inline bool is_rgb3x3(const ConvInput& input) {
  return input.mask.size == 3 && input.image.channels == 3;
}
inline bool is_3x3(const ConvInput& input) {
  return input.mask.size == 3;
}

}  // namespace kbench::host_conv
