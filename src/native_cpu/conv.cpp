// Native CPU conv: the report's OpenMP variants (collapse(2), static schedule, unrolled bodies,
// omp simd over a row).
#include "sequential/conv_host.hpp"

namespace kbench {
namespace {

using namespace host_conv;

void walk_aos(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::uint8_t* in = input.image.data.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int y = 0; y < g.out_height; ++y) {
    for (int x = 0; x < g.out_width; ++x) pixel_aos(in, g, input.mask, x, y, &out.at(x, y, 0));
  }
}

void walk_aos_rgb3x3(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::uint8_t* in = input.image.data.data();
  const float* m = input.mask.weights.data();
  const int stride = g.in_width * 3;
  const Rect inner = interior3(g);
  std::uint8_t* dst = out.data.data();
#pragma omp parallel
  {
#pragma omp for collapse(2) schedule(static) nowait
    for (int y = inner.y0; y < inner.y1; ++y) {
      for (int x = inner.x0; x < inner.x1; ++x) {
        const std::uint8_t* centre = in + (std::size_t(y + g.shift) * g.in_width + x + g.shift) * 3;
        pixel_aos_rgb3x3(centre, stride, m, dst + (std::size_t(y) * g.out_width + x) * 3);
      }
    }
#pragma omp single
    for_each_border_pixel(
        g, inner, [&](int x, int y) { pixel_aos(in, g, input.mask, x, y, &out.at(x, y, 0)); });
  }
}

void walk_soa3x3(const PlanarImageU8& in, const Mask& mask, const Geometry& g, PlanarImageU8& out) {
  const Rect inner = interior3(g);
  const float* m = mask.weights.data();
#pragma omp parallel
  {
    for (int c = 0; c < g.channels; ++c) {
      const std::uint8_t* plane = in.plane(c);
      std::uint8_t* dst = out.plane(c);
#pragma omp for schedule(static) nowait
      for (int y = inner.y0; y < inner.y1; ++y) {
        const std::uint8_t* row = plane + std::size_t(y + g.shift) * g.in_width + g.shift;
        std::uint8_t* out_row = dst + std::size_t(y) * g.out_width;
#pragma omp simd
        for (int x = inner.x0; x < inner.x1; ++x) {
          out_row[x] = pixel_plane3x3(row + x, g.in_width, m);
        }
      }
    }
#pragma omp single
    for (int c = 0; c < g.channels; ++c) {
      for_each_border_pixel(g, inner, [&](int x, int y) {
        out.at(x, y, c) = pixel_plane(in.plane(c), g, mask, x, y);
      });
    }
  }
}

}  // namespace

void register_conv_native_cpu(VariantList<Conv>& list) {
  // Preferences: the unrolled AoS body is the fastest CPU path for 3×3 RGB; the generic one
  // serves every other input.
  const auto add = [&](const char* name, Variant<Conv>::Make make,
                       std::function<bool(const ConvInput&)> supports, int preference) {
    list.push_back({name, Layer::native_cpu, Backend::openmp, false, std::move(make),
                    std::move(supports), preference});
  };
  add("omp-aos", make_runner<AosRunner<walk_aos>>, {}, 10);
  add("omp-aos-unrolled3", make_runner<AosRunner<walk_aos_rgb3x3>>, is_rgb3x3, 12);
  add("omp-soa-unrolled3", make_runner<SoaRunner<walk_soa3x3>>, is_3x3, 11);
}

}  // namespace kbench
