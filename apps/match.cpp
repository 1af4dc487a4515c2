// match: finds a query image in a target image by SAD, on the fastest variant this machine
// offers, and prints the best positions. The best position, or several without separation
// (--separation 1), come from exact bound-pruned matching (sad-pruned) by default; several
// positions kept apart (non-maximum suppression, which needs the whole SAD map) from full search.
//
//   match target.png query.png [--top 5] [--separation N] [--method auto|full|pruned]
//         [--backend B] [--variant NAME] [--verbose] [--quiet] [-o annotated.png]
#include <CLI/CLI.hpp>

#include <cstdio>

#include "kbench/file_io.hpp"
#include "kbench/image_io.hpp"
#include "kbench/image_write.hpp"
#include "kbench/kokkos_runtime.hpp"
#include "kbench/sad.hpp"
#include "tool_support.hpp"

namespace {

constexpr const char* kProgram = "match";

// The target as RGB with a 2-pixel box outline of the query's size at every match: the best in
// red, the others in yellow (the colours match --help).
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
  int top = 1, separation = 0;
  CLI::App app{
      "Finds a query image in a target image (sum of absolute differences over every position, "
      "in gray; colour images are converted with BT.601 luma, alpha ignored) and prints the best "
      "positions: rank, row and column of the query's top-left corner, the SAD score (lower is "
      "better; 0 is an exact copy) and the mean absolute difference per query pixel (score / "
      "query pixels, 0..255)."};
  app.add_option("target", target_path,
                 "Image to search (PNG, JPEG, BMP, PPM, PGM; - for standard input)")
      ->required();
  app.add_option("query", query_path, "Image to find; not larger than the target")->required();
  app.add_option("--top", top, "Number of best positions to report")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--separation", separation,
                 "Minimum distance in pixels between reported positions (0: the query's size, "
                 "so boxes do not overlap; 1: no separation)")
      ->check(CLI::Range(0, int(kbench::max_image_dimension)))
      ->capture_default_str();
  std::string method = "auto";
  app.add_option("--method", method,
                 "auto: pruned for the best position and for several without separation "
                 "(--separation 1), full search for several kept apart; full; pruned (exact: the "
                 "same answer as full search). A --variant of sad-pruned or sad chooses the "
                 "method too")
      ->check(CLI::IsMember({"auto", "full", "pruned"}))
      ->capture_default_str();
  kbench::tools::RunOptions run;
  kbench::tools::add_run_options(app, run);
  app.add_option("-o,--output", out_path,
                 "Write the target with a 2-pixel box around each position: red for the best, "
                 "yellow for the others (.png, .ppm; - writes PPM to standard output, and the "
                 "table then goes to stderr)");
  if (const auto status = kbench::tools::parse_command_line(app, kProgram, argc, argv)) {
    return *status;
  }
  kbench::tools::enable_progress(run);

  return kbench::tools::run_guarded(kProgram, [&] {
    kbench::check_distinct_paths(
        {{target_path, "the target image"}, {query_path, "the query image"}},
        {{out_path, "the output image (-o)"}});
    if (!out_path.empty()) kbench::output_image_format(out_path, 3);
    std::unique_ptr<kbench::OutputFile> out;
    if (!out_path.empty()) out = std::make_unique<kbench::OutputFile>(out_path);
    kbench::ImageU8 target, query;
    {
      kbench::tools::Progress reading(kProgram, "reading the images");
      target = kbench::read_image(target_path);
      query = kbench::read_image(query_path);
    }
    const kbench::MatchOptions options{top, separation,
                                       method == "full"     ? kbench::MatchMethod::full
                                       : method == "pruned" ? kbench::MatchMethod::pruned
                                                            : kbench::MatchMethod::automatic};
    const std::string what = "searching " + std::to_string(target.width) + "x" +
                             std::to_string(target.height) + " for " + std::to_string(query.width) +
                             "x" + std::to_string(query.height);
    const kbench::KokkosRuntime kokkos(argc, argv);
    kbench::Context context;
    std::vector<kbench::SadMatch> matches;
    kbench::tools::call(kProgram, context, run, what, [&](const kbench::Choice& choice) {
      matches = kbench::match(context, kbench::image_view(target), kbench::image_view(query),
                              options, choice);
    });
    if (out) {
      kbench::tools::Progress writing(kProgram, "writing " + kbench::output_name(out_path));
      const kbench::ImageU8 boxes = annotate(target, query.width, query.height, matches);
      kbench::write_and_commit(
          {{out.get(), [&](kbench::OutputFile& f) { kbench::write_image(f, boxes); }}});
    }
    // The table goes where the image does not.
    std::FILE* table = out && out_path == "-" ? stderr : stdout;
    const double pixels = double(query.width) * double(query.height);
    std::fprintf(table, "%-5s %6s %6s %12s %10s\n", "rank", "row", "col", "score", "mean_diff");
    for (std::size_t m = 0; m < matches.size(); ++m) {
      std::fprintf(table, "%-5zu %6d %6d %12d %10.3f\n", m + 1, matches[m].row, matches[m].col,
                   matches[m].score, double(matches[m].score) / pixels);
    }
    return 0;
  });
}
