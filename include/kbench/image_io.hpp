#pragma once
// Reading and writing images. Reads PNG, JPEG, BMP and binary PPM/PGM; writes PNG and PPM/PGM
// (chosen by the file name's extension). Every failure throws Error with a message that names the
// file and the reason; a write goes to a temporary name that is renamed only when complete.

#include <cstddef>
#include <string>

#include "kbench/image.hpp"

namespace kbench {

// The reader refuses images whose decoded samples (width × height × channels bytes) exceed this:
// 1 GiB, also stb_image's own limit for PNG. Widths and heights above 2^24 are refused too.
constexpr std::size_t max_image_bytes = std::size_t(1) << 30;
constexpr long max_image_dimension = 1L << 24;

// Reads `path` with its own channel count (1 to 4).
ImageU8 read_image(const std::string& path);

// Decodes an image file's `size` bytes at `bytes` as read_image does (read_image reads the file
// and calls this). `name` is what messages call the data; images whose decoded samples exceed
// `max_bytes` are refused as too large.
ImageU8 read_image_from_memory(const void* bytes, std::size_t size, const std::string& name,
                               std::size_t max_bytes = max_image_bytes);

// Writes `image` to `path`: .png (1 to 4 channels), .ppm (3 channels) or .pgm (1 channel).
void write_image(const std::string& path, const ImageU8& image);

// Writes `text` to `path` through a temporary name, renamed when complete.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace kbench
