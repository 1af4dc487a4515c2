// Every conv variant this build and machine can run, against the double-precision reference,
// within kConvToleranceGrey (±1 grey level after rounding).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "conformance.hpp"
#include "kbench/conv.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_vectors.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/random.hpp"
#include "kbench/system_info.hpp"

using namespace kbench;

namespace {

ImageU8 random_image(int w, int h, int c, std::uint64_t seed) {
  ImageU8 image(w, h, c);
  SplitMix64 random(seed);
  for (auto& v : image.data) v = std::uint8_t(random.next());
  return image;
}

Mask random_mask(int n, std::uint64_t seed) {
  Mask mask{n, std::vector<float>(std::size_t(n) * n)};
  SplitMix64 random(seed);
  for (float& w : mask.weights) w = float(random.uniform() * 2.0 - 0.8) / float(n);
  return mask;
}

// The variants of the SIMD band walk (kbench/detail/conv_rows.hpp): the native ones, one per
// x86 level, and the portable rows schedule.
bool band_walk_variant(const Variant<Conv>& v) {
  return v.name.rfind("omp-simd-", 0) == 0 || v.name.rfind("kokkos-rows", 0) == 0;
}

// The variants that run pitched device images: portable (not Serial, too slow for camera frames
// on the host) and native CUDA.
bool pitched_variant(const Variant<Conv>& v) {
  return (v.layer == Layer::portable && v.backend != Backend::serial) ||
         v.layer == Layer::native_cuda;
}

// Runs every runnable variant that `chosen` accepts on `input` and checks it; returns how many
// ran.
int check_all_variants(const ConvInput& input,
                       bool (*chosen)(const Variant<Conv>&) = test::any_variant<Conv>) {
  return test::check_all_variants<Conv>(input, chosen);
}

std::string describe(const ConvInput& in) {
  return std::to_string(in.image.width) + "x" + std::to_string(in.image.height) + "x" +
         std::to_string(in.image.channels) + " mask " + std::to_string(in.mask.size) + " " +
         to_string(in.border);
}

}  // namespace

TEST_CASE("built-in masks are the documented 3x3 masks", "[conv]") {
  for (const auto& name : builtin_mask_names()) {
    const Mask m = builtin_mask(name);
    CHECK(m.size == 3);
    CHECK(m.weights.size() == 9);
  }
  // Smoothing masks keep flat regions flat; edge masks sum to zero.
  for (const char* name : {"identity", "box", "gaussian", "sharpen"}) {
    float sum = 0;
    for (float w : builtin_mask(name).weights) sum += w;
    CHECK(sum == Approx(1.0f));
  }
  float edge = 0;
  for (float w : builtin_mask("edge").weights) edge += w;
  CHECK(edge == Approx(0.0f));
}

TEST_CASE("the reference convolves a known case by hand", "[conv]") {
  ConvInput input{ImageU8(3, 3, 1), builtin_mask("sharpen"), Border::crop};
  input.image.data = {1, 2, 3, 4, 50, 6, 7, 8, 9};
  // 5 * 50 - (2 + 4 + 6 + 8) = 230
  const auto ref = Conv::reference(input);
  REQUIRE(ref.size() == 1);
  CHECK(ref[0] == Approx(230.0));
  input.border = Border::clamp;
  // Corner (0, 0) with clamping: 5 * 1 - (1 + 1 + 2 + 4) = -3
  CHECK(Conv::reference(input)[0] == Approx(-3.0));
}

TEST_CASE("every variant matches the reference on random images", "[conv]") {
  struct Shape {
    int w, h;
  };
  std::vector<Mask> masks;
  for (const auto& name : builtin_mask_names()) masks.push_back(builtin_mask(name));
  masks.push_back(random_mask(5, 1));
  masks.push_back(random_mask(7, 2));
  std::uint64_t seed = 100;
  // 66 and 131 columns: whole-word and odd rows for the row-vector schedules, in both borders.
  // 16, 48 and 64 columns: rows of whole 16-byte vectors for the band walks, one vector wide
  // (both borders in one window) and several, with band heights that do not divide the image.
  for (const Shape shape : {Shape{3, 3}, Shape{17, 5}, Shape{9, 31}, Shape{66, 20}, Shape{131, 7},
                            Shape{16, 4}, Shape{48, 61}, Shape{64, 23}, Shape{640, 480}}) {
    for (const int channels : {1, 3, 4}) {
      for (const Border border : {Border::crop, Border::clamp}) {
        for (const Mask& mask : masks) {
          if (mask.size > shape.w || mask.size > shape.h) continue;
          if (shape.w == 640 && channels == 4) continue;  // the large case once per layout
          const ConvInput input{random_image(shape.w, shape.h, channels, ++seed), mask, border};
          INFO(describe(input));
          CHECK(check_all_variants(input) >= 5);
        }
      }
    }
  }
}

// Pitched device images: every width 1..130, so a row's last 16-byte vector holds
// every possible number of its bytes, with each border, 1 to 4 channels (each a specialisation of
// the band walks, whose clamp works at any row end) and 3×3 and 5×5 masks.
TEST_CASE("conv: every variant matches the reference at every width 1..130", "[conv][widths]") {
  const Mask masks[] = {builtin_mask("sharpen"), random_mask(5, 3)};
  std::uint64_t seed = 2000;
  for (int w = 1; w <= 130; ++w) {
    const int h = 3 + w % 5;
    for (const int channels : {1, 2, 3, 4}) {
      for (const Border border : {Border::crop, Border::clamp}) {
        for (const Mask& mask : masks) {
          if (mask.size > w || mask.size > h) continue;
          const ConvInput input{random_image(w, h, channels, ++seed), mask, border};
          INFO(describe(input));
          CHECK(check_all_variants(input) >= 5);
        }
      }
    }
  }
}

// Camera frame sizes (the compare harness's cases) and 3001×2001, odd in both dimensions, on
// the pitched variants.
TEST_CASE("conv: pitched variants match the reference on camera frame sizes", "[conv][camera]") {
  struct Frame {
    int w, h, channels;
  };
  std::uint64_t seed = 3000;
  for (const Frame f : {Frame{3001, 2001, 3}, Frame{2306, 1535, 3}, Frame{3000, 2000, 1},
                        Frame{4032, 3024, 1}, Frame{3072, 2304, 1}, Frame{6000, 4000, 1}}) {
    const ConvInput input{random_image(f.w, f.h, f.channels, ++seed), builtin_mask("sharpen"),
                          Border::clamp};
    INFO(describe(input));
    CHECK(check_all_variants(input, pitched_variant) >= 1);
  }
}

// The band walk's run-time mask loop (sizes other than 3 and 5, which the width test above covers
// unrolled for every variant) at 1×1 and 7×7, every odd width up to 129 (rows that end anywhere
// in a block of vectors), 1 to 4 channels, both borders.
TEST_CASE("conv: band-walk variants match the reference with 1x1 and 7x7 masks at odd widths",
          "[conv][simd]") {
  const Mask masks[] = {random_mask(1, 11), random_mask(7, 14)};
  std::uint64_t seed = 4000;
  for (int w = 1; w <= 129; w += 2) {
    const int h = 7 + w % 3;
    for (const int channels : {1, 2, 3, 4}) {
      for (const Border border : {Border::crop, Border::clamp}) {
        for (const Mask& mask : masks) {
          if (mask.size > w) continue;
          const ConvInput input{random_image(w, h, channels, ++seed), mask, border};
          INFO(describe(input));
          CHECK(check_all_variants(input, band_walk_variant) >= 1);
        }
      }
    }
  }
}

// Large masks: rows of several strips (a strip's rows of floats are bounded, so the larger the
// mask the shorter the strip), up to the largest mask.
TEST_CASE("conv: band-walk variants match the reference with large masks", "[conv][simd]") {
  struct Case {
    int w, h, channels, mask;
  };
  std::uint64_t seed = 5000;
  for (const Case c : {Case{1101, 23, 3, 9}, Case{800, 40, 3, 31}, Case{700, 33, 4, 31},
                       Case{361, 70, 3, kMaxMaskSize}, Case{130, 64, 1, kMaxMaskSize}}) {
    for (const Border border : {Border::crop, Border::clamp}) {
      const ConvInput input{random_image(c.w, c.h, c.channels, ++seed), random_mask(c.mask, seed),
                            border};
      INFO(describe(input));
      CHECK(check_all_variants(input, band_walk_variant) >= 1);
    }
  }
}

// Each level is a variant that runs where the CPU has the level: the generic one everywhere,
// and the user call takes the highest this CPU has.
TEST_CASE("conv: a SIMD variant for every level this CPU has, the generic one always",
          "[conv][simd]") {
  const ConvInput input{random_image(40, 30, 3, 21), builtin_mask("gaussian"), Border::clamp};
  const Variant<Conv>& generic = find_variant<Conv>("omp-simd-generic");
  CHECK(generic.handles(input));
  const ImageU8 out = run_checked(generic, input);
  CHECK(Conv::check(input, Conv::reference(input), out).ok);
#if KBENCH_X86_SIMD  // the levels above generic are in this build (not under nvcc)
  for (const CpuLevel level : {CpuLevel::avx2, CpuLevel::avx512}) {
    const Variant<Conv>& v = find_variant<Conv>(simd_variant_name(level));
    CHECK(v.handles(input) == cpu_supports(level));
  }
  // Among the CPU variants.
  CHECK(best_variant<Conv>(input, false).name == simd_variant_name(cpu_level()));
#endif
}

TEST_CASE("images smaller than a 3x3 mask work with a 1x1 mask", "[conv]") {
  const Mask one{1, {1.5f}};
  for (const auto shape : {std::pair{1, 1}, std::pair{2, 3}}) {
    for (const Border border : {Border::crop, Border::clamp}) {
      const ConvInput input{random_image(shape.first, shape.second, 3, 9), one, border};
      INFO(describe(input));
      CHECK(check_all_variants(input) >= 5);
    }
  }
}

TEST_CASE("the user call equals the reference", "[conv]") {
  const ImageU8 image = synthetic_image(123, 77, 3, 5);
  const Mask mask = builtin_mask("emboss");
  const ImageU8 out = convolve(image, mask, Border::clamp);
  const ConvInput input{image, mask, Border::clamp};
  CHECK(Conv::check(input, Conv::reference(input), out).ok);
}

TEST_CASE("a mask larger than the image is refused", "[conv]") {
  const ConvInput input{random_image(2, 3, 1, 1), builtin_mask("box"), Border::clamp};
  CHECK_THROWS_WITH(validate_conv_input(input), Catch::Contains("larger than the image"));
  CHECK_THROWS_AS(convolve(input.image, input.mask, Border::crop), Error);
}

TEST_CASE("mask text parses and its errors are clear", "[conv]") {
  const Mask m = parse_mask("# a 3x3 mask\n1, 2, 3\n4 5 6\n7\t8 9  # trailing\n", "m.txt");
  CHECK(m.size == 3);
  CHECK(m.weights[5] == 6.0f);
  CHECK_THROWS_WITH(parse_mask("1 2 3 4", "even.txt"),
                    Catch::Contains("even.txt") && Catch::Contains("even"));
  CHECK_THROWS_WITH(parse_mask("1 2 3 4 5 6", "count.txt"), Catch::Contains("not a square"));
  CHECK_THROWS_WITH(parse_mask("1 2 x 4 5 6 7 8 9", "nan.txt"),
                    Catch::Contains("nan.txt:1") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_mask("1 2 3\n4 inf 6\n7 8 9", "inf.txt"), Catch::Contains("inf.txt:2"));
  CHECK_THROWS_WITH(parse_mask("", "empty.txt"), Catch::Contains("empty.txt"));
  std::string too_big;
  for (int i = 0; i < 65 * 65; ++i) too_big += "1 ";
  CHECK_THROWS_WITH(parse_mask(too_big, "big.txt"), Catch::Contains("exceeds"));
}

TEST_CASE("masks load from built-in names and from files", "[conv]") {
  CHECK(load_mask("sharpen").weights == builtin_mask("sharpen").weights);
  const std::string path = "/tmp/kbench-test-mask.txt";
  std::ofstream(path) << "0 0 0 0 0\n0 0 0 0 0\n0 0 1 0 0\n0 0 0 0 0\n0 0 0 0 0\n";
  CHECK(load_mask(path).size == 5);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(load_mask("/no/such/mask.txt"), Catch::Contains("unknown mask"));
}

TEST_CASE("mask files are read within a byte limit, with a BOM and CRLF line ends", "[conv]") {
  char pattern[] = "/tmp/kbench-mask-XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  const std::string limit = "the mask reader's limit of 1048576 bytes (1 MiB)";
  // A BOM and CRLF line ends, as Windows editors write them.
  const std::string crlf = (dir / "crlf.txt").string();
  std::ofstream(crlf, std::ios::binary) << "\xEF\xBB\xBF# 3x3\r\n1 2 3\r\n4, 5, 6\r\n7 8 9\r\n";
  const Mask m = load_mask(crlf);
  CHECK(m.size == 3);
  CHECK(m.weights == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  // A file of 2 MiB is refused by its size, unread.
  const std::string big = (dir / "big.txt").string();
  std::ofstream(big, std::ios::binary) << std::string(std::size_t(2) << 20, ' ');
  CHECK_THROWS_WITH(load_mask(big), Catch::Contains("mask file '" + big + "' is larger than " +
                                                    limit + ": it has 2097152 bytes"));
  // A stream that goes on is refused once it passes the limit.
  CHECK_THROWS_WITH(load_mask("/dev/zero"),
                    Catch::Contains("mask file '/dev/zero' is larger than " + limit));
  CHECK_THROWS_WITH(load_mask(dir.string()),
                    Catch::Contains("'" + dir.string() + "' is a folder, not a mask file"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("mask text past the largest mask or with odd bytes is refused clearly", "[conv]") {
  // 63 x 63 numbers are the most; the next one is refused as it is read.
  std::string most;
  for (int i = 0; i < 63 * 63; ++i) most += "0.5 ";
  CHECK(parse_mask(most, "most.txt").size == 63);
  CHECK_THROWS_WITH(parse_mask(most + "1", "more.txt"),
                    Catch::Contains("more.txt: more than 3969 numbers, which exceeds"));
  // Bytes that are no text are shown escaped, and long fields cut.
  CHECK_THROWS_WITH(parse_mask(std::string("1 \x01\xFFz", 5), "bin.txt"),
                    Catch::Contains("bin.txt:1: '\\x01\\xFFz' is not a finite number"));
  CHECK_THROWS_WITH(parse_mask(std::string(5000, '7') + "x", "long.txt"),
                    Catch::Contains("'" + std::string(40, '7') + "...' is not"));
  // Weights beyond float's range, NaN and a BOM anywhere but the start.
  CHECK_THROWS_WITH(parse_mask("1e39", "range.txt"), Catch::Contains("'1e39' is not a finite"));
  CHECK_THROWS_WITH(parse_mask("nan", "nan.txt"), Catch::Contains("'nan' is not a finite"));
  CHECK_THROWS_WITH(parse_mask("1 \xEF\xBB\xBF"
                               "2 3 4 5 6 7 8 9",
                               "bom.txt"),
                    Catch::Contains("bom.txt:1"));
  CHECK(parse_mask("0x1p-2", "hex.txt").weights == std::vector<float>{0.25f});
}

TEST_CASE("the mask fuzzer's seeds load, but for the even one", "[conv]") {
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(KBENCH_FUZZ_CORPUS "/mask_reader")) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    if (name == "even.txt") {
      CHECK_THROWS_WITH(load_mask(entry.path().string()), Catch::Contains("is even"));
    } else {
      CHECK(load_mask(entry.path().string()).size % 2 == 1);
      ++seeds;
    }
  }
  CHECK(seeds >= 10);
}

TEST_CASE("the sampled-row check accepts a right output and finds a wrong sample", "[conv]") {
  for (const Border border : {Border::clamp, Border::crop}) {
    INFO(to_string(border));
    const ConvInput input{random_image(37, 29, 3, 11), builtin_mask("sharpen"), border};
    const Conv::Reference whole = Conv::reference(input);
    const ImageU8 right = run_once(find_variant<Conv>("seq-aos"), input);
    const std::vector<int> rows = sample_rows(right.height, 6, 4);
    const Conv::RowsReference sampled = Conv::reference_rows(input, rows);
    REQUIRE(sampled.rows == rows);
    // Each sampled row's values are the whole reference's row.
    const std::size_t row_samples = std::size_t(right.width) * right.channels;
    REQUIRE(sampled.values.size() == rows.size() * row_samples);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      for (std::size_t i = 0; i < row_samples; ++i) {
        CHECK(sampled.values[k * row_samples + i] == whole[rows[k] * row_samples + i]);
      }
    }
    CHECK(Conv::check_rows(input, sampled, right).ok);

    // 100 grey levels off in the last sample of a sampled row in the middle: found and named.
    ImageU8 wrong = right;
    const int y = rows[2], x = right.width - 1;
    const double want =
        std::clamp(std::round(whole[std::size_t(y) * row_samples + 3 * x + 2]), 0.0, 255.0);
    wrong.at(x, y, 2) = std::uint8_t(want < 128 ? want + 100 : want - 100);
    const CheckResult check = Conv::check_rows(input, sampled, wrong);
    CHECK_FALSE(check.ok);
    CHECK(check.max_error == 100.0);
    CHECK_THAT(check.detail,
               Catch::Contains("x=" + std::to_string(x) + ", y=" + std::to_string(y) + ", c=2"));
    // A row outside the sample is not looked at: that is what the whole check is for.
    ImageU8 unsampled = right;
    int other = 0;
    while (std::find(rows.begin(), rows.end(), other) != rows.end()) ++other;
    unsampled.at(0, other, 0) ^= 0x80;
    CHECK(Conv::check_rows(input, sampled, unsampled).ok);
    CHECK_FALSE(Conv::check(input, whole, unsampled).ok);
  }
}

TEST_CASE("the sampled-row check refuses a wrong shape and rows outside the output", "[conv]") {
  const ConvInput input{random_image(20, 12, 3, 2), builtin_mask("box"), Border::crop};
  const Conv::RowsReference sampled = Conv::reference_rows(input, {0, 5, 9});
  const CheckResult check = Conv::check_rows(input, sampled, ImageU8(20, 12, 3));
  CHECK_FALSE(check.ok);
  CHECK_THAT(check.detail, Catch::Contains("expected 18x10x3"));
  CHECK_THROWS_WITH(Conv::reference_rows(input, {0, 10}), Catch::Contains("row 10 is outside"));
  CHECK_THROWS_AS(Conv::reference_rows(input, {}), Error);
}
