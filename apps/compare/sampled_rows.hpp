#pragma once
// --check-rows: checking conv and lbp outputs on sampled rows, for images whose whole reference is
// too large to hold (a conv of 30000×30000 RGB has 21.6 GB of double reference values).

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "kbench/image.hpp"
#include "kbench/system_info.hpp"

namespace kbench::compare {

constexpr double kBytesPerGB = 1e9;

// With --check-rows N, outputs are checked on N sampled rows of the output (the first, the last
// and seeded ones: Algorithm::reference_rows and check_rows) instead of against the whole
// reference. The single-core variants, minutes per run at the sizes this is for, then run only
// where --variant names them. The case's notes say what it holds in memory (a variant that
// cannot allocate its buffers is skipped, not failed). Without --check-rows, does nothing.
template <class Algorithm>
void use_sampled_rows(const Options& options, Case<Algorithm>& problem, int output_rows,
                      double input_bytes, double output_bytes) {
  if (options.check_rows <= 0) return;
  using Input = typename Algorithm::Input;
  using Output = typename Algorithm::Output;
  const std::vector<int> rows = sample_rows(output_rows, options.check_rows, options.seed);
  problem.reference_source = "of " + std::to_string(rows.size()) + " sampled rows of " +
                             std::to_string(output_rows) + " (--check-rows)";
  problem.make_check = [rows](const Input& input) {
    const auto reference = std::make_shared<const typename Algorithm::RowsReference>(
        Algorithm::reference_rows(input, rows));
    return typename Case<Algorithm>::Check([reference, &input](const Output& out) {
      return Algorithm::check_rows(input, *reference, out);
    });
  };
  const std::vector<std::string> named = options.variants;
  problem.skip = [named](const Variant<Algorithm>& v) -> std::string {
    const bool single_core = v.layer == Layer::sequential || v.backend == Backend::serial;
    if (!single_core || std::find(named.begin(), named.end(), v.name) != named.end()) return "";
    return "single-core, left out with --check-rows (--variant " + v.name + " runs it)";
  };
  char memory[256];
  std::snprintf(memory, sizeof memory,
                "memory: input %.2f GB and output %.2f GB, held on the host and by each GPU "
                "runner (Kokkos runners stage a second copy of each)",
                input_bytes / kBytesPerGB, output_bytes / kBytesPerGB);
  problem.notes.push_back(memory);
  if (gpu_available()) {
    const GpuMemory gpu = gpu_memory();
    std::snprintf(memory, sizeof memory,
                  "GPU memory: %.1f GB free of %.1f GB; a variant that cannot allocate its "
                  "buffers is skipped",
                  double(gpu.free_bytes) / kBytesPerGB, double(gpu.total_bytes) / kBytesPerGB);
    problem.notes.push_back(memory);
  }
}

}  // namespace kbench::compare
