#pragma once
// Each layer's registration function, one per algorithm of cmake/algorithms.cmake; registry.cpp
// calls them in layer order.

#include "kbench/all_algorithms.hpp"
#include "kbench/registry.hpp"

// Its arguments where the build has the native CUDA layer, else nothing.
#if defined(KBENCH_HAVE_CUDA)
#define KBENCH_IF_NATIVE_CUDA(...) __VA_ARGS__
#else
#define KBENCH_IF_NATIVE_CUDA(...)
#endif

namespace kbench {

#define KBENCH_DECLARE_LAYERS(stem, Type, tag)                \
  void register_##stem##_sequential(VariantList<Type>& list); \
  void register_##stem##_native_cpu(VariantList<Type>& list); \
  void register_##stem##_portable(VariantList<Type>& list);   \
  KBENCH_IF_NATIVE_CUDA(void register_##stem##_native_cuda(VariantList<Type>& list);)
KBENCH_FOR_EACH_ALGORITHM(KBENCH_DECLARE_LAYERS)
#undef KBENCH_DECLARE_LAYERS

}  // namespace kbench
