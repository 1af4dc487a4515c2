#include <catch2/catch.hpp>
#include <set>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/lbp.hpp"
#include "kbench/registry.hpp"
#include "kbench/sad.hpp"

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
}

TEST_CASE("the listing covers every algorithm's variants", "[registry]") {
  const auto infos = all_variants();
  CHECK(infos.size() == variants<Conv>().size() + variants<Lbp>().size() + variants<Sad>().size());
  std::size_t conv = 0, lbp = 0, sad = 0;
  for (const auto& info : infos) {
    conv += info.algorithm == "conv";
    lbp += info.algorithm == "lbp";
    sad += info.algorithm == "sad";
    CHECK(std::string(to_string(info.layer)) != "?");
    CHECK(std::string(to_string(info.backend)) != "?");
  }
  CHECK(conv == variants<Conv>().size());
  CHECK(lbp == variants<Lbp>().size());
  CHECK(sad == variants<Sad>().size());
  CHECK(algorithm_names() == std::vector<std::string>{"conv", "lbp", "sad"});
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
