#pragma once
// The variant registry: every implementation of every algorithm, with the layer and backend it
// belongs to. The compare harness, the tests, the user tools and perf/ iterate over it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kbench/isa.hpp"

namespace kbench {

// How a variant's output compares with the reference.
struct CheckResult {
  bool ok = false;
  double max_error = 0.0;  // in the algorithm's own unit (grey levels, absolute difference, ...)
  std::string detail;      // where and how it failed, when it failed
};

// What one run must move and compute, for throughput figures.
struct Workload {
  double bytes = 0.0;  // fewest bytes read + written through memory
  double operations = 0.0;
  const char* operation_unit = "op";
};

enum class Layer { sequential, native_cpu, portable, native_cuda };
enum class Backend { serial, openmp, cuda };

const char* to_string(Layer layer);
const char* to_string(Backend backend);

// How the user-facing calls choose among the variants that can run an input (select_variant):
// the highest tier, then the highest rank within it, then the variant registered first. A tier
// follows from a variant's layer and backend: a GPU before the host's threads before one core,
// and on each the hand-tuned layer before the portable one. A rank orders one layer's variants
// on one backend. Variants ranked kNotChosen (end-to-end and measurement-only variants) sit
// below every tier: they run where named.
enum class Tier {
  not_chosen,
  sequential,
  portable_serial,
  portable_host,
  native_host,
  portable_gpu,
  native_gpu,
};
inline constexpr int kNotChosen = -1;

constexpr Tier tier_of(Layer layer, Backend backend, int rank) {
  if (rank == kNotChosen) return Tier::not_chosen;
  switch (layer) {
    case Layer::sequential:
      return Tier::sequential;
    case Layer::native_cpu:
      return Tier::native_host;
    case Layer::native_cuda:
      return Tier::native_gpu;
    case Layer::portable:
      break;
  }
  return backend == Backend::cuda     ? Tier::portable_gpu
         : backend == Backend::openmp ? Tier::portable_host
                                      : Tier::portable_serial;
}

// One run of one variant on one input. The harness drives it as
//   poison → upload → compute … sync → download
// so that compute-only time (compute + sync) and time with transfers (all four) can be taken
// apart. Host variants have nothing to upload or download. The compute() calls of different
// runners of a variant run in call order (one queue per device, e.g. CUDA's legacy default
// stream or Kokkos' default instance): batched timing then measures calls one after another,
// not calls overlapping on private streams.
template <class Algorithm>
class Runner {
 public:
  using AlgorithmType = Algorithm;
  using Output = typename Algorithm::Output;

  virtual ~Runner() = default;
  // Fills every output buffer the variant owns with `byte`, so unwritten elements show up.
  virtual void poison(std::uint8_t byte) = 0;
  virtual void upload() {}
  // Starts the computation; it may still be running on return.
  virtual void compute() = 0;
  // Waits for everything compute() started.
  virtual void sync() {}
  virtual void download(Output& out) = 0;
};

// An algorithm's call on views (Algorithm::ViewCall: frames of one shape in the caller's memory,
// on the caller's stream), where it has one.
struct NoViewCall {};
template <class Algorithm, class = void>
struct view_call_of {
  using type = NoViewCall;
};
template <class Algorithm>
struct view_call_of<Algorithm, std::void_t<typename Algorithm::ViewCall>> {
  using type = typename Algorithm::ViewCall;
};

template <class Algorithm>
struct Variant {
  using Input = typename Algorithm::Input;
  using Make = std::function<std::unique_ptr<Runner<Algorithm>>(const Input&)>;

  std::string name;
  Layer layer;
  Backend backend;
  // compute() includes the host↔device copies itself (streamed variants): it has no
  // compute-only time.
  bool end_to_end = false;
  Make make;
  // Inputs the variant handles (e.g. only 3×3 masks); empty means all.
  std::function<bool(const Input&)> supports;
  // Its place among its layer's variants on its backend for the user-facing calls (higher
  // first), or kNotChosen (see Tier).
  int rank = 0;
  // What a portable variant is built from, for the report's three Kokkos / native figures
  // Isa::tuned where its kernels reach target-specific instructions through kbench's
  // helpers, Isa::plain where they are standard C++ only (the `-plain` build of such a schedule,
  // or a schedule that uses no helper); `simple` for the idiomatic first schedules (one flat
  // MDRange pass, ScatterView counting). Other layers leave both as they are.
  Isa isa = Isa::tuned;
  bool simple = false;
  // The variant on views of the memory its backend reaches (device memory for CUDA): every frame
  // in one launch, queued on the call's stream without waiting. Empty where it has none.
  std::function<void(const typename view_call_of<Algorithm>::type&)> on_views = {};

  bool handles(const Input& input) const { return !supports || supports(input); }
  // Whether the user-facing calls prefer this variant to `other`, both able to run.
  bool preferred_to(const Variant& other) const {
    const Tier mine = tier_of(layer, backend, rank),
               theirs = tier_of(other.layer, other.backend, other.rank);
    return mine != theirs ? mine > theirs : rank > other.rank;
  }
};

template <class Algorithm>
using VariantList = std::vector<Variant<Algorithm>>;

// The Variant::Make of a runner type R that is constructed from the input alone.
template <class R>
std::unique_ptr<Runner<typename R::AlgorithmType>> make_runner(
    const typename R::AlgorithmType::Input& input) {
  return std::make_unique<R>(input);
}

// Every variant of Algorithm that this build has, the plain sequential reference first.
template <class Algorithm>
const VariantList<Algorithm>& variants();

[[noreturn]] void throw_unknown_variant(const std::string& algorithm, const std::string& name);

// Finds a variant by name; throws Error naming the known ones when absent.
template <class Algorithm>
const Variant<Algorithm>& find_variant(const std::string& name) {
  for (const auto& v : variants<Algorithm>()) {
    if (v.name == name) return v;
  }
  throw_unknown_variant(Algorithm::name, name);
}

struct VariantInfo {
  std::string algorithm;
  std::string name;
  Layer layer;
  Backend backend;
  bool end_to_end;
  Isa isa;
  bool simple;
};

// All algorithms' variants, for listings.
std::vector<VariantInfo> all_variants();

// Names of the algorithms this build knows, in registry order.
std::vector<std::string> algorithm_names();

}  // namespace kbench
