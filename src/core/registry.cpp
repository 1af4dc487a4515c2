#include "kbench/registry.hpp"

#include <initializer_list>

#include "kbench/error.hpp"
#include "registry_parts.hpp"

namespace kbench {

const char* to_string(Layer layer) {
  switch (layer) {
    case Layer::sequential:
      return "sequential";
    case Layer::native_cpu:
      return "native_cpu";
    case Layer::portable:
      return "portable";
    case Layer::native_cuda:
      return "native_cuda";
  }
  return "?";
}

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::serial:
      return "serial";
    case Backend::openmp:
      return "openmp";
    case Backend::cuda:
      return "cuda";
  }
  return "?";
}

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::tuned:
      return "tuned";
    case Isa::plain:
      return "plain";
  }
  return "?";
}

namespace {

// One list from each layer's registration function, in layer order.
template <class Algorithm>
VariantList<Algorithm> collect(std::initializer_list<void (*)(VariantList<Algorithm>&)> layers) {
  VariantList<Algorithm> list;
  for (const auto add_layer : layers) add_layer(list);
  return list;
}

// Whether two names are the same text, for checks at compile time.
constexpr bool same_text(const char* a, const char* b) {
  return *a == *b && (*a == '\0' || same_text(a + 1, b + 1));
}

}  // namespace

// variants<Type>() of each algorithm: its layers' registrations in layer order. The list's tag is
// the type's own name (so the CTest test and the Catch2 tag are the registry's name).
#define KBENCH_DEFINE_VARIANTS(stem, Type, tag)                                               \
  static_assert(same_text(Type::name, tag),                                                   \
                "cmake/algorithms.cmake: the tag of " #Type " is not " #Type "::name");       \
  template <>                                                                                 \
  const VariantList<Type>& variants<Type>() {                                                 \
    static const VariantList<Type> list = collect<Type>(                                      \
        {register_##stem##_sequential, register_##stem##_native_cpu,                          \
         register_##stem##_portable KBENCH_IF_NATIVE_CUDA(, register_##stem##_native_cuda)}); \
    return list;                                                                              \
  }
KBENCH_FOR_EACH_ALGORITHM(KBENCH_DEFINE_VARIANTS)
#undef KBENCH_DEFINE_VARIANTS

namespace {

template <class Algorithm>
void append_infos(std::vector<VariantInfo>& infos) {
  for (const auto& v : variants<Algorithm>()) {
    infos.push_back({Algorithm::name, v.name, v.layer, v.backend, v.end_to_end, v.isa, v.simple});
  }
}

}  // namespace

std::vector<VariantInfo> all_variants() {
  std::vector<VariantInfo> infos;
#define KBENCH_APPEND_INFOS(stem, Type, tag) append_infos<Type>(infos);
  KBENCH_FOR_EACH_ALGORITHM(KBENCH_APPEND_INFOS)
#undef KBENCH_APPEND_INFOS
  return infos;
}

std::vector<std::string> algorithm_names() {
#define KBENCH_NAME(stem, Type, tag) Type::name,
  return {KBENCH_FOR_EACH_ALGORITHM(KBENCH_NAME)};
#undef KBENCH_NAME
}

void throw_unknown_variant(const std::string& algorithm, const std::string& name) {
  std::string known;
  for (const auto& v : all_variants()) {
    if (v.algorithm == algorithm) known += " " + v.name;
  }
  throw Error("no " + algorithm + " variant named '" + name + "' in this build (known:" + known +
              ")");
}

}  // namespace kbench
