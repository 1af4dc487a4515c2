#pragma once
// Per-pixel and per-row lbp bodies and the runner shared by the sequential and native CPU layers:
// those layers differ in how they walk the pixels (plain loops or OpenMP), not in what a pixel
// computes.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "kbench/detail/lbp_codes.hpp"
#include "kbench/lbp.hpp"
#include "kbench/registry.hpp"

namespace kbench::host_lbp {

// Output (x, y) is centred on input (x + shift, y + shift); shift is 1 for Border::crop.
struct Geometry {
  int in_width, in_height, out_width, out_height, shift;
};

inline Geometry geometry_of(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  return {input.gray.width, input.gray.height, out.width, out.height,
          input.params.border == Border::crop ? 1 : 0};
}

// Output pixel (x, y) anywhere: every neighbour read through clamped coordinates.
inline std::uint8_t code_clamped(const std::uint8_t* in, const Geometry& g, int x, int y) {
  const int cx = x + g.shift, cy = y + g.shift;
  return lbp_code([&](int dx, int dy) {
    return in[std::size_t(clamp_coordinate(cy + dy, g.in_height)) * g.in_width +
              clamp_coordinate(cx + dx, g.in_width)];
  });
}

// A pixel whose neighbours all lie inside the image, read directly around `centre`.
inline std::uint8_t code_inside(const std::uint8_t* centre, int stride) {
  return lbp_code([&](int dx, int dy) { return centre[std::ptrdiff_t(dy) * stride + dx]; });
}

// Output pixels whose neighbours all lie inside the input (lbp_inside).
using Rect = LbpInside;

inline Rect inside(const Geometry& g) {
  return lbp_inside(g.in_width, g.in_height, g.out_width, g.out_height, g.shift);
}

// Output pixel (x, y), read directly when it lies in `inner`.
inline std::uint8_t code_at(const std::uint8_t* in, const Geometry& g, const Rect& inner, int x,
                            int y) {
  if (x >= inner.x0 && x < inner.x1 && y >= inner.y0 && y < inner.y1) {
    return code_inside(in + std::size_t(y + g.shift) * g.in_width + x + g.shift, g.in_width);
  }
  return code_clamped(in, g, x, y);
}

// Stores the mapped code of output (x, y) and counts its bin.
inline void emit(const LbpTables& t, std::uint8_t code, std::uint8_t* out, std::uint32_t* hist) {
  *out = t.value[code];
  ++hist[t.bin[code]];
}

// Output row y: the pixels in `inner` read directly, the frame clamped.
inline void code_row(const std::uint8_t* in, const Geometry& g, const Rect& inner,
                     const LbpTables& t, int y, std::uint8_t* out_row, std::uint32_t* hist) {
  if (y < inner.y0 || y >= inner.y1) {
    for (int x = 0; x < g.out_width; ++x) emit(t, code_clamped(in, g, x, y), out_row + x, hist);
    return;
  }
  for (int x = 0; x < inner.x0; ++x) emit(t, code_clamped(in, g, x, y), out_row + x, hist);
  const std::uint8_t* centre = in + std::size_t(y + g.shift) * g.in_width + g.shift;
  for (int x = inner.x0; x < inner.x1; ++x) {
    emit(t, code_inside(centre + x, g.in_width), out_row + x, hist);
  }
  for (int x = inner.x1; x < g.out_width; ++x) {
    emit(t, code_clamped(in, g, x, y), out_row + x, hist);
  }
}

// The plain reference walk (sequential/lbp.cpp): every pixel through clamped reads.
void walk_plain(const LbpInput& input, const Geometry& g, const LbpTables& t, LbpResult& out);

using Walk = void (*)(const LbpInput&, const Geometry&, const LbpTables&, LbpResult&);

// Runs a pixel walk; the walk finds the histogram zeroed.
template <Walk kWalk>
class HostRunner final : public Runner<Lbp> {
 public:
  explicit HostRunner(const LbpInput& input)
      : input_(input),
        geometry_(geometry_of(input)),
        tables_(lbp_tables(input.params.mapping)),
        out_(make_lbp_output(input)) {}
  void poison(std::uint8_t byte) override {
    std::fill(out_.codes.data.begin(), out_.codes.data.end(), byte);
    std::memset(out_.histogram.data(), byte, out_.histogram.size() * sizeof(std::uint32_t));
  }
  void compute() override {
    std::fill(out_.histogram.begin(), out_.histogram.end(), 0u);
    kWalk(input_, geometry_, tables_, out_);
  }
  void download(LbpResult& out) override { out = out_; }

 private:
  const LbpInput& input_;
  Geometry geometry_;
  LbpTables tables_;
  LbpResult out_;
};

}  // namespace kbench::host_lbp
