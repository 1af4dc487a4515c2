// Sequential conv: the plain reference and the report's single-core optimised variants.
#include "host_kernels/conv.hpp"

namespace kbench {
namespace {

using namespace host_conv;

// The reference: every output pixel, every mask tap, every channel, as in the report.
void walk_aos(const ConvInput& input, const Geometry& g, ImageU8& out) {
  for (int y = 0; y < g.out_height; ++y) {
    for (int x = 0; x < g.out_width; ++x) {
      pixel_aos(input.image.data.data(), g, input.mask, x, y, &out.at(x, y, 0));
    }
  }
}

void walk_soa(const PlanarImageU8& in, const Mask& mask, const Geometry& g, PlanarImageU8& out) {
  for (int c = 0; c < g.channels; ++c) {
    for (int y = 0; y < g.out_height; ++y) {
      for (int x = 0; x < g.out_width; ++x)
        out.at(x, y, c) = pixel_plane(in.plane(c), g, mask, x, y);
    }
  }
}

void walk_aos_rgb3x3(const ConvInput& input, const Geometry& g, ImageU8& out) {
  const std::uint8_t* in = input.image.data.data();
  const float* m = input.mask.weights.data();
  const int stride = g.in_width * 3;
  const Rect inner = interior3(g);
  for (int y = inner.y0; y < inner.y1; ++y) {
    for (int x = inner.x0; x < inner.x1; ++x) {
      const std::uint8_t* centre = in + (std::size_t(y + g.shift) * g.in_width + x + g.shift) * 3;
      pixel_aos_rgb3x3(centre, stride, m, &out.at(x, y, 0));
    }
  }
  for_each_border_pixel(
      g, inner, [&](int x, int y) { pixel_aos(in, g, input.mask, x, y, &out.at(x, y, 0)); });
}

void walk_soa3x3(const PlanarImageU8& in, const Mask& mask, const Geometry& g, PlanarImageU8& out) {
  const Rect inner = interior3(g);
  for (int c = 0; c < g.channels; ++c) {
    const std::uint8_t* plane = in.plane(c);
    for (int y = inner.y0; y < inner.y1; ++y) {
      for (int x = inner.x0; x < inner.x1; ++x) {
        out.at(x, y, c) =
            pixel_plane3x3(plane + std::size_t(y + g.shift) * g.in_width + x + g.shift, g.in_width,
                           mask.weights.data());
      }
    }
    for_each_border_pixel(
        g, inner, [&](int x, int y) { out.at(x, y, c) = pixel_plane(plane, g, mask, x, y); });
  }
}

}  // namespace

void register_conv_sequential(VariantList<Conv>& list) {
  const auto add = [&](const char* name, Variant<Conv>::Make make,
                       std::function<bool(const ConvInput&)> supports = {}) {
    list.push_back(
        {name, Layer::sequential, Backend::serial, false, std::move(make), std::move(supports)});
  };
  add("seq-aos", make_runner<AosRunner<walk_aos>>);
  add("seq-soa", make_runner<SoaRunner<walk_soa>>);
  add("seq-aos-unrolled3", make_runner<AosRunner<walk_aos_rgb3x3>>, is_rgb3x3);
  add("seq-soa-unrolled3", make_runner<SoaRunner<walk_soa3x3>>, is_3x3);
}

}  // namespace kbench
