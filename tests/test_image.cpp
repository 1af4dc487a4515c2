#include <catch2/catch.hpp>

#include "kbench/error.hpp"
#include "kbench/image.hpp"
#include "kbench/random.hpp"

using namespace kbench;

namespace {
ImageU8 random_image(int w, int h, int c, std::uint64_t seed) {
  ImageU8 image(w, h, c);
  SplitMix64 random(seed);
  for (auto& v : image.data) v = std::uint8_t(random.next());
  return image;
}
}  // namespace

TEST_CASE("interleaved and planar layouts address the same samples", "[image]") {
  ImageU8 image(3, 2, 3);
  image.at(2, 1, 1) = 42;
  CHECK(image.data[(1 * 3 + 2) * 3 + 1] == 42);
  const PlanarImageU8 planar = to_planar(image);
  CHECK(planar.at(2, 1, 1) == 42);
  CHECK(planar.data[1 * 6 + 1 * 3 + 2] == 42);
}

TEST_CASE("planar round trip preserves every sample", "[image]") {
  for (int channels = 1; channels <= 4; ++channels) {
    const ImageU8 image = random_image(17, 5, channels, 7 + channels);
    const PlanarImageU8 planar = to_planar(image);
    for (int c = 0; c < channels; ++c) {
      CHECK(planar.at(16, 4, c) == image.at(16, 4, c));
      CHECK(planar.at(3, 2, c) == image.at(3, 2, c));
    }
    CHECK(to_interleaved(planar) == image);
  }
}

TEST_CASE("f32 conversion rounds and clamps", "[image]") {
  ImageF32 f(4, 1, 1);
  f.data = {-3.2f, 12.5f, 254.49f, 900.f};
  const ImageU8 u = to_u8(f);
  CHECK(u.data == std::vector<std::uint8_t>{0, 13, 254, 255});
  const ImageU8 back = random_image(5, 3, 3, 3);
  CHECK(to_u8(to_f32(back)) == back);
}

TEST_CASE("gray conversion uses BT.601 luma in integers", "[image]") {
  ImageU8 rgb(4, 1, 3);
  rgb.data = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 200, 30};
  const ImageU8 gray = to_gray(rgb);
  REQUIRE(gray.channels == 1);
  // (299 R + 587 G + 114 B + 500) / 1000
  CHECK(gray.data == std::vector<std::uint8_t>{76, 150, 29, 124});
  ImageU8 rgba(1, 1, 4);
  rgba.data = {255, 255, 255, 0};
  CHECK(to_gray(rgba).data[0] == 255);
}

TEST_CASE("empty, negative and oversized images are refused", "[image]") {
  CHECK_THROWS_AS(ImageU8(0, 0, 3), Error);
  CHECK_THROWS_AS(ImageU8(-1, 5, 1), Error);
  CHECK_THROWS_AS(ImageU8(4, 4, 5), Error);
  CHECK_THROWS_WITH(ImageF32(1 << 30, 1 << 30, 4),
                    Catch::Contains("cannot allocate") || Catch::Contains("overflows"));
}

TEST_CASE("synthetic images are deterministic and not trivial", "[image]") {
  const ImageU8 a = synthetic_image(64, 48, 3, 5);
  CHECK(a == synthetic_image(64, 48, 3, 5));
  CHECK_FALSE(a == synthetic_image(64, 48, 3, 6));
  int distinct = 0;
  std::vector<bool> seen(256);
  for (auto v : a.data) {
    if (!seen[v]) ++distinct;
    seen[v] = true;
  }
  CHECK(distinct > 100);
}

TEST_CASE("size names parse", "[image]") {
  CHECK(parse_image_size("4k").width == 3840);
  CHECK(parse_image_size("1080p").height == 1080);
  CHECK(parse_image_size("480p").width == 640);
  CHECK(parse_image_size("17x5").height == 5);
  CHECK_THROWS_AS(parse_image_size("0x5"), Error);
  CHECK_THROWS_AS(parse_image_size("big"), Error);
}
