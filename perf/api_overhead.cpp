// api-overhead: what the library call costs over the tools' variant run, on the same variant.
// For conv (3×3 gaussian, RGB) and LBP (gray) at each size given (default 1080p), it times
//   run:  run_once(variant, input), the path the tools took before the library (a runner made,
//         input uploaded, computed, output downloaded),
//   call: kbench::conv / kbench::lbp on host views of the same image, with Choice{variant},
// alternately, and prints one JSON line per case with both medians and their ratio.
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
    }
  } catch (const kbench::Error& e) {
    std::fprintf(stderr, "api-overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
