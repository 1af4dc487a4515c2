#include "kbench/image_io.hpp"

// stb_image's decoder is compiled here, private to this file, instead of taken from Debian's
// prebuilt libstb.a: the sanitizer and fuzzer builds then instrument it, and it decodes only the
// formats the reader promises (stb's TGA test accepts many random files as TGA). The build tree's
// copy carries the project's patches (cmake/stb-patches/). Binary PGM and PPM are decoded here
// instead: stb ignores their maximum value.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_MAX_DIMENSIONS (1 << 24)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb_patched/stb_image.h>
#pragma GCC diagnostic pop
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <vector>

#include "kbench/error.hpp"
#include "kbench/file_io.hpp"

namespace kbench {
namespace {

static_assert(STBI_MAX_DIMENSIONS == max_image_dimension, "one dimension limit, stated once");
static_assert(max_image_file_bytes <= std::size_t(std::numeric_limits<int>::max()),
              "stb_image takes a file's length in an int");

constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();

// a × b, or `saturated` when that does not fit: header fields may claim anything.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > saturated / a) return saturated;
  return a * b;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > saturated - a ? saturated : a + b;
}

// PNG's CRC-32 (ISO 3309, reflected polynomial 0xEDB88320) of `size` bytes, a byte a step
// through a 256-entry table.
std::uint32_t png_crc(const unsigned char* bytes, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> entries{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      entries[n] = c;
    }
    return entries;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// A sample of 0..max_value as 0..255: round(value × 255 / max_value), halves rounded up.
std::uint8_t scale_sample(std::uint32_t value, std::uint32_t max_value) {
  return std::uint8_t((2 * std::uint64_t(value) * 255 + max_value) /
                      (2 * std::uint64_t(max_value)));
}

// What a file's header claims, read before stb decodes the file so that a refusal can say what
// is wrong (stb reports most header problems as "unknown image type").
struct ImageHeader {
  const char* format = "";
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  int channels = 0;  // the most the decoded image can have
  // The image data the file holds, and the least that the claimed pixels can be encoded in.
  std::uint64_t data_bytes = 0;
  std::uint64_t least_data_bytes = 0;
  const char* data_kind = "image data";
  unsigned bit_depth = 8;         // of a PNG's or a PNM's samples
  std::uint32_t max_value = 255;  // PNM only: the samples' range is 0..max_value
  std::uint64_t data_start = 0;   // PNM only: where the samples start
  std::uint64_t file_bound = 0;   // the most bytes a file with this header is read to
  bool ends_at_bound = false;     // PNM and BMP: the file ends there, whatever follows
};

// Thrown by HeaderBytes reads past the end of a prefix that more bytes may follow.
struct NeedMoreBytes {};

// Bounds-checked reads of a file's bytes: a header that runs past the end is a truncated file,
// or, when `partial`, one whose next bytes are still to be read. `label` is how messages name the
// file: its quoted name, or "standard input".
class HeaderBytes {
 public:
  HeaderBytes(const unsigned char* data, std::size_t size, const std::string& label,
              const char* format, bool partial = false)
      : data_(data), size_(size), label_(label), format_(format), partial_(partial) {}

  std::size_t size() const { return size_; }
  const unsigned char* data() const { return data_; }
  bool has(std::size_t offset, std::size_t count) const {
    return offset <= size_ && count <= size_ - offset;
  }
  unsigned char u8(std::size_t offset) const {
    if (!has(offset, 1)) {
      if (partial_) throw NeedMoreBytes{};
      throw error("is truncated: it ends after " + std::to_string(size_) + " bytes, inside its " +
                  format_ + " header");
    }
    return data_[offset];
  }
  std::uint32_t be16(std::size_t at) const { return std::uint32_t(u8(at)) << 8 | u8(at + 1); }
  std::uint32_t be32(std::size_t at) const { return be16(at) << 16 | be16(at + 2); }
  std::uint32_t le16(std::size_t at) const { return std::uint32_t(u8(at + 1)) << 8 | u8(at); }
  std::uint32_t le32(std::size_t at) const { return le16(at + 2) << 16 | le16(at); }

  const std::string& label() const { return label_; }
  Error error(const std::string& what) const { return Error(label_ + " " + what); }
  Error corrupt(const std::string& what) const {
    return error(std::string("is a corrupt ") + format_ + " file: " + what);
  }

 private:
  const unsigned char* data_;
  std::size_t size_;
  const std::string& label_;
  const char* format_;
  bool partial_;
};

// "a 640 x 480 PNG", or "a JPEG" before its size is known: the image a bound is for, in messages.
std::string claimed_image(const ImageHeader& header) {
  if (header.width == 0 && header.height == 0) return std::string("a ") + header.format;
  return "a " + std::to_string(header.width) + " x " + std::to_string(header.height) + " " +
         header.format;
}

// Deflate's best ratio is 1032:1 (a 258-byte match in a 1-bit length and a 1-bit distance code),
// so a PNG's compressed data is at least its filtered scan lines / 1032 bytes.
constexpr std::uint64_t deflate_best_ratio = 1032;

// The bytes of a PNG's filtered scan lines: a filter byte and the packed samples for each row,
// of the whole image or, interlaced, of each of Adam7's seven passes.
std::uint64_t png_filtered_bytes(std::uint64_t width, std::uint64_t height,
                                 std::uint64_t pixel_bits, bool interlaced) {
  const auto lines = [&](std::uint64_t w, std::uint64_t h) {
    if (w == 0 || h == 0) return std::uint64_t(0);
    const std::uint64_t row = saturating_add(saturating_mul(w, pixel_bits), 7) / 8;
    return saturating_mul(saturating_add(row, 1), h);
  };
  if (!interlaced) return lines(width, height);
  static const int passes[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                   {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};  // x0 y0 dx dy
  std::uint64_t total = 0;
  for (const auto& p : passes) {
    const std::uint64_t w = width > std::uint64_t(p[0]) ? (width - p[0] + p[2] - 1) / p[2] : 0;
    const std::uint64_t h = height > std::uint64_t(p[1]) ? (height - p[1] + p[3] - 1) / p[3] : 0;
    total = saturating_add(total, lines(w, h));
  }
  return total;
}

// The most bytes a PNG of these filtered scan lines is read to, within the reader's limit. An
// encoder that cannot compress them stores them (5 bytes a block of up to 65535); the bound
// allows an eighth more than the filtered bytes, which covers stored blocks, IDAT chunk framing
// and encoders that code incompressible data with deflate's fixed codes (at most 9 bits a byte),
// 64 bytes for zlib's header and checksum, the signature, IHDR and IEND, and
// png_ancillary_allowance for the other chunks.
std::uint64_t png_file_bound(std::uint64_t filtered) {
  const std::uint64_t zlib = saturating_add(filtered, filtered / 8 + 64);
  const std::uint64_t bound =
      saturating_add(8 + 25 + 12, saturating_add(zlib, png_ancillary_allowance));
  return std::min<std::uint64_t>(bound, max_image_file_bytes);
}

// A chunk type as messages name it: its four letters, or its value when they are not letters.
std::string png_chunk_name(std::uint32_t type) {
  std::string name;
  for (int shift = 24; shift >= 0; shift -= 8) {
    const char c = char(type >> shift);
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "chunk of type 0x%08X", unsigned(type));
      return hex;
    }
    name += c;
  }
  return name + " chunk";
}

// The signature, IHDR and the bound a file of that header is read to; the chunks are walked by
// png_chunks.
ImageHeader png_ihdr(const HeaderBytes& in) {
  ImageHeader header;
  header.format = "PNG";
  header.data_kind = "compressed image data (IDAT)";
  if (in.be32(8) != 13 || in.be32(12) != 0x49484452u) {  // "IHDR"
    throw in.corrupt("it does not start with a 13-byte IHDR chunk");
  }
  header.width = in.be32(16);
  header.height = in.be32(20);
  const unsigned depth = in.u8(24), colour = in.u8(25), interlace = in.u8(28);
  if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16) {
    throw in.corrupt("bit depth " + std::to_string(depth));
  }
  header.bit_depth = depth;
  int file_samples = 0;  // per pixel; a palette image decodes to RGB or RGBA
  switch (colour) {
    case 0:
      file_samples = header.channels = 1;
      break;
    case 2:
      file_samples = header.channels = 3;
      break;
    case 3:
      file_samples = 1, header.channels = 4;
      break;
    case 4:
      file_samples = header.channels = 2;
      break;
    case 6:
      file_samples = header.channels = 4;
      break;
    default:
      throw in.corrupt("colour type " + std::to_string(colour));
  }
  if (interlace > 1) throw in.corrupt("interlace method " + std::to_string(interlace));
  const std::uint64_t filtered = png_filtered_bytes(
      header.width, header.height, std::uint64_t(file_samples) * depth, interlace == 1);
  header.least_data_bytes = filtered / deflate_best_ratio;
  header.file_bound = png_file_bound(filtered);
  return header;
}

// Checks a chunk's CRC, which covers its type and data. A fuzzing build computes it but lets a
// mismatch pass, so that mutated files reach the decoder.
void check_png_crc(const HeaderBytes& in, std::size_t at, std::uint32_t length) {
  const std::uint32_t stored = in.be32(at + 8 + length);
  if (png_crc(in.data() + at + 4, 4 + std::size_t(length)) != stored) {
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    throw in.corrupt("the CRC of its " + png_chunk_name(in.be32(at + 4)) + " at byte " +
                     std::to_string(at) + " does not match its data");
#endif
  }
}

ImageHeader png_header(const HeaderBytes& in) {
  ImageHeader header = png_ihdr(in);
  // Walk the chunks to IEND, checking their CRCs and adding up the compressed image data.
  std::size_t at = 8;
  while (in.has(at, 12)) {
    const std::uint32_t length = in.be32(at), type = in.be32(at + 4);
    if (length > 0x7fffffffu) throw in.corrupt("a chunk claims " + byte_count(length));
    if (!in.has(at + 12, length)) break;
    check_png_crc(in, at, length);
    if (type == 0x49454e44u) return header;                // "IEND"
    if (type == 0x49444154u) header.data_bytes += length;  // "IDAT"
    at += 12 + length;
  }
  throw in.error("is truncated: it ends after " + std::to_string(in.size()) +
                 " bytes, inside the PNG chunk at byte " + std::to_string(at) +
                 " and before the IEND chunk");
}
// Two holes in stb_image 2.27's JPEG decoder, both found by fuzz_image_reader, are closed by
// walking the file's segments as stb does before it decodes:
// - a Huffman table (DHT) whose 16 code counts add up to over 256 makes stb write past its
//   256-entry tables (heap overflow);
// - a scan (SOS) that uses a Huffman table no DHT has defined makes stb decode with the table's
//   uninitialised memory and index far outside it (out-of-bounds read).
// stb meets a marker only after a 0xFF byte outside the segments it skips by their lengths, so
// every marker stb can act on is seen here, with the tables defined before it.
void check_jpeg_tables(const HeaderBytes& in) {
  bool defined[2][4] = {};  // [DC, AC][table id]
  bool progressive = false;
  std::size_t at = 2;
  while (in.has(at, 2)) {
    if (in.u8(at) != 0xFF) {  // entropy-coded data, or junk stb skips
      ++at;
      continue;
    }
    while (in.has(at, 1) && in.u8(at) == 0xFF) ++at;  // fill bytes
    if (!in.has(at, 3)) return;
    const std::size_t marker_at = at - 1;
    const unsigned marker = in.u8(at++);
    if (marker == 0xD9) return;  // end of image: stb reads no further
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;
    const std::size_t length = in.be16(at);
    const std::string where = " at byte " + std::to_string(marker_at);
    if (marker == 0xC2) progressive = true;
    if (marker == 0xC4) {
      std::size_t table = at + 2;
      for (std::ptrdiff_t left = std::ptrdiff_t(length) - 2; left > 0;) {
        const unsigned kind = in.u8(table) >> 4, id = in.u8(table) & 15;
        std::size_t codes = 0;
        for (int i = 0; i < 16; ++i) codes += in.u8(table + 1 + i);
        if (codes > 256) {
          throw in.corrupt("a Huffman table (DHT" + where + ") has " + std::to_string(codes) +
                           " codes, more than 256");
        }
        if (kind <= 1 && id <= 3) defined[kind][id] = true;
        table += 17 + codes;
        left -= std::ptrdiff_t(17 + codes);
      }
    } else if (marker == 0xDA) {
      // A sequential scan decodes with both tables of each component; a progressive one with
      // the DC table (first DC scan), none (DC refinement) or the AC table (AC scans).
      const unsigned components = in.u8(at + 2);
      const unsigned spectral_start = in.u8(at + 3 + 2 * components);
      const unsigned approximation_high = in.u8(at + 5 + 2 * components) >> 4;
      const bool needs_dc = !progressive || (spectral_start == 0 && approximation_high == 0);
      const bool needs_ac = !progressive || spectral_start != 0;
      for (unsigned c = 0; c < components; ++c) {
        const unsigned tables = in.u8(at + 4 + 2 * c), dc = tables >> 4, ac = tables & 15;
        if ((needs_dc && dc <= 3 && !defined[0][dc]) || (needs_ac && ac <= 3 && !defined[1][ac])) {
          throw in.corrupt("its scan" + where + " uses a Huffman table that no DHT defines");
        }
      }
    }
    at += length;
  }
}

ImageHeader jpeg_header(const HeaderBytes& in) {
  check_jpeg_tables(in);
  ImageHeader header;
  header.format = "JPEG";
  header.data_kind = "entropy-coded data";
  std::size_t at = 2;
  for (;;) {
    while (in.u8(at) != 0xFF) ++at;  // junk between segments, which stb skips too
    while (in.u8(at) == 0xFF) ++at;  // fill bytes
    const unsigned marker = in.u8(at++);
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length field
    if (marker == 0xD9 || marker == 0xDA) {
      throw in.corrupt("no frame header (SOF) before its image data");
    }
    const std::size_t length = in.be16(at);
    if (length < 2) throw in.corrupt("a segment of length " + std::to_string(length));
    const bool frame =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (!frame) {
      at += length;
      continue;
    }
    if (length < 8) throw in.corrupt("a frame header of length " + std::to_string(length));
    header.height = in.be16(at + 3);
    header.width = in.be16(at + 5);
    header.channels = in.u8(at + 7) >= 3 ? 3 : 1;
    const std::uint64_t end = at + length;
    header.data_bytes = in.size() > end ? in.size() - end : 0;
    // Sequential Huffman coding spends at least 2 bits per 8×8 block (a DC code and an
    // end-of-block code); progressive end-of-band runs have no such bound.
    if (marker == 0xC0 || marker == 0xC1) {
      header.least_data_bytes = (header.width + 7) / 8 * ((header.height + 7) / 8) / 4;
    }
    return header;
  }
}

ImageHeader bmp_header(const HeaderBytes& in) {
  ImageHeader header;
  header.format = "BMP";
  const std::uint32_t header_size = in.le32(14);
  std::uint32_t bits_per_pixel = 0, compression = 0;
  if (header_size == 12) {
    header.width = in.le16(18);
    header.height = in.le16(20);
    bits_per_pixel = in.le16(24);
  } else if (header_size == 40 || header_size == 56 || header_size == 108 || header_size == 124) {
    const auto width = std::int32_t(in.le32(18)), height = std::int32_t(in.le32(22));
    if (width < 0) throw in.corrupt("negative width " + std::to_string(width));
    header.width = std::uint64_t(width);
    // Negative heights mean top-down rows; stb takes abs() of it, undefined for INT32_MIN.
    header.height = height < 0 ? std::uint64_t(-std::int64_t(height)) : std::uint64_t(height);
    bits_per_pixel = in.le16(28);
    compression = in.le32(30);
  } else {
    throw in.corrupt("unknown header size " + std::to_string(header_size));
  }
  header.channels = bits_per_pixel == 16 || bits_per_pixel == 32 ? 4 : 3;
  if (compression == 0 || compression == 3) {  // uncompressed: rows padded to 4 bytes
    const std::uint64_t row_bytes =
        saturating_add(saturating_mul(header.width, bits_per_pixel), 31) / 32 * 4;
    header.least_data_bytes = saturating_mul(row_bytes, header.height);
    const std::uint64_t headers = 14 + std::uint64_t(header_size);
    header.data_bytes = in.size() > headers ? in.size() - headers : 0;
  }
  // The file ends where its first header says; a size too small for the headers (some writers
  // leave it 0) says nothing, and such a file is read to its end, within the reader's limit.
  header.file_bound = in.le32(2);
  header.ends_at_bound = header.file_bound >= 14 + std::uint64_t(header_size);
  if (!header.ends_at_bound) header.file_bound = max_image_file_bytes;
  return header;
}

// Binary PGM (P5) and PPM (P6) as Netpbm defines them: fields separated by white space and
// comments, then one white-space byte, then the samples, 16-bit big-endian when the maximum
// value exceeds 255. The file ends after the samples.
ImageHeader pnm_header(const HeaderBytes& in, bool colour) {
  ImageHeader header;
  header.format = colour ? "PPM" : "PGM";
  header.channels = colour ? 3 : 1;
  const auto space = [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  std::size_t at = 2;
  // Numbers saturate rather than overflow, so values past every limit are refused as such.
  const auto number = [&](const char* field) {
    for (;;) {
      while (space(in.u8(at))) ++at;
      if (in.u8(at) != '#') break;
      while (in.u8(at) != '\n' && in.u8(at) != '\r') ++at;
    }
    if (!std::isdigit(in.u8(at)))
      throw in.corrupt(std::string("its ") + field + " is not a number");
    std::uint64_t value = 0;
    while (in.has(at, 1) && std::isdigit(in.u8(at))) {
      value = saturating_add(saturating_mul(value, 10), std::uint64_t(in.u8(at++) - '0'));
    }
    if (value == saturated) throw in.corrupt(std::string("its ") + field + " has too many digits");
    return value;
  };
  header.width = number("width");
  header.height = number("height");
  const std::uint64_t max_value = number("maximum value");
  if (max_value == 0 || max_value > 65535) {
    throw in.corrupt("maximum value " + std::to_string(max_value) + " is not 1 to 65535");
  }
  if (!space(in.u8(at))) throw in.corrupt("no white space after its maximum value");
  header.max_value = std::uint32_t(max_value);
  header.bit_depth = max_value > 255 ? 16 : 8;
  header.data_start = at + 1;
  header.data_bytes = in.size() - header.data_start;
  header.least_data_bytes = saturating_mul(saturating_mul(header.width, header.height),
                                           header.channels * (header.bit_depth / 8));
  header.file_bound = saturating_add(header.data_start, header.least_data_bytes);
  header.ends_at_bound = true;
  return header;
}

enum class Format { png, jpeg, bmp, pgm, ppm };

struct Signature {
  const char* bytes;
  std::size_t length;
  Format format;
  const char* name;
};

constexpr Signature signatures[] = {{"\x89PNG\r\n\x1a\n", 8, Format::png, "PNG"},
                                    {"\xFF\xD8", 2, Format::jpeg, "JPEG"},
                                    {"BM", 2, Format::bmp, "BMP"},
                                    {"P5", 2, Format::pgm, "PGM"},
                                    {"P6", 2, Format::ppm, "PPM"}};

// The signature `bytes` start with, or nullptr. When they are too few to tell but start as one
// of them does, `undecided` (where given) is set.
const Signature* find_signature(const unsigned char* bytes, std::size_t size,
                                bool* undecided = nullptr) {
  for (const Signature& signature : signatures) {
    const std::size_t common = std::min(size, signature.length);
    if (std::memcmp(bytes, signature.bytes, common) != 0) continue;
    if (common == signature.length) return &signature;
    if (undecided) *undecided = true;
  }
  return nullptr;
}

Error no_signature(const std::string& label) {
  return Error(label +
               " is not a readable PNG, JPEG, BMP, PPM or PGM image: its first bytes match none "
               "of their signatures");
}

ImageHeader read_header(const unsigned char* bytes, std::size_t size, const std::string& label) {
  const Signature* signature = find_signature(bytes, size);
  if (!signature) throw no_signature(label);
  const HeaderBytes in(bytes, size, label, signature->name);
  switch (signature->format) {
    case Format::png:
      return png_header(in);
    case Format::jpeg:
      return jpeg_header(in);
    case Format::bmp:
      return bmp_header(in);
    case Format::pgm:
      return pnm_header(in, false);
    case Format::ppm:
      break;
  }
  return pnm_header(in, true);
}

// stb_image decodes some truncated files without complaint (it pads missing JPEG scans and BMP
// rows with zeros), so those are checked for their ends here; PNG and PNM by their headers.
void check_complete(const unsigned char* bytes, std::size_t size, const std::string& label,
                    const ImageHeader& header) {
  const auto truncated = [&](const std::string& why) {
    return Error(label + " is truncated: " + why);
  };
  if (std::strcmp(header.format, "JPEG") == 0) {
    // A complete JPEG ends with the end-of-image marker (trailing padding is tolerated).
    std::size_t end = size;
    while (end > 2 && (bytes[end - 1] == 0x00 || bytes[end - 1] == 0x0A)) --end;
    if (end < 4 || bytes[end - 2] != 0xFF || bytes[end - 1] != 0xD9) {
      throw truncated("it does not end with the JPEG end-of-image marker");
    }
  } else if (std::strcmp(header.format, "BMP") == 0) {
    const std::uint32_t declared_size = HeaderBytes(bytes, size, label, "BMP").le32(2);
    if (declared_size > size) {
      throw truncated("its BMP header gives its size as " + std::to_string(declared_size) +
                      " bytes, but it has " + std::to_string(size));
    }
  }
}

// Refuses what a header claims when the reader will not decode it: no pixels, less data than
// the pixels need (when `data_known`: the file is all there), a side or decoded samples over
// the reader's limits.
void check_claims(const ImageHeader& header, const std::string& label, std::size_t max_bytes,
                  bool data_known) {
  const std::string claims = std::string("its ") + header.format + " header claims " +
                             std::to_string(header.width) + " x " + std::to_string(header.height) +
                             " pixels";
  if (header.width == 0 || header.height == 0) {
    throw Error(label + " has no pixels: " + claims);
  }
  if (data_known && header.data_bytes < header.least_data_bytes) {
    throw Error(label + " is truncated or corrupt: " + claims + ", which need at least " +
                byte_count(header.least_data_bytes) + " of " + header.data_kind +
                ", but the file holds " + byte_count(header.data_bytes));
  }
  if (header.width > std::uint64_t(max_image_dimension) ||
      header.height > std::uint64_t(max_image_dimension)) {
    throw Error(label + " is too large: " + claims + "; the reader's limit is " +
                std::to_string(max_image_dimension) + " pixels a side");
  }
  const std::uint64_t decoded_bytes = header.width * header.height * header.channels;
  if (decoded_bytes > max_bytes) {
    throw Error(label + " is too large: " + std::to_string(header.width) + " x " +
                std::to_string(header.height) + " x " + std::to_string(header.channels) +
                " bytes (" + byte_count(decoded_bytes) + ") is larger than the reader's limit of " +
                byte_count(max_bytes));
  }
}

// PGM and PPM samples of any maximum value, scaled to 0..255; a sample above the maximum value
// is refused.
ImageU8 decode_pnm(const unsigned char* bytes, const std::string& label,
                   const ImageHeader& header) {
  ImageU8 image(int(header.width), int(header.height), header.channels);
  const unsigned char* samples = bytes + header.data_start;
  const std::size_t count = image.sample_count();
  const std::uint32_t max_value = header.max_value;
  if (header.bit_depth == 8 && max_value == 255) {
    std::memcpy(image.data.data(), samples, count);
    return image;
  }
  std::vector<std::uint8_t> scaled(std::size_t(max_value) + 1);
  for (std::uint32_t v = 0; v <= max_value; ++v) scaled[v] = scale_sample(v, max_value);
  const bool wide = header.bit_depth == 16;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t value =
        wide ? std::uint32_t(samples[2 * i]) << 8 | samples[2 * i + 1] : samples[i];
    if (value > max_value) {
      throw Error(label + " is a corrupt " + header.format + " file: its sample at byte " +
                  std::to_string(header.data_start + (wide ? 2 * i : i)) + " is " +
                  std::to_string(value) + ", above its maximum value " + std::to_string(max_value));
    }
    image.data[i] = scaled[value];
  }
  return image;
}

// Decodes a whole file's bytes; `label` names it in messages.
ImageU8 decode_image(const unsigned char* bytes, std::size_t size, const std::string& label,
                     std::size_t max_bytes) {
  if (size == 0) throw Error(label + " is empty");
  const ImageHeader header = read_header(bytes, size, label);
  check_claims(header, label, max_bytes, true);
  if (std::strcmp(header.format, "PGM") == 0 || std::strcmp(header.format, "PPM") == 0) {
    return decode_pnm(bytes, label, header);
  }
  if (size > std::size_t(std::numeric_limits<int>::max())) {
    throw Error(label + " is too large to read: " + byte_count(size) +
                " (stb_image reads at most 2 GiB)");
  }
  check_complete(bytes, size, label, header);
  // stb does not check the zlib stream's Adler-32 (it stops after the final deflate block); the
  // chunk CRCs, checked by png_header, cover the same bytes. A 16-bit PNG is decoded to 16-bit
  // samples and scaled as 16-bit PNM samples are, round(v × 255 / 65535), rather than by stb's
  // v >> 8.
  const bool wide = std::strcmp(header.format, "PNG") == 0 && header.bit_depth == 16;
  int width = 0, height = 0, channels = 0;
  std::unique_ptr<void, void (*)(void*)> pixels(
      wide ? static_cast<void*>(
                 stbi_load_16_from_memory(bytes, int(size), &width, &height, &channels, 0))
           : static_cast<void*>(
                 stbi_load_from_memory(bytes, int(size), &width, &height, &channels, 0)),
      &stbi_image_free);
  const std::string claims = std::string("its ") + header.format + " header claims " +
                             std::to_string(header.width) + " x " + std::to_string(header.height) +
                             " pixels";
  if (!pixels) {
    const std::string reason = stbi_failure_reason();
    if (reason == "outofmem") {
      throw Error(label + ": not enough memory to decode it (" + claims + ")");
    }
    throw Error(label + " is a corrupt or truncated " + header.format + " file (" + reason + ")");
  }
  // The header parser and stb must agree: a disagreement would let a crafted file pass the checks
  // above with one size and be decoded with another.
  if (std::uint64_t(width) != header.width || std::uint64_t(height) != header.height ||
      channels < 1 || channels > header.channels) {
    throw Error(label + " is a corrupt " + header.format + " file: it decodes to " +
                std::to_string(width) + " x " + std::to_string(height) + " x " +
                std::to_string(channels) + ", but " + claims);
  }
  ImageU8 image(width, height, channels);
  if (wide) {
    const auto* samples = static_cast<const std::uint16_t*>(pixels.get());
    for (std::size_t i = 0; i < image.sample_count(); ++i) {
      image.data[i] = scale_sample(samples[i], 65535);
    }
  } else {
    std::memcpy(image.data.data(), pixels.get(), image.sample_count());
  }
  return image;
}

// The bytes read_image reads before it knows the format: enough for every header it needs
// before reading on (PNG's IHDR, BMP's headers, a PNM header with its comments).
constexpr std::size_t probe_bytes = std::size_t(1) << 16;

// What the first bytes of a file that goes on promise: its format, its claims and the bound it is
// read to. Empty when the bytes are too few to tell and more may come; refused when they are
// `full` (probe_bytes) and still too few, or when the claims are over the reader's limits.
std::optional<ImageHeader> plan_read(const unsigned char* bytes, std::size_t size,
                                     const std::string& label, bool full) {
  bool undecided = false;
  const Signature* signature = find_signature(bytes, size, &undecided);
  if (!signature) {
    if (undecided) return std::nullopt;
    throw no_signature(label);
  }
  const HeaderBytes in(bytes, size, label, signature->name, true);
  ImageHeader header;
  try {
    switch (signature->format) {
      case Format::png:
        header = png_ihdr(in);
        break;
      case Format::jpeg:
        // Any number of 64 KiB segments (Exif, ICC profiles, comments) may come before and
        // between the scans, and a progressive JPEG may have any number of scans, so no bound
        // follows from its frame header: a JPEG is read to the reader's limit.
        header.format = "JPEG";
        header.file_bound = max_image_file_bytes;
        return header;
      case Format::bmp:
        header = bmp_header(in);
        break;
      case Format::pgm:
      case Format::ppm:
        header = pnm_header(in, signature->format == Format::ppm);
        break;
    }
  } catch (const NeedMoreBytes&) {
    if (!full) return std::nullopt;
    throw Error(label + " is not a readable " + signature->name +
                " file: its header does not end within its first " + byte_count(size));
  }
  check_claims(header, label, max_image_bytes, false);
  if (header.file_bound > max_image_file_bytes) {
    throw Error(label + " is larger than the reader's limit of " +
                byte_count(max_image_file_bytes) + " for " + claimed_image(header) +
                ": its header makes it " + byte_count(header.file_bound));
  }
  return header;
}

// Bytes read so far, in storage that grows without initialising what it adds.
class ReadBuffer {
 public:
  explicit ReadBuffer(const std::string& label) : label_(label) {}

  unsigned char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  void shrink(std::size_t size) { size_ = std::min(size_, size); }
  void reserve(std::size_t capacity) {
    if (capacity <= capacity_) return;
    std::unique_ptr<unsigned char[]> grown(new (std::nothrow) unsigned char[capacity]);
    if (!grown) {
      throw OutOfMemory("not enough memory to read " + label_ + " (" + byte_count(capacity) + ")");
    }
    if (size_ > 0) std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  unsigned char* end() { return data_.get() + size_; }
  void added(std::size_t count) { size_ += count; }

 private:
  const std::string& label_;
  std::unique_ptr<unsigned char[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// The file or standard input that read_image reads: a regular file is read to its size; a pipe,
// FIFO or character device as long as it gives bytes. Its descriptor is closed with it.
class ImageSource {
 public:
  explicit ImageSource(const std::string& path)
      : label_(path == "-" ? "standard input" : "'" + path + "'") {
    if (path == "-") {
      descriptor_.fd = STDIN_FILENO;
    } else {
      descriptor_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (descriptor_.fd < 0) throw Error("cannot open " + label_ + ": " + std::strerror(errno));
      descriptor_.owned = true;
    }
    struct stat status {};
    if (::fstat(descriptor_.fd, &status) != 0) {
      throw Error("cannot read " + label_ + ": " + std::strerror(errno));
    }
    if (S_ISDIR(status.st_mode)) throw Error(label_ + " is a folder, not an image");
    if (S_ISREG(status.st_mode)) {
      regular_ = true;
      const off_t offset = ::lseek(descriptor_.fd, 0, SEEK_CUR);
      size_ = std::uint64_t(status.st_size) - std::uint64_t(offset > 0 ? offset : 0);
    }
  }

  const std::string& label() const { return label_; }
  bool regular() const { return regular_; }
  std::uint64_t size() const { return size_; }  // of a regular file, from where reading starts
  bool ended() const { return ended_ || (regular_ && read_ >= size_); }

  // One read of at most limit − buffer.size() bytes into `buffer`; 0 at the end.
  std::size_t read_some(ReadBuffer& buffer, std::size_t limit) {
    if (buffer.size() >= limit) return 0;
    if (buffer.size() == buffer.capacity()) {
      // A regular file's rest in one allocation; a stream's storage doubles.
      std::size_t next = std::max(buffer.capacity() * 2, probe_bytes);
      if (regular_ && size_ > buffer.size()) next = std::size_t(size_);
      buffer.reserve(std::min(next, limit));
    }
    const std::size_t want = std::min(buffer.capacity(), limit) - buffer.size();
    const ssize_t got = read_retrying(buffer.end(), want);
    buffer.added(std::size_t(got));
    read_ += std::uint64_t(got);
    if (got == 0) ended_ = true;
    return std::size_t(got);
  }

  // Whether another byte follows what was read.
  bool goes_on() {
    unsigned char byte;
    return read_retrying(&byte, 1) > 0;
  }

 private:
  ssize_t read_retrying(unsigned char* into, std::size_t count) {
    for (;;) {
      const ssize_t got = ::read(descriptor_.fd, into, count);
      if (got >= 0) return got;
      if (errno != EINTR) throw Error("cannot read " + label_ + ": " + std::strerror(errno));
    }
  }

  struct Descriptor {
    int fd = -1;
    bool owned = false;
    Descriptor() = default;
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() {
      if (owned) ::close(fd);
    }
  };

  std::string label_;
  Descriptor descriptor_;
  bool regular_ = false, ended_ = false;
  std::uint64_t size_ = 0, read_ = 0;
};

// Reads the rest of a file whose first bytes gave `plan`: a PNM or BMP to its end (what follows
// is not read), a PNG to its IEND chunk, a JPEG to the end of the file. A PNG or JPEG that goes
// on past the bound is refused.
void read_rest(ImageSource& source, ReadBuffer& buffer, const ImageHeader& plan) {
  const std::size_t bound = std::size_t(plan.file_bound);
  const std::string over = source.label() + " is larger than the reader's limit of " +
                           byte_count(bound) + " for " + claimed_image(plan);
  if (plan.ends_at_bound) {
    buffer.shrink(bound);
    while (buffer.size() < bound && source.read_some(buffer, bound) > 0) {
    }
    return;
  }
  if (source.regular() && source.size() > bound) {
    throw Error(over + ": it has " + byte_count(source.size()));
  }
  const bool png = std::strcmp(plan.format, "PNG") == 0;
  std::uint64_t chunk = 8;  // the next PNG chunk to look at
  for (;;) {
    while (png && chunk + 8 <= buffer.size()) {
      const HeaderBytes in(buffer.data(), buffer.size(), source.label(), "PNG");
      const std::uint32_t length = in.be32(chunk), type = in.be32(chunk + 4);
      if (length > 0x7fffffffu) throw in.corrupt("a chunk claims " + byte_count(length));
      const std::uint64_t end = chunk + 12 + length;
      if (end > bound) {
        throw Error(over + ": its " + png_chunk_name(type) + " at byte " + std::to_string(chunk) +
                    " ends at byte " + std::to_string(end));
      }
      if (type == 0x49454e44u) {  // "IEND": the file ends with it
        if (buffer.size() < end) break;
        buffer.shrink(end);
        return;
      }
      chunk = end;
    }
    if (buffer.size() >= bound) {
      if (source.goes_on()) throw Error(over);
      return;
    }
    if (source.read_some(buffer, bound) == 0) return;
  }
}

}  // namespace

ImageU8 read_image_from_memory(const void* data, std::size_t size, const std::string& name,
                               std::size_t max_bytes) {
  return decode_image(static_cast<const unsigned char*>(data), size, "'" + name + "'", max_bytes);
}

ImageU8 read_image(const std::string& path) {
  ImageSource source(path);
  const std::string& label = source.label();
  if (source.regular() && source.size() > max_image_file_bytes) {
    throw Error(label + " is larger than the reader's limit of " +
                byte_count(max_image_file_bytes) + ": it has " + byte_count(source.size()));
  }
  ReadBuffer buffer(label);
  // The first bytes, until they name a format and hold its header; a source that ends first is
  // decoded whole.
  std::optional<ImageHeader> plan;
  while (!plan && !source.ended()) {
    source.read_some(buffer, probe_bytes);
    if (source.ended()) break;
    plan = plan_read(buffer.data(), buffer.size(), label, buffer.size() >= probe_bytes);
  }
  if (plan) read_rest(source, buffer, *plan);
  return decode_image(buffer.data(), buffer.size(), label, max_image_bytes);
}

}  // namespace kbench
