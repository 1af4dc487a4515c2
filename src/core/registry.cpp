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

}  // namespace

template <>
const VariantList<Conv>& variants<Conv>() {
  static const VariantList<Conv> list = collect<Conv>({
    register_conv_sequential, register_conv_native_cpu, register_conv_portable,
#if defined(KBENCH_HAVE_CUDA)
        register_conv_native_cuda,
#endif
  });
  return list;
}

template <>
const VariantList<Lbp>& variants<Lbp>() {
  static const VariantList<Lbp> list = collect<Lbp>({
    register_lbp_sequential, register_lbp_native_cpu, register_lbp_portable,
#if defined(KBENCH_HAVE_CUDA)
        register_lbp_native_cuda,
#endif
  });
  return list;
}

template <>
const VariantList<Sad>& variants<Sad>() {
  static const VariantList<Sad> list = collect<Sad>({
    register_sad_sequential, register_sad_native_cpu, register_sad_portable,
#if defined(KBENCH_HAVE_CUDA)
        register_sad_native_cuda,
#endif
  });
  return list;
}

template <>
const VariantList<SadPruned>& variants<SadPruned>() {
  static const VariantList<SadPruned> list = collect<SadPruned>({
    register_sad_pruned_sequential, register_sad_pruned_native_cpu, register_sad_pruned_portable,
#if defined(KBENCH_HAVE_CUDA)
        register_sad_pruned_native_cuda,
#endif
  });
  return list;
}

template <>
const VariantList<Cemd>& variants<Cemd>() {
  static const VariantList<Cemd> list = collect<Cemd>({
    register_cemd_sequential, register_cemd_native_cpu, register_cemd_portable,
#if defined(KBENCH_HAVE_CUDA)
        register_cemd_native_cuda,
#endif
  });
  return list;
}

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
  append_infos<Conv>(infos);
  append_infos<Lbp>(infos);
  append_infos<Sad>(infos);
  append_infos<SadPruned>(infos);
  append_infos<Cemd>(infos);
  return infos;
}

std::vector<std::string> algorithm_names() {
  return {Conv::name, Lbp::name, Sad::name, SadPruned::name, Cemd::name};
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
