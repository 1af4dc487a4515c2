// compare --algo lbp: its options and input.
#include "kbench/lbp.hpp"
#include "compare/batch.hpp"
#include "compare/compare_impl.hpp"
#include "compare/inputs.hpp"
#include "compare/sampled_rows.hpp"

namespace kbench::compare {
namespace {

// A batch through kbench::lbp on device views, the variant chosen by name.
class LbpViewsRunner final : public Runner<Batch<Lbp>> {
 public:
  LbpViewsRunner(const Variant<Lbp>& variant, const Batch<Lbp>::Input& input)
      : input_(input),
        choice_{variant.name, "", ""},
        bins_(lbp_bin_count(input.frames.front().params.mapping)),
        histograms_(input.frames.size() * std::size_t(bins_) * sizeof(std::uint32_t), 0) {
    const LbpInput& first = input.frames.front();
    const ImageSize out = lbp_output_size(first.gray.width, first.gray.height, first.params.border);
    const int frames = int(input.frames.size());
    in_ = DeviceFrames(first.gray.width, first.gray.height, 1, frames);
    codes_ = DeviceFrames(out.width, out.height, 1, frames);
  }
  void poison(std::uint8_t byte) override {
    codes_.fill(byte);
    fill_async(histograms_.data(), byte, histograms_.size(), nullptr);
  }
  void upload() override {
    for (std::size_t f = 0; f < input_.frames.size(); ++f) {
      in_.upload(int(f), input_.frames[f].gray.data.data());
    }
  }
  void compute() override {
    const LbpParams& params = input_.frames.front().params;
    lbp(context_, in_.view(), codes_.view(), static_cast<std::uint32_t*>(histograms_.data()),
        {params.mapping, params.border, {}}, choice_);
  }
  void sync() override { synchronize(nullptr); }
  void download(Batch<Lbp>::Output& out) override {
    out.resize(input_.frames.size());
    const ImageView& view = codes_.view();
    const std::size_t histogram_bytes = std::size_t(bins_) * sizeof(std::uint32_t);
    for (std::size_t f = 0; f < out.size(); ++f) {
      reshape(out[f].codes, view.width, view.height, 1);
      codes_.download(int(f), out[f].codes.data.data());
      out[f].histogram.resize(std::size_t(bins_));
      copy_rows_async(out[f].histogram.data(), histogram_bytes,
                      static_cast<const std::uint8_t*>(histograms_.data()) + f * histogram_bytes,
                      histogram_bytes, histogram_bytes, 1, nullptr);
    }
    synchronize(nullptr);
  }

 private:
  const Batch<Lbp>::Input& input_;
  Context context_;
  Choice choice_;
  int bins_;
  DeviceFrames in_, codes_;
  DeviceMemory histograms_;
};

// --batch N: N generated frames (seeds seed … seed + N − 1), or the --image N times.
int run_lbp_batch(const Options& options, const Case<Lbp>& single) {
  return run(options, batch_case(options, single, [](auto& frame, const Options& frame_options) {
               std::string name;
               frame.gray = load_or_generate(frame_options, 1, &name);
             }));
}

struct LbpOptions {
  std::string mapping = "plain";
} lbp_options;

void add_lbp_options(CLI::App& app) {
  app.add_option("--mapping", lbp_options.mapping,
                 "lbp: plain (256 bins), uniform (59) or rotation-invariant (36)")
      ->check(CLI::IsMember({"plain", "uniform", "rotation-invariant"}))
      ->capture_default_str();
}

int run_lbp(const Options& options) {
  Case<Lbp> problem;
  problem.input.gray = load_or_generate(options, 1, &problem.name);
  problem.input.params.border = parse_border(options.border);
  problem.input.params.mapping = parse_lbp_mapping(lbp_options.mapping);
  validate_lbp_input(problem.input);
  const ImageU8& gray = problem.input.gray;
  problem.description = std::to_string(gray.width) + "x" + std::to_string(gray.height) + " gray " +
                        options.border + " " + lbp_options.mapping;
  if (options.batch > 1) return run_lbp_batch(options, problem);
  const ImageSize out = lbp_output_size(gray.width, gray.height, problem.input.params.border);
  use_sampled_rows(options, problem, out.height, double(gray.sample_count()),
                   double(out.width) * out.height);
  return run(options, problem);
}

}  // namespace

AlgorithmEntry lbp_entry() {
  // The small-image sweep (perf/lbp_size_sweep.sh) passes its sizes through --size.
  // Video formats, then camera frame sizes, several with rows that are no multiple of 16 bytes
  // (the pitched layouts' row ends).
  return {Lbp::name,
          {"480p", "1080p", "4k", "3000x2000", "4032x3024", "6000x4000", "2306x1535", "3072x2304"},
          add_lbp_options,
          run_lbp};
}

}  // namespace kbench::compare

namespace kbench {

template <>
const VariantList<compare::Batch<Lbp>>& variants<compare::Batch<Lbp>>() {
  static const VariantList<compare::Batch<Lbp>> list =
      compare::batch_variants<Lbp, compare::LbpViewsRunner>();
  return list;
}

}  // namespace kbench
