#include <catch2/catch.hpp>
#include <set>

#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/registry.hpp"
#include "kbench/sad.hpp"

using namespace kbench;

TEST_CASE("the registry starts each algorithm with its plain sequential reference", "[registry]") {
  const auto& conv = variants<Conv>();
  REQUIRE_FALSE(conv.empty());
  CHECK(conv.front().name == "seq-aos");
  CHECK(conv.front().layer == Layer::sequential);
  CHECK(conv.front().backend == Backend::serial);
  const auto& sad = variants<Sad>();
  REQUIRE_FALSE(sad.empty());
  CHECK(sad.front().name == "seq");
  CHECK(sad.front().layer == Layer::sequential);
  CHECK(sad.front().backend == Backend::serial);
}

namespace {

template <class Algorithm>
void check_names_and_layers() {
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

TEST_CASE("variant names are unique and every host layer is present", "[registry]") {
  check_names_and_layers<Conv>();
  check_names_and_layers<Sad>();
}

TEST_CASE("the listing covers every algorithm's variants", "[registry]") {
  const auto infos = all_variants();
  CHECK(infos.size() == variants<Conv>().size() + variants<Sad>().size());
  for (const auto& info : infos) {
    CHECK((info.algorithm == "conv" || info.algorithm == "sad"));
    CHECK(std::string(to_string(info.layer)) != "?");
    CHECK(std::string(to_string(info.backend)) != "?");
  }
  CHECK(algorithm_names() == std::vector<std::string>{"conv", "sad"});
}

TEST_CASE("looking up a variant by name", "[registry]") {
  CHECK(find_variant<Conv>("seq-soa").layer == Layer::sequential);
  CHECK_THROWS_WITH(find_variant<Conv>("nonsense"),
                    Catch::Contains("nonsense") && Catch::Contains("seq-aos"));
}
