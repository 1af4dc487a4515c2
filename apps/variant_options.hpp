#pragma once
// What filter, lbp and match share: --backend, --variant and --verbose, and one call of an
// algorithm run the way they ask.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "kbench/harness.hpp"
#include "kbench/system_info.hpp"

namespace kbench::tools {

struct VariantOptions {
  std::string variant, backend;
  bool verbose = false;
};

inline void add_variant_options(CLI::App& app, VariantOptions& options) {
  app.add_option("--backend", options.backend,
                 "Only variants of this backend (default: the fastest this machine has)")
      ->check(CLI::IsMember({"serial", "openmp", "cuda"}));
  app.add_option("--variant", options.variant,
                 "Run this registry variant (compare --list shows them)");
  app.add_flag("--verbose", options.verbose, "Print on stderr the variant that ran and its times");
}

// Runs `input` once on the variant `options` choose; with --verbose, says which and how long.
template <class Algorithm>
typename Algorithm::Output run_call(const char* program, const typename Algorithm::Input& input,
                                    const VariantOptions& options) {
  const Variant<Algorithm>& variant = select_variant(
      input, VariantChoice<Algorithm>{options.variant, options.backend, {}, {}}, gpu_available());
  RunTimes times;
  typename Algorithm::Output out = run_once(variant, input, &times);
  if (options.verbose) {
    std::fprintf(stderr, "%s: %s variant %s (%s, %s): compute %.3f ms, %.3f ms with transfers\n",
                 program, Algorithm::name, variant.name.c_str(), to_string(variant.layer),
                 to_string(variant.backend), times.compute_ms, times.total_ms);
  }
  return out;
}

}  // namespace kbench::tools
