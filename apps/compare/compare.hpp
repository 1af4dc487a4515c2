#pragma once
// The compare harness, generic over the algorithm: check every selected variant against the
// reference, time the correct ones, print a table and write JSON lines.

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kbench/harness.hpp"
#include "kbench/registry.hpp"

namespace kbench::compare {

// The width of the variant column in compare's tables and listing: the longest registered name.
inline int variant_column() {
  static const int width = [] {
    std::size_t longest = 0;
    for (const auto& v : all_variants()) longest = std::max(longest, v.name.size());
    return int(longest);
  }();
  return width;
}

struct Options {
  std::string algorithm = "conv";
  std::string size = "1080p";
  std::string image_path;
  std::string query_path;             // sad: the query image; cemd: the query descriptor file
  std::string border = "clamp";       // for algorithms with a border (conv, lbp)
  std::vector<std::string> backends;  // empty: all
  std::vector<std::string> variants;  // empty: all
  std::string json_path;
  std::uint64_t seed = 1;
  bool check_only = false;  // check every variant, time none
  bool quiet = false;       // no progress line
  // conv, lbp: check outputs on this many sampled rows instead of against the whole reference
  // (0: the whole reference), for images whose reference is too large to hold.
  int check_rows = 0;
  // conv, lbp: frames per call (frame f generated with seed + f), timed as one problem.
  int batch = 1;
  TimingOptions timing;
};

// One problem to compare on: the input and how results name it.
template <class Algorithm>
struct Case {
  typename Algorithm::Input input;
  std::string name;                // e.g. "4k", or the image's file name
  std::string description;         // e.g. "3840x2160x3 gaussian 3x3 clamp"
  std::vector<std::string> notes;  // printed under the heading, e.g. what the case holds in memory
  int frames = 1;                  // a batch's frames: the table adds the time per frame
  // Where Algorithm::reference is too slow for this case: computes the reference another way,
  // and `reference_source` says how (printed). Empty: Algorithm::reference.
  std::function<typename Algorithm::Reference()> reference;
  std::string reference_source;
  // Where the whole reference is too large to hold: makes, from a partial reference of the input
  // (e.g. of sampled rows), the check that replaces Algorithm::check; `reference_source` says
  // what the partial reference holds (printed). Empty: Algorithm::check against the reference.
  using Check = std::function<CheckResult(const typename Algorithm::Output&)>;
  std::function<Check(const typename Algorithm::Input&)> make_check;
  // A non-empty reason keeps a variant from running on this case; its row prints the reason.
  std::function<std::string(const Variant<Algorithm>&)> skip;
  // What a correct variant's output says beyond right or wrong (e.g. how much was pruned):
  // printed under the table and written to the JSON line as "summary".
  std::function<std::string(const typename Algorithm::Output&)> summary;
};

// Runs the comparison; returns the process exit status (non-zero when a variant is wrong or
// failed).
template <class Algorithm>
int run(const Options& options, const Case<Algorithm>& problem);

}  // namespace kbench::compare
