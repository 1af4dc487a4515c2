#pragma once
// Image types: interleaved (AoS) and planar (SoA), over u8 or f32 samples.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kbench/context.hpp"
#include "kbench/host_device.hpp"

namespace kbench {

// Images may hold more than 2^31 (or 2^32) samples: a 30000×30000 RGB image is 2.7 GB. Sample
// and row offsets are therefore 64-bit everywhere, while coordinates and the byte offsets within
// one row stay int, which the kernels' inner loops use. A row may hold at most kMaxRowBytes
// bytes, so that a row's length, its padded pitch and a few samples past either end all fit in
// int with room to spare.
constexpr std::size_t kMaxRowBytes = std::size_t(1) << 30;

// Index of interleaved sample (x, y, c) of an image `width` pixels wide with `channels` samples
// a pixel, computed in 64 bits.
KBENCH_HOST_DEVICE constexpr std::size_t sample_index(int width, int channels, int x, int y,
                                                      int c) {
  return (std::size_t(y) * std::size_t(width) + std::size_t(x)) * std::size_t(channels) +
         std::size_t(c);
}

// Index of byte x of row y in rows `pitch` bytes apart, computed in 64 bits.
KBENCH_HOST_DEVICE constexpr std::size_t pitched_index(std::size_t pitch, int x, int y) {
  return std::size_t(y) * pitch + std::size_t(x);
}

// Checks that a width × height × channels buffer of `sample_bytes` samples is valid and can
// be addressed (no row above kMaxRowBytes); throws Error otherwise. Returns the sample count.
std::size_t checked_sample_count(int width, int height, int channels, std::size_t sample_bytes);

// Allocates `count` elements, turning an allocation failure into an Error that names `what`.
template <class T>
std::vector<T> allocate_samples(std::size_t count, const char* what);

// Host memory for `count` elements on whole cache lines (aligned rows give aligned loads), not
// written: the first thread to write a page places it, so parallel loops that write their own
// rows first keep them near their cores. An allocation failure throws as allocate_samples does.
constexpr std::size_t kCacheLineBytes = 64;
void* allocate_untouched_bytes(std::size_t bytes, const char* what);
struct FreeHostMemory {
  void operator()(void* memory) const;
};
template <class T>
using HostBuffer = std::unique_ptr<T[], FreeHostMemory>;
template <class T>
HostBuffer<T> allocate_untouched(std::size_t count, const char* what) {
  return HostBuffer<T>(static_cast<T*>(allocate_untouched_bytes(count * sizeof(T), what)));
}

// Interleaved: sample (x, y, c) lives at data[(y * width + x) * channels + c].
template <class T>
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<T> data;

  Image() = default;
  Image(int w, int h, int c)
      : width(w),
        height(h),
        channels(c),
        data(allocate_samples<T>(checked_sample_count(w, h, c, sizeof(T)), "image")) {}

  std::size_t pixel_count() const { return std::size_t(width) * std::size_t(height); }
  std::size_t sample_count() const { return data.size(); }
  T& at(int x, int y, int c) { return data[sample_index(width, channels, x, y, c)]; }
  const T& at(int x, int y, int c) const { return data[sample_index(width, channels, x, y, c)]; }
};

// Planar: sample (x, y, c) lives at data[c * width * height + y * width + x].
template <class T>
struct PlanarImage {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<T> data;

  PlanarImage() = default;
  PlanarImage(int w, int h, int c)
      : width(w),
        height(h),
        channels(c),
        data(allocate_samples<T>(checked_sample_count(w, h, c, sizeof(T)), "image")) {}

  std::size_t pixel_count() const { return std::size_t(width) * std::size_t(height); }
  std::size_t sample_count() const { return data.size(); }
  T* plane(int c) { return data.data() + std::size_t(c) * pixel_count(); }
  const T* plane(int c) const { return data.data() + std::size_t(c) * pixel_count(); }
  T& at(int x, int y, int c) { return plane(c)[sample_index(width, 1, x, y, 0)]; }
  const T& at(int x, int y, int c) const { return plane(c)[sample_index(width, 1, x, y, 0)]; }
};

template <class T>
bool operator==(const Image<T>& a, const Image<T>& b) {
  return a.width == b.width && a.height == b.height && a.channels == b.channels && a.data == b.data;
}

// Gives `image` the shape w × h × c, reallocating only when the shape changes, so a timed
// download into the same image pays no allocation.
template <class T>
void reshape(Image<T>& image, int w, int h, int c) {
  if (image.width != w || image.height != h || image.channels != c) image = Image<T>(w, h, c);
}

using ImageU8 = Image<std::uint8_t>;
using ImageF32 = Image<float>;
using PlanarImageU8 = PlanarImage<std::uint8_t>;

// Copies `rows` rows of `row_bytes` bytes between host buffers whose rows lie `from_pitch` and
// `to_pitch` bytes apart; a large block's rows on every host thread, since one core's copy would
// cost as much as the kernel it feeds.
void copy_host_rows(std::uint8_t* to, std::size_t to_pitch, const std::uint8_t* from,
                    std::size_t from_pitch, std::size_t row_bytes, std::size_t rows);

// Views of a host image for the library calls.
inline ImageView image_view(ImageU8& image) {
  return host_image(image.data.data(), image.width, image.height, image.channels);
}
inline ConstImageView image_view(const ImageU8& image) {
  return host_image(image.data.data(), image.width, image.height, image.channels);
}
using PlanarImageF32 = PlanarImage<float>;

template <class T>
PlanarImage<T> to_planar(const Image<T>& image);
template <class T>
Image<T> to_interleaved(const PlanarImage<T>& image);

ImageF32 to_f32(const ImageU8& image);
// Rounds half away from zero and clamps to 0..255.
ImageU8 to_u8(const ImageF32& image);

// ITU-R BT.601 luma, Y = (299 R + 587 G + 114 B) / 1000 rounded to nearest, in integers so every
// layer converts identically. One-channel images pass through; two- and four-channel images
// drop their alpha.
ImageU8 to_gray(const ImageU8& image);

// A deterministic, non-trivial test image: smooth gradients, hard-edged shapes and noise.
ImageU8 synthetic_image(int width, int height, int channels, std::uint64_t seed);

// The rows a check compares where the whole reference is too large to hold (the double
// reference of a conv of 30000×30000 RGB is 21.6 GB): the first and the last of `height` rows and
// others drawn with `seed`, `count` in all (at least the two ends), in increasing order; every row
// when count >= height.
std::vector<int> sample_rows(int height, int count, std::uint64_t seed);

struct ImageSize {
  int width;
  int height;
};
// "480p" (640×480), "1080p" (1920×1080), "4k" (3840×2160) or "WxH".
ImageSize parse_image_size(const std::string& text);

}  // namespace kbench
