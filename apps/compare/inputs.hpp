#pragma once
// What each algorithm's compare file provides, and the inputs they share.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "kbench/image.hpp"

namespace kbench::compare {

// The --image file converted to `channels` (1 = gray, 3 = RGB), or a generated image of
// --size. Sets *name to the case name results are filed under.
ImageU8 load_or_generate(const Options& options, int channels, std::string* name);

// One algorithm's part of compare: its own options, its standard cases, and its run.
struct AlgorithmEntry {
  const char* name;
  std::vector<const char*> cases;  // the sizes perf/ runs it at, smallest first
  void (*add_options)(CLI::App& app);
  int (*run)(const Options& options);
};

AlgorithmEntry conv_entry();
AlgorithmEntry lbp_entry();
AlgorithmEntry sad_entry();
AlgorithmEntry sad_pruned_entry();
AlgorithmEntry cemd_entry();

// Every algorithm compare knows, in registry order.
inline std::vector<AlgorithmEntry> algorithm_entries() {
  return {conv_entry(), lbp_entry(), sad_entry(), sad_pruned_entry(), cemd_entry()};
}

}  // namespace kbench::compare
