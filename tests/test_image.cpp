#include <catch2/catch.hpp>

#include <algorithm>

#include "kbench/error.hpp"
#include "kbench/grid.hpp"
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
  CHECK_THROWS_WITH(ImageF32(1 << 30, 1 << 30, 4), Catch::Contains("a row may hold"));
#if !defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator aborts on a request past its limit instead of throwing
  // std::bad_alloc, whatever allocator_may_return_null says for operator new.
  CHECK_THROWS_WITH(ImageU8(1 << 24, 1 << 30, 4),
                    Catch::Contains("cannot allocate") || Catch::Contains("overflows"));
#endif
}

// Images past 2^31 and 2^32 samples, addressed without allocating them.
constexpr std::uint64_t kTwo31 = std::uint64_t(1) << 31;
constexpr std::uint64_t kTwo32 = std::uint64_t(1) << 32;

TEST_CASE("sample offsets are 64-bit past 2^31 and 2^32 samples", "[image]") {
  // The last sample of 30000x30000 RGB (the big conv case): 2.7e9.
  static_assert(sample_index(30000, 3, 29999, 29999, 2) == 2699999999u, "in 64 bits");
  CHECK(sample_index(30000, 3, 29999, 29999, 2) > kTwo31);
  // 50000x50000 gray (the big lbp case) ends at 2.5e9; 100000-wide rows pass 2^32 at row 42950.
  CHECK(sample_index(50000, 1, 49999, 49999, 0) == 2499999999u);
  CHECK(sample_index(100000, 1, 99999, 49999, 0) == 4999999999u);
  CHECK(sample_index(100000, 1, 0, 49999, 0) > kTwo32);
  // RGBA 70000x70000: 19.6e9 samples, more than 2^34.
  CHECK(sample_index(70000, 4, 69999, 69999, 3) == std::uint64_t(70000) * 70000 * 4 - 1);
  // Pitched rows: 50000 gray bytes padded to 16 (50000 is a multiple), 30001 RGB pixels padded
  // to 90016, rows past 2^31 and 2^32 bytes in.
  CHECK(pitched_index(50000, 49999, 49999) == 2499999999u);
  CHECK(pitched_index(90016, 90002, 29999) == std::uint64_t(90016) * 29999 + 90002);
  CHECK(pitched_index(90016, 0, 50000) > kTwo32);
}

TEST_CASE("the image accessors address samples through sample_index", "[image]") {
  const ImageU8 image(5, 4, 3);
  CHECK(std::size_t(&image.at(4, 3, 2) - image.data.data()) == sample_index(5, 3, 4, 3, 2));
  CHECK(std::size_t(&image.at(1, 2, 0) - image.data.data()) == (2 * 5 + 1) * 3);
  const PlanarImageU8 planar(5, 4, 3);
  CHECK(std::size_t(&planar.at(4, 3, 2) - planar.data.data()) == 2 * 20 + 3 * 5 + 4);
}

TEST_CASE("sample counts past 2^31 and 2^32 are exact; rows are bounded", "[image]") {
  CHECK(checked_sample_count(30000, 30000, 3, 1) == 2700000000u);
  CHECK(checked_sample_count(50000, 50000, 1, 1) == 2500000000u);
  CHECK(checked_sample_count(100000, 50000, 1, 1) > kTwo32);
  CHECK(checked_sample_count(int(kMaxRowBytes), 8, 1, 1) == 8 * kMaxRowBytes);
  CHECK_THROWS_WITH(checked_sample_count(int(kMaxRowBytes / 3) + 1, 1, 3, 1),
                    Catch::Contains("a row may hold"));
  CHECK_THROWS_WITH(checked_sample_count(int(kMaxRowBytes / 16) + 1, 1, 4, 4),
                    Catch::Contains("a row may hold"));
}

TEST_CASE("launches over tall images keep within CUDA's 65535 blocks in y", "[image]") {
  for (const int tile_rows : {1, 4, 8}) {
    for (const int rows : {1, 30000, 50000, 262140, 262141, 999999, 1 << 24}) {
      INFO("rows " << rows << ", tiles of " << tile_rows);
      const std::vector<LaunchRows> chunks = row_chunks(rows, tile_rows);
      REQUIRE_FALSE(chunks.empty());
      CHECK(chunks.front().begin == 0);
      CHECK(chunks.back().end == rows);
      for (std::size_t k = 0; k < chunks.size(); ++k) {
        if (k > 0) CHECK(chunks[k].begin == chunks[k - 1].end);
        CHECK(chunks[k].end > chunks[k].begin);
        CHECK((chunks[k].end - chunks[k].begin + tile_rows - 1) / tile_rows <= kMaxGridBlocksY);
      }
      const int per_block = min_rows_per_block(rows);
      CHECK((rows + per_block - 1) / per_block <= kMaxGridBlocksY);
      CHECK((per_block == 1 || (rows + per_block - 2) / (per_block - 1) > kMaxGridBlocksY));
    }
  }
  // The big cases' 30000 and 50000 rows take one launch.
  CHECK(row_chunks(30000, 8).size() == 1);
  CHECK(row_chunks(50000, 4).size() == 1);
  CHECK(row_chunks(1 << 24, 4).size() == 65);
}

TEST_CASE("the generator's skip equals as many draws", "[image]") {
  SplitMix64 drawn(9), skipped(9);
  for (int k = 0; k < 1000; ++k) drawn.next();
  skipped.skip(1000);
  CHECK(drawn.next() == skipped.next());
}

TEST_CASE("synthetic images are the ones earlier commits generated", "[image]") {
  // FNV-1a of the samples, as generated row after row in one pass before rows went parallel:
  // timings across commits compare the same inputs.
  const auto hash = [](const ImageU8& image) {
    std::uint64_t h = 1469598103934665603ull;
    for (const std::uint8_t v : image.data) h = (h ^ v) * 1099511628211ull;
    return h;
  };
  CHECK(hash(synthetic_image(64, 48, 3, 5)) == 14507688791079051573ull);
  CHECK(hash(synthetic_image(301, 37, 1, 2)) == 15676476478287574066ull);
  CHECK(hash(synthetic_image(97, 61, 4, 9)) == 5847680692666701727ull);
}

TEST_CASE("sampled rows are the ends and distinct seeded rows, in order", "[image]") {
  const std::vector<int> rows = sample_rows(30000, 64, 1);
  REQUIRE(rows.size() == 64);
  CHECK(rows.front() == 0);
  CHECK(rows.back() == 29999);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::adjacent_find(rows.begin(), rows.end()) == rows.end());
  CHECK(rows == sample_rows(30000, 64, 1));
  CHECK_FALSE(rows == sample_rows(30000, 64, 2));
  CHECK(sample_rows(5, 64, 1) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(sample_rows(1, 1, 1) == std::vector<int>{0});
  CHECK(sample_rows(100, 0, 1) == std::vector<int>{0, 99});
  CHECK(sample_rows(10, 9, 3).size() == 9);
  CHECK_THROWS_AS(sample_rows(0, 4, 1), Error);
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
