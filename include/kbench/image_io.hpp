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

// The most bytes the reader reads from one file or stream: 2 GiB − 1, as stb_image takes a
// file's length in an int. Within it, each format is read to a bound of its own: a PGM or PPM to
// the end of its samples and a BMP to the size its header gives (what follows is not read); a PNG
// to its IEND chunk, at most its filtered scan lines (from IHDR) plus an eighth, plus
// png_ancillary_allowance; a JPEG to its end, at most this limit. A regular file larger than
// this limit, or a PNG or JPEG larger than its bound, is refused before it is read; a stream
// that goes on past the bound is refused when it gets there.
constexpr std::size_t max_image_file_bytes = (std::size_t(1) << 31) - 1;
// What a PNG's bound allows for its chunks other than the image data (text, ICC profiles, Exif).
constexpr std::size_t png_ancillary_allowance = std::size_t(16) << 20;

// Reads `path` ("-": standard input) with its own channel count (1 to 4). Samples other than
// 8-bit 0..255 (16-bit PNGs; PGMs and PPMs of any other maximum value) are scaled to 0..255 as
// round(v × 255 / max), max being 65535 or the PNM's maximum value. Every PNG chunk's CRC is
// checked.
ImageU8 read_image(const std::string& path);

// Decodes an image file's `size` bytes at `bytes` as read_image does once it has read them. `name`
// is what messages call the data; images whose decoded samples exceed `max_bytes` are refused as
// too large.
ImageU8 read_image_from_memory(const void* bytes, std::size_t size, const std::string& name,
                               std::size_t max_bytes = max_image_bytes);

}  // namespace kbench
