#pragma once
// Each layer's registration function, one per algorithm; registry.cpp calls them in order.

#include "kbench/cemd.hpp"
#include "kbench/conv.hpp"
#include "kbench/lbp.hpp"
#include "kbench/registry.hpp"
#include "kbench/sad.hpp"

namespace kbench {

void register_conv_sequential(VariantList<Conv>& list);
void register_conv_native_cpu(VariantList<Conv>& list);
void register_conv_portable(VariantList<Conv>& list);
#if defined(KBENCH_HAVE_CUDA)
void register_conv_native_cuda(VariantList<Conv>& list);
#endif

void register_lbp_sequential(VariantList<Lbp>& list);
void register_lbp_native_cpu(VariantList<Lbp>& list);
void register_lbp_portable(VariantList<Lbp>& list);
#if defined(KBENCH_HAVE_CUDA)
void register_lbp_native_cuda(VariantList<Lbp>& list);
#endif

void register_sad_sequential(VariantList<Sad>& list);
void register_sad_native_cpu(VariantList<Sad>& list);
void register_sad_portable(VariantList<Sad>& list);
#if defined(KBENCH_HAVE_CUDA)
void register_sad_native_cuda(VariantList<Sad>& list);
#endif

#if defined(KBENCH_HAVE_CUDA)
void register_cemd_native_cuda(VariantList<Cemd>& list);
#endif

}  // namespace kbench
