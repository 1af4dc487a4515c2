// Blurs an image and matches descriptor sets through the installed kbench library, and checks
// what comes back: a box blur of a constant image is that constant, and a descriptor set matched
// against itself finds every row as its own nearest neighbour.
#include <kbench/kbench.hpp>

#include <cstdio>
#include <vector>

int main() {
  kbench::Context context;

  // A 640×480 RGB image of one colour, blurred with the built-in 3×3 box mask.
  const int width = 640, height = 480;
  std::vector<std::uint8_t> pixels(std::size_t(width) * height * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::uint8_t(40 + 50 * (i % 3));
  std::vector<std::uint8_t> blurred(pixels.size());
  kbench::conv(context, kbench::host_image(pixels.data(), width, height, 3),
               kbench::host_image(blurred.data(), width, height, 3), kbench::builtin_mask("box"));
  const kbench::CallInfo conv_call = context.last_call();
  const bool blur_ok = blurred == pixels;

  // 500 descriptors against themselves.
  const int rows = 500;
  std::vector<std::uint8_t> descriptors(std::size_t(rows) * 128);
  std::uint32_t state = 12345;
  for (auto& value : descriptors)
    value = std::uint8_t((state = state * 1664525u + 1013904223u) >> 24);
  const kbench::DescriptorView set{descriptors.data(), rows};
  const std::vector<kbench::CemdMatch> matches = kbench::cemd_match(context, set, set);
  int own = 0;
  for (int q = 0; q < rows; ++q) own += matches[q].index == q && matches[q].distance == 0.f;

  std::printf("conv: %s (%s, %s) in %.3f ms: %s\n", conv_call.variant.c_str(),
              conv_call.layer.c_str(), conv_call.backend.c_str(), conv_call.total_ms,
              blur_ok ? "the blurred constant image is unchanged" : "WRONG");
  std::printf("cemd_match: %s: %d of %d descriptors found themselves\n",
              context.last_call().variant.c_str(), own, rows);
  return blur_ok && own == rows ? 0 : 1;
}
