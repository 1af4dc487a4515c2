#include "kbench/image_write.hpp"

#include <stb/stb_image_write.h>

#include <cstdint>

#include "kbench/error.hpp"
#include "kbench/image_io.hpp"

namespace kbench {

ImageFileFormat output_image_format(const std::string& path, int channels) {
  const std::string ext = lower_extension(path);
  const auto refuse = [&](const std::string& why) { throw UsageError(output_name(path) + why); };
  if (ext == "png") {
    if (channels < 1 || channels > 4) refuse(": PNG holds 1 to 4 channels");
    return ImageFileFormat::png;
  }
  if (ext == "ppm" || ext == "pgm" || (ext.empty() && writes_in_place(path))) {
    const int wanted = ext == "ppm" ? 3 : ext == "pgm" ? 1 : channels;
    if (channels != wanted || (channels != 1 && channels != 3)) {
      refuse(ext.empty() ? " takes PGM (gray) or PPM (RGB), which cannot hold a " +
                               std::to_string(channels) + "-channel image; write it to a .png file"
                         : ": ." + ext + " holds " + std::to_string(wanted) +
                               "-channel images, this one has " + std::to_string(channels));
    }
    return ImageFileFormat::pnm;
  }
  refuse(": cannot write " +
         (ext.empty() ? std::string("files without an extension") : "." + ext + " files") +
         " (use .png, .ppm or .pgm, or - for standard output)");
  return ImageFileFormat::png;  // not reached
}

std::string encode_image(const ImageU8& image, ImageFileFormat format, const std::string& path) {
  checked_sample_count(image.width, image.height, image.channels, 1);
  std::string encoded;
  if (format == ImageFileFormat::pnm) {
    encoded = std::string(image.channels == 3 ? "P6" : "P5") + '\n' + std::to_string(image.width) +
              ' ' + std::to_string(image.height) + "\n255\n";
    encoded.append(reinterpret_cast<const char*>(image.data.data()), image.sample_count());
    return encoded;
  }
  // stb_image_write sizes its filtered copy of the rows, (width × channels + 1) × height bytes,
  // and the compressed stream, which can be larger, in int: the reader's limit keeps both far
  // from 2^31.
  const std::uint64_t filtered = (std::uint64_t(image.width) * std::uint64_t(image.channels) + 1) *
                                 std::uint64_t(image.height);
  if (filtered > max_image_bytes) {
    throw Error(output_name(path) + ": a " + std::to_string(image.width) + " x " +
                std::to_string(image.height) + " x " + std::to_string(image.channels) +
                " image is larger than the PNG writer's limit of " +
                std::to_string(max_image_bytes) + " bytes; write a .ppm or .pgm");
  }
  stbi_write_png_to_func(
      [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
      },
      &encoded, image.width, image.height, image.channels, image.data.data(),
      image.width * image.channels);
  if (encoded.empty()) throw Error("cannot encode " + output_name(path) + " as PNG");
  return encoded;
}

void write_image(OutputFile& out, const ImageU8& image) {
  out.write(encode_image(image, output_image_format(out.path(), image.channels), out.path()));
}

void write_image(const std::string& path, const ImageU8& image) {
  OutputFile out(path);
  write_image(out, image);
  out.commit();
}

}  // namespace kbench
