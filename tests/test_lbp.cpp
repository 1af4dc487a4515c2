// Every lbp variant this build and machine can run is bit-identical to the plain reference, codes
// and histogram, on random and structured images; the reference itself is checked by hand.
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "conformance.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_vectors.hpp"
#include "kbench/detail/lbp_codes.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/lbp.hpp"
#include "kbench/random.hpp"
#include "kbench/system_info.hpp"
#include "random_images.hpp"

using namespace kbench;

namespace {

ImageU8 gray_image(int w, int h, const std::vector<std::uint8_t>& samples) {
  ImageU8 image(w, h, 1);
  image.data = samples;
  return image;
}

using test::random_gray;

// Few distinct values, so equal neighbours (the >= case) are common.
ImageU8 few_levels(int w, int h, std::uint64_t seed) {
  ImageU8 image(w, h, 1);
  SplitMix64 random(seed);
  for (auto& v : image.data) v = std::uint8_t(100 + random.between(0, 2));
  return image;
}

template <class F>
ImageU8 generated(int w, int h, F value) {
  ImageU8 image(w, h, 1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) image.at(x, y, 0) = std::uint8_t(value(x, y));
  }
  return image;
}

std::uint64_t coded_pixels(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  return std::uint64_t(out.width) * out.height;
}

std::uint64_t histogram_sum(const LbpResult& result) {
  return std::accumulate(result.histogram.begin(), result.histogram.end(), std::uint64_t(0));
}

std::string describe(const LbpInput& in) {
  return std::to_string(in.gray.width) + "x" + std::to_string(in.gray.height) + " " +
         to_string(in.params.border) + " " + to_string(in.params.mapping);
}

// The variants that run pitched device images: portable (not Serial, too slow for camera frames
// on the host) and native CUDA.
bool pitched_variant(const Variant<Lbp>& v) {
  return (v.layer == Layer::portable && v.backend != Backend::serial) ||
         v.layer == Layer::native_cuda;
}

// Runs every runnable variant that `chosen` accepts on `input`, checks it against the reference
// and checks that its histogram counts every coded pixel once; returns how many variants ran.
int check_all_variants(const LbpInput& input,
                       bool (*chosen)(const Variant<Lbp>&) = test::any_variant<Lbp>) {
  const LbpResult reference = Lbp::reference(input);
  REQUIRE(histogram_sum(reference) == coded_pixels(input));
  return test::check_all_variants_against<Lbp>(input, reference, chosen, [&](const LbpResult& out) {
    CHECK(histogram_sum(out) == coded_pixels(input));
  });
}

// Every border and mapping the image allows.
int check_all_params(const ImageU8& gray) {
  int ran = 0;
  for (const Border border : {Border::crop, Border::clamp}) {
    if (border == Border::crop && (gray.width < 3 || gray.height < 3)) continue;
    for (const LbpMapping mapping :
         {LbpMapping::plain, LbpMapping::uniform, LbpMapping::rotation_invariant}) {
      const LbpInput input{gray, {border, mapping}};
      INFO(describe(input));
      ran += check_all_variants(input);
    }
  }
  return ran;
}

unsigned rotate_right(unsigned code, int r) {
  return ((code >> r) | (code << (8 - r))) & 0xFFu;
}

// Host variants of this build: 2 sequential, 2 OpenMP, and per host backend 3 portable schedules,
// 2 of them also in their plain build.
constexpr int kMinHostVariants = 14;

}  // namespace

TEST_CASE("codes follow the documented neighbour order and comparison", "[lbp]") {
  // Centre 25: neighbours clockwise from the top-left are 10 20 30 50 70 25 60 40; those >= 25
  // (the equal one included) are bits 2..7.
  const ImageU8 image = gray_image(3, 3, {10, 20, 30, 40, 25, 50, 60, 25, 70});
  LbpInput input{image, {Border::crop, LbpMapping::plain}};
  const LbpResult crop = Lbp::reference(input);
  REQUIRE(crop.codes.width == 1);
  REQUIRE(crop.codes.height == 1);
  CHECK(int(crop.codes.data[0]) == 0b11111100);
  CHECK(crop.histogram[0b11111100] == 1);
  CHECK(histogram_sum(crop) == 1);

  // Clamp, corner (2, 2), centre 70: neighbours 25 50 50 70 70 70 25 25, the ones past the edge
  // repeating the nearest edge pixel (bit 2: 50; bits 3 to 5: the centre itself); only bits 3
  // to 5 are >= 70.
  input.params.border = Border::clamp;
  const LbpResult clamp = Lbp::reference(input);
  REQUIRE(clamp.codes.width == 3);
  CHECK(int(clamp.codes.at(2, 2, 0)) == 0b00111000);
  CHECK(int(clamp.codes.at(1, 1, 0)) == 0b11111100);
  CHECK(histogram_sum(clamp) == 9);
  CHECK(check_all_variants(input) >= kMinHostVariants);
}

TEST_CASE("the neighbour table goes clockwise round the centre", "[lbp]") {
  std::set<std::pair<int, int>> seen;
  for (int k = 0; k < 8; ++k) {
    CHECK(std::abs(lbp_dx(k)) <= 1);
    CHECK(std::abs(lbp_dy(k)) <= 1);
    CHECK((lbp_dx(k) != 0 || lbp_dy(k) != 0));
    seen.insert({lbp_dx(k), lbp_dy(k)});
    // Consecutive neighbours (8 → 0 included) touch: rotating the code rotates the picture.
    const int next = (k + 1) % 8;
    CHECK(std::abs(lbp_dx(next) - lbp_dx(k)) + std::abs(lbp_dy(next) - lbp_dy(k)) == 1);
  }
  CHECK(seen.size() == 8);
  CHECK((lbp_dx(0) == -1 && lbp_dy(0) == -1));
  CHECK((lbp_dx(1) == 0 && lbp_dy(1) == -1));  // clockwise: the second is above the centre
}

TEST_CASE("uniform mapping: 58 uniform codes in increasing order, then one bin", "[lbp]") {
  const LbpTables t = lbp_tables(LbpMapping::uniform);
  CHECK(t.bins == 59);
  CHECK(lbp_bin_count(LbpMapping::uniform) == 59);
  int uniform = 0, last_label = -1;
  for (int c = 0; c < kLbpCodes; ++c) {
    CHECK(t.value[c] == t.bin[c]);
    if (lbp_transitions(c) <= 2) {
      ++uniform;
      CHECK(int(t.bin[c]) == last_label + 1);
      last_label = t.bin[c];
    } else {
      CHECK(int(t.bin[c]) == 58);
    }
  }
  CHECK(uniform == 58);
  CHECK(lbp_transitions(0) == 0);
  CHECK(lbp_transitions(0xFF) == 0);
  CHECK(lbp_transitions(0b00011100) == 2);
  CHECK(lbp_transitions(0b10000001) == 2);  // wraps round the circle
  CHECK(lbp_transitions(0b00000101) == 4);
  CHECK(int(t.bin[0]) == 0);
  CHECK(int(t.bin[255]) == 57);
  CHECK(int(t.bin[0b00000101]) == 58);
}

TEST_CASE("rotation-invariant mapping: the smallest rotation, 36 classes", "[lbp]") {
  const LbpTables t = lbp_tables(LbpMapping::rotation_invariant);
  CHECK(t.bins == 36);
  std::set<int> classes;
  for (unsigned c = 0; c < kLbpCodes; ++c) {
    unsigned smallest = c;
    for (int r = 1; r < 8; ++r) smallest = std::min(smallest, rotate_right(c, r));
    CHECK(t.value[c] == smallest);
    CHECK(lbp_min_rotation(c) == smallest);
    CHECK(t.value[rotate_right(c, 3)] == t.value[c]);
    CHECK(int(t.bin[c]) < 36);
    CHECK(t.bin[c] == t.bin[smallest]);
    classes.insert(t.value[c]);
  }
  CHECK(classes.size() == 36);
  // Bins follow the representatives' order.
  int previous = -1;
  for (const int representative : classes) {
    CHECK(int(t.bin[representative]) == previous + 1);
    previous = t.bin[representative];
  }
}

TEST_CASE("the 4-at-once comparison equals the scalar one", "[lbp]") {
  SplitMix64 random(7);
  for (int n = 0; n < 256; ++n) {
    for (int c = 0; c < 256; ++c) {
      // The pair in one byte, random bytes in the others: no carry may leak between bytes.
      const int lane = (n + c) % 4;
      std::uint32_t nw = std::uint32_t(random.next()), cw = std::uint32_t(random.next());
      nw = (nw & ~(0xFFu << (8 * lane))) | (std::uint32_t(n) << (8 * lane));
      cw = (cw & ~(0xFFu << (8 * lane))) | (std::uint32_t(c) << (8 * lane));
      const std::uint32_t ge = lbp_bytes_ge(nw, cw);
      for (int b = 0; b < 4; ++b) {
        const bool want = lbp_bit_set(std::uint8_t(nw >> (8 * b)), std::uint8_t(cw >> (8 * b)));
        REQUIRE(((ge >> (8 * b)) & 0xFFu) == (want ? 0x80u : 0u));
      }
    }
  }
}

TEST_CASE("four codes from 32-bit words equal four scalar codes", "[lbp]") {
  SplitMix64 random(11);
  for (int trial = 0; trial < 20000; ++trial) {
    // 3 rows of 8 samples; half the trials from 3 levels so that ties are frequent.
    std::uint8_t rows[3][8];
    for (auto& row : rows) {
      for (auto& v : row) {
        v = trial % 2 ? std::uint8_t(random.next()) : std::uint8_t(random.between(7, 9));
      }
    }
    std::uint32_t lo[3], hi[3];
    for (int r = 0; r < 3; ++r) {
      lo[r] = hi[r] = 0;
      for (int i = 0; i < 4; ++i) {
        lo[r] |= std::uint32_t(rows[r][i]) << (8 * i);
        hi[r] |= std::uint32_t(rows[r][4 + i]) << (8 * i);
      }
    }
    const std::uint32_t codes = lbp_codes4(lo, hi);
    for (int p = 0; p < 4; ++p) {
      // Pixel p is at column p + 1 of the window.
      const std::uint8_t want = lbp_code([&](int dx, int dy) { return rows[1 + dy][p + 1 + dx]; });
      REQUIRE(((codes >> (8 * p)) & 0xFFu) == want);
    }
  }
  CHECK(lbp_bytes_at(0x44332211u, 0x88776655u, 0) == 0x44332211u);
  CHECK(lbp_bytes_at(0x44332211u, 0x88776655u, 1) == 0x55443322u);
  CHECK(lbp_bytes_at(0x44332211u, 0x88776655u, 3) == 0x77665544u);
}

TEST_CASE("structured images code as expected", "[lbp]") {
  const auto interior_codes = [](const ImageU8& image) {
    const LbpResult r = Lbp::reference({image, {Border::crop, LbpMapping::plain}});
    return std::set<int>(r.codes.data.begin(), r.codes.data.end());
  };
  // Flat: every neighbour equals the centre, every bit is set.
  CHECK(interior_codes(generated(9, 7, [](int, int) { return 42; })) == std::set<int>{255});
  // Rising to the right: the neighbours in columns x and x + 1 (bits 1 to 5) are >= the centre.
  CHECK(interior_codes(generated(40, 9, [](int x, int) { return 3 * x; })) ==
        std::set<int>{0b00111110});
  // Rising downwards: the neighbours in rows y and y + 1 (bits 3 to 7).
  CHECK(interior_codes(generated(9, 40, [](int, int y) { return 5 * y; })) ==
        std::set<int>{0b11111000});
  // Checkerboard: a bright centre sees bright diagonals only; a dark one sees all >= itself.
  CHECK(interior_codes(generated(12, 11, [](int x, int y) { return (x + y) % 2 ? 255 : 0; })) ==
        std::set<int>{0b01010101, 255});

  // A flat image's histogram holds every pixel in the bin of code 255, whatever the border.
  for (const LbpMapping mapping :
       {LbpMapping::plain, LbpMapping::uniform, LbpMapping::rotation_invariant}) {
    const LbpInput input{generated(6, 5, [](int, int) { return 9; }), {Border::clamp, mapping}};
    const LbpResult r = Lbp::reference(input);
    const int bin = lbp_tables(mapping).bin[255];
    CHECK(r.histogram[bin] == 30);
    CHECK(histogram_sum(r) == 30);
  }
}

TEST_CASE("every variant matches the reference on structured images", "[lbp]") {
  struct Named {
    const char* name;
    ImageU8 image;
  };
  const std::vector<Named> images = {
      {"constant", generated(37, 23, [](int, int) { return 128; })},
      {"horizontal gradient", generated(64, 19, [](int x, int) { return 4 * x; })},
      {"vertical gradient", generated(21, 64, [](int, int y) { return 4 * y; })},
      {"diagonal gradient", generated(45, 33, [](int x, int y) { return (x + 2 * y) % 256; })},
      {"checkerboard", generated(34, 17, [](int x, int y) { return (x + y) % 2 ? 200 : 10; })},
      {"stripes", generated(50, 20, [](int x, int) { return x / 3 % 2 ? 255 : 0; })},
      {"few levels", few_levels(47, 29, 3)},
      // Widths that are multiples of 16 take the portable vector schedule's 16-byte path; flat
      // regions and checkerboards make every thread of a team count the same bins at once.
      {"constant, width 64", generated(64, 9, [](int, int) { return 77; })},
      {"checkerboard, width 48",
       generated(48, 17, [](int x, int y) { return (x + y) % 2 ? 255 : 0; })},
      {"few levels, width 80", few_levels(80, 13, 4)},
  };
  for (const Named& n : images) {
    INFO(n.name);
    CHECK(check_all_params(n.image) >= 6 * kMinHostVariants);
  }
}

TEST_CASE("every variant matches the reference on random images of many sizes", "[lbp]") {
  struct Shape {
    int w, h;
  };
  std::uint64_t seed = 500;
  for (const Shape s :
       {Shape{3, 3}, Shape{4, 3}, Shape{3, 4}, Shape{5, 7}, Shape{17, 3}, Shape{15, 16},
        Shape{16, 15}, Shape{18, 5}, Shape{31, 33}, Shape{33, 31}, Shape{101, 67}, Shape{640, 480},
        Shape{16, 16}, Shape{48, 5}, Shape{64, 33}, Shape{4096, 3}}) {
    INFO(s.w << "x" << s.h);
    CHECK(check_all_params(random_gray(s.w, s.h, ++seed)) >= 6 * kMinHostVariants);
  }
}

// Pitched device images: every width 1..130, so a row's last 16-byte vector holds
// every possible number of its pixels, every border and mapping.
TEST_CASE("lbp: every variant matches the reference at every width 1..130", "[lbp][widths]") {
  std::uint64_t seed = 2000;
  for (int w = 1; w <= 130; ++w) {
    const int h = 3 + w % 5;
    INFO(w << "x" << h);
    CHECK(check_all_params(random_gray(w, h, ++seed, w % 2 ? 256 : 3)) >= 3 * kMinHostVariants);
  }
}

// Camera frame sizes (the compare harness's cases) and 3001×2001, odd in both dimensions, on
// the pitched variants.
TEST_CASE("lbp: pitched variants match the reference on camera frame sizes", "[lbp][camera]") {
  struct Frame {
    int w, h;
  };
  std::uint64_t seed = 3000;
  for (const Frame f : {Frame{3001, 2001}, Frame{3000, 2000}, Frame{4032, 3024}, Frame{6000, 4000},
                        Frame{2306, 1535}, Frame{3072, 2304}}) {
    for (const Border border : {Border::crop, Border::clamp}) {
      const LbpInput input{random_gray(f.w, f.h, ++seed), {border, LbpMapping::uniform}};
      INFO(describe(input));
      CHECK(check_all_variants(input, pitched_variant) >= 1);
    }
  }
}

// Each level is a variant that runs where the CPU has the level: the generic one everywhere, and
// the user call takes the highest this CPU has. Tall images give each thread a band of several
// rows; flat ones make consecutive codes equal (the same counters, one after another).
TEST_CASE("lbp: a SIMD variant for every level this CPU has, the generic one always",
          "[lbp][simd]") {
  const Variant<Lbp>& generic = find_variant<Lbp>("omp-simd-generic");
  const std::vector<ImageU8> images = {random_gray(200, 97, 31), few_levels(129, 131, 32),
                                       generated(260, 70, [](int, int) { return 200; })};
  for (const ImageU8& image : images) {
    for (const Border border : {Border::crop, Border::clamp}) {
      for (const LbpMapping mapping :
           {LbpMapping::plain, LbpMapping::uniform, LbpMapping::rotation_invariant}) {
        const LbpInput input{image, {border, mapping}};
        INFO(describe(input));
        CHECK(generic.handles(input));
        const CheckResult check =
            Lbp::check(input, Lbp::reference(input), run_checked(generic, input));
        INFO(check.detail);
        CHECK(check.ok);
      }
    }
  }
#if KBENCH_X86_SIMD  // the levels above generic are in this build (not under nvcc)
  const LbpInput input{images[0], {}};
  for (const CpuLevel level : {CpuLevel::avx2, CpuLevel::avx512}) {
    const Variant<Lbp>& v = find_variant<Lbp>(simd_variant_name(level));
    CHECK(v.handles(input) == cpu_supports(level));
  }
  // Among the CPU variants.
  CHECK(best_variant<Lbp>(input, false).name == simd_variant_name(cpu_level()));
#endif
}

TEST_CASE("images smaller than 3x3 code with clamp", "[lbp]") {
  struct Shape {
    int w, h;
  };
  for (const Shape s : {Shape{1, 1}, Shape{2, 2}, Shape{1, 5}, Shape{6, 1}, Shape{2, 9},
                        Shape{32, 1}, Shape{16, 2}}) {
    INFO(s.w << "x" << s.h);
    CHECK(check_all_params(random_gray(s.w, s.h, 77)) >= 3 * kMinHostVariants);
  }
  // One pixel: every clamped neighbour is the pixel itself.
  const LbpResult one = Lbp::reference({gray_image(1, 1, {17}), {}});
  CHECK(int(one.codes.data[0]) == 255);
  CHECK(one.histogram[255] == 1);
}

TEST_CASE("bad lbp input is refused with a clear message", "[lbp]") {
  CHECK_THROWS_WITH(validate_lbp_input({random_gray(2, 2, 1), {Border::crop, LbpMapping::plain}}),
                    Catch::Contains("at least 3x3") && Catch::Contains("2x2"));
  CHECK_THROWS_WITH(validate_lbp_input({ImageU8(), {}}), Catch::Contains("empty"));
  CHECK_THROWS_WITH(validate_lbp_input({synthetic_image(8, 8, 3, 1), {}}),
                    Catch::Contains("one-channel"));
  CHECK_THROWS_AS(local_binary_pattern(random_gray(1, 2, 1), {Border::crop, LbpMapping::plain}),
                  Error);
  CHECK_THROWS_WITH(parse_lbp_mapping("sideways"), Catch::Contains("sideways"));
  CHECK(parse_lbp_mapping("rotation-invariant") == LbpMapping::rotation_invariant);
  CHECK(to_string(parse_lbp_mapping("uniform")) == std::string("uniform"));
}

TEST_CASE("the user call converts colour to gray and equals the reference", "[lbp]") {
  const ImageU8 rgb = synthetic_image(123, 77, 3, 5);
  for (const LbpMapping mapping : {LbpMapping::plain, LbpMapping::uniform}) {
    const LbpParams params{Border::crop, mapping};
    const LbpResult out = local_binary_pattern(rgb, params);
    const LbpInput input{to_gray(rgb), params};
    const CheckResult check = Lbp::check(input, Lbp::reference(input), out);
    INFO(check.detail);
    CHECK(check.ok);
    CHECK(out.codes.width == 121);
  }
}

TEST_CASE("the check counts differing pixels and bins", "[lbp]") {
  const LbpInput input{random_gray(20, 10, 3), {Border::clamp, LbpMapping::plain}};
  const LbpResult reference = Lbp::reference(input);
  LbpResult out = reference;
  CHECK(Lbp::check(input, reference, out).ok);
  out.codes.at(4, 2, 0) ^= 1;
  out.histogram[7] += 1;
  const CheckResult check = Lbp::check(input, reference, out);
  CHECK_FALSE(check.ok);
  CHECK(check.max_error == 2.0);
  CHECK_THAT(check.detail, Catch::Contains("x=4, y=2") && Catch::Contains("bin 7"));
  out.histogram.pop_back();
  CHECK_FALSE(Lbp::check(input, reference, out).ok);
}

TEST_CASE("the sampled-row check accepts a right output and finds wrong codes and bins", "[lbp]") {
  for (const Border border : {Border::clamp, Border::crop}) {
    for (const LbpMapping mapping : {LbpMapping::plain, LbpMapping::uniform}) {
      INFO(to_string(border) << " " << to_string(mapping));
      const LbpInput input{random_gray(41, 23, 5, 4), {border, mapping}};
      const LbpResult whole = Lbp::reference(input);
      const std::vector<int> rows = sample_rows(whole.codes.height, 5, 8);
      const Lbp::RowsReference sampled = Lbp::reference_rows(input, rows);
      REQUIRE(sampled.rows == rows);
      REQUIRE(sampled.codes.height == int(rows.size()));
      CHECK(sampled.histogram == whole.histogram);
      for (std::size_t k = 0; k < rows.size(); ++k) {
        for (int x = 0; x < whole.codes.width; ++x) {
          CHECK(sampled.codes.at(x, int(k), 0) == whole.codes.at(x, rows[k], 0));
        }
      }
      CHECK(Lbp::check_rows(input, sampled, whole).ok);

      LbpResult wrong = whole;
      wrong.codes.at(3, rows[1], 0) ^= 1;
      CheckResult check = Lbp::check_rows(input, sampled, wrong);
      CHECK_FALSE(check.ok);
      CHECK(check.max_error == 1.0);
      CHECK_THAT(check.detail, Catch::Contains("x=3, y=" + std::to_string(rows[1])));
      // The histogram covers every row, sampled or not.
      wrong = whole;
      wrong.histogram[0] += 1;
      check = Lbp::check_rows(input, sampled, wrong);
      CHECK_FALSE(check.ok);
      CHECK_THAT(check.detail, Catch::Contains("bin 0"));
    }
  }
  const LbpInput input{random_gray(9, 7, 1), {Border::crop, LbpMapping::plain}};
  CHECK_THROWS_WITH(Lbp::reference_rows(input, {0, 5}), Catch::Contains("row 5 is outside"));
  CHECK_THROWS_AS(Lbp::reference_rows(input, {}), Error);
  const Lbp::RowsReference sampled = Lbp::reference_rows(input, {0, 4});
  CHECK_FALSE(
      Lbp::check_rows(input, sampled, make_lbp_output(LbpInput{random_gray(9, 8, 1), {}})).ok);
}
