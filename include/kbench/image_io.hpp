#pragma once
// Reading and writing images. Reads PNG, JPEG, BMP and binary PPM/PGM; writes PNG and PPM/PGM
// (chosen by the file name's extension). Every failure throws Error with a message that names the
// file and the reason; a write goes to a temporary name that is renamed only when complete.

#include <string>

#include "kbench/image.hpp"

namespace kbench {

// Reads `path` with its own channel count (1 to 4).
ImageU8 read_image(const std::string& path);

// Writes `image` to `path`: .png (1 to 4 channels), .ppm (3 channels) or .pgm (1 channel).
void write_image(const std::string& path, const ImageU8& image);

// Writes `text` to `path` through a temporary name, renamed when complete.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace kbench
