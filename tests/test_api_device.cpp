// The library calls on device views (GPU suite): every variant that takes them, in every layout
// (rows of whole vectors used in place, others staged), against the reference frame by frame;
// a batch against single calls; the caller's streams, two contexts on one GPU from two threads;
// and refusals. Without a usable GPU the cases pass without running (the host suite's refusals
// are in test_api.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <thread>

#include "cemd_keys.hpp"
#include "kbench/harness.hpp"
#include "kbench/kbench.hpp"
#include "kbench/system_info.hpp"
#include "padded_frames.hpp"

#if defined(KBENCH_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

using namespace kbench;
using kbench::testing::PaddedFrames;

namespace {

// Host frames mirrored in device memory with the same layout: `view` points into the device.
struct DeviceMirror {
  PaddedFrames host;
  DeviceMemory memory;
  ImageView view;

  explicit DeviceMirror(PaddedFrames frames)
      : host(std::move(frames)), memory(host.bytes.size(), 0), view(host.view) {
    host.view.data = host.bytes.data();
    view.data = static_cast<std::uint8_t*>(memory.data());
    view.place = MemoryPlace::cuda(0);
    copy_rows_async(memory.data(), host.bytes.size(), host.bytes.data(), host.bytes.size(),
                    host.bytes.size(), 1, nullptr);
    synchronize(nullptr);
  }
  // The device bytes back into `host`.
  void fetch() {
    copy_rows_async(host.bytes.data(), host.bytes.size(), memory.data(), host.bytes.size(),
                    host.bytes.size(), 1, nullptr);
    synchronize(nullptr);
  }
};

// Host values copied into device memory.
template <class T>
DeviceMemory on_device(const std::vector<T>& values) {
  DeviceMemory memory(values.size() * sizeof(T), 0);
  copy_rows_async(memory.data(), values.size() * sizeof(T), values.data(),
                  values.size() * sizeof(T), values.size() * sizeof(T), 1, nullptr);
  synchronize(nullptr);
  return memory;
}
// Device memory's values on the host.
template <class T>
std::vector<T> on_host(const DeviceMemory& memory, std::size_t count) {
  std::vector<T> values(count);
  copy_rows_async(values.data(), count * sizeof(T), memory.data(), count * sizeof(T),
                  count * sizeof(T), 1, nullptr);
  synchronize(nullptr);
  return values;
}

std::vector<ImageU8> frames_of(int count, int width, int height, int channels, std::uint64_t seed) {
  std::vector<ImageU8> frames;
  for (int f = 0; f < count; ++f)
    frames.push_back(synthetic_image(width, height, channels, seed + f));
  return frames;
}

// A caller's layout: spare bytes after each row and frame (0: packed).
struct Layout {
  int width;
  std::size_t pad, gap;
  const char* what;
};
// 64 × 3 and 48 × 1 bytes are whole 16-byte vectors (used in place when packed); 37 is not.
const Layout kLayouts[] = {{64, 0, 0, "packed, whole vectors"},
                           {37, 0, 0, "packed, odd width"},
                           {48, 16, 32, "pitched by 16, frames apart"},
                           {37, 5, 11, "odd pitch and stride"}};

template <class Algorithm>
std::vector<const Variant<Algorithm>*> view_variants() {
  std::vector<const Variant<Algorithm>*> list;
  for (const auto& v : variants<Algorithm>()) {
    if (v.on_views && runs_here(v)) list.push_back(&v);
  }
  return list;
}

// Runs each(variant, distance, operation) for every cemd variant on device views and every
// distance it takes for the nearest two of `queries` against `database` (`operation`: that input).
template <class Each>
void for_each_view_case(const DescriptorSet& queries, const DescriptorSet& database, Each each) {
  for (const auto* variant : view_variants<Cemd>()) {
    for (const auto distance : {DescriptorDistance::cemd_normalised, DescriptorDistance::cemd_raw,
                                DescriptorDistance::l2}) {
      INFO(variant->name << ", " << to_string(distance));
      CemdInput operation{queries, database, {}};
      operation.params.distance = distance;
      if (!variant->handles(operation)) continue;
      each(*variant, distance, operation);
    }
  }
}

// The image's first `count` channels.
ImageU8 first_channels(const ImageU8& image, int count) {
  if (count == image.channels) return image;
  ImageU8 out(image.width, image.height, count);
  for (std::size_t i = 0; i < image.pixel_count(); ++i) {
    for (int c = 0; c < count; ++c) out.data[i * count + c] = image.data[i * image.channels + c];
  }
  return out;
}

Mask box5() {
  return {5, std::vector<float>(25, 1.f / 25.f)};
}

}  // namespace

TEST_CASE("conv on device views equals the reference in every layout", "[api_device]") {
  if (!gpu_available()) return;
  REQUIRE(!view_variants<Conv>().empty());
  Context context;
  for (const auto* variant : view_variants<Conv>()) {
    for (const Layout& layout : kLayouts) {
      for (const int channels : {1, 3, 4}) {
        for (const Mask& mask : {builtin_mask("sharpen"), box5()}) {
          for (const Border border : {Border::clamp, Border::crop}) {
            INFO(variant->name << ", " << layout.what << ", " << channels << " channels, "
                               << mask.size << "x" << mask.size << " " << to_string(border));
            const auto frames = frames_of(3, layout.width, 19, channels, 40);
            const ImageSize size = conv_output_size(layout.width, 19, mask, border);
            DeviceMirror in(PaddedFrames(frames, layout.pad, layout.gap));
            DeviceMirror out(
                PaddedFrames(std::vector<ImageU8>(3, ImageU8(size.width, size.height, channels)),
                             layout.pad, layout.gap, 0x5A));
            conv(context, in.view, out.view, mask, {border, {nullptr, true}}, {variant->name});
            out.fetch();
            const int colours = channels == 4 ? 3 : channels;
            for (int f = 0; f < 3; ++f) {
              // The colour against the reference; an alpha channel is passed through.
              const ImageU8 got = out.host.frame(f);
              const ConvInput colour{first_channels(frames[f], colours), mask, border};
              const CheckResult check =
                  Conv::check(colour, Conv::reference(colour), first_channels(got, colours));
              CHECK(check.ok);
              if (channels == 4) {
                const int inset = border == Border::crop ? mask.radius() : 0;
                bool alpha = true;
                for (int y = 0; y < size.height; ++y) {
                  for (int x = 0; x < size.width; ++x) {
                    alpha &= got.at(x, y, 3) == frames[f].at(x + inset, y + inset, 3);
                  }
                }
                CHECK(alpha);
              }
            }
            CHECK(out.host.spare_bytes_hold(0x5A));
          }
        }
      }
    }
  }
}

TEST_CASE("lbp on device views equals the reference in every layout", "[api_device]") {
  if (!gpu_available()) return;
  REQUIRE(!view_variants<Lbp>().empty());
  Context context;
  for (const auto* variant : view_variants<Lbp>()) {
    for (const Layout& layout : kLayouts) {
      for (const LbpMapping mapping :
           {LbpMapping::plain, LbpMapping::uniform, LbpMapping::rotation_invariant}) {
        for (const Border border : {Border::clamp, Border::crop}) {
          INFO(variant->name << ", " << layout.what << ", " << to_string(mapping) << ", "
                             << to_string(border));
          const auto frames = frames_of(4, layout.width, 21, 1, 70);
          const ImageSize size = lbp_output_size(layout.width, 21, border);
          const std::size_t bins = std::size_t(lbp_bin_count(mapping));
          DeviceMirror in(PaddedFrames(frames, layout.pad, layout.gap));
          DeviceMirror codes(
              PaddedFrames(std::vector<ImageU8>(4, ImageU8(size.width, size.height, 1)), layout.pad,
                           layout.gap, 0x5A));
          DeviceMemory histograms(4 * bins * sizeof(std::uint32_t), 0);
          fill_async(histograms.data(), 0xEE, histograms.size(), nullptr);
          lbp(context, in.view, codes.view, static_cast<std::uint32_t*>(histograms.data()),
              {mapping, border, {nullptr, true}}, {variant->name});
          codes.fetch();
          std::vector<std::uint32_t> counts(4 * bins);
          copy_rows_async(counts.data(), histograms.size(), histograms.data(), histograms.size(),
                          histograms.size(), 1, nullptr);
          synchronize(nullptr);
          for (int f = 0; f < 4; ++f) {
            const LbpResult expected = local_binary_pattern(frames[f], {border, mapping});
            CHECK(codes.host.frame(f) == expected.codes);
            CHECK(std::vector<std::uint32_t>(counts.begin() + f * bins,
                                             counts.begin() + (f + 1) * bins) ==
                  expected.histogram);
          }
          CHECK(codes.host.spare_bytes_hold(0x5A));
        }
      }
    }
  }
}

TEST_CASE("a batch on device views equals single calls, and calls repeat exactly", "[api_device]") {
  if (!gpu_available()) return;
  Context context;
  const Mask mask = builtin_mask("gaussian");
  const auto frames = frames_of(9, 640, 48, 3, 5);
  for (const auto* variant : view_variants<Conv>()) {
    INFO(variant->name);
    DeviceMirror batch_in(PaddedFrames(frames, 0, 0));
    DeviceMirror batch_out(PaddedFrames(std::vector<ImageU8>(9, ImageU8(640, 48, 3)), 0, 0));
    for (int call = 0; call < 2; ++call) {
      conv(context, batch_in.view, batch_out.view, mask, {Border::clamp, {nullptr, true}},
           {variant->name});
    }
    batch_out.fetch();
    for (int f = 0; f < 9; ++f) {
      DeviceMirror one_in(PaddedFrames({frames[f]}, 0, 0));
      DeviceMirror one_out(PaddedFrames({ImageU8(640, 48, 3)}, 0, 0));
      conv(context, one_in.view, one_out.view, mask, {Border::clamp, {nullptr, true}},
           {variant->name});
      one_out.fetch();
      CHECK(batch_out.host.frame(f) == one_out.host.frame(0));
    }
  }
}

TEST_CASE("sad_map and match on device views equal the host calls", "[api_device]") {
  if (!gpu_available()) return;
  const ImageU8 target = synthetic_image(90, 70, 1, 5);
  ImageU8 query(17, 13, 1);
  for (int y = 0; y < 13; ++y) {
    for (int x = 0; x < 17; ++x) query.at(x, y, 0) = target.at(x + 40, y + 30, 0);
  }
  const int map_width = 90 - 17 + 1, map_height = 70 - 13 + 1;
  const std::size_t map_pitch = std::size_t(map_width + 3);  // in values
  // Odd pitches: the kernels' word packing is staged.
  const DeviceMirror device_target(PaddedFrames({target}, 5, 0));
  const DeviceMirror device_query(PaddedFrames({query}, 3, 0));
  SadInput with_map{target, query, {}}, without_map{target, query, {}};
  with_map.params.want_map = true;
  without_map.params.want_map = false;
  for (const auto* variant : view_variants<Sad>()) {
    INFO(variant->name);
    Context context;
    const Choice choice{variant->name, "", ""};
    // The best position alone, through the variants that search without the map.
    if (variant->handles(without_map)) {
      CHECK(match(context, device_target.view, device_query.view, {}, choice).front() ==
            SadMatch{30, 40, 0});
      CHECK(context.last_call().variant == variant->name);
    }
    if (!variant->handles(with_map)) continue;
    std::vector<std::int32_t> expected(std::size_t(map_width) * map_height);
    sad_map(context, image_view(target), image_view(query),
            {expected.data(), map_width, map_height, 0, MemoryPlace::host()}, {}, choice);
    DeviceMemory map = on_device(std::vector<std::int32_t>(map_pitch * map_height, -1));
    sad_map(context, device_target.view, device_query.view,
            {static_cast<std::int32_t*>(map.data()), map_width, map_height,
             map_pitch * sizeof(std::int32_t), MemoryPlace::cuda(0)},
            {Stream{nullptr, true}}, choice);
    CHECK(context.last_call().variant == variant->name);
    const auto values = on_host<std::int32_t>(map, map_pitch * map_height);
    bool same = true, spare_kept = true;
    for (int y = 0; y < map_height; ++y) {
      for (int x = 0; x < map_width; ++x) {
        same &= values[y * map_pitch + x] == expected[std::size_t(y) * map_width + x];
      }
      for (std::size_t x = map_width; x < map_pitch; ++x) {
        spare_kept &= values[y * map_pitch + x] == -1;
      }
    }
    CHECK(same);
    CHECK(spare_kept);
    // Four positions without separation, from the map.
    const MatchOptions options{4, 1, MatchMethod::full};
    CHECK(match(context, device_target.view, device_query.view, options, choice) ==
          match(context, image_view(target), image_view(query), options, choice));
  }
}

TEST_CASE("cemd_match and cemd_all_pairs on device views equal the host calls", "[api_device]") {
  if (!gpu_available()) return;
  const DescriptorSet database = generated_descriptors(60, 3);
  const DescriptorSet queries = generated_queries(database, 25, 4);
  // The queries packed, the database 160 bytes a row and as floats.
  const DeviceMemory device_queries = on_device(queries.values);
  std::vector<std::uint8_t> strided(60 * 160, 0xEE);
  std::vector<float> floats(60 * kDescriptorBytes);
  for (int r = 0; r < 60; ++r) {
    for (int c = 0; c < kDescriptorBytes; ++c) {
      strided[r * 160 + c] = database.row(r)[c];
      floats[r * kDescriptorBytes + c] = float(database.row(r)[c]);
    }
  }
  const DeviceMemory device_strided = on_device(strided);
  const DeviceMemory device_floats = on_device(floats);
  const DescriptorView host_queries{queries.values.data(), 25, DescriptorType::u8, 0,
                                    MemoryPlace::host()};
  const DescriptorView host_database{database.values.data(), 60, DescriptorType::u8, 0,
                                     MemoryPlace::host()};
  const DescriptorView query_view{device_queries.data(), 25, DescriptorType::u8, 0,
                                  MemoryPlace::cuda(0)};
  const DescriptorView database_views[] = {
      {device_strided.data(), 60, DescriptorType::u8, 160, MemoryPlace::cuda(0)},
      {device_floats.data(), 60, DescriptorType::f32, 0, MemoryPlace::cuda(0)}};
  // A variant may take some distances or the nearest two only (cuda-tensor).
  for_each_view_case(
      queries, database,
      [&](const Variant<Cemd>& variant, DescriptorDistance distance, CemdInput& operation) {
        operation.params.all_pairs = true;
        const bool matrix_too = variant.handles(operation);
        Context context;
        const Choice choice{variant.name, "", ""};
        const CemdMatchOptions options{distance, 0.8f, {}};
        const auto expected = cemd_match(context, host_queries, host_database, options, choice);
        std::vector<float> expected_matrix(25 * 60);
        if (matrix_too) {
          cemd_all_pairs(context, host_queries, host_database,
                         {expected_matrix.data(), 25, 60, 0, MemoryPlace::host()}, options, choice);
        }
        for (const DescriptorView& database_view : database_views) {
          const auto matches = cemd_match(context, query_view, database_view, options, choice);
          CHECK(context.last_call().variant == variant.name);
          CHECK(matches == expected);
          if (!matrix_too) continue;
          // The matrix with spare floats after each row, on a caller's stream.
          DeviceMemory matrix = on_device(std::vector<float>(25 * 64, -1.f));
          cemd_all_pairs(context, query_view, database_view,
                         {static_cast<float*>(matrix.data()), 25, 60, 64 * sizeof(float),
                          MemoryPlace::cuda(0)},
                         {distance, 0.8f, Stream{nullptr, true}}, choice);
          const auto values = on_host<float>(matrix, 25 * 64);
          bool same_matrix = true;
          for (int q = 0; q < 25; ++q) {
            for (int d = 0; d < 60; ++d)
              same_matrix &= values[q * 64 + d] == expected_matrix[q * 60 + d];
            for (int d = 60; d < 64; ++d) same_matrix &= values[q * 64 + d] == -1.f;
          }
          CHECK(same_matrix);
        }
      });
}

#if defined(KBENCH_HAVE_CUDA)
TEST_CASE("cemd piece matching on device views equals one host call, ties included",
          "[api_device]") {
  if (!gpu_available()) return;
  DescriptorSet database = generated_descriptors(300, 11);
  // Rows 250..299 repeat rows 20..69: exact ties between pieces.
  std::copy(database.row(20), database.row(70), database.values.begin() + 250 * kDescriptorBytes);
  DescriptorSet queries = generated_queries(database, 77, 12);
  std::copy(database.row(33), database.row(34), queries.values.begin());
  const DeviceMemory device_queries = on_device(queries.values);
  const DeviceMemory device_database = on_device(database.values);
  const DescriptorView host_queries{queries.values.data(), queries.count, DescriptorType::u8, 0,
                                    MemoryPlace::host()};
  const DescriptorView host_database{database.values.data(), database.count, DescriptorType::u8, 0,
                                     MemoryPlace::host()};
  const DescriptorView query_view{device_queries.data(), queries.count, DescriptorType::u8, 0,
                                  MemoryPlace::cuda(0)};
  const auto piece = [&](int first, int rows) {
    return DescriptorView{static_cast<const std::uint8_t*>(device_database.data()) +
                              std::size_t(first) * kDescriptorBytes,
                          rows, DescriptorType::u8, 0, MemoryPlace::cuda(0)};
  };
  const std::vector<std::pair<int, int>> cut = {{250, 50}, {0, 1}, {1, 129}, {130, 120}};
  const auto check = [&](const Variant<Cemd>& variant, DescriptorDistance distance, CemdInput&) {
    Context context;
    const Choice choice{variant.name, "", ""};
    const auto expected =
        cemd_match(context, host_queries, host_database, {distance, 0.8f, {}}, choice);
    CHECK(expected[0].index == 33);
    CHECK(expected[0].second_index == 263);
    // On a stream of the caller's, every piece queued before the matches are asked for.
    const DeviceStream stream(0);
    CemdPieceMatcher matcher(context, query_view, {distance, 0.8f, {stream.handle(), false}},
                             choice);
    for (const auto& [first, rows] : cut) matcher.add(piece(first, rows), first);
    const DescriptorView host_piece{database.row(0), 3, DescriptorType::u8, 0, MemoryPlace::host()};
    CHECK_THROWS_WITH(matcher.add(host_piece, 0), Catch::Contains("one place"));
    const std::vector<CemdMatch> matches = matcher.matches();
    CHECK(context.last_call().variant == variant.name);
    CHECK(matches == expected);
    CHECK(matcher.keys() == kbench::testing::keys_of(expected));
  };
  for_each_view_case(queries, database, check);
}

TEST_CASE("contexts on two threads and their own streams give one thread's bytes", "[api_device]") {
  if (!gpu_available()) return;
  const auto frames = frames_of(16, 320, 96, 1, 11);
  const Mask mask = builtin_mask("edge");
  std::vector<ImageU8> expected;
  {
    Context context;
    DeviceMirror in(PaddedFrames(frames, 0, 0));
    DeviceMirror out(PaddedFrames(std::vector<ImageU8>(16, ImageU8(320, 96, 1)), 0, 0));
    conv(context, in.view, out.view, mask, {Border::clamp, {nullptr, true}});
    out.fetch();
    for (int f = 0; f < 16; ++f) expected.push_back(out.host.frame(f));
  }
  std::vector<std::vector<ImageU8>> results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t stream;
      REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
      Context own;
      DeviceMirror in(PaddedFrames(frames, 0, 0));
      DeviceMirror out(PaddedFrames(std::vector<ImageU8>(16, ImageU8(320, 96, 1)), 0, 0));
      for (int k = 0; k < 20; ++k) conv(own, in.view, out.view, mask, {Border::clamp, {stream}});
      synchronize(stream);
      out.fetch();
      for (int f = 0; f < 16; ++f) results[t].push_back(out.host.frame(f));
      cudaStreamDestroy(stream);
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < 2; ++t) CHECK(results[t] == expected);
}
#endif

TEST_CASE("calls on device views refuse mixed places, other devices, colour and bad values",
          "[api_device]") {
  if (!gpu_available()) return;
  Context context;
  const auto frames = frames_of(1, 32, 16, 3, 1);
  DeviceMirror in(PaddedFrames(frames, 0, 0));
  DeviceMirror out(PaddedFrames(frames, 0, 0, 0x11));
  ImageU8 host_out(32, 16, 3);
  const Mask mask = builtin_mask("box");
  CHECK_THROWS_WITH(conv(context, in.view, image_view(host_out), mask),
                    Catch::Contains("a call takes views of one place"));
  ImageView elsewhere = out.view;
  elsewhere.place = MemoryPlace::cuda(1);
  ConstImageView elsewhere_in = in.view;
  elsewhere_in.place = MemoryPlace::cuda(1);
  CHECK_THROWS_WITH(conv(context, elsewhere_in, elsewhere, mask),
                    Catch::Contains("this context runs on device 0"));
  ImageView codes = out.view;
  codes.channels = 1;
  CHECK_THROWS_WITH(lbp(context, in.view, codes, nullptr),
                    Catch::Contains("lbp on a device view takes gray"));
  CHECK_THROWS_WITH(match(context, in.view, in.view),
                    Catch::Contains("sad on a device view takes gray"));
  out.fetch();
  CHECK(out.host.frame(0) == PaddedFrames(frames, 0, 0, 0x11).frame(0));
  // sad: the pruned search and a host map with device images; cemd: a value that is not a whole
  // number 0..255 in device floats, refused before the matrix is written.
  const DeviceMirror gray(PaddedFrames(frames_of(1, 32, 16, 1, 2), 0, 0));
  CHECK_THROWS_WITH(match(context, gray.view, gray.view, {1, 0, MatchMethod::pruned}),
                    Catch::Contains("the pruned search takes host views"));
  std::vector<std::int32_t> host_map(1, -1);
  CHECK_THROWS_WITH(
      sad_map(context, gray.view, gray.view, {host_map.data(), 1, 1, 0, MemoryPlace::host()}),
      Catch::Contains("a call takes views of one place"));
  std::vector<float> values(3 * kDescriptorBytes, 7.f);
  values[kDescriptorBytes + 5] = std::nanf("");
  const DeviceMemory descriptors = on_device(values);
  const DescriptorView bad{descriptors.data(), 3, DescriptorType::f32, 0, MemoryPlace::cuda(0)};
  DeviceMemory matrix = on_device(std::vector<float>(9, -1.f));
  CHECK_THROWS_WITH(
      cemd_all_pairs(context, bad, bad,
                     {static_cast<float*>(matrix.data()), 3, 3, 0, MemoryPlace::cuda(0)}),
      Catch::Contains("queries: value at row 1, column 5 is nan"));
  CHECK(on_host<float>(matrix, 9) == std::vector<float>(9, -1.f));
}
