#pragma once
// What each algorithm's compare file provides, and the inputs they share.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "kbench/algorithm_list.hpp"
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

// Each algorithm's entry, <stem>_entry(), from its compare/<stem>.cpp.
#define KBENCH_DECLARE_ENTRY(stem, Type, tag) AlgorithmEntry stem##_entry();
KBENCH_FOR_EACH_ALGORITHM(KBENCH_DECLARE_ENTRY)
#undef KBENCH_DECLARE_ENTRY

// Every algorithm compare knows, in registry order.
inline std::vector<AlgorithmEntry> algorithm_entries() {
#define KBENCH_ENTRY(stem, Type, tag) stem##_entry(),
  return {KBENCH_FOR_EACH_ALGORITHM(KBENCH_ENTRY)};
#undef KBENCH_ENTRY
}

}  // namespace kbench::compare
