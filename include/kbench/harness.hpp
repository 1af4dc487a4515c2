#pragma once
// Running, checking and timing registered variants, the same way for every algorithm.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kbench/error.hpp"
#include "kbench/registry.hpp"
#include "kbench/system_info.hpp"

namespace kbench {

// Whether this process can run `v`: host variants always, CUDA variants where a GPU is usable.
template <class Algorithm>
bool runs_here(const Variant<Algorithm>& v) {
  static const bool gpu = gpu_available();
  return v.backend != Backend::cuda || gpu;
}

// Runs `variant` once end to end and returns its output. The run is done twice, with outputs
// poisoned to 0x00 and to 0xFF first: an element the variant fails to write differs between
// the two, and the call throws Error. The second run calls compute() twice, as timed batches do:
// a runner whose repeated calls accumulate, or that leaves the next call's state wrong, differs.
template <class Algorithm>
typename Algorithm::Output run_checked(const Variant<Algorithm>& variant,
                                       const typename Algorithm::Input& input) {
  typename Algorithm::Output outputs[2];
  const std::uint8_t poison_bytes[2] = {0x00, 0xFF};
  auto runner = variant.make(input);
  for (int k = 0; k < 2; ++k) {
    runner->poison(poison_bytes[k]);
    runner->upload();
    for (int call = 0; call <= k; ++call) runner->compute();
    runner->sync();
    runner->download(outputs[k]);
  }
  if (!(outputs[0] == outputs[1])) {
    throw Error(std::string(Algorithm::name) + " variant " + variant.name +
                " left output elements unwritten or its repeated calls differ (results differ"
                " between a poisoned call and two calls)");
  }
  return std::move(outputs[0]);
}

// A run's wall times: compute() alone (its copies included for end-to-end variants), and from
// upload to download.
struct RunTimes {
  double compute_ms = 0, total_ms = 0;
};

// Runs `variant` once, as a user call would: upload, compute, download; with `times`, timed.
template <class Algorithm>
typename Algorithm::Output run_once(const Variant<Algorithm>& variant,
                                    const typename Algorithm::Input& input,
                                    RunTimes* times = nullptr) {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  typename Algorithm::Output out;
  auto runner = variant.make(input);
  const Clock::time_point start = Clock::now();
  runner->upload();
  runner->sync();
  const Clock::time_point computing = Clock::now();
  runner->compute();
  runner->sync();
  const Clock::time_point computed = Clock::now();
  runner->download(out);
  if (times) *times = {ms(computing, computed), ms(start, Clock::now())};
  return out;
}

// What a tool's user asks for: a registry variant by name and/or a backend ("serial", "openmp",
// "cuda"); empty: any. `only`, when set, narrows the candidates further, `only_what` saying how
// in messages (e.g. "native CUDA").
template <class Algorithm>
struct VariantChoice {
  std::string name, backend;
  std::function<bool(const Variant<Algorithm>&)> only;
  std::string only_what;
};

// The variant `choice` names, checked to be of its backend, runnable here (a CUDA variant needs
// a usable GPU) and able to take `input`; without a name, the preferred such variant of the
// backend. Throws Error saying why none can run.
template <class Algorithm>
const Variant<Algorithm>& select_variant(const typename Algorithm::Input& input,
                                         const VariantChoice<Algorithm>& choice, bool gpu_present) {
  const auto of_backend = [&](const Variant<Algorithm>& v) {
    return choice.backend.empty() || choice.backend == to_string(v.backend);
  };
  const auto allowed = [&](const Variant<Algorithm>& v) { return !choice.only || choice.only(v); };
  if (!choice.name.empty()) {
    const Variant<Algorithm>& v = find_variant<Algorithm>(choice.name);
    const std::string what = std::string(Algorithm::name) + " variant '" + choice.name + "'";
    if (!of_backend(v)) {
      throw Error(what + " runs on the " + to_string(v.backend) + " backend, not " +
                  choice.backend);
    }
    if (!allowed(v)) throw Error(what + " is not a " + choice.only_what + " variant");
    if (v.backend == Backend::cuda && !gpu_present) {
      throw Error(what + " needs a CUDA GPU; none is usable here");
    }
    if (!v.handles(input)) throw Error(what + " does not handle this input");
    return v;
  }
  if (choice.backend == "cuda" && !gpu_present) {
    throw Error("--backend cuda needs a CUDA GPU; none is usable here");
  }
  const Variant<Algorithm>* best = nullptr;
  for (const auto& v : variants<Algorithm>()) {
    if ((v.backend == Backend::cuda && !gpu_present) || !v.handles(input) || !of_backend(v) ||
        !allowed(v)) {
      continue;
    }
    if (!best || v.preferred_to(*best)) best = &v;
  }
  if (!best) {
    throw Error(std::string("no ") + Algorithm::name + " variant of this build runs " +
                (choice.only_what.empty() ? "here" : "as " + choice.only_what + " here") +
                (choice.backend.empty() ? "" : " on the " + choice.backend + " backend") +
                " for this input");
  }
  return *best;
}

// The preferred variant that handles `input` and whose backend this machine can run (the
// sequential reference handles every valid input).
template <class Algorithm>
const Variant<Algorithm>& best_variant(const typename Algorithm::Input& input, bool gpu_present) {
  return select_variant(input, VariantChoice<Algorithm>{}, gpu_present);
}

struct Stats {
  double min_ms = 0, median_ms = 0, max_ms = 0;
};

inline Stats stats_of(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return {samples.front(), median, samples.back()};
}

struct TimingOptions {
  int reps = 20;
  // A timed batch repeats compute() until it lasts about this long, so launch latency and
  // timer resolution stay out of short kernels' times.
  double min_batch_ms = 2.0;
  // Runners rotate over copies of the buffers until this many bytes are in play, so repeated
  // runs do not find their data already in the cache (e.g. 50-60 MB of L2 on an H100/H200).
  double rotation_bytes = 256.0 * 1024 * 1024;
  int max_rotation = 16;
  // Slow variants (the sequential ones at large sizes) get fewer reps, at least min_reps, so one
  // variant's timing takes about this long.
  double budget_ms = 15000.0;
  int min_reps = 3;
};

struct Timing {
  int reps = 0;
  int batch = 1;     // compute() calls per timed sample
  int rotation = 1;  // buffer sets rotated over
  Stats compute;     // compute + sync, per call; absent for end-to-end variants
  Stats end_to_end;  // upload + compute + sync + download; absent for host variants
  bool has_compute = false;
  bool has_end_to_end = false;
};

// Times `variant` on `input`: compute-only (for all but end-to-end variants) and, for variants
// that run off the host or that do their own copies, with the host↔device transfers.
template <class Algorithm>
Timing time_variant(const Variant<Algorithm>& variant, const typename Algorithm::Input& input,
                    const TimingOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto elapsed_ms = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  Timing timing;
  std::vector<std::unique_ptr<Runner<Algorithm>>> runners;
  // A runner made, uploaded and warmed up by one call.
  const auto add_runner = [&] {
    runners.push_back(variant.make(input));
    runners.back()->poison(0);
    runners.back()->upload();
    runners.back()->compute();  // warm-up
    runners.back()->sync();
  };
  add_runner();
  // Calibrate the batch size on a single call. End-to-end variants are timed one waited-for call
  // at a time, as a user makes them (their copies and streams would overlap across a batch).
  Clock::time_point t0 = Clock::now();
  runners[0]->compute();
  runners[0]->sync();
  const double single_ms = std::max(elapsed_ms(t0), 1e-4);
  timing.batch = variant.end_to_end
                     ? 1
                     : std::clamp(int(std::ceil(options.min_batch_ms / single_ms)), 1, 10000);
  // Only batched (short) calls can find their data left in the cache by the previous call.
  if (timing.batch > 1) {
    const double footprint = std::max(1.0, Algorithm::workload(input).bytes);
    timing.rotation =
        std::clamp(int(std::ceil(options.rotation_bytes / footprint)), 1, options.max_rotation);
  }
  while (int(runners.size()) < timing.rotation) add_runner();

  const int reps = std::clamp(int(options.budget_ms / (single_ms * timing.batch)),
                              std::min(options.min_reps, options.reps), options.reps);
  timing.reps = reps;
  std::vector<double> samples;
  for (int rep = 0; rep < reps; ++rep) {
    t0 = Clock::now();
    for (int b = 0; b < timing.batch; ++b) runners[b % timing.rotation]->compute();
    for (auto& r : runners) r->sync();
    samples.push_back(elapsed_ms(t0) / timing.batch);
  }
  if (variant.end_to_end) {
    timing.end_to_end = stats_of(samples);
    timing.has_end_to_end = true;
    return timing;
  }
  timing.compute = stats_of(samples);
  timing.has_compute = true;
  if (variant.backend == Backend::cuda) {
    typename Algorithm::Output out;
    samples.clear();
    for (int rep = 0; rep < reps; ++rep) {
      auto& r = runners[rep % timing.rotation];
      t0 = Clock::now();
      r->upload();
      r->compute();
      r->sync();
      r->download(out);
      samples.push_back(elapsed_ms(t0));
    }
    timing.end_to_end = stats_of(samples);
    timing.has_end_to_end = true;
  }
  return timing;
}

}  // namespace kbench
