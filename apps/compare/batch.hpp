#pragma once
// compare --batch N: N frames of one shape as one problem, so that the per-frame time of a
// batch is measured. Batch<A> is the harness's algorithm; its variants are every variant of A
// run frame by frame (one runner, one call, per frame: what a batch costs without batching), and
// for each variant that takes device views, the library call on device views with all N frames
// in one call (`<name>-views`, through kbench's public API, as a user's program makes it).

#include <memory>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "kbench/context.hpp"
#include "kbench/conv.hpp"
#include "kbench/device_memory.hpp"
#include "kbench/lbp.hpp"
#include "kbench/registry.hpp"

namespace kbench::compare {

template <class A>
struct Batch {
  static constexpr const char* name = A::name;
  struct Input {
    std::vector<typename A::Input> frames;
  };
  using Output = std::vector<typename A::Output>;
  using Reference = std::vector<typename A::Reference>;

  static Reference reference(const Input& input) {
    Reference reference;
    for (const auto& frame : input.frames) reference.push_back(A::reference(frame));
    return reference;
  }
  // Every frame against its reference; the largest error, and the first wrong frame's detail.
  static CheckResult check(const Input& input, const Reference& reference, const Output& out) {
    if (out.size() != input.frames.size()) {
      return {false, 0,
              std::to_string(out.size()) + " frames out of " + std::to_string(input.frames.size())};
    }
    CheckResult all{true, 0, ""};
    for (std::size_t f = 0; f < out.size(); ++f) {
      const CheckResult frame = A::check(input.frames[f], reference[f], out[f]);
      all.max_error = std::max(all.max_error, frame.max_error);
      if (!frame.ok && all.ok) {
        all.ok = false;
        all.detail = "frame " + std::to_string(f) + ": " + frame.detail;
      }
    }
    return all;
  }
  static Workload workload(const Input& input) {
    Workload sum;
    for (const auto& frame : input.frames) {
      const Workload one = A::workload(frame);
      sum.bytes += one.bytes;
      sum.operations += one.operations;
      sum.operation_unit = one.operation_unit;
    }
    return sum;
  }
};

// A variant of A run on each frame in turn: a runner per frame, computed one after another.
template <class A>
class FrameByFrameRunner final : public Runner<Batch<A>> {
 public:
  FrameByFrameRunner(const Variant<A>& variant, const typename Batch<A>::Input& input) {
    for (const auto& frame : input.frames) runners_.push_back(variant.make(frame));
  }
  void poison(std::uint8_t byte) override {
    for (auto& r : runners_) r->poison(byte);
  }
  void upload() override {
    for (auto& r : runners_) r->upload();
  }
  void compute() override {
    for (auto& r : runners_) r->compute();
  }
  void sync() override {
    for (auto& r : runners_) r->sync();
  }
  void download(typename Batch<A>::Output& out) override {
    out.resize(runners_.size());
    for (std::size_t f = 0; f < runners_.size(); ++f) runners_[f]->download(out[f]);
  }

 private:
  std::vector<std::unique_ptr<Runner<A>>> runners_;
};

// Frames of one shape in device memory, back to back, and their host copies' transfers.
class DeviceFrames {
 public:
  DeviceFrames() = default;
  DeviceFrames(int width, int height, int channels, int frames)
      : view_{nullptr, width, height, channels, 0, frames, 0, MemoryPlace::cuda(0)},
        memory_(view_.frame_pitch() * std::size_t(frames), 0) {
    view_.data = static_cast<std::uint8_t*>(memory_.data());
  }
  const ImageView& view() const { return view_; }
  std::size_t frame_bytes() const { return view_.frame_pitch(); }
  void upload(int frame, const std::uint8_t* host) const {
    copy_rows_async(view_.data + frame_bytes() * std::size_t(frame), frame_bytes(), host,
                    frame_bytes(), frame_bytes(), 1, nullptr);
  }
  void download(int frame, std::uint8_t* host) const {
    copy_rows_async(host, frame_bytes(), view_.data + frame_bytes() * std::size_t(frame),
                    frame_bytes(), frame_bytes(), 1, nullptr);
  }
  void fill(std::uint8_t byte) const { fill_async(view_.data, byte, memory_.size(), nullptr); }

 private:
  ImageView view_;
  DeviceMemory memory_;
};

// compare --batch N's problem: N copies of `single`'s input; where the input is generated, frame
// f > 0 gets `regenerate(frame, options)` with the options' seed moved on by f.
template <class A, class Regenerate>
Case<Batch<A>> batch_case(const Options& options, const Case<A>& single,
                          const Regenerate& regenerate) {
  Case<Batch<A>> problem;
  problem.frames = options.batch;
  problem.name = single.name + "-batch" + std::to_string(options.batch);
  problem.description = single.description + ", " + std::to_string(options.batch) + " frames";
  Options frame_options = options;
  for (int f = 0; f < options.batch; ++f) {
    typename A::Input frame = single.input;
    if (options.image_path.empty() && f > 0) {
      frame_options.seed = options.seed + std::uint64_t(f);
      regenerate(frame, frame_options);
    }
    problem.input.frames.push_back(std::move(frame));
  }
  return problem;
}

// Batch<A>'s variants: every variant of A frame by frame, and `<name>-views` beside each that
// takes device views, made by ViewsRunner(variant, input).
template <class A, class ViewsRunner>
VariantList<Batch<A>> batch_variants() {
  VariantList<Batch<A>> list;
  for (const Variant<A>& v : variants<A>()) {
    const auto handles_all = [&v](const typename Batch<A>::Input& input) {
      for (const auto& frame : input.frames) {
        if (!v.handles(frame)) return false;
      }
      return true;
    };
    list.push_back({v.name, v.layer, v.backend, v.end_to_end,
                    [&v](const typename Batch<A>::Input& input) {
                      return std::unique_ptr<Runner<Batch<A>>>(
                          std::make_unique<FrameByFrameRunner<A>>(v, input));
                    },
                    handles_all, v.rank, v.isa, v.simple});
    if (!v.on_views) continue;
    list.push_back({v.name + "-views",
                    v.layer,
                    v.backend,
                    false,
                    [&v](const typename Batch<A>::Input& input) {
                      return std::unique_ptr<Runner<Batch<A>>>(
                          std::make_unique<ViewsRunner>(v, input));
                    },
                    {},
                    v.rank,
                    v.isa,
                    v.simple});
  }
  return list;
}

}  // namespace kbench::compare

namespace kbench {

// The batch variants of conv and lbp, defined in compare/conv.cpp and compare/lbp.cpp.
template <>
const VariantList<compare::Batch<Conv>>& variants<compare::Batch<Conv>>();
template <>
const VariantList<compare::Batch<Lbp>>& variants<compare::Batch<Lbp>>();

}  // namespace kbench
