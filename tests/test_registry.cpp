#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "kbench/all_algorithms.hpp"
#include "kbench/cpu_features.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/registry.hpp"

using namespace kbench;

namespace {

// Names are unique, every variant can be made, and the host layers are all present (the native
// CUDA layer exactly when the build has it).
template <class Algorithm>
void check_variant_list() {
  std::set<std::string> names;
  std::set<Layer> layers;
  for (const auto& v : variants<Algorithm>()) {
    CHECK(names.insert(v.name).second);
    layers.insert(v.layer);
    CHECK(static_cast<bool>(v.make));
  }
  CHECK(layers.count(Layer::sequential));
  CHECK(layers.count(Layer::native_cpu));
  CHECK(layers.count(Layer::portable));
#if defined(KBENCH_HAVE_CUDA)
  CHECK(layers.count(Layer::native_cuda));
#else
  CHECK_FALSE(layers.count(Layer::native_cuda));
#endif
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// Issue 14: every portable variant whose kernels reach target-specific instructions through
// kbench's helpers (Isa::tuned) has a plain build `<schedule>-plain-<backend>` (Isa::plain, the
// same backend and kind of schedule), every `-plain` variant is the plain build of a tuned one,
// and each portable backend has at least one such pair. Returns the number of pairs. End-to-end
// variants (kokkos-band-e2e-pinned) time host transfers around a kernel registered on its own
// with its plain build; the portability figures compare kernels, so they are not counted.
template <class Algorithm>
int check_plain_builds() {
  std::map<std::string, const Variant<Algorithm>*> by_name;
  for (const auto& v : variants<Algorithm>()) by_name[v.name] = &v;
  std::set<Backend> backends, with_pair;
  int pairs = 0;
  for (const auto& v : variants<Algorithm>()) {
    if (v.layer != Layer::portable || v.end_to_end) continue;
    INFO("variant " << v.name);
    backends.insert(v.backend);
    const std::string backend = std::string("-") + to_string(v.backend);
    REQUIRE(ends_with(v.name, backend));
    const std::string schedule = v.name.substr(0, v.name.size() - backend.size());
    const bool plain_build = ends_with(schedule, "-plain");
    const auto twin = by_name.find(plain_build ? schedule.substr(0, schedule.size() - 6) + backend
                                               : schedule + "-plain" + backend);
    if (v.isa == Isa::tuned) {
      CHECK_FALSE(plain_build);
      CHECK(twin != by_name.end());  // a tuned variant without its plain build
    } else if (plain_build) {
      CHECK(twin != by_name.end());  // a plain build without the tuned variant it is built from
    }
    if ((v.isa == Isa::tuned || plain_build) && twin != by_name.end()) {
      const Variant<Algorithm>& other = *twin->second;
      CHECK(other.isa != v.isa);
      CHECK(other.layer == Layer::portable);
      CHECK(other.backend == v.backend);
      CHECK(other.simple == v.simple);
      CHECK(other.end_to_end == v.end_to_end);
      if (v.isa == Isa::tuned) {
        ++pairs;
        with_pair.insert(v.backend);
      }
    }
  }
  CHECK(with_pair == backends);
  return pairs;
}

// The report's simple figure needs a simple schedule (one MDRange pass, ScatterView counting) on
// every portable backend; simple schedules use no helper.
template <class Algorithm>
void check_simple_schedules() {
  std::set<Backend> backends, with_simple;
  for (const auto& v : variants<Algorithm>()) {
    if (v.layer != Layer::portable) continue;
    backends.insert(v.backend);
    if (!v.simple) continue;
    INFO("variant " << v.name);
    CHECK(v.isa == Isa::plain);
    with_simple.insert(v.backend);
  }
  CHECK_FALSE(backends.empty());
  CHECK(with_simple == backends);
}

}  // namespace

TEST_CASE("every portable variant that uses target-specific helpers has a plain build",
          "[registry]") {
  // The fast schedules of each algorithm, on each of this build's Kokkos backends.
  std::set<Backend> portable_backends;
  for (const auto& v : variants<Conv>()) {
    if (v.layer == Layer::portable) portable_backends.insert(v.backend);
  }
  const int backends = int(portable_backends.size());
  REQUIRE(backends >= 1);
  // kokkos-rows runs on host backends only (its work items are whole bands).
  const int host_backends = backends - int(portable_backends.count(Backend::cuda));
  // The tuned schedules with a plain build: conv: kokkos-rowvec, kokkos-rowvec-r4, kokkos-band;
  // kokkos-rows on hosts; lbp: kokkos-team-hist, kokkos-vec, kokkos-rows; sad: kokkos-team,
  // kokkos-fused, kokkos-simd-rows; sad-pruned: kokkos-pruned, kokkos-pruned-graph; cemd:
  // kokkos-team, kokkos-tiled. An algorithm not named here is held to the rule alone (a pair on
  // every portable backend).
  const std::map<std::string, int> expected_pairs = {{"conv", 3 * backends + host_backends},
                                                     {"lbp", 3 * backends},
                                                     {"sad", 3 * backends},
                                                     {"sad-pruned", 2 * backends},
                                                     {"cemd", 2 * backends}};
#define KBENCH_CHECK_PLAIN_BUILDS(stem, Type, tag)                          \
  DYNAMIC_SECTION(tag) {                                                    \
    const int pairs = check_plain_builds<Type>();                           \
    const auto expected = expected_pairs.find(tag);                         \
    if (expected != expected_pairs.end()) CHECK(pairs == expected->second); \
  }
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_CHECK_PLAIN_BUILDS)
#undef KBENCH_CHECK_PLAIN_BUILDS
}

TEST_CASE("each portable backend has a simple schedule without helpers", "[registry]") {
  // sad-pruned has no simple schedule (the README's portability table).
  const std::set<std::string> without_simple = {"sad-pruned"};
#define KBENCH_CHECK_SIMPLE(stem, Type, tag) \
  if (!without_simple.count(tag)) DYNAMIC_SECTION(tag) check_simple_schedules<Type>();
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_CHECK_SIMPLE)
#undef KBENCH_CHECK_SIMPLE
}

TEST_CASE("the registry starts each algorithm with its plain sequential reference", "[registry]") {
#define KBENCH_CHECK_FRONT(stem, Type, tag)                     \
  DYNAMIC_SECTION(tag) {                                        \
    REQUIRE_FALSE(variants<Type>().empty());                    \
    CHECK(variants<Type>().front().layer == Layer::sequential); \
    CHECK(variants<Type>().front().backend == Backend::serial); \
  }
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_CHECK_FRONT)
#undef KBENCH_CHECK_FRONT
  CHECK(variants<Conv>().front().name == "seq-aos");
  CHECK(variants<Lbp>().front().name == "seq-plain");
}

TEST_CASE("variant names are unique and every host layer is present", "[registry]") {
#define KBENCH_CHECK_VARIANT_LIST(stem, Type, tag) DYNAMIC_SECTION(tag) check_variant_list<Type>();
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_CHECK_VARIANT_LIST)
#undef KBENCH_CHECK_VARIANT_LIST
}

TEST_CASE("the listing covers every algorithm's variants", "[registry]") {
  const auto infos = all_variants();
  std::map<std::string, std::size_t> listed;
  for (const auto& info : infos) {
    ++listed[info.algorithm];
    CHECK(std::string(to_string(info.layer)) != "?");
    CHECK(std::string(to_string(info.backend)) != "?");
  }
  std::size_t total = 0;
#define KBENCH_CHECK_LISTED(stem, Type, tag)            \
  CHECK(listed[Type::name] == variants<Type>().size()); \
  total += variants<Type>().size();
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_CHECK_LISTED)
#undef KBENCH_CHECK_LISTED
  CHECK(infos.size() == total);
  // The registry's names are the list's, in its order (cmake/algorithms.cmake).
#define KBENCH_TAG(stem, Type, tag) tag,
  CHECK(algorithm_names() == std::vector<std::string>{KBENCH_FOR_EACH_ALGORITHM(KBENCH_TAG)});
#undef KBENCH_TAG
  CHECK(algorithm_names().size() == listed.size());
}

TEST_CASE("every algorithm registers the SIMD CPU levels this CPU has in every build",
          "[registry]") {
  // The CUDA configuration compiles the native CPU layer with the host compiler too: a build
  // that registered only the generic level would leave an AVX-512 machine without its variants.
  std::map<std::string, std::set<std::string>> names;
  for (const VariantInfo& v : all_variants()) names[v.algorithm].insert(v.name);
  for (const std::string& algorithm : algorithm_names()) {
    for (const CpuLevel level : {CpuLevel::generic, CpuLevel::avx2, CpuLevel::avx512}) {
      if (!cpu_supports(level)) continue;
      INFO(algorithm << " on a CPU with " << to_string(level));
      CHECK(names[algorithm].count(simd_variant_name(level)) == 1);
    }
  }
}

TEST_CASE("looking up a variant by name", "[registry]") {
  CHECK(find_variant<Conv>("seq-soa").layer == Layer::sequential);
  CHECK_THROWS_WITH(find_variant<Conv>("nonsense"),
                    Catch::Contains("nonsense") && Catch::Contains("seq-aos"));
  CHECK(find_variant<Lbp>("omp-collapse2").layer == Layer::native_cpu);
  CHECK_THROWS_WITH(find_variant<Lbp>("seq-aos"),
                    Catch::Contains("no lbp variant") && Catch::Contains("seq-plain"));
}

TEST_CASE("the user calls prefer the layers the docs promise", "[registry]") {
  // Without a GPU: a native CPU variant; with one: a native CUDA variant.
  const LbpInput input{ImageU8(8, 8, 1), {}};
  CHECK(best_variant<Lbp>(input, false).layer == Layer::native_cpu);
#if defined(KBENCH_HAVE_CUDA)
  CHECK(best_variant<Lbp>(input, true).layer == Layer::native_cuda);
#endif
}

TEST_CASE("the user calls rank by tier, then rank, then registry order", "[registry]") {
  const auto variant = [](Layer layer, Backend backend, int rank) {
    Variant<Lbp> v;
    v.layer = layer;
    v.backend = backend;
    v.rank = rank;
    return v;
  };
  // Each tier above the next, whatever the ranks.
  const std::vector<Variant<Lbp>> tiers{variant(Layer::native_cuda, Backend::cuda, 0),
                                        variant(Layer::portable, Backend::cuda, 9),
                                        variant(Layer::native_cpu, Backend::openmp, 0),
                                        variant(Layer::portable, Backend::openmp, 9),
                                        variant(Layer::portable, Backend::serial, 9),
                                        variant(Layer::sequential, Backend::serial, 9),
                                        variant(Layer::native_cuda, Backend::cuda, kNotChosen)};
  for (std::size_t i = 0; i + 1 < tiers.size(); ++i) {
    CHECK(tiers[i].preferred_to(tiers[i + 1]));
    CHECK_FALSE(tiers[i + 1].preferred_to(tiers[i]));
  }
  // Within a tier the higher rank; equal ones leave the first registered.
  const auto low = variant(Layer::native_cpu, Backend::openmp, 1);
  const auto high = variant(Layer::native_cpu, Backend::openmp, 2);
  CHECK(high.preferred_to(low));
  CHECK_FALSE(low.preferred_to(high));
  CHECK_FALSE(low.preferred_to(low));
  // Among portable variants alone, the threads' backend before one core.
  VariantChoice<Lbp> portable_only;
  portable_only.only = [](const Variant<Lbp>& v) { return v.layer == Layer::portable; };
  const LbpInput input{ImageU8(8, 8, 1), {}};
  CHECK(select_variant(input, portable_only, false).backend == Backend::openmp);
}

namespace {

// A stand-in algorithm whose runners log which runner each compute() call went to.
struct Logged {
  struct Input {
    std::vector<int>* calls;  // runner index per compute() call
  };
  using Output = int;
  static Workload workload(const Input&) { return {1024.0, 1.0, "op"}; }
};

class LoggedRunner final : public Runner<Logged> {
 public:
  explicit LoggedRunner(const Logged::Input& input) : calls_(input.calls), index_(next_index_++) {}
  void poison(std::uint8_t) override {}
  void compute() override { calls_->push_back(index_); }
  void download(int& out) override { out = index_; }
  static void reset() { next_index_ = 0; }

 private:
  std::vector<int>* calls_;
  int index_;
  static inline int next_index_ = 0;
};

// Times a logged variant with fresh runners and 3 reps; `calls` receives the runner of every
// call.
Timing time_logged(bool end_to_end, TimingOptions options, std::vector<int>& calls) {
  LoggedRunner::reset();
  options.reps = 3;
  const Variant<Logged> variant{
      "logged", Layer::native_cuda, Backend::cuda, end_to_end, make_runner<LoggedRunner>, {}, 0};
  return time_variant(variant, Logged::Input{&calls}, options);
}

}  // namespace

TEST_CASE("short compute-only calls are batched over rotated runners, in call order",
          "[registry]") {
  std::vector<int> calls;
  const TimingOptions options;
  const Timing timing = time_logged(false, options, calls);
  CHECK(timing.has_compute);
  CHECK(timing.batch > 1);
  // 1 KiB of work: rotation up to the cap, so no call finds the previous one's data in cache.
  CHECK(timing.rotation == options.max_rotation);
  // After the runners' warm-up calls and the calibration call, each timed batch visits the
  // runners round-robin, one call after another.
  const std::size_t timed = std::size_t(timing.reps) * timing.batch;
  REQUIRE(calls.size() >= timed);
  const std::size_t first = calls.size() - timed - std::size_t(timing.reps);  // e2e calls follow
  for (std::size_t k = 0; k < std::size_t(timing.batch); ++k) {
    CHECK(calls[first + k] == int(k % std::size_t(timing.rotation)));
  }
}

TEST_CASE("end-to-end variants are timed one call at a time", "[registry]") {
  std::vector<int> calls;
  const Timing timing = time_logged(true, TimingOptions{}, calls);
  CHECK(timing.has_end_to_end);
  CHECK_FALSE(timing.has_compute);
  CHECK(timing.batch == 1);
  CHECK(timing.rotation == 1);
}
