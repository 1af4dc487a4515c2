#include "kbench/image.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <regex>

#include "kbench/error.hpp"
#include "kbench/random.hpp"

namespace kbench {

void copy_host_rows(std::uint8_t* to, std::size_t to_pitch, const std::uint8_t* from,
                    std::size_t from_pitch, std::size_t row_bytes, std::size_t rows) {
  constexpr std::size_t kParallelBytes = std::size_t(1) << 20;
  const bool parallel = row_bytes * rows >= kParallelBytes;
  const auto count = std::int64_t(rows);
#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t y = 0; y < count; ++y) {
    std::memcpy(to + std::size_t(y) * to_pitch, from + std::size_t(y) * from_pitch, row_bytes);
  }
}

std::size_t checked_sample_count(int width, int height, int channels, std::size_t sample_bytes) {
  if (width <= 0 || height <= 0) {
    throw Error("image size " + std::to_string(width) + "x" + std::to_string(height) +
                " is empty or negative");
  }
  if (channels < 1 || channels > 4) {
    throw Error("an image has 1 to 4 channels, not " + std::to_string(channels));
  }
  const std::size_t row_bytes = std::size_t(width) * std::size_t(channels) * sample_bytes;
  if (row_bytes > kMaxRowBytes) {
    throw Error("an image row of " + std::to_string(width) + " pixels x " +
                std::to_string(channels) + " channels is " + std::to_string(row_bytes) +
                " bytes, more than the " + std::to_string(kMaxRowBytes) + " a row may hold");
  }
  const std::size_t count = std::size_t(width) * std::size_t(height) * std::size_t(channels);
  if (count > std::numeric_limits<std::size_t>::max() / sample_bytes) {
    throw Error("image size " + std::to_string(width) + "x" + std::to_string(height) +
                " overflows the address space");
  }
  return count;
}

template <class T>
std::vector<T> allocate_samples(std::size_t count, const char* what) {
  try {
    return std::vector<T>(count);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  throw OutOfMemory(std::string("cannot allocate ") + std::to_string(count * sizeof(T)) +
                    " bytes of host memory for " + what);
}

void* allocate_untouched_bytes(std::size_t bytes, const char* what) {
  const std::size_t lines =
      (std::max<std::size_t>(bytes, 1) + kCacheLineBytes - 1) / kCacheLineBytes;
  void* memory = std::aligned_alloc(kCacheLineBytes, lines * kCacheLineBytes);
  if (!memory) {
    throw OutOfMemory(std::string("cannot allocate ") + std::to_string(bytes) +
                      " bytes of host memory for " + what);
  }
  return memory;
}

void FreeHostMemory::operator()(void* memory) const {
  std::free(memory);
}

template std::vector<std::uint8_t> allocate_samples(std::size_t, const char*);
template std::vector<float> allocate_samples(std::size_t, const char*);
template std::vector<std::int32_t> allocate_samples(std::size_t, const char*);
template std::vector<std::uint32_t> allocate_samples(std::size_t, const char*);
template std::vector<double> allocate_samples(std::size_t, const char*);

template <class T>
PlanarImage<T> to_planar(const Image<T>& image) {
  PlanarImage<T> planar(image.width, image.height, image.channels);
  for (int c = 0; c < image.channels; ++c) {
    T* plane = planar.plane(c);
    for (std::size_t i = 0; i < image.pixel_count(); ++i) {
      plane[i] = image.data[i * image.channels + c];
    }
  }
  return planar;
}

template <class T>
Image<T> to_interleaved(const PlanarImage<T>& planar) {
  Image<T> image(planar.width, planar.height, planar.channels);
  for (int c = 0; c < planar.channels; ++c) {
    const T* plane = planar.plane(c);
    for (std::size_t i = 0; i < planar.pixel_count(); ++i) {
      image.data[i * planar.channels + c] = plane[i];
    }
  }
  return image;
}

template PlanarImage<std::uint8_t> to_planar(const Image<std::uint8_t>&);
template PlanarImage<float> to_planar(const Image<float>&);
template Image<std::uint8_t> to_interleaved(const PlanarImage<std::uint8_t>&);
template Image<float> to_interleaved(const PlanarImage<float>&);

ImageF32 to_f32(const ImageU8& image) {
  ImageF32 out(image.width, image.height, image.channels);
  for (std::size_t i = 0; i < image.sample_count(); ++i) out.data[i] = image.data[i];
  return out;
}

ImageU8 to_u8(const ImageF32& image) {
  ImageU8 out(image.width, image.height, image.channels);
  for (std::size_t i = 0; i < image.sample_count(); ++i) {
    const float v = std::round(image.data[i]);
    out.data[i] = static_cast<std::uint8_t>(v < 0.f ? 0.f : (v > 255.f ? 255.f : v));
  }
  return out;
}

ImageU8 to_gray(const ImageU8& image) {
  if (image.channels == 1) return image;
  ImageU8 gray(image.width, image.height, 1);
  // Pixels are independent: threads share the multi-gigabyte images compare generates.
  const std::size_t pixels = image.pixel_count();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < pixels; ++i) {
    const std::uint8_t* p = &image.data[i * image.channels];
    if (image.channels < 3) {
      gray.data[i] = p[0];
    } else {
      gray.data[i] =
          static_cast<std::uint8_t>((299u * p[0] + 587u * p[1] + 114u * p[2] + 500u) / 1000u);
    }
  }
  return gray;
}

ImageU8 synthetic_image(int width, int height, int channels, std::uint64_t seed) {
  ImageU8 image(width, height, channels);
  SplitMix64 random(seed);
  // A few discs with random centres, radii and colours over a diagonal gradient.
  struct Disc {
    double cx, cy, r2;
    int colour[4];
  };
  Disc discs[6];
  for (Disc& d : discs) {
    d.cx = random.uniform() * width;
    d.cy = random.uniform() * height;
    const double r = (0.05 + 0.2 * random.uniform()) * (width < height ? width : height);
    d.r2 = r * r;
    for (int& c : d.colour) c = int(random.next() % 256);
  }
  // Sample (x, y, c) takes the generator's next value in row-major sample order after the discs'
  // draws; each row jumps its own copy of the generator there, so rows can be made in parallel
  // (the multi-gigabyte images of the big cases) with the same result as one pass.
  const std::size_t row_samples = std::size_t(width) * std::size_t(channels);
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    SplitMix64 row_random = random;
    row_random.skip(std::size_t(y) * row_samples);
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        double v = 255.0 * (double(x) / width * (c + 1) + double(y) / height * (3 - c)) / 4.0;
        for (const Disc& d : discs) {
          const double dx = x - d.cx, dy = y - d.cy;
          if (dx * dx + dy * dy < d.r2) v = d.colour[c];
        }
        v += double(int(row_random.next() % 33) - 16);
        image.at(x, y, c) = static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
    }
  }
  return image;
}

std::vector<int> sample_rows(int height, int count, std::uint64_t seed) {
  if (height <= 0)
    throw Error("cannot sample rows of an image " + std::to_string(height) + " high");
  std::vector<int> rows;
  if (count >= height) {
    for (int y = 0; y < height; ++y) rows.push_back(y);
    return rows;
  }
  // The others are drawn from the rows between the ends until `count` are distinct; fewer than
  // height are wanted, so new rows remain.
  std::vector<bool> taken(std::size_t(height), false);
  taken[0] = taken[std::size_t(height) - 1] = true;
  rows = {0, height - 1};
  SplitMix64 random(seed);
  while (int(rows.size()) < std::max(count, 2) && int(rows.size()) < height) {
    const int y = random.between(1, height - 2);
    if (taken[std::size_t(y)]) continue;
    taken[std::size_t(y)] = true;
    rows.push_back(y);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());  // a one-row image's two ends
  return rows;
}

ImageSize parse_image_size(const std::string& text) {
  if (text == "480p") return {640, 480};
  if (text == "720p") return {1280, 720};
  if (text == "1080p") return {1920, 1080};
  if (text == "4k" || text == "4K" || text == "2160p") return {3840, 2160};
  if (text == "8k" || text == "8K") return {7680, 4320};
  static const std::regex size_pattern("([0-9]{1,6})[xX]([0-9]{1,6})");
  std::smatch match;
  if (std::regex_match(text, match, size_pattern)) {
    const ImageSize size{std::stoi(match[1]), std::stoi(match[2])};
    if (size.width > 0 && size.height > 0) return size;
  }
  throw Error("size '" + text + "' is not 480p, 720p, 1080p, 4k, 8k or WxH with W, H >= 1");
}

}  // namespace kbench
