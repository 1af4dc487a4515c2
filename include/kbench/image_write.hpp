#pragma once
// Writing images: PNG (1 to 4 channels) or binary PPM/PGM (3 or 1 channel), chosen by the file
// name's extension; "-" (standard output) and an extensionless character device or FIFO take
// PPM/PGM by the image's channel count.

#include <string>

#include "kbench/file_io.hpp"
#include "kbench/image.hpp"

namespace kbench {

enum class ImageFileFormat { png, pnm };

// The format `path` is written in, for an image of `channels` channels; throws UsageError for an
// extension the writer does not know or a channel count the format cannot hold, so a tool can
// refuse before any work.
ImageFileFormat output_image_format(const std::string& path, int channels);

// `image` encoded as `format` would store it.
std::string encode_image(const ImageU8& image, ImageFileFormat format, const std::string& path);

// Encodes `image` in `out`'s format and writes it to `out` (committed by the caller).
void write_image(OutputFile& out, const ImageU8& image);

// The same to a file of its own, committed when complete.
void write_image(const std::string& path, const ImageU8& image);

}  // namespace kbench
