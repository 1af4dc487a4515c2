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

namespace {

// Big-endian and little-endian fields for hand-built headers.
std::string be32(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}
std::string le16(std::uint32_t v) {
  return {char(v), char(v >> 8)};
}
std::string le32(std::uint32_t v) {
  return le16(v) + le16(v >> 16);
}

// A PNG chunk; the reader checks structure, not CRCs, before decoding, so the CRC is left zero.
std::string png_chunk(const std::string& type, const std::string& data) {
  return be32(std::uint32_t(data.size())) + type + data + be32(0);
}

// A PNG signature, an IHDR claiming width × height (8-bit RGB), `idat` bytes of image data, IEND.
std::string png_claiming(std::uint32_t width, std::uint32_t height, std::size_t idat) {
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) +
         png_chunk("IDAT", std::string(idat, '\x11')) + png_chunk("IEND", "");
}

ImageU8 read_bytes_as_image(const std::string& bytes,
                            std::size_t max_bytes = kbench::max_image_bytes) {
  return read_image_from_memory(bytes.data(), bytes.size(), "image.png", max_bytes);
}

}  // namespace

TEST_CASE("the file reader and the memory reader give the same image", "[io]") {
  TempDir dir;
  const ImageU8 image = synthetic_image(19, 7, 3, 5);
  write_image(dir.file("a.png"), image);
  const std::string bytes = read_bytes(dir.file("a.png"));
  CHECK(read_image_from_memory(bytes.data(), bytes.size(), "a.png") == image);
  CHECK(read_image(dir.file("a.png")) == image);
}

TEST_CASE("a header claiming 60000 x 60000 says what is wrong", "[io]") {
  // Before: "unknown image type". 60000 rows of 1 + 180000 filtered bytes need at least 1 / 1032
  // of that compressed, and this file holds 100 bytes.
  CHECK_THROWS_WITH(read_bytes_as_image(png_claiming(60000, 60000, 100)),
                    Catch::Contains("'image.png' is truncated or corrupt") &&
                        Catch::Contains("PNG header claims 60000 x 60000 pixels") &&
                        Catch::Contains("at least 10465174 bytes (10.0 MiB)") &&
                        Catch::Contains("holds 100 bytes") &&
                        !Catch::Contains("unknown image type"));
  // The same for binary PPM, where the data is uncompressed.
  const std::string ppm = "P6\n60000 60000\n255\n" + std::string(64, '\0');
  CHECK_THROWS_WITH(read_bytes_as_image(ppm),
                    Catch::Contains("PPM header claims 60000 x 60000 pixels") &&
                        Catch::Contains("at least 10800000000 bytes (10.1 GiB)") &&
                        Catch::Contains("holds 64 bytes"));
  // A progressive JPEG can code a huge image in a few bytes, so only its size can be refused.
  const std::string sof2 = std::string("\xFF\xC2\x00\x11\x08", 5) + "\xEA\x60\xEA\x60" +
                           std::string("\x03\x01\x11\x00\x02\x11\x01\x03\x11\x01", 10);
  const std::string jpeg = std::string("\xFF\xD8", 2) + sof2 + std::string("\xFF\xD9", 2);
  CHECK_THROWS_WITH(read_bytes_as_image(jpeg),
                    Catch::Contains("'image.png' is too large") &&
                        Catch::Contains("60000 x 60000 x 3 bytes (10800000000 bytes (10.1 GiB))") &&
                        Catch::Contains("the reader's limit of 1073741824 bytes (1.0 GiB)"));
}

TEST_CASE("images over the reader's limits are refused as too large", "[io]") {
  TempDir dir;
  write_image(dir.file("a.png"), synthetic_image(64, 32, 3, 1));
  const std::string bytes = read_bytes(dir.file("a.png"));
  CHECK_THROWS_WITH(read_bytes_as_image(bytes, 6000),
                    Catch::Contains("is too large: 64 x 32 x 3 bytes (6144 bytes)") &&
                        Catch::Contains("limit of 6000 bytes"));
  CHECK(read_bytes_as_image(bytes, 6144).width == 64);
  // A side over 2^24 pixels, with enough data for the claim.
  CHECK_THROWS_WITH(read_bytes_as_image(png_claiming(20000000, 1, 60000)),
                    Catch::Contains("is too large") &&
                        Catch::Contains("claims 20000000 x 1 pixels") &&
                        Catch::Contains("16777216 pixels a side"));
}

TEST_CASE("headers that would make stb_image misbehave are refused first", "[io]") {
  // Found by fuzz_image_reader: a Huffman table whose code counts add up to over 256 made stb
  // write past its 256-entry tables. Counts of 32 in each of the 16 lengths claim 512 codes.
  const std::string dht = std::string("\xFF\xC4\x00\x13\x00", 5) + std::string(16, '\x20');
  CHECK_THROWS_WITH(read_bytes_as_image(std::string("\xFF\xD8", 2) + dht + std::string(600, 'x')),
                    Catch::Contains("corrupt JPEG") &&
                        Catch::Contains("Huffman table (DHT at byte 2) has 512 codes"));
  // Found by fuzz_image_reader: a scan using a Huffman table that no DHT defined made stb decode
  // with uninitialised memory and read far outside the table. One DC and one AC table (id 0) are
  // defined; the scan asks for DC table 2.
  const std::string tables = std::string("\xFF\xC4\x00\x14\x00", 5) + std::string("\x01", 1) +
                             std::string(15, '\0') + std::string(1, '\0') +
                             std::string("\xFF\xC4\x00\x14\x10", 5) + std::string("\x01", 1) +
                             std::string(15, '\0') + std::string(1, '\0');
  const std::string sof0 = std::string("\xFF\xC0\x00\x0B\x08\x00\x08\x00\x08\x01\x01\x11\x00", 13);
  const std::string sos = std::string("\xFF\xDA\x00\x08\x01\x01\x20\x00\x3F\x00", 10);
  CHECK_THROWS_WITH(
      read_bytes_as_image(std::string("\xFF\xD8", 2) + sof0 + tables + sos +
                          std::string(8, '\x55') + std::string("\xFF\xD9", 2)),
      Catch::Contains("corrupt JPEG") &&
          Catch::Contains("its scan at byte 59 uses a Huffman table that no DHT defines"));
  // Found by fuzz_image_reader: a scan whose data ends before its last block made stb shift by
  // 33 bits once it had read past the end-of-image marker. The project's stb patch pads such a
  // scan with zero bits, well defined, so the file decodes as libjpeg decodes it (with a
  // "premature end of data segment" warning): 16 x 8 grey pixels.
  const ImageU8 short_scan =
      read_image(KBENCH_FUZZ_CORPUS "/image_reader/finding-decodes-jpeg-scan-past-marker.jpg");
  CHECK(short_scan.width == 16);
  CHECK(short_scan.height == 8);
  CHECK(short_scan.channels == 1);
  // stb's PNM parser overflows an int on long numbers.
  CHECK_THROWS_WITH(
      read_bytes_as_image("P5\n1 184467440737095516150\n255\n" + std::string(9, 'x')),
      Catch::Contains("corrupt PGM") && Catch::Contains("height has too many digits"));
  CHECK_THROWS_WITH(
      read_bytes_as_image("P5\n2147483648 2\n255\n" + std::string(9, 'x')),
      Catch::Contains("truncated or corrupt") && Catch::Contains("claims 2147483648 x 2 pixels"));
  CHECK_THROWS_WITH(read_bytes_as_image("P5\n1 1\n70000\n" + std::string(2, 'x')),
                    Catch::Contains("maximum value 70000 is not 1 to 65535"));
  // stb takes abs() of a BMP's height, undefined for INT32_MIN.
  const std::string bmp = "BM" + le32(70) + le32(0) + le32(54) + le32(40) + le32(1) +
                          le32(0x80000000u) + le16(1) + le16(24) + le32(0) + std::string(40, '\0');
  CHECK_THROWS_WITH(read_bytes_as_image(bmp), Catch::Contains("BMP header claims 1 x 2147483648"));
}

TEST_CASE("unknown, cut and empty headers say so", "[io]") {
  CHECK_THROWS_WITH(read_bytes_as_image("GIF89a......"),
                    Catch::Contains("its first bytes match none of their signatures"));
  CHECK_THROWS_WITH(read_bytes_as_image(std::string("\x89PNG\r\n\x1a\n\x00\x00", 10)),
                    Catch::Contains("is truncated: it ends after 10 bytes, inside its PNG header"));
  std::string cut = png_claiming(8, 8, 40);
  cut.resize(cut.size() - 20);  // IDAT cut short, no IEND
  CHECK_THROWS_WITH(read_bytes_as_image(cut), Catch::Contains("is truncated: it ends after") &&
                                                  Catch::Contains("before the IEND chunk"));
  CHECK_THROWS_WITH(read_bytes_as_image(png_claiming(0, 5, 40)),
                    Catch::Contains("has no pixels") && Catch::Contains("claims 0 x 5 pixels"));
}

TEST_CASE("the fuzzers' seeds read and their findings stay safe", "[io]") {
  // tests/fuzz/corpus/image_reader: generated seeds, and reproducers of fixed findings
  // ("finding-*"), which must stay refused with a message (under the sanitizers, too), except
  // those that damaged files' usual decoders read too ("finding-decodes-*").
  int seeds = 0, findings = 0;
  for (const auto& entry : fs::directory_iterator(KBENCH_FUZZ_CORPUS "/image_reader")) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    if (name.rfind("finding-decodes-", 0) == 0) {
      CHECK(read_image(entry.path().string()).sample_count() > 0);
      ++findings;
    } else if (name.rfind("finding-", 0) == 0) {
      CHECK_THROWS_AS(read_image(entry.path().string()), Error);
      ++findings;
    } else {
      const ImageU8 image = read_image(entry.path().string());
      CHECK(image.sample_count() > 0);
      ++seeds;
    }
  }
  CHECK(seeds >= 20);
  CHECK(findings >= 1);
}
