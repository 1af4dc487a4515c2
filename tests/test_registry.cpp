#include <catch2/catch.hpp>
#include <set>

#include "kbench/cemd.hpp"

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/lbp.hpp"
#include "kbench/registry.hpp"
#include "kbench/sad.hpp"
#include "kbench/sad_pruned.hpp"

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

}  // namespace

TEST_CASE("the registry starts each algorithm with its plain sequential reference", "[registry]") {
  const auto& conv = variants<Conv>();
  REQUIRE_FALSE(conv.empty());
  CHECK(conv.front().name == "seq-aos");
  CHECK(conv.front().layer == Layer::sequential);
  CHECK(conv.front().backend == Backend::serial);
  const auto& lbp = variants<Lbp>();
  REQUIRE_FALSE(lbp.empty());
  CHECK(lbp.front().name == "seq-plain");
  CHECK(lbp.front().layer == Layer::sequential);
  CHECK(lbp.front().backend == Backend::serial);
}

TEST_CASE("variant names are unique and every host layer is present", "[registry]") {
  SECTION("conv") {
    check_variant_list<Conv>();
  }
  SECTION("lbp") {
    check_variant_list<Lbp>();
  }
  SECTION("sad") {
    check_variant_list<Sad>();
  }
  SECTION("sad-pruned") {
    check_variant_list<SadPruned>();
  }
}

TEST_CASE("the listing covers every algorithm's variants", "[registry]") {
  const auto infos = all_variants();
  CHECK(infos.size() == variants<Conv>().size() + variants<Lbp>().size() + variants<Sad>().size() +
                            variants<SadPruned>().size() + variants<Cemd>().size());
  std::size_t conv = 0, lbp = 0, sad = 0, pruned = 0;
  for (const auto& info : infos) {
    conv += info.algorithm == "conv";
    lbp += info.algorithm == "lbp";
    sad += info.algorithm == "sad";
    pruned += info.algorithm == "sad-pruned";
    CHECK(std::string(to_string(info.layer)) != "?");
    CHECK(std::string(to_string(info.backend)) != "?");
  }
  CHECK(conv == variants<Conv>().size());
  CHECK(lbp == variants<Lbp>().size());
  CHECK(sad == variants<Sad>().size());
  CHECK(pruned == variants<SadPruned>().size());
  CHECK(algorithm_names() == std::vector<std::string>{"conv", "lbp", "sad", "sad-pruned", "cemd"});
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
