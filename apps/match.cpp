// match: finds a query image in a target image by SAD full search, on the fastest variant this
// machine offers, and prints the best positions.
//
//   match target.png query.png [--top 5] [--separation N] [-o annotated.png]
#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <iostream>

#include "kbench/error.hpp"
#include "kbench/image_io.hpp"
#include "kbench/sad.hpp"

namespace {

// The target as RGB with a 2-pixel box outline of the query's size at every match: the best in
// red, the others in yellow.
kbench::ImageU8 annotate(const kbench::ImageU8& target, int box_width, int box_height,
                         const std::vector<kbench::SadMatch>& matches) {
  kbench::ImageU8 out(target.width, target.height, 3);
  for (std::size_t i = 0; i < target.pixel_count(); ++i) {
    for (int k = 0; k < 3; ++k) {
      out.data[i * 3 + k] = target.data[i * target.channels + (target.channels >= 3 ? k : 0)];
    }
  }
  for (std::size_t m = matches.size(); m-- > 0;) {
    const std::uint8_t colour[3] = {255, std::uint8_t(m == 0 ? 0 : 220), 0};
    const auto paint = [&](int x, int y) {
      if (x < 0 || y < 0 || x >= out.width || y >= out.height) return;
      for (int k = 0; k < 3; ++k) out.at(x, y, k) = colour[k];
    };
    const int x0 = matches[m].col, y0 = matches[m].row;
    const int x1 = x0 + box_width - 1, y1 = y0 + box_height - 1;
    for (int t = 0; t < 2; ++t) {
      for (int x = x0; x <= x1; ++x) {
        paint(x, y0 + t);
        paint(x, y1 - t);
      }
      for (int y = y0; y <= y1; ++y) {
        paint(x0 + t, y);
        paint(x1 - t, y);
      }
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_path, query_path, out_path;
  kbench::SadParams params;
  CLI::App app{
      "Finds a query image in a target image (sum of absolute differences over every position, "
      "in gray) and prints the best positions: row and column of the query's top-left corner, "
      "and the SAD score (lower is better)."};
  app.add_option("target", target_path, "Image to search (PNG, JPEG, BMP, PPM, PGM)")->required();
  app.add_option("query", query_path, "Image to find; not larger than the target")->required();
  app.add_option("--top", params.top_k, "Number of best positions to report")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--separation", params.min_separation,
                 "Minimum distance in pixels between reported positions (0: the query's size, "
                 "so boxes do not overlap)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-o,--output", out_path, "Write the target with boxes drawn (.png, .ppm)");
  app.allow_extras();
  CLI11_PARSE(app, argc, argv);

  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    const kbench::ImageU8 target = kbench::read_image(target_path);
    const kbench::ImageU8 query = kbench::read_image(query_path);
    // One position needs only the argmin (fused variants); several need the map.
    params.want_map = params.top_k > 1;
    const kbench::SadResult result = kbench::match_template(target, query, params);
    std::vector<kbench::SadMatch> matches{result.best};
    if (params.top_k > 1) {
      const int rows = params.min_separation > 0 ? params.min_separation : query.height;
      const int cols = params.min_separation > 0 ? params.min_separation : query.width;
      matches = kbench::top_matches(result.map, result.map_width, result.map_height, params.top_k,
                                    rows, cols);
    }
    std::printf("%-5s %6s %6s %12s\n", "rank", "row", "col", "score");
    for (std::size_t m = 0; m < matches.size(); ++m) {
      std::printf("%-5zu %6d %6d %12d\n", m + 1, matches[m].row, matches[m].col, matches[m].score);
    }
    if (!out_path.empty()) {
      kbench::write_image(out_path, annotate(target, query.width, query.height, matches));
    }
  } catch (const kbench::Error& e) {
    std::cerr << "match: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
