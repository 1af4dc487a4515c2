#pragma once
// The conformance check every algorithm's tests share: each variant that runs here and handles
// the input runs (twice, over differently poisoned outputs, by run_checked) and its output is
// checked against the reference by the algorithm's own Algorithm::check. What an algorithm checks
// beyond that (e.g. sad-pruned's statistics) comes in as a hook on each output.
#include <catch2/catch.hpp>

#include "kbench/harness.hpp"

namespace kbench::test {

template <class Algorithm>
bool any_variant(const Variant<Algorithm>&) {
  return true;
}

// A hook that checks nothing more.
struct NoMoreChecks {
  template <class Output>
  void operator()(const Output&) const {}
};

// Runs every variant of Algorithm that runs here (runs_here), handles `input` and that `chosen`
// accepts, checks its output against `reference` with Algorithm::check, then hands the output to
// `also`; returns how many variants ran.
template <class Algorithm, class Chosen, class Also = NoMoreChecks>
int check_all_variants_against(const typename Algorithm::Input& input,
                               const typename Algorithm::Reference& reference, Chosen chosen,
                               Also also = {}) {
  int ran = 0;
  for (const auto& v : variants<Algorithm>()) {
    if (!runs_here(v) || !v.handles(input) || !chosen(v)) continue;
    INFO("variant " << v.name);
    const typename Algorithm::Output out = run_checked(v, input);
    const CheckResult check = Algorithm::check(input, reference, out);
    INFO(check.detail);
    CHECK(check.ok);
    also(out);
    ++ran;
  }
  return ran;
}

// The same against Algorithm::reference(input).
template <class Algorithm, class Chosen = bool (*)(const Variant<Algorithm>&),
          class Also = NoMoreChecks>
int check_all_variants(const typename Algorithm::Input& input,
                       Chosen chosen = any_variant<Algorithm>, Also also = {}) {
  return check_all_variants_against<Algorithm>(input, Algorithm::reference(input), chosen, also);
}

}  // namespace kbench::test
