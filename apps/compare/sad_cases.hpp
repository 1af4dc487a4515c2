#pragma once
// The inputs sad and sad-pruned share in compare: the same case names give the same target and
// query, so full search and pruned matching are timed on identical problems.

#include <functional>
#include <string>

#include "compare/compare.hpp"
#include "kbench/sad.hpp"

namespace kbench::compare {

struct SadCaseOptions {
  std::string query_size;
  bool no_map = false;
  double max_sequential_gsad = 50.0;
  double noise = -1;  // σ of Gaussian query noise; negative: the case's default
};

struct SadProblem {
  SadInput input;
  std::string name, description;
  bool known = false;  // the query was cut from the target at `cut`
  SadMatch cut;
};

// The options compare's sad entry registers (shared with sad-pruned).
SadCaseOptions& sad_case_options();
// The case --size / --image / --query / --noise describe; a "-nomap" size suffix or `no_map`
// asks for the argmin only. A --noise σ is part of the case's name (e.g. photo3072-q128-s10).
SadProblem build_sad_case(const Options& options, bool no_map);
// The full-search reference of `problem` (which must outlive the function): the sequential one,
// or, when one core is too slow for it (*too_slow), omp-blocked after it matched the sequential
// reference on a crop. Prints the argmin and whether it is where the query was cut.
std::function<SadResult()> trusted_sad_reference(const SadProblem& problem, bool* too_slow);
// The skip reason printed for single-core variants on a case too large for them.
std::string too_slow_for_one_core(const SadInput& input);

}  // namespace kbench::compare
