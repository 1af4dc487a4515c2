#include "kbench/image_io.hpp"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "kbench/error.hpp"

namespace kbench {
namespace {

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

std::uint32_t little_endian_u32(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

// Offset of the first sample of a binary PNM: after magic, width, height and maxval (each
// preceded by white space or comments) and the single white-space byte that ends the header.
std::size_t pnm_data_offset(const std::vector<unsigned char>& bytes) {
  std::size_t i = 2;
  for (int field = 0; field < 3; ++field) {
    while (i < bytes.size() && (std::isspace(bytes[i]) || bytes[i] == '#')) {
      if (bytes[i] == '#') {
        while (i < bytes.size() && bytes[i] != '\n') ++i;
      } else {
        ++i;
      }
    }
    while (i < bytes.size() && std::isdigit(bytes[i])) ++i;
  }
  return i + 1;
}

// stb_image decodes some truncated files without complaint (it pads missing JPEG scans, BMP
// rows and PNM samples with zeros), so those formats are checked for completeness here.
void check_complete(const std::string& path, const std::vector<unsigned char>& bytes, int width,
                    int height, int channels_in_file) {
  const std::size_t n = bytes.size();
  const auto truncated = [&] { return Error("'" + path + "' is truncated"); };
  if (n >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) {
    // A complete JPEG ends with the end-of-image marker (trailing padding is tolerated).
    std::size_t end = n;
    while (end > 2 && (bytes[end - 1] == 0x00 || bytes[end - 1] == 0x0A)) --end;
    if (end < 4 || bytes[end - 2] != 0xFF || bytes[end - 1] != 0xD9) throw truncated();
  } else if (n >= 14 && bytes[0] == 'B' && bytes[1] == 'M') {
    const std::uint32_t declared_size = little_endian_u32(&bytes[2]);
    if (declared_size > n) throw truncated();
  } else if (n >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '6')) {
    const std::size_t data_start = pnm_data_offset(bytes);
    const std::size_t samples = std::size_t(width) * height * channels_in_file;
    if (data_start > n || n - data_start < samples) throw truncated();
  }
}

}  // namespace

ImageU8 read_image(const std::string& path) {
  const std::vector<unsigned char> bytes = read_file_bytes(path);
  if (bytes.empty()) throw Error("'" + path + "' is empty");
  if (bytes.size() > std::size_t(INT32_MAX)) throw Error("'" + path + "' is too large to read");
  int width = 0, height = 0, channels = 0;
  if (!stbi_info_from_memory(bytes.data(), int(bytes.size()), &width, &height, &channels)) {
    throw Error("'" + path + "' is not a readable PNG, JPEG, BMP, PPM or PGM image (" +
                stbi_failure_reason() + ")");
  }
  if (width <= 0 || height <= 0) throw Error("'" + path + "' is a 0x0 image");
  check_complete(path, bytes, width, height, channels);
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), int(bytes.size()), &width, &height, &channels, 0),
      &stbi_image_free);
  if (!pixels) {
    throw Error("'" + path + "' is corrupt or truncated (" + stbi_failure_reason() + ")");
  }
  ImageU8 image(width, height, channels);
  std::memcpy(image.data.data(), pixels.get(), image.sample_count());
  return image;
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
