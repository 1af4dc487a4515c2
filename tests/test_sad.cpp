// Every sad variant this build and machine can run, bit-identical to the sequential reference
// (map and argmin), plus the tie rule, top-k selection, generated cases and bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

#include "conformance.hpp"
#include "cpu_levels.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/detail/cpu_sad_bytes.hpp"
#include "kbench/detail/sad_words.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/random.hpp"
#include "kbench/sad.hpp"
#include "kbench/system_info.hpp"
#include "random_images.hpp"

using namespace kbench;

namespace {

using test::kSimdPrefix;
using test::random_gray;
using test::runs_on_this_cpu;

ImageU8 gray_from(int w, int h, std::vector<std::uint8_t> values) {
  ImageU8 image(w, h, 1);
  image.data = std::move(values);
  return image;
}

std::string describe(const SadInput& in) {
  return std::to_string(in.target.width) + "x" + std::to_string(in.target.height) + " target, " +
         std::to_string(in.query.width) + "x" + std::to_string(in.query.height) + " query, " +
         (in.params.want_map ? "map" : "no map");
}

// Runs every runnable variant on `input` (poisoned twice by run_checked) and checks it against
// the reference; returns how many ran.
int check_all_variants(const SadInput& input) {
  return test::check_all_variants<Sad>(input);
}

// Host variants: seq, omp, omp-blocked, omp-simd-<level> at the levels this CPU has, and
// kokkos-mdrange / kokkos-team per host backend write the map; kokkos-fused per host backend
// runs only without it.
int host_variants(bool fused) {
  int n = 0;
  for (const auto& v : variants<Sad>()) {
    if (v.backend != Backend::cuda && runs_on_this_cpu(v) &&
        (v.name.find("fused") != std::string::npos) == fused) {
      ++n;
    }
  }
  return n;
}
// How many host variants must run on an input with or without the map.
int expected_host_runs(bool want_map) {
  return host_variants(false) + (want_map ? 0 : host_variants(true));
}

}  // namespace

TEST_CASE("the reference computes a known map by hand", "[sad]") {
  SadInput input{gray_from(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9}), gray_from(2, 2, {5, 6, 8, 9}), {}};
  const SadResult r = Sad::reference(input);
  REQUIRE(r.map_width == 2);
  REQUIRE(r.map_height == 2);
  // (0,0): |1-5|+|2-6|+|4-8|+|5-9| = 16; (0,1): 12; (1,0): 4; (1,1): 0.
  CHECK(r.map == std::vector<std::int32_t>{16, 12, 4, 0});
  CHECK(r.best == SadMatch{1, 1, 0});
}

TEST_CASE("every variant matches the reference on random sizes", "[sad]") {
  struct Shape {
    int w, h, qw, qh;
  };
  const Shape shapes[] = {{1, 1, 1, 1},    {7, 5, 1, 1},     {9, 6, 9, 6},     {13, 11, 13, 1},
                          {13, 11, 1, 11}, {20, 17, 5, 3},   {33, 9, 6, 7},    {40, 30, 11, 9},
                          {64, 20, 63, 2}, {50, 45, 17, 18}, {600, 40, 7, 20}, {530, 9, 26, 4},
                          {18, 70, 18, 19}};
  std::uint64_t seed = 1;
  for (const Shape& s : shapes) {
    for (const bool want_map : {true, false}) {
      SadInput input{random_gray(s.w, s.h, ++seed), random_gray(s.qw, s.qh, ++seed), {}};
      input.params.want_map = want_map;
      INFO(describe(input));
      CHECK(check_all_variants(input) >= expected_host_runs(want_map));
    }
  }
}

// Pitched (packed) target rows at every width 1..130, queries of 1, 5 and 16 columns
// where they fit.
TEST_CASE("sad: every variant matches the reference at every width 1..130", "[sad][widths]") {
  std::uint64_t seed = 2000;
  for (int w = 1; w <= 130; ++w) {
    for (const int qw : {1, 5, 16}) {
      if (qw > w) continue;
      SadInput input{random_gray(w, 6, ++seed), random_gray(qw, 3, ++seed), {}};
      INFO(describe(input));
      CHECK(check_all_variants(input) >= expected_host_runs(true));
    }
  }
}

// The SIMD CPU variants at every query width 1..70 (whole, partial and half-vector tails at every
// level's chunk size), with targets a little wider, map heights that leave register blocks
// partly outside the map, and queries tall enough to be summed in several bands.
TEST_CASE("sad: the SIMD CPU variants match the reference at query widths 1..70", "[sad][widths]") {
  SplitMix64 random(1300);
  for (int qw = 1; qw <= 70; ++qw) {
    const int w = qw + random.between(0, 40);
    const int qh = qw % 7 == 0 ? random.between(60, 110) : random.between(1, 6);
    const int h = qh + random.between(0, 9);
    SadInput input{random_gray(w, h, random.next()), random_gray(qw, qh, random.next()), {}};
    input.params.want_map = qw % 2 == 0;
    INFO(describe(input));
    const Sad::Reference reference = Sad::reference(input);
    int ran = 0;
    for (const auto& v : variants<Sad>()) {
      if (v.name.rfind(kSimdPrefix, 0) != 0 || !v.handles(input)) continue;
      INFO("variant " << v.name);
      const CheckResult check = Sad::check(input, reference, run_checked(v, input));
      INFO(check.detail);
      CHECK(check.ok);
      ++ran;
    }
    CHECK(ran == 1 + int(cpu_supports(CpuLevel::avx2)) + int(cpu_supports(CpuLevel::avx512)));
  }
}

TEST_CASE("the SIMD CPU variants: one per level, the generic one everywhere, the best by default",
          "[sad]") {
  const SadInput input{random_gray(40, 30, 5), random_gray(21, 9, 6), {}};
  const Variant<Sad>& generic = find_variant<Sad>("omp-simd-generic");
  CHECK(generic.layer == Layer::native_cpu);
  CHECK(generic.handles(input));
  CHECK(run_checked(generic, input) == Sad::reference(input));
#if defined(KBENCH_X86_PACKED_SAD)
  for (const CpuLevel level : {CpuLevel::avx2, CpuLevel::avx512}) {
    const Variant<Sad>& v = find_variant<Sad>(simd_variant_name(level));
    CHECK(v.handles(input) == cpu_supports(level));
  }
#endif
  // Without a GPU the user calls take the highest level this CPU offers.
  CHECK(best_variant<Sad>(input, false).name == simd_variant_name(cpu_level()));
}

namespace {

// Σ |a − b| over n bytes, masked: the byte-vector helpers' expected sums.
std::uint32_t masked_sad(const std::uint8_t* a, const std::uint8_t* b, const std::uint8_t* mask,
                         int n) {
  std::uint32_t sum = 0;
  for (int x = 0; x < n; ++x) sum += std::uint32_t(std::abs(int(a[x]) - int(b[x] & mask[x])));
  return sum;
}

// Each level's helpers on kBytes bytes (a, b, mask) then the half vector: two accumulations,
// the second one masked, reduced to one sum. The ones above the baseline are compiled for their
// level (only called where the CPU has it).
template <class Bytes>
std::uint32_t helper_sums(const std::uint8_t* a, const std::uint8_t* b, const std::uint8_t* mask) {
  typename Bytes::Vec acc = Bytes::add_sad(Bytes::zero(), Bytes::load(a), Bytes::load(b));
  acc = Bytes::add_sad(acc, Bytes::load(a), Bytes::bit_and(Bytes::load(b), Bytes::load(mask)));
  acc = Bytes::add_sad_half(acc, Bytes::load_half(a),
                            Bytes::half_and(Bytes::load_half(b), Bytes::load_half(mask)));
  return Bytes::lane_sum(acc);
}
#if defined(KBENCH_X86_PACKED_SAD)
[[gnu::target(KBENCH_TARGET_AVX2)]] std::uint32_t avx2_sums(const std::uint8_t* a,
                                                            const std::uint8_t* b,
                                                            const std::uint8_t* mask) {
  using Bytes = cpu_simd::Avx2Bytes;
  Bytes::Vec acc = Bytes::add_sad(Bytes::zero(), Bytes::load(a), Bytes::load(b));
  acc = Bytes::add_sad(acc, Bytes::load(a), Bytes::bit_and(Bytes::load(b), Bytes::load(mask)));
  acc = Bytes::add_sad_half(acc, Bytes::load_half(a),
                            Bytes::half_and(Bytes::load_half(b), Bytes::load_half(mask)));
  return Bytes::lane_sum(acc);
}
[[gnu::target(KBENCH_TARGET_AVX512)]] std::uint32_t avx512_sums(const std::uint8_t* a,
                                                                const std::uint8_t* b,
                                                                const std::uint8_t* mask) {
  using Bytes = cpu_simd::Avx512Bytes;
  Bytes::Vec acc = Bytes::add_sad(Bytes::zero(), Bytes::load(a), Bytes::load(b));
  acc = Bytes::add_sad(acc, Bytes::load(a), Bytes::bit_and(Bytes::load(b), Bytes::load(mask)));
  acc = Bytes::add_sad_half(acc, Bytes::load_half(a),
                            Bytes::half_and(Bytes::load_half(b), Bytes::load_half(mask)));
  return Bytes::lane_sum(acc);
}
#endif

}  // namespace

TEST_CASE("the byte-vector helpers of every level this CPU has agree with byte arithmetic",
          "[sad]") {
  constexpr int kMaxBytes = 64;
  SplitMix64 random(404);
  for (int trial = 0; trial < 50; ++trial) {
    std::uint8_t a[kMaxBytes], b[kMaxBytes], mask[kMaxBytes];
    const int masked_from = random.between(0, kMaxBytes);
    for (int x = 0; x < kMaxBytes; ++x) {
      // Extremes often, so sums near 255 per byte are covered.
      a[x] = std::uint8_t(trial % 3 == 0 ? 255 * (x % 2) : random.between(0, 255));
      b[x] = std::uint8_t(trial % 3 == 0 ? 255 * (1 - x % 2) : random.between(0, 255));
      mask[x] = x < masked_from ? 0xFF : 0x00;
    }
    std::uint8_t all[kMaxBytes];
    std::fill_n(all, kMaxBytes, std::uint8_t(0xFF));
    const auto expected = [&](int bytes) {
      return masked_sad(a, b, all, bytes) + masked_sad(a, b, mask, bytes) +
             masked_sad(a, b, mask, bytes / 2);
    };
    INFO("trial " << trial << ", mask from byte " << masked_from);
    CHECK(helper_sums<cpu_simd::GenericBytes<>>(a, b, mask) == expected(16));
    CHECK(helper_sums<cpu_simd::GenericBytes<Isa::plain>>(a, b, mask) == expected(16));
#if defined(KBENCH_X86_PACKED_SAD)
    if (cpu_supports(CpuLevel::avx2)) CHECK(avx2_sums(a, b, mask) == expected(32));
    if (cpu_supports(CpuLevel::avx512)) CHECK(avx512_sums(a, b, mask) == expected(64));
#endif
  }
}

TEST_CASE("random shapes with few grey levels (many ties) match the reference", "[sad]") {
  SplitMix64 random(77);
  for (int n = 0; n < 12; ++n) {
    const int w = random.between(1, 48), h = random.between(1, 48);
    const int qw = random.between(1, w), qh = random.between(1, h);
    SadInput input{random_gray(w, h, random.next(), 2), random_gray(qw, qh, random.next(), 2), {}};
    input.params.want_map = n % 2 == 0;
    INFO(describe(input));
    CHECK(check_all_variants(input) >= expected_host_runs(input.params.want_map));
  }
}

TEST_CASE("ties go to the smallest row, then the smallest column, in every variant", "[sad]") {
  // A 2-periodic pattern: the 2x2 query matches exactly at every even (row, col).
  ImageU8 target(9, 7, 1);
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x < 9; ++x) target.at(x, y, 0) = std::uint8_t(10 * (x % 2) + 100 * (y % 2));
  }
  SadInput input{target, gray_from(2, 2, {0, 10, 100, 110}), {}};
  for (const bool want_map : {true, false}) {
    input.params.want_map = want_map;
    const Sad::Reference reference = Sad::reference(input);
    CHECK(reference.best == SadMatch{0, 0, 0});
    CHECK(check_all_variants(input) >= expected_host_runs(want_map));
  }
  // Shifted by one column the first exact match is (row 0, col 1), before (row 2, col 1)... and
  // a flat target ties everywhere: the answer is (0, 0).
  input.query = gray_from(2, 2, {10, 0, 110, 100});
  CHECK(Sad::reference(input).best == SadMatch{0, 1, 0});
  CHECK(check_all_variants(input) >= expected_host_runs(true));
  SadInput flat{ImageU8(12, 10, 1), ImageU8(3, 4, 1), {}};
  CHECK(Sad::reference(flat).best == SadMatch{0, 0, 0});
  CHECK(check_all_variants(flat) >= expected_host_runs(true));
}

TEST_CASE("the tie rule is (score, row, col) through the packed key", "[sad]") {
  CHECK(sad_key(5, 100) < sad_key(6, 0));
  CHECK(sad_key(5, 3) < sad_key(5, 4));
  CHECK(sad_key(0x7FFFFFFF, 0xFFFFFFFEu) < kNoSadKey);
  CHECK(match_from_key(sad_key(42, 2 * 10 + 7), 10) == SadMatch{2, 7, 42});
  CHECK_THROWS_AS(match_from_key(kNoSadKey, 10), Error);
}

TEST_CASE("packed-word helpers agree with byte arithmetic", "[sad]") {
  CHECK(sad4(0x01020304u, 0x04030201u, 0) == 3 + 1 + 1 + 3);
  CHECK(sad4(0xFF00FF00u, 0x00FF00FFu, 7) == 4 * 255 + 7);
  // The plain form (four byte differences; psadbw is the tuned one on x86 hosts).
  CHECK(sad4<Isa::plain>(0x01020304u, 0x04030201u, 0) == 3 + 1 + 1 + 3);
  CHECK(sad4<Isa::plain>(0xFF00FF00u, 0x00FF00FFu, 7) == 4 * 255 + 7);
  CHECK(byte_window<0>(0x44332211u, 0x88776655u) == 0x44332211u);
  CHECK(byte_window<1>(0x44332211u, 0x88776655u) == 0x55443322u);
  CHECK(byte_window<3>(0x44332211u, 0x88776655u) == 0x77665544u);
  const ImageU8 image = gray_from(5, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(pack_rows(image, 3, 2) ==
        std::vector<std::uint32_t>{0x04030201u, 0x5u, 0u, 0x09080706u, 0x0Au, 0u});
}

TEST_CASE("generated cases find the position the query was cut from", "[sad]") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const SadCase c = generated_sad_case(150, 110, 15 + int(seed), 11, seed);
    INFO("seed " << seed << ", cut at (" << c.cut.row << ", " << c.cut.col << ")");
    const Sad::Reference reference = Sad::reference(c.input);
    CHECK(reference.best == c.cut);
    CHECK(check_all_variants(c.input) >= expected_host_runs(true));
    SadInput argmin_only = c.input;
    argmin_only.params.want_map = false;
    CHECK(check_all_variants(argmin_only) >= expected_host_runs(false));
  }
}

TEST_CASE("the user call equals the reference and converts RGB to gray", "[sad]") {
  const ImageU8 rgb = synthetic_image(90, 70, 3, 4);
  const SadCase c = cut_sad_case(rgb, 12, 9, 4);
  ImageU8 rgb_query(12, 9, 3);
  for (std::size_t i = 0; i < c.input.query.data.size(); ++i) {
    for (int k = 0; k < 3; ++k) rgb_query.data[i * 3 + k] = c.input.query.data[i];
  }
  const SadResult with_map = match_template(rgb, rgb_query, {});
  CHECK(with_map == Sad::reference(c.input));
  SadParams argmin_only;
  argmin_only.want_map = false;
  const SadResult best = match_template(rgb, c.input.query, argmin_only);
  CHECK(best.map.empty());
  CHECK(best.best == c.cut);
}

TEST_CASE("top matches are best first and suppress overlapping positions", "[sad]") {
  // 4 x 3 map; the two best positions are neighbours.
  const std::vector<std::int32_t> map{5, 1, 2, 9,  //
                                      8, 7, 3, 1,  //
                                      6, 0, 4, 9};
  const auto all = top_matches(map, 4, 3, 12, 1, 1);
  REQUIRE(all.size() == 12);
  CHECK(all[0] == SadMatch{2, 1, 0});
  CHECK(all[1] == SadMatch{0, 1, 1});  // tie with (1, 3): smaller row first
  CHECK(all[2] == SadMatch{1, 3, 1});
  CHECK(all[11].score == 9);
  // Separation 2 in both axes: (0,1) is 2 rows from (2,1) and (1,3) 2 columns from both, so they
  // stay; every other position lies within 1 row and 1 column of one of them: only 3 of 4 come.
  const auto separated = top_matches(map, 4, 3, 4, 2, 2);
  REQUIRE(separated.size() == 3);
  CHECK(separated[0] == SadMatch{2, 1, 0});
  CHECK(separated[1] == SadMatch{0, 1, 1});
  CHECK(separated[2] == SadMatch{1, 3, 1});
  // Separations per axis: 1 row, 3 columns suppresses only same-row positions under 3 columns
  // away, so (1,0) survives next to (1,3).
  const auto rows_apart = top_matches(map, 4, 3, 5, 1, 3);
  REQUIRE(rows_apart.size() == 4);
  CHECK(rows_apart[3] == SadMatch{1, 0, 8});
  CHECK_THROWS_AS(top_matches(map, 5, 3, 1, 1, 1), Error);
}

TEST_CASE("top matches find every planted instance", "[sad]") {
  // A dark target with three bright 4x3 blocks; the query is one such block.
  ImageU8 target(60, 40, 1);
  const SadMatch planted[] = {{5, 7, 0}, {20, 40, 0}, {30, 3, 0}};
  for (const SadMatch& p : planted) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 4; ++x) target.at(p.col + x, p.row + y, 0) = std::uint8_t(200 + x + y);
    }
  }
  ImageU8 query(4, 3, 1);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) query.at(x, y, 0) = std::uint8_t(200 + x + y);
  }
  SadInput input{target, query, {}};
  input.params.top_k = 3;
  const auto top = top_matches(match_template(target, query, input.params), input);
  REQUIRE(top.size() == 3);
  CHECK(top[0] == planted[0]);
  CHECK(top[1] == planted[1]);
  CHECK(top[2] == planted[2]);
}

TEST_CASE("bad sad input is refused with a clear message", "[sad]") {
  const ImageU8 target = random_gray(10, 8, 1);
  CHECK_THROWS_WITH(validate_sad_input({target, random_gray(11, 2, 2), {}}),
                    Catch::Contains("larger than the target"));
  CHECK_THROWS_WITH(validate_sad_input({target, random_gray(2, 9, 2), {}}),
                    Catch::Contains("larger than the target"));
  CHECK_THROWS_WITH(validate_sad_input({target, ImageU8(), {}}), Catch::Contains("empty"));
  CHECK_THROWS_WITH(validate_sad_input({ImageU8(), target, {}}), Catch::Contains("empty"));
  CHECK_THROWS_WITH(validate_sad_input({ImageU8(10, 8, 3), random_gray(2, 2, 2), {}}),
                    Catch::Contains("gray"));
  SadInput no_map{target, random_gray(2, 2, 2), {}};
  no_map.params.want_map = false;
  no_map.params.top_k = 2;
  CHECK_THROWS_WITH(validate_sad_input(no_map), Catch::Contains("needs the SAD map"));
  CHECK_THROWS_AS(match_template(random_gray(3, 3, 1), random_gray(4, 4, 1), {}), Error);
  CHECK_THROWS_AS(match_template(ImageU8(), random_gray(1, 1, 1), {}), Error);
}
