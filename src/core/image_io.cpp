#include "kbench/image_io.hpp"

// stb_image's decoder is compiled here, private to this file, instead of taken from Debian's
// prebuilt libstb.a: the sanitizer and fuzzer builds then instrument it, and it decodes only the
// formats the reader promises (stb's TGA test accepts many random files as TGA). The build tree's
// copy carries the project's patches (cmake/stb-patches/).
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_MAX_DIMENSIONS (1 << 24)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb_patched/stb_image.h>
#pragma GCC diagnostic pop
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "kbench/error.hpp"

namespace kbench {
namespace {

static_assert(STBI_MAX_DIMENSIONS == max_image_dimension, "one dimension limit, stated once");

std::string lower_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

std::vector<unsigned char> read_file_bytes(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  std::size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file)) > 0) {
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  if (std::ferror(file)) throw Error("cannot read '" + path + "': " + std::strerror(errno));
  return bytes;
}

constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();

// a × b, or `saturated` when that does not fit: header fields may claim anything.
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > saturated / a) return saturated;
  return a * b;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > saturated - a ? saturated : a + b;
}

std::string byte_count(std::uint64_t bytes) {
  if (bytes == saturated) return "more than 2^64 bytes";
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes >= (1u << 20)) {
    char scaled[32];
    std::snprintf(scaled, sizeof scaled, " (%.1f %s)",
                  bytes >= (1u << 30) ? double(bytes) / (1u << 30) : double(bytes) / (1u << 20),
                  bytes >= (1u << 30) ? "GiB" : "MiB");
    text += scaled;
  }
  return text;
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
};

// Bounds-checked reads of a file's bytes: a header that runs past the end is a truncated file.
class HeaderBytes {
 public:
  HeaderBytes(const unsigned char* data, std::size_t size, const std::string& name,
              const char* format)
      : data_(data), size_(size), name_(name), format_(format) {}

  std::size_t size() const { return size_; }
  bool has(std::size_t offset, std::size_t count) const {
    return offset <= size_ && count <= size_ - offset;
  }
  unsigned char u8(std::size_t offset) const {
    if (!has(offset, 1)) {
      throw error("is truncated: it ends after " + std::to_string(size_) + " bytes, inside its " +
                  format_ + " header");
    }
    return data_[offset];
  }
  std::uint32_t be16(std::size_t at) const { return std::uint32_t(u8(at)) << 8 | u8(at + 1); }
  std::uint32_t be32(std::size_t at) const { return be16(at) << 16 | be16(at + 2); }
  std::uint32_t le16(std::size_t at) const { return std::uint32_t(u8(at + 1)) << 8 | u8(at); }
  std::uint32_t le32(std::size_t at) const { return le16(at + 2) << 16 | le16(at); }

  Error error(const std::string& what) const { return Error("'" + name_ + "' " + what); }
  Error corrupt(const std::string& what) const {
    return error(std::string("is a corrupt ") + format_ + " file: " + what);
  }

 private:
  const unsigned char* data_;
  std::size_t size_;
  const std::string& name_;
  const char* format_;
};

// Deflate's best ratio is 1032:1 (a 258-byte match in a 1-bit length and a 1-bit distance code),
// so a PNG's compressed data is at least its filtered scan lines / 1032 bytes.
constexpr std::uint64_t deflate_best_ratio = 1032;

ImageHeader png_header(const HeaderBytes& in) {
  ImageHeader header;
  header.format = "PNG";
  header.data_kind = "compressed image data (IDAT)";
  if (in.be32(8) != 13 || in.be32(12) != 0x49484452u) {  // "IHDR"
    throw in.corrupt("it does not start with a 13-byte IHDR chunk");
  }
  header.width = in.be32(16);
  header.height = in.be32(20);
  const unsigned depth = in.u8(24), colour = in.u8(25);
  if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16) {
    throw in.corrupt("bit depth " + std::to_string(depth));
  }
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
  const std::uint64_t row_bits =
      saturating_mul(saturating_mul(header.width, std::uint64_t(file_samples)), depth);
  const std::uint64_t filtered = saturating_mul(1 + row_bits / 8, header.height);
  header.least_data_bytes = filtered / deflate_best_ratio;
  // Walk the chunks to IEND, adding up the compressed image data.
  std::size_t at = 8;
  while (in.has(at, 12)) {
    const std::uint32_t length = in.be32(at), type = in.be32(at + 4);
    if (length > 0x7fffffffu) throw in.corrupt("a chunk claims " + byte_count(length));
    if (!in.has(at + 12, length)) break;
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
  return header;
}

// Binary PGM (P5) and PPM (P6), parsed as stb does: fields separated by white space and
// comments, then one white-space byte, then the samples (16-bit when the maximum exceeds 255).
ImageHeader pnm_header(const HeaderBytes& in, bool colour) {
  ImageHeader header;
  header.format = colour ? "PPM" : "PGM";
  header.channels = colour ? 3 : 1;
  const auto space = [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  std::size_t at = 2;
  // Numbers saturate rather than overflow: stb's own parser overflows an int on long digit runs,
  // so headers with values past the limits must be refused here, before stb sees them.
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
  const std::uint64_t data_start = at + 1;
  header.data_bytes = in.size() - data_start;
  header.least_data_bytes = saturating_mul(saturating_mul(header.width, header.height),
                                           header.channels * (max_value > 255 ? 2 : 1));
  return header;
}

ImageHeader read_header(const unsigned char* bytes, std::size_t size, const std::string& name) {
  const auto starts_with = [&](const char* magic, std::size_t length) {
    return size >= length && std::memcmp(bytes, magic, length) == 0;
  };
  if (starts_with("\x89PNG\r\n\x1a\n", 8)) return png_header(HeaderBytes(bytes, size, name, "PNG"));
  if (starts_with("\xFF\xD8", 2)) return jpeg_header(HeaderBytes(bytes, size, name, "JPEG"));
  if (starts_with("BM", 2)) return bmp_header(HeaderBytes(bytes, size, name, "BMP"));
  if (starts_with("P5", 2)) return pnm_header(HeaderBytes(bytes, size, name, "PGM"), false);
  if (starts_with("P6", 2)) return pnm_header(HeaderBytes(bytes, size, name, "PPM"), true);
  throw Error("'" + name +
              "' is not a readable PNG, JPEG, BMP, PPM or PGM image: its first bytes match none "
              "of their signatures");
}

// stb_image decodes some truncated files without complaint (it pads missing JPEG scans and BMP
// rows with zeros), so those are checked for their ends here; PNG and PNM by their headers.
void check_complete(const unsigned char* bytes, std::size_t size, const std::string& name,
                    const ImageHeader& header) {
  const auto truncated = [&](const std::string& why) {
    return Error("'" + name + "' is truncated: " + why);
  };
  if (std::strcmp(header.format, "JPEG") == 0) {
    // A complete JPEG ends with the end-of-image marker (trailing padding is tolerated).
    std::size_t end = size;
    while (end > 2 && (bytes[end - 1] == 0x00 || bytes[end - 1] == 0x0A)) --end;
    if (end < 4 || bytes[end - 2] != 0xFF || bytes[end - 1] != 0xD9) {
      throw truncated("it does not end with the JPEG end-of-image marker");
    }
  } else if (std::strcmp(header.format, "BMP") == 0) {
    const std::uint32_t declared_size = HeaderBytes(bytes, size, name, "BMP").le32(2);
    if (declared_size > size) {
      throw truncated("its BMP header gives its size as " + std::to_string(declared_size) +
                      " bytes, but it has " + std::to_string(size));
    }
  }
}

}  // namespace

ImageU8 read_image_from_memory(const void* data, std::size_t size, const std::string& name,
                               std::size_t max_bytes) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (size == 0) throw Error("'" + name + "' is empty");
  const ImageHeader header = read_header(bytes, size, name);
  const std::string claims = std::string("its ") + header.format + " header claims " +
                             std::to_string(header.width) + " x " + std::to_string(header.height) +
                             " pixels";
  if (header.width == 0 || header.height == 0) {
    throw Error("'" + name + "' has no pixels: " + claims);
  }
  if (header.data_bytes < header.least_data_bytes) {
    throw Error("'" + name + "' is truncated or corrupt: " + claims + ", which need at least " +
                byte_count(header.least_data_bytes) + " of " + header.data_kind +
                ", but the file holds " + byte_count(header.data_bytes));
  }
  if (header.width > std::uint64_t(max_image_dimension) ||
      header.height > std::uint64_t(max_image_dimension)) {
    throw Error("'" + name + "' is too large: " + claims + "; the reader's limit is " +
                std::to_string(max_image_dimension) + " pixels a side");
  }
  const std::uint64_t decoded_bytes = header.width * header.height * header.channels;
  if (decoded_bytes > max_bytes) {
    throw Error("'" + name + "' is too large: " + std::to_string(header.width) + " x " +
                std::to_string(header.height) + " x " + std::to_string(header.channels) +
                " bytes (" + byte_count(decoded_bytes) + ") is larger than the reader's limit of " +
                byte_count(max_bytes));
  }
  if (size > std::size_t(std::numeric_limits<int>::max())) {
    throw Error("'" + name + "' is too large to read: " + byte_count(size) +
                " (stb_image reads at most 2 GiB)");
  }
  check_complete(bytes, size, name, header);
  int width = 0, height = 0, channels = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes, int(size), &width, &height, &channels, 0), &stbi_image_free);
  if (!pixels) {
    const std::string reason = stbi_failure_reason();
    if (reason == "outofmem") {
      throw Error("'" + name + "': not enough memory to decode it (" + claims + ")");
    }
    throw Error("'" + name + "' is a corrupt or truncated " + header.format + " file (" + reason +
                ")");
  }
  // The header parser and stb must agree: a disagreement would let a crafted file pass the checks
  // above with one size and be decoded with another.
  if (std::uint64_t(width) != header.width || std::uint64_t(height) != header.height ||
      channels < 1 || channels > header.channels) {
    throw Error("'" + name + "' is a corrupt " + header.format + " file: it decodes to " +
                std::to_string(width) + " x " + std::to_string(height) + " x " +
                std::to_string(channels) + ", but " + claims);
  }
  ImageU8 image(width, height, channels);
  std::memcpy(image.data.data(), pixels.get(), image.sample_count());
  return image;
}

ImageU8 read_image(const std::string& path) {
  const std::vector<unsigned char> bytes = read_file_bytes(path);
  return read_image_from_memory(bytes.data(), bytes.size(), path);
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create '" + temporary + "': " + std::strerror(errno));
    out.write(text.data(), std::streamsize(text.size()));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw Error("cannot write '" + temporary + "': " + std::strerror(errno));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("cannot rename '" + temporary + "' to '" + path + "': " + reason);
  }
}

void write_image(const std::string& path, const ImageU8& image) {
  checked_sample_count(image.width, image.height, image.channels, 1);
  const std::string ext = lower_extension(path);
  std::string encoded;
  if (ext == "png") {
    // stb_image_write sizes its filtered copy of the rows, (width × channels + 1) × height bytes,
    // and the compressed stream, which can be larger, in int: the reader's limit keeps both far
    // from 2^31.
    const std::uint64_t filtered =
        (std::uint64_t(image.width) * std::uint64_t(image.channels) + 1) *
        std::uint64_t(image.height);
    if (filtered > max_image_bytes) {
      throw Error("'" + path + "': a " + std::to_string(image.width) + " x " +
                  std::to_string(image.height) + " x " + std::to_string(image.channels) +
                  " image is larger than the PNG writer's limit of " + byte_count(max_image_bytes) +
                  "; write a .ppm or .pgm");
    }
    stbi_write_png_to_func(
        [](void* context, void* data, int size) {
          static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
        },
        &encoded, image.width, image.height, image.channels, image.data.data(),
        image.width * image.channels);
    if (encoded.empty()) throw Error("cannot encode '" + path + "' as PNG");
  } else if (ext == "ppm" || ext == "pgm") {
    const int wanted = ext == "ppm" ? 3 : 1;
    if (image.channels != wanted) {
      throw Error("'" + path + "': ." + ext + " holds " + std::to_string(wanted) +
                  "-channel images, this one has " + std::to_string(image.channels));
    }
    std::ostringstream header;
    header << (wanted == 3 ? "P6" : "P5") << '\n'
           << image.width << ' ' << image.height << "\n255\n";
    encoded = header.str();
    encoded.append(reinterpret_cast<const char*>(image.data.data()), image.sample_count());
  } else {
    throw Error("'" + path + "': cannot write ." + ext + " files (use .png, .ppm or .pgm)");
  }
  write_text_file(path, encoded);
}

}  // namespace kbench
