#pragma once
// kbench's library: one call per operation on views of the caller's memory, with a Context that
// owns the expensive parts. See context.hpp for views, choices and threads, and each algorithm's
// header for its call:
//   kbench::conv                    conv.hpp
//   kbench::lbp                     lbp.hpp
//   kbench::sad_map, kbench::match  sad.hpp
//   kbench::cemd_match, kbench::cemd_all_pairs  cemd.hpp

#include "kbench/cemd.hpp"
#include "kbench/context.hpp"
#include "kbench/conv.hpp"
#include "kbench/error.hpp"
#include "kbench/lbp.hpp"
#include "kbench/sad.hpp"
