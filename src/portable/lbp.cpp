// Portable lbp: one Kokkos source for every execution space (Serial, OpenMP, CUDA).
//
// Two schedules compute codes and histogram in one pass:
//  - ScatterView: one work item per output pixel, each counting its bin through a ScatterView
//    (duplicated per thread on OpenMP, atomic on CUDA, plain on Serial);
//  - team histogram: each team codes a tile into a histogram in team scratch and merges it into
//    the result once, with one atomic per bin.
#include <algorithm>
#include <array>
#include <memory>

#include <Kokkos_ScatterView.hpp>

#include "kbench/lbp.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_lbp {

using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

// Output (x, y) is centred on input (x + shift, y + shift). `mapped` is false for the plain
// mapping, whose table is the identity.
struct LbpShape {
  int in_width, in_height, out_width, out_height, shift, bins;
  bool mapped;
};

LbpShape shape_of(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  return {input.gray.width,
          input.gray.height,
          out.width,
          out.height,
          input.params.border == Border::crop ? 1 : 0,
          lbp_bin_count(input.params.mapping),
          input.params.mapping != LbpMapping::plain};
}

// The mapping tables in one array: value of code c at c, its bin at kLbpCodes + c.
using TableBytes = std::array<std::uint8_t, 2 * kLbpCodes>;

TableBytes table_bytes(LbpMapping mapping) {
  const LbpTables t = lbp_tables(mapping);
  TableBytes bytes;
  for (int c = 0; c < kLbpCodes; ++c) {
    bytes[c] = t.value[c];
    bytes[kLbpCodes + c] = t.bin[c];
  }
  return bytes;
}

// The code of output (x, y), every neighbour read through clamped coordinates.
template <class In>
KOKKOS_INLINE_FUNCTION std::uint8_t code_clamped(const LbpShape& s, const In& in, int x, int y) {
  const int cx = x + s.shift, cy = y + s.shift;
  return lbp_code([&](int dx, int dy) {
    return in(std::size_t(clamp_coordinate(cy + dy, s.in_height)) * s.in_width +
              clamp_coordinate(cx + dx, s.in_width));
  });
}

// The output value and histogram bin of `code`.
template <class Tables>
KOKKOS_INLINE_FUNCTION void map_code(const LbpShape& s, const Tables& tables, std::uint8_t code,
                                     std::uint8_t& value, int& bin) {
  value = s.mapped ? tables(code) : code;
  bin = s.mapped ? int(tables(kLbpCodes + code)) : int(code);
}

// One work item per output pixel; Iterate::Left makes x the fastest index on every backend.
template <class Exec, int kTileX = 32, int kTileY = 8>
struct ScatterViewSchedule {
  static constexpr const char* name = "kokkos-scatterview";
  static constexpr int preference_offset = 0;

  template <class Hist>
  using Scatter =
      Kokkos::Experimental::ScatterView<std::uint32_t*, typename Hist::array_layout,
                                        Kokkos::Device<Exec, typename Exec::memory_space>>;

  template <class Hist>
  struct State {
    Scatter<Hist> scatter;
    explicit State(const Hist& hist) : scatter(Exec{}, hist) {}
  };

  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, State<Hist>& state) {
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
    // The result starts at zero; per-thread duplicates (where there are any) too.
    Kokkos::deep_copy(Exec{}, hist, 0u);
    state.scatter.reset_except(Exec{}, hist);
    const Scatter<Hist> scatter = state.scatter;
    Kokkos::parallel_for(
        "lbp_scatterview", Policy({0, 0}, {s.out_width, s.out_height}, {kTileX, kTileY}),
        KOKKOS_LAMBDA(int x, int y) {
          std::uint8_t value;
          int bin;
          map_code(s, tables, code_clamped(s, in, x, y), value, bin);
          codes(std::size_t(y) * s.out_width + x) = value;
          auto counts = scatter.access();
          counts(bin) += 1u;
        });
    state.scatter.contribute_into(Exec{}, hist);
  }
};

// Each team codes a tile of kCols × kRows output pixels into a histogram in team scratch, then
// adds it to the result with one atomic per bin. Each thread takes 4 adjacent columns and slides
// down the tile: per output row it reads one new input row of 6 samples and codes the 4 pixels
// at once in 32-bit words with lbp_codes4, the helper the native CUDA layer uses.
//
// The scratch histogram has up to kMaxCopies interleaved copies (bin b of copy c at
// b × copies + c), thread r counting into copy r mod copies: threads that code the same value at
// the same time (flat regions) then update different words. A team of one thread needs no
// atomics.
template <class Exec, int kCols = 512, int kRows = 8, int kMaxCopies = 32>
struct TeamHistSchedule {
  static constexpr const char* name = "kokkos-team-hist";
  static constexpr int preference_offset = 1;
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  template <class Hist>
  struct State {
    explicit State(const Hist&) {}
  };

  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, State<Hist>&) {
    const int scratch_words = s.bins * kMaxCopies;
    const int tiles_x = (s.out_width + kCols - 1) / kCols;
    const int tiles = tiles_x * ((s.out_height + kRows - 1) / kRows);
    const auto scratch = Kokkos::PerTeam(Scratch::shmem_size(scratch_words));
    const auto body = KOKKOS_LAMBDA(const Team& team) {
      const int copies = team.team_size() < kMaxCopies ? team.team_size() : kMaxCopies;
      const Scratch counts(team.team_scratch(0), scratch_words);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, s.bins * copies),
                           [&](int i) { counts(i) = 0; });
      team.team_barrier();

      const int copy = team.team_rank() % copies;
      const int x0 = (team.league_rank() % tiles_x) * kCols;
      const int y0 = (team.league_rank() / tiles_x) * kRows;
      const int cols = s.out_width - x0 < kCols ? s.out_width - x0 : kCols;
      const int y1 = s.out_height - y0 < kRows ? s.out_height : y0 + kRows;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (cols + 3) / 4), [&](int q) {
        const int x = x0 + 4 * q;
        const int pixels = cols - 4 * q < 4 ? cols - 4 * q : 4;
        // The 6 input columns the 4 pixels read, clamped (for crop only columns of pixels
        // past the edge, which are not stored, would leave the image).
        int columns[6];
        for (int k = 0; k < 6; ++k) {
          columns[k] = clamp_coordinate(x + s.shift - 1 + k, s.in_width);
        }
        // One input row's samples as lbp_codes4 takes them: columns 0..3 in lo, 4..5 in hi.
        const auto load_row = [&](int row, std::uint32_t& lo, std::uint32_t& hi) {
          const std::size_t base = std::size_t(clamp_coordinate(row, s.in_height)) * s.in_width;
          lo = hi = 0;
          for (int k = 0; k < 4; ++k) lo |= std::uint32_t(in(base + columns[k])) << (8 * k);
          for (int k = 4; k < 6; ++k) hi |= std::uint32_t(in(base + columns[k])) << (8 * k - 32);
        };
        std::uint32_t lo[3], hi[3];
        load_row(y0 + s.shift - 1, lo[0], hi[0]);
        load_row(y0 + s.shift, lo[1], hi[1]);
        for (int y = y0; y < y1; ++y) {
          load_row(y + s.shift + 1, lo[2], hi[2]);
          const std::uint32_t quad = lbp_codes4(lo, hi);
          for (int p = 0; p < pixels; ++p) {
            std::uint8_t value;
            int bin;
            map_code(s, tables, std::uint8_t(quad >> (8 * p)), value, bin);
            codes(std::size_t(y) * s.out_width + x + p) = value;
            if (copies == 1) {
              ++counts(bin);
            } else {
              Kokkos::atomic_add(&counts(bin * copies + copy), 1u);
            }
          }
          lo[0] = lo[1];
          hi[0] = hi[1];
          lo[1] = lo[2];
          hi[1] = hi[2];
        }
      });
      team.team_barrier();

      // Bin b's copies are read starting at copy b, so neighbouring threads read
      // neighbouring words.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, s.bins), [&](int b) {
        std::uint32_t sum = 0;
        for (int c = 0; c < copies; ++c) sum += counts(b * copies + (b + c) % copies);
        if (sum) Kokkos::atomic_add(&hist(b), sum);
      });
    };
    // The backend's recommended team size, but no more threads than a tile has column quads.
    const int team_size =
        std::min(kCols / 4, Kokkos::TeamPolicy<Exec>(tiles, Kokkos::AUTO)
                                .set_scratch_size(0, scratch)
                                .team_size_recommended(body, Kokkos::ParallelForTag()));
    Kokkos::deep_copy(Exec{}, hist, 0u);
    Kokkos::parallel_for("lbp_team_hist",
                         Kokkos::TeamPolicy<Exec>(tiles, team_size).set_scratch_size(0, scratch),
                         body);
  }
};

template <class Exec, class Schedule>
class KokkosLbpRunner final : public Runner<Lbp> {
 public:
  explicit KokkosLbpRunner(const LbpInput& input)
      : shape_(shape_of(input)),
        tables_(table_bytes(input.params.mapping)),
        in_(input.gray.data.data(), input.gray.sample_count(), "lbp input"),
        tables_buffer_(tables_.data(), tables_.size(), "lbp tables"),
        codes_(std::size_t(shape_.out_width) * shape_.out_height, "lbp codes"),
        hist_(std::size_t(shape_.bins), "lbp histogram"),
        state_(hist_.view()) {}

  void poison(std::uint8_t byte) override {
    codes_.poison(byte);
    hist_.poison(byte);
  }
  void upload() override {
    in_.upload();
    tables_buffer_.upload();
  }
  void compute() override {
    Schedule::run(shape_, in_.view(), tables_buffer_.view(), codes_.view(), hist_.view(), state_);
  }
  void sync() override { Exec{}.fence(); }
  void download(LbpResult& out) override {
    reshape(out.codes, shape_.out_width, shape_.out_height, 1);
    out.histogram.resize(std::size_t(shape_.bins));
    codes_.download(out.codes.data.data());
    hist_.download(out.histogram.data());
  }

 private:
  using Hist = typename OutputBuffer<std::uint32_t, Exec>::View;

  LbpShape shape_;
  TableBytes tables_;
  InputBuffer<std::uint8_t, Exec> in_;
  InputBuffer<std::uint8_t, Exec> tables_buffer_;
  OutputBuffer<std::uint8_t, Exec> codes_;
  OutputBuffer<std::uint32_t, Exec> hist_;
  typename Schedule::template State<Hist> state_;
};

// User calls prefer CUDA, then OpenMP; within a backend the team histogram.
template <class Exec>
constexpr int backend_preference() {
  switch (backend_of<Exec>()) {
    case Backend::cuda:
      return 20;
    case Backend::openmp:
      return 8;
    case Backend::serial:
      break;
  }
  return 0;
}

template <class Exec, class Schedule>
void add_variant(VariantList<Lbp>& list) {
  list.push_back({std::string(Schedule::name) + "-" + to_string(backend_of<Exec>()),
                  Layer::portable,
                  backend_of<Exec>(),
                  false,
                  make_runner<KokkosLbpRunner<Exec, Schedule>>,
                  {},
                  backend_preference<Exec>() + Schedule::preference_offset});
}

}  // namespace kbench::portable_lbp

namespace kbench {

void register_lbp_portable(VariantList<Lbp>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = decltype(exec);
    portable_lbp::add_variant<Exec, portable_lbp::ScatterViewSchedule<Exec>>(list);
    portable_lbp::add_variant<Exec, portable_lbp::TeamHistSchedule<Exec>>(list);
  });
}

}  // namespace kbench
