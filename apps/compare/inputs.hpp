#pragma once
// Inputs shared by the algorithms' compare files, and each algorithm's entry point.

#include <string>

#include "compare/compare.hpp"
#include "kbench/image.hpp"

namespace kbench::compare {

// The --image file (converted to `channels`: 1 = gray, 3 = RGB), or a generated image of
// --size. Sets *name to the case name results are filed under.
ImageU8 load_or_generate(const Options& options, int channels, std::string* name);

struct ConvOptions {
  std::string mask = "gaussian";
  std::string border = "clamp";
  int channels = 3;
};
int run_conv(const Options& options, const ConvOptions& conv);

}  // namespace kbench::compare
