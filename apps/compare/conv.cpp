// compare --algo conv: its options and input.
#include "kbench/conv.hpp"
#include "compare/batch.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sampled_rows.hpp"

namespace kbench::compare {
namespace {

// A batch through kbench::conv on device views, the variant chosen by name.
class ConvViewsRunner final : public Runner<Batch<Conv>> {
 public:
  ConvViewsRunner(const Variant<Conv>& variant, const Batch<Conv>::Input& input)
      : input_(input), choice_{variant.name, "", ""} {
    const ConvInput& first = input.frames.front();
    const ImageSize out =
        conv_output_size(first.image.width, first.image.height, first.mask, first.border);
    const int frames = int(input.frames.size());
    in_ = DeviceFrames(first.image.width, first.image.height, first.image.channels, frames);
    out_ = DeviceFrames(out.width, out.height, first.image.channels, frames);
  }
  void poison(std::uint8_t byte) override { out_.fill(byte); }
  void upload() override {
    for (std::size_t f = 0; f < input_.frames.size(); ++f) {
      in_.upload(int(f), input_.frames[f].image.data.data());
    }
  }
  void compute() override {
    const ConvInput& first = input_.frames.front();
    conv(context_, in_.view(), out_.view(), first.mask, {first.border, {}}, choice_);
  }
  void sync() override { synchronize(nullptr); }
  void download(Batch<Conv>::Output& out) override {
    out.resize(input_.frames.size());
    const ImageView& view = out_.view();
    for (std::size_t f = 0; f < out.size(); ++f) {
      reshape(out[f], view.width, view.height, view.channels);
      out_.download(int(f), out[f].data.data());
    }
    synchronize(nullptr);
  }

 private:
  const Batch<Conv>::Input& input_;
  Context context_;
  Choice choice_;
  DeviceFrames in_, out_;
};

struct ConvOptions {
  std::string mask = "gaussian";
  int channels = 3;
} conv_options;

void add_conv_options(CLI::App& app) {
  app.add_option("--mask", conv_options.mask, "conv: built-in mask name or mask file")
      ->capture_default_str();
  app.add_option("--channels", conv_options.channels, "conv: 1 (gray) or 3 (RGB)")
      ->check(CLI::IsMember({1, 3}))
      ->capture_default_str();
}

// --batch N: N generated frames (seeds seed … seed + N − 1), or the --image N times.
int run_conv_batch(const Options& options, const Case<Conv>& single) {
  return run(options, batch_case(options, single, [](auto& frame, const Options& frame_options) {
               std::string name;
               frame.image = load_or_generate(frame_options, conv_options.channels, &name);
             }));
}

int run_conv(const Options& options) {
  const ConvOptions& conv = conv_options;
  Case<Conv> problem;
  problem.input.image = load_or_generate(options, conv.channels, &problem.name);
  problem.input.mask = load_mask(conv.mask);
  problem.input.border = parse_border(options.border);
  validate_conv_input(problem.input);
  const ImageU8& image = problem.input.image;
  problem.description = std::to_string(image.width) + "x" + std::to_string(image.height) + "x" +
                        std::to_string(image.channels) + " " + conv.mask + " " +
                        std::to_string(problem.input.mask.size) + "x" +
                        std::to_string(problem.input.mask.size) + " " + options.border;
  if (options.batch > 1) return run_conv_batch(options, problem);
  const ImageSize out =
      conv_output_size(image.width, image.height, problem.input.mask, problem.input.border);
  use_sampled_rows(options, problem, out.height, double(image.sample_count()),
                   double(out.width) * out.height * image.channels);
  return run(options, problem);
}

}  // namespace

AlgorithmEntry conv_entry() {
  // Video formats, then camera frame sizes, several with rows that are no multiple of 16 bytes
  // (the pitched layouts' row ends).
  return {Conv::name,
          {"480p", "1080p", "4k", "3000x2000", "4032x3024", "6000x4000", "2306x1535", "3072x2304"},
          add_conv_options,
          run_conv};
}

}  // namespace kbench::compare

namespace kbench {

template <>
const VariantList<compare::Batch<Conv>>& variants<compare::Batch<Conv>>() {
  static const VariantList<compare::Batch<Conv>> list =
      compare::batch_variants<Conv, compare::ConvViewsRunner>();
  return list;
}

}  // namespace kbench
