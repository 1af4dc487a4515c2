#include <stb/stb_image_write.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kbench/error.hpp"
#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/image_write.hpp"
#include "temp_files.hpp"

using namespace kbench;
using namespace kbench::testing;
namespace fs = std::filesystem;

namespace {

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
  CHECK_THROWS_WITH(read_image(dir.file("folder.png")),
                    Catch::Contains("'" + dir.file("folder.png") + "' is a folder, not an image"));
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

// PNG's CRC-32, bit by bit (the reader has its own, table-driven).
std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char byte : bytes) {
    crc ^= std::uint8_t(byte);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (crc & 1 ? 0xEDB88320u : 0);
  }
  return ~crc;
}

std::string png_chunk(const std::string& type, const std::string& data) {
  return be32(std::uint32_t(data.size())) + type + data + be32(crc32(type + data));
}

const std::string png_signature("\x89PNG\r\n\x1a\n", 8);

// A PNG signature, an IHDR claiming width × height (8-bit RGB), `idat` bytes of image data, IEND.
std::string png_claiming(std::uint32_t width, std::uint32_t height, std::size_t idat) {
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return png_signature + png_chunk("IHDR", ihdr) + png_chunk("IDAT", std::string(idat, '\x11')) +
         png_chunk("IEND", "");
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

namespace {

// A zlib stream of `data` in stored (uncompressed) deflate blocks.
std::string zlib_stored(const std::string& data) {
  std::string out("\x78\x01", 2);
  std::size_t at = 0;
  do {
    const std::size_t n = std::min<std::size_t>(65535, data.size() - at);
    out += char(at + n == data.size() ? 1 : 0);
    out += le16(std::uint32_t(n)) + le16(std::uint32_t(~n & 0xFFFF));
    out += data.substr(at, n);
    at += n;
  } while (at < data.size());
  std::uint32_t a = 1, b = 0;
  for (const char byte : data) {
    a = (a + std::uint8_t(byte)) % 65521;
    b = (b + a) % 65521;
  }
  return out + be32(b << 16 | a);
}

// A PNG of `rows` (each with its filter byte), stored deflate, with `extra` chunks after IHDR.
std::string png_file(std::uint32_t width, std::uint32_t height, int depth, int colour,
                     const std::string& rows, const std::string& extra = "") {
  const std::string ihdr =
      be32(width) + be32(height) + std::string{char(depth), char(colour), 0, 0, 0};
  return png_signature + png_chunk("IHDR", ihdr) + extra + png_chunk("IDAT", zlib_stored(rows)) +
         png_chunk("IEND", "");
}

// Byte `at` of a file, for messages that name where a chunk starts.
std::string flip_byte(std::string bytes, std::size_t at) {
  bytes[at] = char(bytes[at] ^ 0x01);
  return bytes;
}

// SIGPIPE ignored while it lives, so a writer into a closed FIFO sees EPIPE instead of dying.
struct IgnoreSigpipe {
  struct sigaction old {};
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old);
  }
  ~IgnoreSigpipe() { sigaction(SIGPIPE, &old, nullptr); }
};

// Writes `head` into the FIFO at `path`, then `tail` over and over, until its reader closes it.
class EndlessWriter {
 public:
  EndlessWriter(const std::string& path, std::string head, std::string tail)
      : thread_([this, path, head = std::move(head), tail = std::move(tail)] {
          const int fd = ::open(path.c_str(), O_WRONLY);
          if (fd < 0) return;
          const auto put = [&](const std::string& bytes) {
            for (std::size_t at = 0; at < bytes.size();) {
              const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
              if (n < 0 && errno == EINTR) continue;
              if (n <= 0) return false;
              at += std::size_t(n);
              written_ += std::uint64_t(n);
            }
            return true;
          };
          if (put(head)) {
            while (put(tail)) {
            }
          }
          ::close(fd);
        }) {}
  ~EndlessWriter() { finish(); }
  // Waits for the writer to stop; the bytes it wrote.
  std::uint64_t written() {
    finish();
    return written_;
  }

 private:
  void finish() {
    if (thread_.joinable()) thread_.join();
  }

  std::uint64_t written_ = 0;
  std::thread thread_;
};

std::string make_fifo(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  return path;
}

std::string pgm_bytes(const ImageU8& gray) {
  return "P5\n" + std::to_string(gray.width) + " " + std::to_string(gray.height) + "\n255\n" +
         std::string(gray.data.begin(), gray.data.end());
}

}  // namespace

TEST_CASE("a stream that is no image is refused at its first bytes", "[io]") {
  // /dev/zero never ends: the reader must refuse it by its first bytes, not read on.
  CHECK_THROWS_WITH(read_image("/dev/zero"),
                    Catch::Contains("'/dev/zero' is not a readable PNG, JPEG, BMP, PPM or PGM") &&
                        Catch::Contains("match none of their signatures"));
  // A PNG signature followed by zeros has no IHDR where it must be.
  TempDir dir;
  const std::string fifo = make_fifo(dir, "zeros.png");
  IgnoreSigpipe ignore;
  EndlessWriter writer(fifo, png_signature, std::string(4096, '\0'));
  CHECK_THROWS_WITH(read_image(fifo), Catch::Contains("is a corrupt PNG file: it does not start "
                                                      "with a 13-byte IHDR chunk"));
}

TEST_CASE("a PGM from a FIFO is read to its last sample and no further", "[io]") {
  TempDir dir;
  const ImageU8 gray = to_gray(synthetic_image(300, 200, 3, 7));
  const std::string fifo = make_fifo(dir, "gray.pgm");
  IgnoreSigpipe ignore;
  EndlessWriter writer(fifo, pgm_bytes(gray), std::string(1000, '\x7f'));
  // The writer never ends on its own: a reader that read to the end of the stream would not
  // return. The writer stops when the reader closes the FIFO, having written at least the PGM
  // (more, or not, depending on when the reader closed).
  CHECK(read_image(fifo) == gray);
  CHECK(writer.written() >= pgm_bytes(gray).size());
}

TEST_CASE("a PNG stream that never ends is refused at the PNG's bound", "[io]") {
  TempDir dir;
  IgnoreSigpipe ignore;
  // IHDR of a 16 x 16 grey image, then private chunks (valid CRCs) with no IEND: refused when
  // they pass the bound, the 16 rows of 1 + 16 bytes (272) plus an eighth (34) and 64 bytes for
  // zlib's framing, 45 bytes of signature, IHDR and IEND, and the ancillary allowance.
  const std::string ihdr = png_chunk("IHDR", be32(16) + be32(16) + std::string("\x08\0\0\0\0", 5));
  const std::uint64_t bound = 45 + 272 + 34 + 64 + png_ancillary_allowance;
  const std::string endless = make_fifo(dir, "endless.png");
  {
    EndlessWriter writer(endless, png_signature + ihdr, png_chunk("prVt", std::string(4000, 'x')));
    CHECK_THROWS_WITH(read_image(endless),
                      Catch::Contains("'" + endless + "' is larger than the reader's limit of " +
                                      std::to_string(bound) + " bytes") &&
                          Catch::Contains("for a 16 x 16 PNG"));
    CHECK(writer.written() < bound + (1u << 20));
  }
  // A chunk that claims to end past the bound is refused before its data is read.
  const std::string claims = make_fifo(dir, "claims.png");
  {
    EndlessWriter writer(claims, png_signature + ihdr + be32(100000000) + "IDAT",
                         std::string(4096, 'y'));
    CHECK_THROWS_WITH(read_image(claims),
                      Catch::Contains("for a 16 x 16 PNG: its IDAT chunk at byte 33 ends at "
                                      "byte 100000045"));
  }
}

TEST_CASE("regular files over the bound are refused without reading them", "[io]") {
  TempDir dir;
  const std::string ihdr = png_chunk("IHDR", be32(16) + be32(16) + std::string("\x08\0\0\0\0", 5));
  write_bytes(dir.file("long.png"), png_signature + ihdr);
  fs::resize_file(dir.file("long.png"), 100000000);  // sparse: nothing to read but zeros
  CHECK_THROWS_WITH(read_image(dir.file("long.png")),
                    Catch::Contains("is larger than the reader's limit of") &&
                        Catch::Contains("for a 16 x 16 PNG: it has 100000000 bytes"));
  write_bytes(dir.file("huge.jpg"), "\xFF\xD8");
  fs::resize_file(dir.file("huge.jpg"), std::uintmax_t(3) << 30);
  CHECK_THROWS_WITH(read_image(dir.file("huge.jpg")),
                    Catch::Contains("is larger than the reader's limit of 2147483647 bytes") &&
                        Catch::Contains("it has 3221225472 bytes"));
  // A PGM ends after its samples: what follows in the file is not read.
  const ImageU8 gray = to_gray(synthetic_image(20, 10, 3, 3));
  write_bytes(dir.file("trailing.pgm"), pgm_bytes(gray) + "trailing bytes\n");
  CHECK(read_image(dir.file("trailing.pgm")) == gray);
}

TEST_CASE("standard input is read as '-'", "[io]") {
  const ImageU8 gray = to_gray(synthetic_image(40, 30, 3, 5));
  const auto read_from_stdin = [](const std::string& bytes) {
    int pipe_ends[2];
    REQUIRE(pipe(pipe_ends) == 0);
    const int saved = dup(STDIN_FILENO);
    dup2(pipe_ends[0], STDIN_FILENO);
    close(pipe_ends[0]);
    std::thread writer([&] {
      (void)!write(pipe_ends[1], bytes.data(), bytes.size());
      close(pipe_ends[1]);
    });
    std::string error;
    ImageU8 image;
    try {
      image = read_image("-");
    } catch (const Error& e) {
      error = e.what();
    }
    dup2(saved, STDIN_FILENO);  // closes the pipe's read end, so a blocked writer returns
    close(saved);
    writer.join();
    return std::make_pair(image, error);
  };
  IgnoreSigpipe ignore;
  const auto [image, no_error] = read_from_stdin(pgm_bytes(gray));
  CHECK(no_error.empty());
  CHECK(image == gray);
  const auto [nothing, error] = read_from_stdin("GIF89a and more");
  CHECK(nothing.sample_count() == 0);
  CHECK(error.rfind("standard input is not a readable PNG, JPEG, BMP, PPM or PGM image", 0) == 0);
}

TEST_CASE("every PNG chunk's CRC is checked", "[io]") {
  TempDir dir;
  write_image(dir.file("a.png"), synthetic_image(32, 16, 3, 8));
  const std::string good = read_bytes(dir.file("a.png"));
  REQUIRE(good.substr(37, 4) == "IDAT");  // stb_image_write: signature, IHDR, IDAT
  // One flipped bit in the image data, which stb_image would decode without complaint.
  CHECK_THROWS_WITH(read_bytes_as_image(flip_byte(good, 60)),
                    Catch::Contains("'image.png' is a corrupt PNG file: the CRC of its IDAT chunk "
                                    "at byte 33 does not match its data"));
  // An ancillary chunk (tEXt) whose CRC is wrong.
  const std::string text = png_chunk("tEXt", std::string("Comment\0hello", 13));
  const std::string with_text = good.substr(0, 33) + text + good.substr(33);
  CHECK(read_bytes_as_image(with_text) == read_bytes_as_image(good));
  CHECK_THROWS_WITH(read_bytes_as_image(flip_byte(with_text, 33 + text.size() - 1)),
                    Catch::Contains("the CRC of its tEXt chunk at byte 33 does not match"));
  // The same through the file reader.
  write_bytes(dir.file("bad.png"), flip_byte(good, 60));
  CHECK_THROWS_WITH(read_image(dir.file("bad.png")),
                    Catch::Contains("the CRC of its IDAT chunk at byte 33"));
}

TEST_CASE("PGM and PPM samples of any maximum value are scaled to 0..255", "[io]") {
  // 8-bit samples of maximum value 100: round(v × 255 / 100), halves up.
  const std::string pgm100 = "P5\n5 1\n100\n" + std::string{0, 1, 50, 99, 100};
  const ImageU8 a = read_bytes_as_image(pgm100);
  CHECK(std::vector<int>(a.data.begin(), a.data.end()) == std::vector<int>{0, 3, 128, 252, 255});
  // 16-bit samples of maximum value 1023, where stb_image's v >> 8 would give 0 to 3.
  std::string pgm1023 = "P5\n7 1\n1023\n";
  for (const int v : {0, 1, 2, 511, 512, 1022, 1023}) pgm1023 += {char(v >> 8), char(v)};
  const ImageU8 b = read_bytes_as_image(pgm1023);
  CHECK(std::vector<int>(b.data.begin(), b.data.end()) ==
        std::vector<int>{0, 0, 0, 127, 128, 255, 255});
  // 65535: round(v / 257).
  std::string ppm = "P6\n2 1\n65535\n";
  for (const int v : {0, 255, 256, 32767, 32768, 65535}) ppm += {char(v >> 8), char(v)};
  const ImageU8 c = read_bytes_as_image(ppm);
  CHECK(std::vector<int>(c.data.begin(), c.data.end()) == std::vector<int>{0, 1, 1, 127, 128, 255});
  // A sample above the maximum value.
  CHECK_THROWS_WITH(read_bytes_as_image("P5\n3 1\n100\n" + std::string{5, 101, 7}),
                    Catch::Contains("'image.png' is a corrupt PGM file: its sample at byte 12 is "
                                    "101, above its maximum value 100"));
  std::string over = "P5\n1 1\n1023\n";
  over += {char(1024 >> 8), char(1024 & 0xFF)};
  CHECK_THROWS_WITH(read_bytes_as_image(over), Catch::Contains("is 1024, above its maximum"));
}

TEST_CASE("16-bit PNG samples are scaled as round(v x 255 / 65535)", "[io]") {
  // One row of 8 grey 16-bit samples, filter 0. stb_image's own 16 -> 8 conversion, v >> 8,
  // would give 0 0 1 127 128 128 255 255.
  std::string row(1, '\0');
  for (const int v : {0, 255, 256, 32767, 32768, 0x80FF, 65280, 65535})
    row += {char(v >> 8), char(v)};
  const ImageU8 image = read_bytes_as_image(png_file(8, 1, 16, 0, row));
  REQUIRE(image.channels == 1);
  CHECK(std::vector<int>(image.data.begin(), image.data.end()) ==
        std::vector<int>{0, 1, 1, 127, 128, 128, 254, 255});
  // An 8-bit PNG made the same way reads exactly.
  const ImageU8 eight = read_bytes_as_image(png_file(3, 1, 8, 0, std::string{0, 9, 8, 7}));
  CHECK(std::vector<int>(eight.data.begin(), eight.data.end()) == std::vector<int>{9, 8, 7});
}
