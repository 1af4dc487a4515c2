// api-overhead: what the library call costs over the tools' variant run, on the same variant,
// for conv (3×3 gaussian, RGB) and LBP (gray) at each size given (default 1080p): the call on
// host views against run_once, and, where a GPU is usable, the call on device views against the
// bare kernel, the host's time to queue a call, and the copy rates that batch figures are set
// against; one JSON line per case. What each figure times: docs/building.md#the-librarys-own-cost
//
//   api-overhead [--reps N] [WxH ...]    (variant: each algorithm's preferred one here)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kbench/harness.hpp"
#include "kbench/kbench.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/system_info.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class Run, class Call>
void compare_paths(const char* algorithm, const std::string& variant, const std::string& size,
                   int reps, const Run& run, const Call& call) {
  std::vector<double> run_ms, call_ms;
  run();
  call();  // warm: the context's first call of a shape chooses its variant
  for (int r = 0; r < reps; ++r) {
    for (const bool through_call : {false, true}) {
      const Clock::time_point start = Clock::now();
      if (through_call) {
        call();
      } else {
        run();
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      (through_call ? call_ms : run_ms).push_back(ms);
    }
  }
  const double a = median(run_ms), b = median(call_ms);
  std::printf(
      "{\"algorithm\": \"%s\", \"variant\": \"%s\", \"size\": \"%s\", \"reps\": %d, "
      "\"run_median_ms\": %.4f, \"call_median_ms\": %.4f, \"call_over_run\": %.3f, "
      "\"host\": \"%s\", \"threads\": %d, \"commit\": \"%s\"}\n",
      algorithm, variant.c_str(), size.c_str(), reps, a, b, b / a, kbench::cpu_name().c_str(),
      kbench::host_threads(), kbench::build_commit());
  std::fflush(stdout);
}

// Times `kernel` and `device` (each queues one call) alternately: the GPU time per call of a
// burst, and the host's time to queue one.
template <class Kernel, class Device>
void compare_device_paths(const char* algorithm, const std::string& variant,
                          const std::string& size, int reps, const Kernel& kernel,
                          const Device& device) {
  constexpr int kBurst = 50;
  std::vector<double> gpu[2], queue[2];
  kernel();
  device();
  kbench::synchronize(nullptr);
  for (int r = 0; r < reps; ++r) {
    for (const int path : {0, 1}) {
      const Clock::time_point start = Clock::now();
      for (int k = 0; k < kBurst; ++k) path == 0 ? kernel() : device();
      const Clock::time_point queued = Clock::now();
      kbench::synchronize(nullptr);
      const Clock::time_point done = Clock::now();
      queue[path].push_back(std::chrono::duration<double, std::micro>(queued - start).count() /
                            kBurst);
      gpu[path].push_back(std::chrono::duration<double, std::milli>(done - start).count() / kBurst);
    }
  }
  const double kernel_ms = median(gpu[0]), device_ms = median(gpu[1]);
  const double kernel_us = median(queue[0]), device_us = median(queue[1]);
  std::printf(
      "{\"algorithm\": \"%s\", \"path\": \"device views\", \"variant\": \"%s\", "
      "\"size\": \"%s\", \"reps\": %d, \"burst\": %d, \"kernel_ms\": %.4f, "
      "\"device_call_ms\": %.4f, \"device_over_kernel\": %.3f, \"kernel_queue_us\": %.2f, "
      "\"device_call_queue_us\": %.2f, \"host_overhead_us\": %.2f, \"gpu\": \"%s\", "
      "\"commit\": \"%s\"}\n",
      algorithm, variant.c_str(), size.c_str(), reps, kBurst, kernel_ms, device_ms,
      device_ms / kernel_ms, kernel_us, device_us, device_us - kernel_us,
      kbench::gpu_name().c_str(), kbench::build_commit());
  std::fflush(stdout);
}

// The preferred variant that takes device views.
template <class Algorithm>
const kbench::Variant<Algorithm>& view_variant() {
  const kbench::Variant<Algorithm>* best = nullptr;
  for (const auto& v : kbench::variants<Algorithm>()) {
    if (v.on_views && (!best || v.preferred_to(*best))) best = &v;
  }
  if (!best)
    throw kbench::Error(std::string("no ") + Algorithm::name + " variant takes device views");
  return *best;
}

// `image` copied to device memory, and a view of it there.
struct OnDevice {
  kbench::DeviceMemory memory;
  kbench::ImageView view;
  explicit OnDevice(const kbench::ImageU8& image)
      : memory(image.data.size(), 0),
        view{static_cast<std::uint8_t*>(memory.data()),
             image.width,
             image.height,
             image.channels,
             0,
             1,
             0,
             kbench::MemoryPlace::cuda(0)} {
    kbench::copy_rows_async(memory.data(), image.data.size(), image.data.data(), image.data.size(),
                            image.data.size(), 1, nullptr);
    kbench::synchronize(nullptr);
  }
};

void time_device_copy(int reps) {
  constexpr std::size_t kBytes = std::size_t(1) << 30;
  kbench::DeviceMemory from(kBytes, 0), to(kBytes, 0);
  kbench::fill_async(from.data(), 1, kBytes, nullptr);
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {
    const Clock::time_point start = Clock::now();
    kbench::copy_rows_async(to.data(), kBytes, from.data(), kBytes, kBytes, 1, nullptr);
    kbench::synchronize(nullptr);
    if (r > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::printf(
      "{\"path\": \"device copy\", \"bytes\": %zu, \"reps\": %d, "
      "\"copy_gb_per_s\": %.1f, \"gpu\": \"%s\", \"commit\": \"%s\"}\n",
      kBytes, reps, 2.0 * double(kBytes) / median(seconds) / 1e9, kbench::gpu_name().c_str(),
      kbench::build_commit());
  std::fflush(stdout);
}

// Host-to-device and back for one image: from and to the caller's pageable memory directly,
// from page-locked memory, and through the context's page-locked staging (upload_staged and
// download_staged, the path of a call on host views).
void time_host_transfers(const std::string& size_name, const kbench::ImageU8& image, int reps) {
  const std::size_t bytes = image.data.size();
  kbench::ImageU8 back(image.width, image.height, image.channels);
  kbench::PinnedMemory pinned(bytes);
  const OnDevice device(image);
  const kbench::ConstImageView host = kbench::image_view(image);
  const auto rate = [&](auto&& move) {
    std::vector<double> seconds;
    for (int r = 0; r <= reps; ++r) {
      const Clock::time_point start = Clock::now();
      move();
      kbench::synchronize(nullptr);
      if (r > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return double(bytes) / median(seconds) / 1e9;
  };
  const double up_pageable = rate([&] { kbench::copy_view_async(device.view, host, nullptr); });
  const double up_pinned = rate([&] {
    kbench::copy_rows_async(device.view.data, bytes, pinned.data(), bytes, bytes, 1, nullptr);
  });
  const double up_staged =
      rate([&] { kbench::upload_staged(device.view, host, pinned.data(), nullptr); });
  const double down_pageable =
      rate([&] { kbench::copy_view_async(kbench::image_view(back), device.view, nullptr); });
  const double down_staged = rate([&] {
    kbench::download_staged(kbench::image_view(back), device.view, pinned.data(), nullptr);
  });
  std::printf(
      "{\"path\": \"host to device\", \"size\": \"%s\", \"bytes\": %zu, \"reps\": %d, "
      "\"pageable_gb_per_s\": %.2f, \"pinned_gb_per_s\": %.2f, \"staged_gb_per_s\": %.2f, "
      "\"to_pageable_gb_per_s\": %.2f, \"staged_back_gb_per_s\": %.2f, \"host_threads\": %d, "
      "\"gpu\": \"%s\", \"commit\": \"%s\"}\n",
      size_name.c_str(), bytes, reps, up_pageable, up_pinned, up_staged, down_pageable, down_staged,
      kbench::host_threads(), kbench::gpu_name().c_str(), kbench::build_commit());
  std::fflush(stdout);
}

void time_device_calls(kbench::Context& context, const std::string& size_name,
                       const kbench::ImageU8& rgb, int reps) {
  const kbench::ConvInput conv_input{rgb, kbench::builtin_mask("gaussian"), kbench::Border::clamp};
  const auto& conv_variant = view_variant<kbench::Conv>();
  auto conv_runner = conv_variant.make(conv_input);
  conv_runner->upload();
  const OnDevice conv_in(rgb), conv_out(rgb);
  compare_device_paths(
      "conv", conv_variant.name, size_name, reps, [&] { conv_runner->compute(); },
      [&] {
        kbench::conv(context, conv_in.view, conv_out.view, conv_input.mask, {},
                     {conv_variant.name, "", ""});
      });
  const kbench::LbpInput lbp_input{kbench::to_gray(rgb), {}};
  const auto& lbp_variant = view_variant<kbench::Lbp>();
  auto lbp_runner = lbp_variant.make(lbp_input);
  lbp_runner->upload();
  const OnDevice lbp_in(lbp_input.gray), codes(lbp_input.gray);
  kbench::DeviceMemory histogram(256 * sizeof(std::uint32_t), 0);
  compare_device_paths(
      "lbp", lbp_variant.name, size_name, reps, [&] { lbp_runner->compute(); },
      [&] {
        kbench::lbp(context, lbp_in.view, codes.view, static_cast<std::uint32_t*>(histogram.data()),
                    {}, {lbp_variant.name, "", ""});
      });
}

}  // namespace

int main(int argc, char** argv) {
  try {
    kbench::KokkosRuntime kokkos(argc, argv);
    int reps = 30;
    std::vector<std::string> sizes;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--reps" && i + 1 < argc) {
        reps = std::max(1, std::atoi(argv[++i]));
      } else {
        sizes.push_back(arg);
      }
    }
    if (sizes.empty()) sizes = {"1080p"};
    kbench::Context context;
    if (kbench::gpu_available()) time_device_copy(reps);
    for (const std::string& size_name : sizes) {
      const kbench::ImageSize size = kbench::parse_image_size(size_name);
      const kbench::ImageU8 rgb = kbench::synthetic_image(size.width, size.height, 3, 1);
      const kbench::ConvInput conv_input{rgb, kbench::builtin_mask("gaussian"),
                                         kbench::Border::clamp};
      const auto& conv_variant =
          kbench::best_variant<kbench::Conv>(conv_input, kbench::gpu_available());
      kbench::ImageU8 conv_out(size.width, size.height, 3);
      compare_paths(
          "conv", conv_variant.name, size_name, reps,
          [&] { kbench::run_once(conv_variant, conv_input); },
          [&] {
            kbench::conv(context, kbench::image_view(rgb), kbench::image_view(conv_out),
                         conv_input.mask, {}, {conv_variant.name, "", ""});
          });
      const kbench::LbpInput lbp_input{kbench::to_gray(rgb), {}};
      const auto& lbp_variant =
          kbench::best_variant<kbench::Lbp>(lbp_input, kbench::gpu_available());
      kbench::ImageU8 codes(size.width, size.height, 1);
      std::vector<std::uint32_t> histogram(256);
      compare_paths(
          "lbp", lbp_variant.name, size_name, reps,
          [&] { kbench::run_once(lbp_variant, lbp_input); },
          [&] {
            kbench::lbp(context, kbench::image_view(lbp_input.gray), kbench::image_view(codes),
                        histogram.data(), {}, {lbp_variant.name, "", ""});
          });
      if (kbench::gpu_available()) {
        time_device_calls(context, size_name, rgb, reps);
        time_host_transfers(size_name, rgb, reps);
      }
    }
  } catch (const kbench::Error& e) {
    std::fprintf(stderr, "api-overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
