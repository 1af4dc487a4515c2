// The library calls on host views: every algorithm against its reference, pitched rows and frames
// against packed single calls, the choice of variant, refusals that write nothing, and two
// contexts on two threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "cemd_keys.hpp"
#include "kbench/harness.hpp"
#include "kbench/kbench.hpp"
#include "kbench/sad_pruned.hpp"
#include "kbench/system_info.hpp"
#include "padded_frames.hpp"

using namespace kbench;
using kbench::testing::PaddedFrames;

namespace {

ImageView view_of(ImageU8& image) {
  return image_view(image);
}
ConstImageView view_of(const ImageU8& image) {
  return image_view(image);
}

DescriptorView view_of(const DescriptorSet& set) {
  return {set.values.data(), set.count, DescriptorType::u8, 0, MemoryPlace::host()};
}

}  // namespace

TEST_CASE("conv on views equals the reference, frames and pitched rows included", "[api]") {
  Context context;
  const Mask mask = builtin_mask("sharpen");
  for (const int channels : {1, 3}) {
    for (const Border border : {Border::clamp, Border::crop}) {
      INFO(channels << " channels, " << to_string(border));
      std::vector<ImageU8> frames;
      for (int f = 0; f < 3; ++f) frames.push_back(synthetic_image(37, 23, channels, 10 + f));
      const ImageSize size = conv_output_size(37, 23, mask, border);
      // Each frame alone, packed, against the double reference.
      std::vector<ImageU8> singles;
      for (const ImageU8& frame : frames) {
        ImageU8 out(size.width, size.height, channels);
        conv(context, view_of(frame), view_of(out), mask, {border});
        const ConvInput input{frame, mask, border};
        const CheckResult check = Conv::check(input, Conv::reference(input), out);
        CHECK(check.ok);
        singles.push_back(out);
      }
      // All frames in one call, input and output pitched and strided: the same bytes, and the
      // padding untouched.
      const PaddedFrames in(frames, 5, 11);
      std::vector<ImageU8> blank(3, ImageU8(size.width, size.height, channels));
      PaddedFrames out(blank, 3, 7, 0x5A);
      conv(context, in.view, out.view, mask, {border});
      for (int f = 0; f < 3; ++f) CHECK(out.frame(f) == singles[f]);
      CHECK(out.spare_bytes_hold(0x5A));
    }
  }
}

TEST_CASE("conv passes an alpha channel through", "[api]") {
  Context context;
  const ImageU8 rgba = synthetic_image(20, 16, 4, 3);
  for (const Border border : {Border::clamp, Border::crop}) {
    const ImageSize size = conv_output_size(20, 16, builtin_mask("edge"), border);
    ImageU8 out(size.width, size.height, 4);
    conv(context, view_of(rgba), view_of(out), builtin_mask("edge"), {border});
    const int inset = border == Border::crop ? 1 : 0;
    ImageU8 rgb(20, 16, 3);
    for (std::size_t i = 0; i < rgba.pixel_count(); ++i) {
      for (int c = 0; c < 3; ++c) rgb.data[i * 3 + c] = rgba.data[i * 4 + c];
    }
    ImageU8 rgb_out(size.width, size.height, 3);
    conv(context, view_of(rgb), view_of(rgb_out), builtin_mask("edge"), {border});
    bool colour_same = true, alpha_same = true;
    for (int y = 0; y < size.height; ++y) {
      for (int x = 0; x < size.width; ++x) {
        for (int c = 0; c < 3; ++c) colour_same &= out.at(x, y, c) == rgb_out.at(x, y, c);
        alpha_same &= out.at(x, y, 3) == rgba.at(x + inset, y + inset, 3);
      }
    }
    CHECK(colour_same);
    CHECK(alpha_same);
  }
}

TEST_CASE("lbp on views equals the reference, with a histogram per frame", "[api]") {
  Context context;
  std::vector<ImageU8> frames;
  for (int f = 0; f < 2; ++f) frames.push_back(synthetic_image(41, 29, 1, 20 + f));
  for (const LbpMapping mapping :
       {LbpMapping::plain, LbpMapping::uniform, LbpMapping::rotation_invariant}) {
    const LbpParams params{Border::crop, mapping};
    const std::size_t bins = std::size_t(lbp_bin_count(mapping));
    const PaddedFrames in(frames, 3, 0);
    const ImageSize size = lbp_output_size(41, 29, Border::crop);
    std::vector<ImageU8> blank(2, ImageU8(size.width, size.height, 1));
    PaddedFrames codes(blank, 0, 0);
    std::vector<std::uint32_t> histogram(2 * bins, 7);
    lbp(context, in.view, codes.view, histogram.data(), {mapping, Border::crop});
    for (int f = 0; f < 2; ++f) {
      const LbpResult expected = local_binary_pattern(frames[f], params);
      CHECK(codes.frame(f) == expected.codes);
      CHECK(std::vector<std::uint32_t>(histogram.begin() + f * bins,
                                       histogram.begin() + (f + 1) * bins) == expected.histogram);
    }
  }
  // Colour is converted to gray first.
  const ImageU8 rgb = synthetic_image(30, 20, 3, 4);
  ImageU8 codes(30, 20, 1);
  lbp(context, view_of(rgb), view_of(codes), nullptr);
  CHECK(codes == local_binary_pattern(to_gray(rgb), LbpParams{}).codes);
}

TEST_CASE("sad_map and match on views equal full search", "[api]") {
  Context context;
  const ImageU8 target = synthetic_image(90, 70, 1, 5);
  ImageU8 query(17, 13, 1);
  for (int y = 0; y < 13; ++y) {
    for (int x = 0; x < 17; ++x) query.at(x, y, 0) = target.at(x + 40, y + 30, 0);
  }
  const SadInput input{target, query, {}};
  const SadResult full = run_once(variants<Sad>().front(), input);
  // The map, into a pitched view.
  std::vector<std::int32_t> map(std::size_t(full.map_height) * (full.map_width + 3), -1);
  sad_map(context, view_of(target), view_of(query),
          {map.data(), full.map_width, full.map_height, (full.map_width + 3) * sizeof(std::int32_t),
           MemoryPlace::host()});
  bool same = true;
  for (int y = 0; y < full.map_height; ++y) {
    for (int x = 0; x < full.map_width; ++x) {
      same &= map[std::size_t(y) * (full.map_width + 3) + x] ==
              full.map[std::size_t(y) * full.map_width + x];
    }
  }
  CHECK(same);
  // The best position, by every method.
  for (const MatchMethod method :
       {MatchMethod::automatic, MatchMethod::full, MatchMethod::pruned}) {
    const std::vector<SadMatch> best =
        match(context, view_of(target), view_of(query), {1, 0, method});
    REQUIRE(best.size() == 1);
    CHECK(best[0] == full.best);
    CHECK((best[0].row == 30 && best[0].col == 40 && best[0].score == 0));
  }
  CHECK(context.last_call().algorithm == std::string(SadPruned::name));
  // The best five without separation: pruned and full search agree with top_matches.
  SadInput five = input;
  five.params.top_k = 5;
  five.params.min_separation = 1;
  const std::vector<SadMatch> expected = top_matches(full, five);
  CHECK(match(context, view_of(target), view_of(query), {5, 1, MatchMethod::pruned}) == expected);
  CHECK(match(context, view_of(target), view_of(query), {5, 1, MatchMethod::full}) == expected);
  // Kept apart: full search.
  SadInput apart = input;
  apart.params.top_k = 3;
  CHECK(match(context, view_of(target), view_of(query), {3, 0}) == top_matches(full, apart));
  CHECK(context.last_call().algorithm == std::string(Sad::name));
  CHECK_THROWS_AS(match(context, view_of(target), view_of(query), {3, 0, MatchMethod::pruned}),
                  UsageError);
}

TEST_CASE("cemd_match and cemd_all_pairs on views equal the variants' results", "[api]") {
  Context context;
  const DescriptorSet database = generated_descriptors(60, 3);
  const DescriptorSet queries = generated_queries(database, 25, 4);
  for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                              DescriptorDistance::l2}) {
    INFO(to_string(distance));
    const CemdMatchOptions options{distance, 0.8f};
    const CemdInput input{queries, database, {distance, false, 0.8f}};
    const std::vector<CemdMatch> matches =
        cemd_match(context, view_of(queries), view_of(database), options);
    const Variant<Cemd>& ran = find_variant<Cemd>(context.last_call().variant);
    const CemdResult expected = run_once(ran, input);
    REQUIRE(matches.size() == 25);
    for (int q = 0; q < 25; ++q) {
      const CemdNeighbours& n = expected.neighbours[q];
      CHECK(matches[q].index == n.best_index);
      CHECK(matches[q].distance == n.best_distance);
      CHECK(matches[q].second_index == n.second_index);
      CHECK(matches[q].accepted == ratio_accepted(n, 0.8f));
    }
    // The same values as float32 rows with a stride: the same answer.
    std::vector<float> floats(std::size_t(queries.count) * 130);
    for (int q = 0; q < queries.count; ++q) {
      for (int c = 0; c < kDescriptorBytes; ++c) floats[q * 130 + c] = queries.row(q)[c];
    }
    const DescriptorView f32{floats.data(), queries.count, DescriptorType::f32, 130 * sizeof(float),
                             MemoryPlace::host()};
    const std::vector<CemdMatch> again = cemd_match(context, f32, view_of(database), options);
    for (int q = 0; q < 25; ++q) CHECK(again[q].index == matches[q].index);
    // The matrix, with spare floats after each row.
    std::vector<float> matrix(25 * 64, -1.f);
    cemd_all_pairs(context, view_of(queries), view_of(database),
                   {matrix.data(), 25, 60, 64 * sizeof(float), MemoryPlace::host()}, options);
    const CemdResult all = run_once(find_variant<Cemd>(context.last_call().variant),
                                    CemdInput{queries, database, {distance, true, 0.8f}});
    bool same = true;
    for (int q = 0; q < 25; ++q) {
      for (int d = 0; d < 60; ++d) same &= matrix[q * 64 + d] == all.matrix[q * 60 + d];
      for (int d = 60; d < 64; ++d) same &= matrix[q * 64 + d] == -1.f;
    }
    CHECK(same);
  }
}

namespace {

// A database whose rows 70..89 repeat rows 10..29 (exact ties between pieces) and queries with
// one of those rows among them (a tie at distance 0).
struct TiedSets {
  DescriptorSet database = generated_descriptors(90, 7);
  DescriptorSet queries;
  TiedSets() {
    std::copy(database.row(10), database.row(30), database.values.begin() + 70 * kDescriptorBytes);
    queries = generated_queries(database, 31, 8);
    std::copy(database.row(12), database.row(13), queries.values.begin());
  }
};

}  // namespace

TEST_CASE("cemd piece matching equals one call over the whole database, ties included", "[api]") {
  const TiedSets sets;
  const DescriptorView queries = view_of(sets.queries);
  const auto piece = [&](int first, int rows) {
    return DescriptorView{sets.database.row(first), rows, DescriptorType::u8, 0,
                          MemoryPlace::host()};
  };
  // Pieces in order and out of order, one of a single row.
  const std::vector<std::vector<std::pair<int, int>>> cuts = {
      {{0, 90}}, {{0, 1}, {1, 17}, {18, 40}, {58, 32}}, {{58, 32}, {0, 30}, {30, 28}}};
  for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                              DescriptorDistance::l2}) {
    INFO(to_string(distance));
    Context context;
    const CemdMatchOptions options{distance, 0.8f, {}};
    const std::vector<CemdMatch> whole =
        cemd_match(context, queries, view_of(sets.database), options);
    const Choice choice{context.last_call().variant, "", ""};
    CHECK(whole[0].index == 12);
    CHECK(whole[0].distance == 0.f);
    for (std::size_t c = 0; c < cuts.size(); ++c) {
      INFO("cut " << c);
      CemdPieceMatcher matcher(context, queries, options, choice);
      for (const auto& [first, rows] : cuts[c]) matcher.add(piece(first, rows), first);
      CHECK(matcher.matches() == whole);
      CHECK(matcher.keys() == kbench::testing::keys_of(whole));
    }
    // A database of one row: no second neighbour.
    CemdPieceMatcher one(context, queries, options, choice);
    one.add(piece(5, 1), 5);
    const std::vector<CemdMatch> single = one.matches();
    CHECK(single[3].index == 5);
    CHECK(single[3].second_index == -1);
    CHECK_FALSE(single[3].accepted);
  }
}

TEST_CASE("cemd piece matching refuses no pieces and rows past 2^31", "[api]") {
  const TiedSets sets;
  Context context;
  CemdPieceMatcher matcher(context, view_of(sets.queries));
  CHECK_THROWS_WITH(matcher.matches(), Catch::Contains("no database piece"));
  CHECK_THROWS_WITH(matcher.keys(), Catch::Contains("no database piece"));
  const DescriptorView piece{sets.database.row(0), 10, DescriptorType::u8, 0, MemoryPlace::host()};
  CHECK_THROWS_WITH(matcher.add(piece, -1), Catch::Contains("rows are numbered"));
  CHECK_THROWS_WITH(matcher.add(piece, std::int64_t(1) << 31),
                    Catch::Contains("rows are numbered"));
  CHECK_THROWS_WITH(matcher.matches(), Catch::Contains("no database piece"));
}

TEST_CASE("a choice names the variant, backend or layer that runs, and is kept per shape",
          "[api]") {
  Context context;
  const ImageU8 image = synthetic_image(32, 24, 3, 1);
  ImageU8 out(32, 24, 3);
  conv(context, view_of(image), view_of(out), builtin_mask("box"), {}, {"seq-aos", "", ""});
  CHECK(context.last_call().variant == "seq-aos");
  conv(context, view_of(image), view_of(out), builtin_mask("box"), {}, {"", "serial", ""});
  CHECK(context.last_call().backend == "serial");
  conv(context, view_of(image), view_of(out), builtin_mask("box"), {}, {"", "", "portable"});
  CHECK(context.last_call().layer == "portable");
  conv(context, view_of(image), view_of(out), builtin_mask("box"));
  const std::string fastest = context.last_call().variant;
  conv(context, view_of(image), view_of(out), builtin_mask("box"));
  CHECK(context.last_call().variant == fastest);
  CHECK_THROWS_WITH(
      conv(context, view_of(image), view_of(out), builtin_mask("box"), {}, {"nope", "", ""}),
      Catch::Contains("no conv variant named 'nope'"));
  // A context moved keeps working; the one moved from says so.
  Context moved = std::move(context);
  conv(moved, view_of(image), view_of(out), builtin_mask("box"));
  CHECK_THROWS_WITH(conv(context, view_of(image), view_of(out), builtin_mask("box")),
                    Catch::Contains("moved from"));
}

TEST_CASE("refused calls name the argument and write nothing", "[api]") {
  Context context;
  const ImageU8 image = synthetic_image(16, 12, 3, 2);
  ImageU8 out(16, 12, 3);
  std::fill(out.data.begin(), out.data.end(), 0x77);
  const ImageU8 before = out;
  const Mask mask = builtin_mask("gaussian");
  const auto refused = [&](ConstImageView in, ImageView to, const char* message) {
    INFO(message);
    CHECK_THROWS_WITH(conv(context, in, to, mask), Catch::Contains(message));
    CHECK(out == before);
  };
  ConstImageView in = view_of(image);
  ImageView to = view_of(out);
  refused({nullptr, 16, 12, 3, 0, 1, 0, {}}, to, "in: the view has no data");
  refused({image.data.data(), 0, 12, 3, 0, 1, 0, {}}, to, "in: 0 x 12 has no pixels");
  refused({image.data.data(), 16, 12, 5, 0, 1, 0, {}}, to, "in: 5 channels");
  refused({image.data.data(), 16, 12, 3, 40, 1, 0, {}}, to, "less than a row's 48 bytes");
  ImageView small = to;
  small.width = 15;
  refused(in, small, "out: the view is 15x12x3; this call writes 16x12x3");
  ConstImageView on_device = in;
  on_device.place = MemoryPlace::cuda(0);
  refused(on_device, to,
          built_with_cuda() ? "in is in CUDA device 0 and out in host memory; a call takes "
                              "views of one place"
                            : "in: a CUDA device view, but this kbench was built without CUDA");
  ImageU8 both(16, 12, 3);
  CHECK_THROWS_WITH(conv(context, view_of(both), view_of(both), mask),
                    Catch::Contains("overlaps the input"));
  // Descriptors: a bad stride, values that are no descriptor values.
  const DescriptorSet set = generated_descriptors(4, 1);
  DescriptorView strided = view_of(set);
  strided.row_stride = 100;
  CHECK_THROWS_WITH(cemd_match(context, strided, view_of(set)),
                    Catch::Contains("queries: a row stride of 100 bytes"));
  std::vector<float> half(4 * 128, 1.5f);
  CHECK_THROWS_WITH(cemd_match(context, {half.data(), 4, DescriptorType::f32, 0, {}}, view_of(set)),
                    Catch::Contains("queries: value at row 0, column 0 is 1.5"));
  CHECK_THROWS_WITH(cemd_match(context, view_of(set), view_of(set), {DescriptorDistance::l2, 0.f}),
                    Catch::Contains("ratio"));
  // A query larger than the target, a map of the wrong size.
  const ImageU8 big = synthetic_image(40, 40, 1, 1);
  const ImageU8 gray = to_gray(image);
  CHECK_THROWS_AS(match(context, view_of(gray), view_of(big)), Error);
  std::vector<std::int32_t> map(10, -1);
  CHECK_THROWS_WITH(sad_map(context, view_of(big), view_of(gray), {map.data(), 2, 5, 0, {}}),
                    Catch::Contains("map: the view is 2 x 5; the map of this target and query is "
                                    "25 x 29"));
  CHECK(map == std::vector<std::int32_t>(10, -1));
}

TEST_CASE("contexts on two threads give the bytes one thread gives", "[api]") {
  // LBP is bit-identical across variants, so every thread's codes must equal the reference,
  // whichever layer runs them. A thread that did not start Kokkos asking for the portable layer
  // is refused on a host-only build (Kokkos 3.4 runs its host spaces on that thread only), and
  // gets a portable CUDA variant where there is one.
  const ImageU8 image = synthetic_image(64, 48, 1, 9);
  const LbpResult expected = local_binary_pattern(image, LbpParams{});
  const char* layers[] = {"sequential", "", "native_cpu", ""};
  std::vector<ImageU8> codes(4, ImageU8(64, 48, 1));
  std::vector<std::vector<std::uint32_t>> histograms(4, std::vector<std::uint32_t>(256));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Context own;
      for (int k = 0; k < 25; ++k) {
        lbp(own, view_of(image), view_of(codes[t]), histograms[t].data(), {}, {"", "", layers[t]});
      }
    });
  }
  for (auto& t : threads) t.join();
  std::thread portable([&] {
    Context own;
    ImageU8 out(64, 48, 1);
    const Choice kokkos{"", "", "portable"};
    if (gpu_available()) {
      lbp(own, view_of(image), view_of(out), nullptr, {}, kokkos);
      CHECK(out == expected.codes);
    } else {
      CHECK_THROWS_WITH(lbp(own, view_of(image), view_of(out), nullptr, {}, kokkos),
                        Catch::Contains("runs only on the thread that started it"));
    }
  });
  portable.join();
  for (int t = 0; t < 4; ++t) {
    INFO("thread " << t);
    CHECK(codes[t] == expected.codes);
    CHECK(histograms[t] == expected.histogram);
  }
}
