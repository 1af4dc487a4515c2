#pragma once
// Test frames in a caller's layout: rows padded, frames apart, the spare bytes filled.

#include <cstdint>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/image.hpp"

namespace kbench::testing {

// `image`'s frames laid out with `pad` spare bytes after every row and `gap` after every frame,
// the spare bytes holding `fill`.
struct PaddedFrames {
  std::vector<std::uint8_t> bytes;
  ImageView view;
  PaddedFrames(const std::vector<ImageU8>& frames, std::size_t pad, std::size_t gap,
               std::uint8_t fill = 0xA5) {
    const ImageU8& first = frames.front();
    const std::size_t row_bytes = std::size_t(first.width) * std::size_t(first.channels);
    const std::size_t pitch = row_bytes + pad;
    const std::size_t stride = pitch * first.height + gap;
    bytes.assign(stride * frames.size(), fill);
    view = {bytes.data(), first.width,        first.height, first.channels,
            pitch,        int(frames.size()), stride,       MemoryPlace::host()};
    for (std::size_t f = 0; f < frames.size(); ++f) {
      for (int y = 0; y < first.height; ++y) {
        std::uint8_t* row = view.row(int(f), y);
        for (std::size_t x = 0; x < row_bytes; ++x) row[x] = frames[f].data[y * row_bytes + x];
      }
    }
  }
  // Whether every byte outside the frames' rows still holds `fill`.
  bool spare_bytes_hold(std::uint8_t fill) const {
    const std::size_t row_bytes = view.row_bytes();
    for (std::size_t at = 0; at < bytes.size(); ++at) {
      const std::size_t in_frame = at % view.frame_pitch();
      const bool in_row = in_frame < view.row_pitch() * std::size_t(view.height) &&
                          in_frame % view.row_pitch() < row_bytes;
      if (!in_row && bytes[at] != fill) return false;
    }
    return true;
  }
  ImageU8 frame(int f) const {
    ImageU8 image(view.width, view.height, view.channels);
    const std::size_t row_bytes = view.row_bytes();
    for (int y = 0; y < view.height; ++y) {
      const std::uint8_t* row = view.row(f, y);
      for (std::size_t x = 0; x < row_bytes; ++x) image.data[y * row_bytes + x] = row[x];
    }
    return image;
  }
};

}  // namespace kbench::testing
