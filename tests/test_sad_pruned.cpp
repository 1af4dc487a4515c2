// Every sad-pruned variant this build and machine can run returns exactly the full-search argmin
// (same position, same score, same tie rule), on random, adversarial and photo-like inputs, and
// the portable ones the top-k positions without separation too; the pruning statistics are sane;
// and the shared pieces (strips, integral image, scene) are right.
#include <catch2/catch.hpp>

#include <array>

#include "conformance.hpp"
#include "cpu_levels.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/random.hpp"
#include "kbench/sad_pruned.hpp"
#include "kbench/system_info.hpp"
#include "random_images.hpp"

using namespace kbench;

namespace {

using test::random_gray;
using test::runs_on_this_cpu;
using test::runs_on_this_machine;

SadInput argmin_only(ImageU8 target, ImageU8 query) {
  SadInput input{std::move(target), std::move(query), {}};
  input.params.want_map = false;
  return input;
}

// How many runs took the full search past the adaptive switch, and how many refined.
struct PathsTaken {
  int full_search = 0, refined = 0;
};

// Runs every runnable variant that handles the input (poisoned twice by run_checked), checks its
// argmin (or top-k) against full search and its statistics for sanity; returns how many ran and
// counts their paths into *paths.
int check_all_variants(const SadInput& input, PathsTaken* paths = nullptr) {
  const SadShape s = validate_sad_pruned_input(input);
  const auto statistics = [&](const SadPrunedResult& out) {
    const PruneStats& st = out.stats;
    CHECK(st.windows == s.map_size());
    CHECK(st.after_bounds >= 1);
    CHECK(st.after_bounds <= st.windows);
    if (!st.full_search) {
      REQUIRE(st.after_strip.size() == std::size_t(strip_layout(s).count));
      std::uint64_t previous = st.after_bounds;
      for (const std::uint64_t alive : st.after_strip) {
        CHECK(alive <= previous);
        previous = alive;
      }
      CHECK(st.after_strip.back() >= 1);  // the best window always finishes
    }
    if (paths) ++(st.full_search ? paths->full_search : paths->refined);
  };
  return test::check_all_variants<SadPruned>(input, runs_on_this_cpu<SadPruned>, statistics);
}

int host_variants() {
  int n = 0;
  for (const auto& v : variants<SadPruned>())
    n += v.backend != Backend::cuda && runs_on_this_cpu(v);
  return n;
}

}  // namespace

TEST_CASE("sad-pruned equals full search on random sizes", "[sad-pruned]") {
  struct Shape {
    int w, h, qw, qh;
  };
  const Shape shapes[] = {{1, 1, 1, 1},
                          {7, 5, 1, 1},
                          {9, 6, 9, 6},
                          {13, 11, 13, 1},
                          {13, 11, 1, 11},
                          {20, 17, 5, 3},
                          {33, 9, 6, 7},
                          {40, 30, 11, 9},
                          {64, 20, 63, 2},
                          {50, 45, 17, 18},
                          {90, 70, 35, 40},
                          {70, 60, 9, 33},
                          // Tall queries take several bound passes on GPUs (8 strips a pass), and
                          // wide ones sum past the row words loaded ahead.
                          {150, 200, 130, 129},
                          {300, 420, 270, 150},
                          {120, 330, 40, 260}};
  std::uint64_t seed = 100;
  for (const Shape& s : shapes) {
    const SadInput input =
        argmin_only(random_gray(s.w, s.h, ++seed), random_gray(s.qw, s.qh, ++seed));
    INFO(s.w << "x" << s.h << " target, " << s.qw << "x" << s.qh << " query");
    CHECK(check_all_variants(input) >= host_variants());
  }
}

TEST_CASE("sad-pruned keeps every tie and resolves it as full search", "[sad-pruned]") {
  SECTION("constant images: every window ties at 0, the first wins") {
    ImageU8 target(40, 30, 1), query(8, 20, 1);
    std::fill(target.data.begin(), target.data.end(), 77);
    std::fill(query.data.begin(), query.data.end(), 77);
    const SadInput input = argmin_only(target, query);
    CHECK(Sad::reference(input).best == SadMatch{0, 0, 0});
    CHECK(check_all_variants(input) >= host_variants());
  }
  SECTION("constant target, different query: every window ties at a non-zero score") {
    ImageU8 target(30, 25, 1), query(7, 18, 1);
    std::fill(target.data.begin(), target.data.end(), 10);
    std::fill(query.data.begin(), query.data.end(), 200);
    CHECK(check_all_variants(argmin_only(target, query)) >= host_variants());
  }
  SECTION("periodic texture: exact matches at several positions") {
    ImageU8 target(48, 40, 1);
    for (int y = 0; y < 40; ++y) {
      for (int x = 0; x < 48; ++x) target.at(x, y, 0) = std::uint8_t(37 * (x % 6) + 11 * (y % 4));
    }
    ImageU8 query(12, 17, 1);
    for (int y = 0; y < 17; ++y) {
      for (int x = 0; x < 12; ++x) query.at(x, y, 0) = target.at(x + 3, y + 2, 0);
    }
    const SadInput input = argmin_only(target, query);
    CHECK(Sad::reference(input).best == SadMatch{2, 3, 0});
    CHECK(check_all_variants(input) >= host_variants());
  }
  SECTION("few grey levels: many ties at the minimum") {
    SplitMix64 random(5);
    for (int n = 0; n < 8; ++n) {
      const int w = random.between(1, 60), h = random.between(1, 60);
      const int qw = random.between(1, w), qh = random.between(1, h);
      const SadInput input =
          argmin_only(random_gray(w, h, random.next(), 2), random_gray(qw, qh, random.next(), 2));
      INFO(w << "x" << h << " target, " << qw << "x" << qh << " query");
      CHECK(check_all_variants(input) >= host_variants());
    }
  }
}

TEST_CASE("sad-pruned on edge shapes and saturated pixels", "[sad-pruned]") {
  SECTION("query = whole target") {
    const ImageU8 t = random_gray(37, 29, 3);
    CHECK(check_all_variants(argmin_only(t, t)) >= host_variants());
  }
  SECTION("1x1 query") {
    CHECK(check_all_variants(argmin_only(random_gray(31, 23, 4), random_gray(1, 1, 5))) >=
          host_variants());
  }
  SECTION("saturated: 0 and 255 only, query heavily off") {
    ImageU8 target = random_gray(45, 41, 6, 2), query = random_gray(13, 21, 7, 2);
    for (auto& v : target.data) v = v ? 255 : 0;
    for (auto& v : query.data) v = v ? 0 : 255;
    CHECK(check_all_variants(argmin_only(target, query)) >= host_variants());
  }
}

TEST_CASE("sad-pruned finds cut queries in photo-like scenes at every noise level",
          "[sad-pruned]") {
  const ImageU8 scene = photo_like_scene(260, 200, 11);
  for (const double sigma : {0.0, 5.0, 10.0, 20.0, 40.0, 70.0, 100.0}) {
    const SadCase c = cut_sad_case_gaussian(scene, 40, 36, 12, sigma);
    SadInput input = c.input;
    input.params.want_map = false;
    INFO("sigma " << sigma);
    if (sigma <= 10) CHECK(Sad::reference(input).best == c.cut);
    CHECK(check_all_variants(input) >= host_variants());
  }
}

// The top_k best positions without separation (`match --top k --separation 1`): the portable and
// native CPU variants find them, the others refuse such inputs.
TEST_CASE("sad-pruned top-k without separation equals full search's", "[sad-pruned]") {
  const auto top = [](SadInput input, int k) {
    input.params.top_k = k;
    input.params.min_separation = 1;
    return input;
  };
  PathsTaken paths;
  const auto check_top = [&paths](const SadInput& input) {
    int runnable = 0;
    for (const auto& v : variants<SadPruned>()) {
      INFO("variant " << v.name);
      const bool finds_top = v.layer == Layer::portable || v.layer == Layer::native_cpu;
      CHECK(v.handles(input) == (finds_top && runs_on_this_cpu(v)));
      runnable += finds_top && runs_on_this_machine(v);
    }
    CHECK(runnable >= 1);
    CHECK(check_all_variants(input, &paths) == runnable);
  };
  SECTION("random sizes, k from 2 to more than the map's positions") {
    std::uint64_t seed = 400;
    for (const int k : {2, 7, 40}) {
      for (const auto& [w, h, qw, qh] : {std::array<int, 4>{7, 5, 1, 1},
                                         {20, 17, 5, 3},
                                         {64, 20, 63, 2},
                                         {90, 70, 35, 40},
                                         {150, 200, 130, 129}}) {
        INFO(w << "x" << h << " target, " << qw << "x" << qh << " query, k " << k);
        check_top(top(argmin_only(random_gray(w, h, ++seed), random_gray(qw, qh, ++seed)), k));
      }
    }
    CHECK(paths.full_search > 0);  // random images prune little; the collection from the map
  }
  SECTION("ties: constant images (the first k windows win), few grey levels, periodic texture") {
    ImageU8 target(40, 30, 1), query(8, 20, 1);
    std::fill(target.data.begin(), target.data.end(), 77);
    std::fill(query.data.begin(), query.data.end(), 77);
    check_top(top(argmin_only(target, query), 9));
    check_top(top(argmin_only(random_gray(50, 40, 41, 2), random_gray(9, 7, 42, 2)), 25));
    ImageU8 periodic(48, 40, 1);
    for (int y = 0; y < 40; ++y) {
      for (int x = 0; x < 48; ++x) periodic.at(x, y, 0) = std::uint8_t(37 * (x % 6) + 11 * (y % 4));
    }
    check_top(top(argmin_only(periodic, random_gray(12, 17, 43)), 12));
  }
  SECTION("photo-like scene at every noise level") {
    const ImageU8 scene = photo_like_scene(260, 200, 11);
    for (const double sigma : {0.0, 5.0, 20.0, 70.0}) {
      SadInput input = cut_sad_case_gaussian(scene, 40, 36, 12, sigma).input;
      input.params.want_map = false;
      INFO("sigma " << sigma);
      check_top(top(input, 10));
    }
    CHECK(paths.refined > 0);
  }
}

TEST_CASE("sad-pruned runners keep their own query when another run comes between their calls",
          "[sad-pruned]") {
  // Random images prune little, so the GPU variants take their full-search path, whose query
  // lives in constant memory that every search of the module shares (a runner skips reloading it
  // while it is still its own).
  const SadInput a = argmin_only(random_gray(150, 120, 31), random_gray(20, 18, 32));
  const SadInput b = argmin_only(random_gray(150, 120, 33), random_gray(20, 18, 34));
  const SadMatch best_a = Sad::reference(a).best, best_b = Sad::reference(b).best;
  REQUIRE(!(best_a == best_b));
  const auto run = [](Runner<SadPruned>& runner) {
    SadPrunedResult out;
    runner.compute();
    runner.sync();
    runner.download(out);
    return out.best;
  };
  for (const auto& v : variants<SadPruned>()) {
    if (!runs_on_this_machine(v) || !v.handles(a)) continue;
    INFO("variant " << v.name);
    const auto runner_a = v.make(a), runner_b = v.make(b);
    runner_a->upload();
    runner_b->upload();
    CHECK(run(*runner_a) == best_a);
    CHECK(run(*runner_b) == best_b);
    CHECK(run(*runner_a) == best_a);
  }
}

TEST_CASE("bounds prune most windows of a photo-like scene at low noise", "[sad-pruned]") {
  const ImageU8 scene = photo_like_scene(400, 300, 21);
  const SadCase c = cut_sad_case_gaussian(scene, 64, 64, 22, 5.0);
  SadInput input = c.input;
  input.params.want_map = false;
  const SadPrunedResult out = run_once(find_variant<SadPruned>("seq-strips"), input);
  CHECK(out.best == c.cut);
  // A statement about this generator, not a timing: if it stops holding, the scenes no longer
  // look like photos to the bounds.
  CHECK(double(out.stats.after_bounds) < 0.2 * double(out.stats.windows));
}

TEST_CASE("sad-pruned pieces: strips, strip sums, integral image, scene", "[sad-pruned]") {
  SadShape s{100, 80, 10, 37, 91, 44};
  const StripLayout strips = strip_layout(s);
  CHECK(strips.count == 3);
  CHECK(strips.begin(2) == 32);
  CHECK(strips.end(2) == 37);
  const ImageU8 image = random_gray(23, 19, 9);
  const std::vector<std::uint32_t> table = integral_image(image);
  std::uint32_t direct = 0;
  for (int y = 3; y < 11; ++y) {
    for (int x = 5; x < 20; ++x) direct += image.at(x, y, 0);
  }
  CHECK(box_sum(table.data(), 24, 3, 5, 11, 20) == direct);
  const ImageU8 query = random_gray(4, 37, 10);
  const std::vector<std::uint32_t> sums = query_strip_sums(query, strips);
  std::uint32_t total = 0;
  for (const auto v : query.data) total += v;
  CHECK(sums[0] + sums[1] + sums[2] == total);
  const ImageU8 a = photo_like_scene(120, 90, 3), b = photo_like_scene(120, 90, 3);
  CHECK(a == b);
  CHECK_FALSE(a == photo_like_scene(120, 90, 4));
  CHECK(abs_difference(3, 10) == 7);
  CHECK(abs_difference(10, 3) == 7);
}

TEST_CASE("sad-pruned refines the most textured strips first", "[sad-pruned]") {
  // Five strips of a 6-wide query (16, 16, 16, 16 and 4 rows): flat (strip 1 at another level)
  // but for a vertical edge in strip 3 (one step per row) and a checkerboard in the short last
  // strip.
  ImageU8 query(6, 68, 1);
  for (int y = 0; y < 68; ++y) {
    for (int x = 0; x < 6; ++x) {
      std::uint8_t v = y >= 16 && y < 32 ? 90 : 40;
      if (y >= 48 && y < 64 && x >= 3) v = 200;
      if (y >= 64) v = (x + y) % 2 ? 255 : 0;
      query.at(x, y, 0) = v;
    }
  }
  const StripLayout strips = strip_layout(SadShape{100, 80, 6, 68, 95, 13});
  REQUIRE(strips.count == 5);
  // Strip 4: 5·4 across + 6·3 down = 38 steps of 255; strip 3: 16 steps of 160; the flat ones
  // tie at zero and keep their index order.
  CHECK(strip_order(query, strips) == std::vector<int>{4, 3, 0, 1, 2});
  ImageU8 flat(6, 68, 1);
  std::fill(flat.data.begin(), flat.data.end(), std::uint8_t(7));
  CHECK(strip_order(flat, strips) == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("sad-pruned refuses what it cannot answer", "[sad-pruned]") {
  SadInput with_map{random_gray(10, 8, 1), random_gray(3, 3, 2), {}};
  CHECK_THROWS_WITH(validate_sad_pruned_input(with_map), Catch::Contains("writes no SAD map"));
  SadInput kept_apart = argmin_only(random_gray(10, 8, 1), random_gray(3, 3, 2));
  kept_apart.params.top_k = 2;
  CHECK_THROWS_WITH(validate_sad_pruned_input(kept_apart), Catch::Contains("without separation"));
  kept_apart.params.min_separation = 1;
  CHECK_THROWS_WITH(validate_sad_pruned_argmin(kept_apart), Catch::Contains("argmin only"));
  SadInput larger = argmin_only(random_gray(10, 8, 1), random_gray(11, 3, 2));
  CHECK_THROWS_WITH(validate_sad_pruned_input(larger), Catch::Contains("larger than the target"));
  CHECK_THROWS_AS(cut_sad_case_gaussian(random_gray(10, 8, 1), 3, 3, 1, -1.0), Error);
}
