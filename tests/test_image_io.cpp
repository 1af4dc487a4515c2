#include <stb/stb_image_write.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kbench/error.hpp"
#include "kbench/image_io.hpp"

using namespace kbench;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/kbench-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Writes the first `keep` bytes of `from` to `to`.
void truncate_copy(const std::string& from, const std::string& to, std::size_t keep) {
  write_bytes(to, read_bytes(from).substr(0, keep));
}

// Writes a BMP or JPEG through stb_image_write, which the project itself does not write.
void write_with_stb(const std::string& path, const ImageU8& image) {
  const bool jpeg = path.substr(path.size() - 3) == "jpg";
  const int ok = jpeg ? stbi_write_jpg(path.c_str(), image.width, image.height, image.channels,
                                       image.data.data(), 95)
                      : stbi_write_bmp(path.c_str(), image.width, image.height, image.channels,
                                       image.data.data());
  REQUIRE(ok != 0);
}

}  // namespace

TEST_CASE("PNG round trip is exact for 1 to 4 channels", "[io]") {
  TempDir dir;
  for (int channels = 1; channels <= 4; ++channels) {
    const ImageU8 image = synthetic_image(37, 21, channels, channels);
    const std::string path = dir.file("image" + std::to_string(channels) + ".png");
    write_image(path, image);
    CHECK(read_image(path) == image);
  }
}

TEST_CASE("PPM and PGM round trips are exact", "[io]") {
  TempDir dir;
  const ImageU8 rgb = synthetic_image(31, 9, 3, 11);
  write_image(dir.file("a.ppm"), rgb);
  CHECK(read_image(dir.file("a.ppm")) == rgb);
  const ImageU8 gray = to_gray(rgb);
  write_image(dir.file("a.pgm"), gray);
  CHECK(read_image(dir.file("a.pgm")) == gray);
  CHECK_THROWS_WITH(write_image(dir.file("b.ppm"), gray), Catch::Contains("3-channel"));
}

TEST_CASE("BMP reads exactly and JPEG reads closely", "[io]") {
  TempDir dir;
  const ImageU8 image = synthetic_image(40, 24, 3, 4);
  write_with_stb(dir.file("a.bmp"), image);
  CHECK(read_image(dir.file("a.bmp")) == image);
  write_with_stb(dir.file("a.jpg"), image);
  const ImageU8 jpeg = read_image(dir.file("a.jpg"));
  REQUIRE(jpeg.width == 40);
  REQUIRE(jpeg.height == 24);
  REQUIRE(jpeg.channels == 3);
  double error = 0;
  for (std::size_t i = 0; i < image.data.size(); ++i)
    error += std::abs(jpeg.data[i] - image.data[i]);
  CHECK(error / image.data.size() < 12.0);  // lossy, but the same picture
}

TEST_CASE("missing, unreadable and empty files give clear errors", "[io]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_image(dir.file("none.png")),
                    Catch::Contains("cannot open") && Catch::Contains("none.png"));
  fs::create_directory(dir.file("folder.png"));
  CHECK_THROWS_WITH(read_image(dir.file("folder.png")), Catch::Contains("folder.png"));
  write_bytes(dir.file("empty.png"), "");
  CHECK_THROWS_WITH(read_image(dir.file("empty.png")), Catch::Contains("is empty"));
}

TEST_CASE("corrupt files are refused", "[io]") {
  TempDir dir;
  write_bytes(dir.file("noise.png"), std::string(500, '\x5a'));
  CHECK_THROWS_WITH(read_image(dir.file("noise.png")), Catch::Contains("not a readable"));
  // A valid PNG header and size, then damaged compressed data.
  const ImageU8 image = synthetic_image(64, 64, 3, 9);
  write_image(dir.file("good.png"), image);
  std::string bytes = read_bytes(dir.file("good.png"));
  for (std::size_t i = 60; i < bytes.size() - 20; i += 3) bytes[i] = char(bytes[i] ^ 0x5a);
  write_bytes(dir.file("bad.png"), bytes);
  CHECK_THROWS_AS(read_image(dir.file("bad.png")), Error);
}

TEST_CASE("truncated files of every format are refused", "[io]") {
  TempDir dir;
  const ImageU8 image = synthetic_image(48, 32, 3, 2);
  write_image(dir.file("a.png"), image);
  write_image(dir.file("a.ppm"), image);
  write_image(dir.file("a.pgm"), to_gray(image));
  write_with_stb(dir.file("a.bmp"), image);
  write_with_stb(dir.file("a.jpg"), image);
  for (const char* name : {"a.png", "a.ppm", "a.pgm", "a.bmp", "a.jpg"}) {
    INFO(name);
    const std::size_t size = fs::file_size(dir.file(name));
    for (const std::size_t keep : {size / 2, size - 7}) {
      truncate_copy(dir.file(name), dir.file("cut"), keep);
      CHECK_THROWS_AS(read_image(dir.file("cut")), Error);
    }
  }
}

TEST_CASE("0x0 images are refused on reading and writing", "[io]") {
  TempDir dir;
  write_bytes(dir.file("zero.ppm"), "P6\n0 0\n255\n");
  CHECK_THROWS_AS(read_image(dir.file("zero.ppm")), Error);
  CHECK_THROWS_AS(write_image(dir.file("zero.png"), ImageU8()), Error);
  CHECK_FALSE(fs::exists(dir.file("zero.png")));
}

TEST_CASE("a failed write leaves no file behind", "[io]") {
  TempDir dir;
  const ImageU8 image = synthetic_image(8, 8, 3, 1);
  CHECK_THROWS_AS(write_image(dir.file("no/such/dir/out.png"), image), Error);
  CHECK_THROWS_WITH(write_image(dir.file("out.tiff"), image), Catch::Contains(".tiff"));
  CHECK(fs::is_empty(dir.path));
  write_image(dir.file("out.png"), image);
  CHECK(fs::exists(dir.file("out.png")));
  CHECK_FALSE(fs::exists(dir.file("out.png.partial")));
}
