// Portable lbp: one Kokkos source for every execution space (Serial, OpenMP, CUDA). Three
// schedules compute codes and histogram in one pass: ScatterView (a work item per pixel counting
// through a ScatterView), team histogram (a team codes a tile into a histogram in team scratch and
// merges it once) and vector (the native cuda-vec scheme: 16 pixels of a row per work item, four
// codes at a time, persistent teams). The team-histogram and vector schedules code through
// lbp_codes4 (fp16 pairs on CUDA devices), so they are registered with Isa::tuned and Isa::plain
// (`-plain`); on CUDA the vector variants also take the caller's device views, every frame in one
// launch. In full: docs/lbp.md#portable-schedules
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>

#include <Kokkos_ScatterView.hpp>

#include "kbench/detail/lbp_codes.hpp"
#include "kbench/detail/lbp_rows.hpp"
#include "kbench/lbp.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_lbp {

using portable::backend_of;
using portable::Bytes16;
using portable::HostView;
using portable::InputBuffer;
using portable::OutputBuffer;
using portable::PitchedImage;

// Output (x, y) is centred on input (x + shift, y + shift). Images are pitched
// (portable::PitchedImage): input row y starts at y · in_pitch, output row y at y · out_pitch.
// `mapped` is false for the plain mapping, whose table is the identity.
struct LbpShape {
  int in_width, in_height, out_width, out_height, shift, bins;
  bool mapped;
  int in_pitch, out_pitch;
};

// The shape of a width × height input with rows in_pitch bytes apart, into codes with rows
// out_pitch bytes apart.
LbpShape shape_of(int width, int height, const LbpParams& params, int in_pitch, int out_pitch) {
  const ImageSize out = lbp_output_size(width, height, params.border);
  return {width,
          height,
          out.width,
          out.height,
          params.border == Border::crop ? 1 : 0,
          lbp_bin_count(params.mapping),
          params.mapping != LbpMapping::plain,
          in_pitch,
          out_pitch};
}

// The shape with pitched rows (portable::row_pitch) on both sides.
LbpShape shape_of(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  return shape_of(input.gray.width, input.gray.height, input.params,
                  int(portable::row_pitch(std::size_t(input.gray.width))),
                  int(portable::row_pitch(std::size_t(out.width))));
}

// Frames of one shape, each after the one before: frame f's input starts f · in_stride bytes
// after frame 0's, its codes f · out_stride bytes after.
struct LbpFrames {
  int count;
  std::size_t in_stride, out_stride;
};

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
    return in(std::size_t(clamp_coordinate(cy + dy, s.in_height)) * s.in_pitch +
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

// The per-runner state of schedules that keep none between calls.
template <class Hist>
struct Stateless {
  Stateless(const Hist&, const Hist&) {}
};

// A histogram in team scratch with up to kMaxCopies interleaved copies (bin b of copy c at
// b × copies + c), thread r counting into copy r mod copies: threads that code the same value at
// the same time (flat regions) then update different words. A team of one thread needs no
// atomics. A spare bin after the last one, never merged, takes what count_if must not count.
template <class Exec, int kMaxCopies>
class TeamHistogram {
 public:
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  static std::size_t scratch_bytes(int bins) {
    return Scratch::shmem_size((bins + 1) * kMaxCopies);
  }

  // Takes the histogram's team scratch and zeroes it; counting may start after a team_barrier.
  KOKKOS_INLINE_FUNCTION TeamHistogram(const Team& team, int bins)
      : counts_(team.team_scratch(0), (bins + 1) * kMaxCopies),
        bins_(bins),
        copies_(team.team_size() < kMaxCopies ? team.team_size() : kMaxCopies),
        copy_(team.team_rank() % copies_) {
    zero(team);
  }

  // After merge_into: zeroes the counts for the next histogram, once every thread has read them;
  // counting may start on return.
  KOKKOS_INLINE_FUNCTION void restart(const Team& team) const {
    team.team_barrier();
    zero(team);
    team.team_barrier();
  }

  KOKKOS_INLINE_FUNCTION void count(int bin) const {
    if (copies_ == 1) {
      ++counts_(bin);
    } else {
      Kokkos::atomic_add(&counts_(bin * copies_ + copy_), 1u);
    }
  }

  // count(bin) where `counted`, else a count in the spare bin: a select rather than a branch.
  KOKKOS_INLINE_FUNCTION void count_if(bool counted, int bin) const {
    count(counted ? bin : bins_);
  }

  // Zeroes the next call's histogram (LbpHistogramTurns); only the first team does.
  template <class Hist>
  KOKKOS_INLINE_FUNCTION static void clear_next(const Team& team, const Hist& next) {
    if (team.league_rank() != 0) return;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(next.extent(0))),
                         [&](int b) { next(b) = 0; });
  }

  // Once the team has counted everything: adds the copies into `hist`, one atomic per bin. Bin
  // b's copies are read starting at copy b, so neighbouring threads read neighbouring words.
  template <class Hist>
  KOKKOS_INLINE_FUNCTION void merge_into(const Team& team, const Hist& hist) const {
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, bins_), [&](int b) {
      std::uint32_t sum = 0;
      // One division per bin; a wrapping increment, not a run-time modulo, per copy.
      for (int k = 0, c = b % copies_; k < copies_; ++k, c = c + 1 == copies_ ? 0 : c + 1) {
        sum += counts_(b * copies_ + c);
      }
      // Once per thread: a team with vector lanes (RowsSchedule on GPUs) runs this in every lane.
      Kokkos::single(Kokkos::PerThread(team), [&] {
        if (sum) Kokkos::atomic_add(&hist(b), sum);
      });
    });
  }

 private:
  KOKKOS_INLINE_FUNCTION void zero(const Team& team) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (bins_ + 1) * copies_),
                         [&](int i) { counts_(i) = 0; });
  }

  Scratch counts_;
  int bins_, copies_, copy_;
};

// One work item per output pixel; Iterate::Left makes x the fastest index on every backend.
template <class Exec, int kTileX = 32, int kTileY = 8>
struct ScatterViewSchedule {
  static constexpr const char* name = "kokkos-scatterview";
  static constexpr int rank = 0;
  static constexpr Isa isa = Isa::plain;
  static constexpr bool simple = true;

  template <class Hist>
  using Scatter =
      Kokkos::Experimental::ScatterView<std::uint32_t*, typename Hist::array_layout,
                                        Kokkos::Device<Exec, typename Exec::memory_space>>;

  // A scatter view over each of the runner's two histograms: on GPUs it adds into its histogram
  // directly.
  template <class Hist>
  struct State {
    Scatter<Hist> scatter[2];
    const std::uint32_t* first;
    State(const Hist& first_hist, const Hist& second_hist)
        : scatter{Scatter<Hist>(Exec{}, first_hist), Scatter<Hist>(Exec{}, second_hist)},
          first(first_hist.data()) {}
  };

  // Zeroes `hist` itself; `next` is left as it is.
  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, const Hist&, State<Hist>& state) {
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
    Scatter<Hist>& own = state.scatter[hist.data() == state.first ? 0 : 1];
    // The result starts at zero; per-thread duplicates (where there are any) too.
    Kokkos::deep_copy(Exec{}, hist, 0u);
    own.reset_except(Exec{}, hist);
    const Scatter<Hist> scatter = own;
    for (const portable::LaunchRows& rows : portable::row_chunks(s.out_height, kTileY)) {
      Kokkos::parallel_for(
          "lbp_scatterview", Policy({0, rows.begin}, {s.out_width, rows.end}, {kTileX, kTileY}),
          KOKKOS_LAMBDA(int x, int y) {
            std::uint8_t value;
            int bin;
            map_code(s, tables, code_clamped(s, in, x, y), value, bin);
            codes(pitched_index(s.out_pitch, x, y)) = value;
            auto counts = scatter.access();
            counts(bin) += 1u;
          });
    }
    own.contribute_into(Exec{}, hist);
  }
};

// Each team codes a tile of kCols × kRows output pixels into a TeamHistogram, then adds it to the
// result. Each thread takes 4 adjacent columns and slides down the tile: per output row it reads
// one new input row of 6 samples and codes the 4 pixels at once in 32-bit words with lbp_codes4,
// the helper the native CUDA layer uses.
template <class Exec, Isa kIsa, int kCols = 512, int kRows = 8, int kMaxCopies = 32>
struct TeamHistSchedule {
  static constexpr const char* name =
      kIsa == Isa::tuned ? "kokkos-team-hist" : "kokkos-team-hist-plain";
  static constexpr int rank = 1;
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  using Histogram = TeamHistogram<Exec, kMaxCopies>;
  using Team = typename Histogram::Team;

  template <class Hist>
  using State = Stateless<Hist>;

  // Adds into `hist`, which is zero, and zeroes `next`.
  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, const Hist& next, State<Hist>&) {
    const int tiles_x = (s.out_width + kCols - 1) / kCols;
    const int tiles = tiles_x * ((s.out_height + kRows - 1) / kRows);
    const auto scratch = Kokkos::PerTeam(Histogram::scratch_bytes(s.bins));
    const auto body = KOKKOS_LAMBDA(const Team& team) {
      Histogram::clear_next(team, next);
      const Histogram counts(team, s.bins);
      team.team_barrier();

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
          const std::size_t base = std::size_t(clamp_coordinate(row, s.in_height)) * s.in_pitch;
          lo = hi = 0;
          for (int k = 0; k < 4; ++k) lo |= std::uint32_t(in(base + columns[k])) << (8 * k);
          for (int k = 4; k < 6; ++k) hi |= std::uint32_t(in(base + columns[k])) << (8 * k - 32);
        };
        std::uint32_t lo[3], hi[3];
        load_row(y0 + s.shift - 1, lo[0], hi[0]);
        load_row(y0 + s.shift, lo[1], hi[1]);
        for (int y = y0; y < y1; ++y) {
          load_row(y + s.shift + 1, lo[2], hi[2]);
          const std::uint32_t quad = lbp_codes4<kIsa>(lo, hi);
          for (int p = 0; p < pixels; ++p) {
            std::uint8_t value;
            int bin;
            map_code(s, tables, std::uint8_t(quad >> (8 * p)), value, bin);
            codes(std::size_t(y) * s.out_pitch + x + p) = value;
            counts.count(bin);
          }
          lo[0] = lo[1];
          hi[0] = hi[1];
          lo[1] = lo[2];
          hi[1] = hi[2];
        }
      });
      counts.merge_into(team, hist);
    };
    // The backend's recommended team size, but no more threads than a tile has column quads.
    const int team_size =
        std::min(kCols / 4, Kokkos::TeamPolicy<Exec>(tiles, Kokkos::AUTO)
                                .set_scratch_size(0, scratch)
                                .team_size_recommended(body, Kokkos::ParallelForTag()));
    Kokkos::parallel_for("lbp_team_hist",
                         Kokkos::TeamPolicy<Exec>(tiles, team_size).set_scratch_size(0, scratch),
                         body);
  }
};

// ---- The vector schedule ----------------------------------------------------------------------

// A vector work item codes kVecBytes adjacent output pixels of one row.
constexpr int kVecBytes = 16;
constexpr int kVecWords = kVecBytes / 4;
// Per input row an item reads a window of kVecBytes + 2 samples, starting one column left of its
// first centre, as kWindowWords words: lbp_codes4's lo and hi for pixels 4k to 4k + 3 are words
// k and k + 1.
constexpr int kWindowBytes = kVecBytes + 2;
constexpr int kWindowWords = kVecWords + 1;

// Windows of pitched rows (16-byte aligned at any width): the item's own samples in one vector
// load, plus the word after it where the row goes on past the vector and, for clamp (kShift 0,
// whose window starts in the previous word), the word before it where the row has one;
// neighbouring items load those words too, so they come from the cache. Where the row starts or
// ends within the window, the sample beyond it repeats the edge sample, as clamping does (crop's
// kept outputs never read past the row). An item touches [x0, x0 + kVecBytes) of each row it
// reads, and the word after that where x0 + kVecBytes < width.
template <int kShift, class Vectors, class Words>
struct VectorRows {
  static_assert(portable::kRowAlignBytes % kVecBytes == 0, "pitched rows hold whole vectors");
  Vectors vectors;  // the item's frame
  Words words;
  int width, pitch;

  // The same rows of the frame `frame` strides of `stride` bytes after this one.
  KOKKOS_INLINE_FUNCTION VectorRows in_frame(std::size_t frame, std::size_t stride) const {
    return {portable::shifted(vectors, frame * (stride / kVecBytes)),
            portable::shifted(words, frame * (stride / sizeof(std::uint32_t))), width, pitch};
  }

  KOKKOS_INLINE_FUNCTION void window(int row, int x0, std::uint32_t (&w)[kWindowWords]) const {
    const std::size_t at = std::size_t(row) * pitch + x0;
    const Bytes16 v = vectors(at / kVecBytes);
    // Past the row the word is never a kept sample: clamp_end replaces it where it would be.
    const std::uint32_t after = x0 + kVecBytes < width ? words(at / 4 + kVecWords) : 0u;
    if constexpr (kShift == 1) {
      for (int k = 0; k < kVecWords; ++k) w[k] = v.word[k];
      w[kVecWords] = after;
    } else {
      const std::uint32_t before = x0 > 0 ? words(at / 4 - 1) : v.word[0] << 24;
      const std::uint32_t u[kVecWords + 2] = {before,    v.word[0], v.word[1],
                                              v.word[2], v.word[3], after};
      for (int k = 0; k < kWindowWords; ++k) w[k] = lbp_bytes_at(u[k], u[k + 1], 3);
      // Window byte t is sample x0 − 1 + t: the sample past the row is byte width − x0 + 1.
      if (width - x0 + 1 < kWindowBytes) clamp_end(w, width - x0 + 1);
    }
  }

  // Window byte `end` (the sample just past the row) repeats byte end − 1 (its last sample); a
  // loop over the words, so the window stays in registers.
  KOKKOS_INLINE_FUNCTION static void clamp_end(std::uint32_t (&w)[kWindowWords], int end) {
    std::uint32_t last = 0;
    for (int k = 0; k < kWindowWords; ++k) {
      if (k == (end - 1) / 4) last = (w[k] >> (8 * ((end - 1) % 4))) & 0xFFu;
    }
    for (int k = 0; k < kWindowWords; ++k) {
      if (k == end / 4) {
        const int shift = 8 * (end % 4);
        w[k] = (w[k] & ~(0xFFu << shift)) | (last << shift);
      }
    }
  }
};

// The codes image as 16-byte vectors: pitched rows hold whole ones, so an item stores all its
// values, those past the row's end into the padding.
template <class Codes>
struct CodeStore {
  using Memory = typename Codes::memory_space;
  Kokkos::View<Bytes16*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>> vectors;  // the frame

  explicit CodeStore(const Codes& codes)
      : vectors(reinterpret_cast<Bytes16*>(codes.data()), codes.size() / kVecBytes) {}

  // The same rows of the frame `frame` strides of `stride` bytes after this one.
  KOKKOS_INLINE_FUNCTION CodeStore in_frame(std::size_t frame, std::size_t stride) const {
    CodeStore moved = *this;
    moved.vectors = portable::shifted(vectors, frame * (stride / kVecBytes));
    return moved;
  }

  KOKKOS_INLINE_FUNCTION void store(std::size_t at,
                                    const std::uint32_t (&values)[kVecWords]) const {
    vectors(at / kVecBytes) = Bytes16{{values[0], values[1], values[2], values[3]}};
  }
};

// The native cuda-vec kernel's scheme: each work item codes kVecBytes pixels of one row from one
// window per input row (VectorRows), four at a
// time with lbp_codes4, and stores them through CodeStore. Teams are persistent, as many as run
// at once: each takes a contiguous range of items, its threads striding through it (coalesced on
// a GPU, one contiguous run per thread on a host), counts into a TeamHistogram and merges it once.
// Mapped codes are looked up in a copy of the tables in team scratch.
template <class Exec, Isa kIsa, int kTeamSize = 1024, int kMaxCopies = 32>
struct VectorSchedule {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-vec" : "kokkos-vec-plain";
  static constexpr int rank = 2;
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  // GPU teams per multiprocessor: one team of 1024 threads, as the native kernel's block, so
  // each multiprocessor zeroes and merges one scratch histogram (about 33 KB with 256 bins) per
  // call; the launch bounds give it 64 registers a thread. A league larger than what is resident
  // would run a second, partly idle wave.
  static constexpr int kGpuTeamsPerSm = 1;
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<kTeamSize, kGpuTeamsPerSm>>;
  using Team = typename Policy::member_type;
  using Histogram = TeamHistogram<Exec, kMaxCopies>;
  using Memory = typename Exec::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using Staged = Kokkos::View<std::uint8_t*, typename Exec::scratch_memory_space, Unmanaged>;

  template <class Hist>
  using State = Stateless<Hist>;

  // The views the kernels take, from the runners' own buffers as from the caller's memory, so
  // that both run the same kernels.
  using InBytes = Kokkos::View<const std::uint8_t*, Memory, Unmanaged>;
  using CodeBytes = Kokkos::View<std::uint8_t*, Memory, Unmanaged>;
  using TableView = Kokkos::View<const std::uint8_t*, Memory, Unmanaged>;
  using Hists = Kokkos::View<std::uint32_t*, Memory, Unmanaged>;

  // Adds into `hist`, which is zero, and zeroes `next`.
  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, const Hist& next, State<Hist>&) {
    run_frames(Exec(), s, LbpFrames{1, 0, 0}, InBytes(in.data(), in.size()),
               TableView(tables.data(), tables.size()), CodeBytes(codes.data(), codes.size()),
               Hists(hist.data(), hist.size()), Hists(next.data(), next.size()));
  }

  // Every frame: `in` and `codes` are frame 0's rows, the others follow at the frames' strides
  // (multiples of kVecBytes); frame f's histogram is hists[f · bins ...], which is zero. Zeroes
  // `next`. A single frame takes the kernel without frame arithmetic, whose pointers stay launch
  // arguments.
  static void run_frames(const Exec& exec, const LbpShape& s, const LbpFrames& frames,
                         const InBytes& in, const TableView& tables, const CodeBytes& codes,
                         const Hists& hists, const Hists& next) {
    if (frames.count == 1) {
      run_borders<false>(exec, s, frames, in, tables, codes, hists, next);
    } else {
      run_borders<true>(exec, s, frames, in, tables, codes, hists, next);
    }
  }

  template <bool kBatch>
  static void run_borders(const Exec& exec, const LbpShape& s, const LbpFrames& frames,
                          const InBytes& in, const TableView& tables, const CodeBytes& codes,
                          const Hists& hists, const Hists& next) {
    if (s.shift == 1) {
      run_border<1, kBatch>(exec, s, frames, in, tables, codes, hists, next);
    } else {
      run_border<0, kBatch>(exec, s, frames, in, tables, codes, hists, next);
    }
  }

  // kShift 1 for crop, 0 for clamp.
  template <int kShift, bool kBatch>
  static void run_border(const Exec& exec, const LbpShape& s, const LbpFrames& frames,
                         const InBytes& in, const TableView& tables, const CodeBytes& codes,
                         const Hists& hists, const Hists& next) {
    using Vectors = Kokkos::View<const Bytes16*, Memory, Unmanaged>;
    using Words = Kokkos::View<const std::uint32_t*, Memory, Unmanaged>;
    const VectorRows<kShift, Vectors, Words> rows{
        Vectors(reinterpret_cast<const Bytes16*>(in.data()), in.size() / kVecBytes),
        Words(reinterpret_cast<const std::uint32_t*>(in.data()), in.size() / 4), s.in_width,
        s.in_pitch};
    launch<kShift, kBatch>(exec, s, frames, rows, tables, CodeStore<CodeBytes>(codes), hists, next);
  }

  template <int kShift, bool kBatch, class Rows, class Out>
  static void launch(const Exec& exec, const LbpShape& s, const LbpFrames& frames, const Rows& rows,
                     const TableView& tables, const Out& out, const Hists& hists,
                     const Hists& next) {
    // Fewer than 2^32 coded pixels a frame (lbp_output_size), so fewer items too; in all, no more
    // items than bytes of codes in memory, so items × league fits in 64 bits.
    const unsigned vecs_per_row = unsigned((s.out_width + kVecBytes - 1) / kVecBytes);
    const unsigned frame_items = vecs_per_row * unsigned(s.out_height);
    const std::uint64_t items = std::uint64_t(frame_items) * std::uint64_t(frames.count);
    const std::size_t in_stride = frames.in_stride, out_stride = frames.out_stride;
    const auto scratch =
        Kokkos::PerTeam(Histogram::scratch_bytes(s.bins) + Staged::shmem_size(2 * kLbpCodes));
    const auto body = KOKKOS_LAMBDA(const Team& team) {
      Histogram::clear_next(team, next);
      const Histogram counts(team, s.bins);
      const Staged staged(team.team_scratch(0), 2 * kLbpCodes);
      if (s.mapped) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 2 * kLbpCodes),
                             [&](int i) { staged(i) = tables(i); });
      }
      team.team_barrier();
      // The team's items.
      const std::uint64_t rank = team.league_rank(), league = team.league_size();
      const std::uint64_t begin = items * rank / league, end = items * (rank + 1) / league;
      // kBatch is a constant: the single-frame kernel does no frame arithmetic.
      if (kBatch) {
        // Frame by frame: a frame's counts are merged into its histogram before the next
        // frame's start.
        for (std::uint64_t frame = begin / frame_items, frame_begin = frame * frame_items;
             frame_begin < end; ++frame, frame_begin += frame_items) {
          if (frame_begin > begin) counts.restart(team);
          code_items<kShift>(
              team, s, rows.in_frame(frame, in_stride), staged, out.in_frame(frame, out_stride),
              counts, vecs_per_row, unsigned(begin > frame_begin ? begin - frame_begin : 0),
              unsigned(end - frame_begin < frame_items ? end - frame_begin : frame_items));
          counts.merge_into(team, Hists(hists.data() + frame * s.bins, s.bins));
        }
      } else {
        code_items<kShift>(team, s, rows, staged, out, counts, vecs_per_row, unsigned(begin),
                           unsigned(end));
        counts.merge_into(team, hists);
      }
    };
    // Host backends run one thread per team (counting without atomics), a team per thread; GPUs
    // teams of kTeamSize, which the launch bounds make fit.
    const int team_size = backend_of<Exec>() == Backend::cuda ? kTeamSize : 1;
    const long long resident =
        portable::resident_items<Exec>(team_size, kGpuTeamsPerSm) / team_size;
    // A team takes at most one frame's items at a time, so frames smaller than a team get a team
    // each.
    const std::uint64_t team_pass = std::min<std::uint64_t>(team_size, frame_items);
    const std::uint64_t teams_needed = (items + team_pass - 1) / team_pass;
    const int league = int(
        std::max<std::uint64_t>(1, std::min<std::uint64_t>(std::uint64_t(resident), teams_needed)));
    Kokkos::parallel_for("lbp_vec", Policy(exec, league, team_size).set_scratch_size(0, scratch),
                         body);
  }

  // The team's items [first, end) of one frame: its threads take every team_size-th one. Each
  // thread finds the row and column of its first item by division, then steps by whole rows and a
  // remainder.
  template <int kShift, class Rows, class Tables, class Out>
  KOKKOS_INLINE_FUNCTION static void code_items(const Team& team, const LbpShape& s,
                                                const Rows& rows, const Tables& tables,
                                                const Out& out, const Histogram& counts,
                                                unsigned vecs_per_row, unsigned first,
                                                unsigned end) {
    const unsigned own = first + unsigned(team.team_rank());
    const unsigned step = unsigned(team.team_size());
    const unsigned step_rows = step / vecs_per_row, step_vecs = step % vecs_per_row;
    unsigned y = own / vecs_per_row, v = own % vecs_per_row;
    for (std::uint64_t item = own; item < end; item += step) {
      code_item<kShift>(s, rows, tables, out, counts, int(y), int(v) * kVecBytes);
      y += step_rows;
      v += step_vecs;
      if (v >= vecs_per_row) {
        v -= vecs_per_row;
        ++y;
      }
    }
  }

  // Codes, maps, counts and stores output pixels x0 to x0 + kVecBytes − 1 of row y.
  template <int kShift, class Rows, class Tables, class Out>
  KOKKOS_INLINE_FUNCTION static void code_item(const LbpShape& s, const Rows& rows,
                                               const Tables& tables, const Out& out,
                                               const Histogram& counts, int y, int x0) {
    const int cy = y + kShift;
    const int in_rows[3] = {clamp_coordinate(cy - 1, s.in_height), cy,
                            clamp_coordinate(cy + 1, s.in_height)};
    std::uint32_t lo[kVecWords][3], hi[kVecWords][3];
    for (int r = 0; r < 3; ++r) {
      std::uint32_t w[kWindowWords];
      rows.window(in_rows[r], x0, w);
      for (int k = 0; k < kVecWords; ++k) {
        lo[k][r] = w[k];
        hi[k][r] = w[k + 1];
      }
    }
    // Pixels past the row's end (in its last item, where the output width is not a multiple of
    // 16) are neither counted nor stored.
    const int valid = s.out_width - x0 < kVecBytes ? s.out_width - x0 : kVecBytes;
    // Word k holds pixels 4k to 4k + 3, one code per byte.
    std::uint32_t values[kVecWords];
    for (int k = 0; k < kVecWords; ++k) values[k] = lbp_codes4<kIsa>(lo[k], hi[k]);
    // Plain codes are their own values and bins: a separate loop keeps the lookups out of it.
    int bins[kVecBytes];
    if (s.mapped) {
      for (int k = 0; k < kVecWords; ++k) {
        for (int b = 0; b < 4; ++b) {
          std::uint8_t value;
          map_code(s, tables, std::uint8_t(values[k] >> (8 * b)), value, bins[4 * k + b]);
          values[k] = (values[k] & ~(0xFFu << (8 * b))) | (std::uint32_t(value) << (8 * b));
        }
      }
    } else {
      for (int j = 0; j < kVecBytes; ++j) bins[j] = int((values[j / 4] >> (8 * (j % 4))) & 0xFFu);
    }
    // Only a row's last item can have pixels past the row's end: the others count without a
    // test per pixel.
    if (valid == kVecBytes) {
      for (int j = 0; j < kVecBytes; ++j) counts.count(bins[j]);
    } else {
      for (int j = 0; j < kVecBytes; ++j) counts.count_if(j < valid, bins[j]);
    }
    out.store(std::size_t(y) * s.out_pitch + x0, values);
  }
};

// ---- The rows schedule ------------------------------------------------------------------------

// The native CPU layer's scheme (native_cpu/lbp.cpp, omp-simd) on Kokkos teams: a team codes a
// band of whole rows, each row's pixels across its vector lanes (SIMD lanes on host backends,
// threads on GPUs), the inside read directly and the frame through clamped reads. Host backends
// run a team of one thread per band and count a row's plain codes into the thread's
// sub-histograms (lbp_rows::count_codes) while the row is in L1, mapping them in place; the
// mapping's bins are summed from the codes' totals once. With Isa::tuned a host build codes the
// inside with the byte vectors of the level it is compiled for (simd::Compiled through
// lbp_rows::code_run, the native layer's helper); otherwise the lanes are a plain loop, which the
// compiler widens. GPUs map and count each pixel in its lane into a TeamHistogram.
template <class Exec, Isa kIsa>
struct RowsSchedule {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-rows" : "kokkos-rows-plain";
  // Preferred on host backends; on GPUs the vector schedule is faster.
  static constexpr bool kOnDevice = backend_of<Exec>() == Backend::cuda;
  static constexpr int rank = kOnDevice ? 0 : 3;
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  // GPU teams: kDeviceRows threads, a row each, of kDeviceLanes lanes (one warp).
  static constexpr int kDeviceRows = 8;
  static constexpr int kDeviceLanes = 32;
  static constexpr int kMaxCopies = 32;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  using Histogram = TeamHistogram<Exec, kMaxCopies>;

  template <class Hist>
  using State = Stateless<Hist>;

  // Adds into `hist`, which is zero, and zeroes `next`.
  template <class In, class Tables, class Codes, class Hist>
  static void run(const LbpShape& s, const In& in, const Tables& tables, const Codes& codes,
                  const Hist& hist, const Hist& next, State<Hist>&) {
    const LbpInside inner = lbp_inside(s.in_width, s.in_height, s.out_width, s.out_height, s.shift);
    // Host backends: one band per thread, as the native variants; GPUs: a row per team thread.
    const int band_rows =
        kOnDevice ? kDeviceRows
                  : std::max(1, (s.out_height + Exec().concurrency() - 1) / Exec().concurrency());
    const int league = (s.out_height + band_rows - 1) / band_rows;
    const auto body = KOKKOS_LAMBDA(const Team& team) {
      Histogram::clear_next(team, next);
      const int y0 = team.league_rank() * band_rows;
      const int y1 = s.out_height - y0 < band_rows ? s.out_height : y0 + band_rows;
      count_band(std::integral_constant<bool, kOnDevice>(), team, s, inner, in, tables, codes, hist,
                 y0, y1);
    };
    const int team_size = kOnDevice ? kDeviceRows : 1;
    const int lanes = kOnDevice ? kDeviceLanes : 1;
    const auto scratch = Kokkos::PerTeam(kOnDevice ? Histogram::scratch_bytes(s.bins) : 0);
    Kokkos::parallel_for("lbp_rows", Policy(league, team_size, lanes).set_scratch_size(0, scratch),
                         body);
  }

  // Row y's plain codes, each passed to emit(x, code), except where a host build with Isa::tuned
  // codes the inside in byte vectors: those are stored in row y of `codes` directly, as the host
  // backends' emit does.
  template <class In, class Codes, class Emit>
  KOKKOS_INLINE_FUNCTION static void code_row(const Team& team, const LbpShape& s,
                                              const LbpInside& inner, const In& in,
                                              const Codes& codes, int y, const Emit& emit) {
    const bool inside_row = y >= inner.y0 && y < inner.y1;
    const int x0 = inside_row ? inner.x0 : s.out_width;
    const int x1 = inside_row ? inner.x1 : s.out_width;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, x0),
                         [&](int x) { emit(x, code_clamped(s, in, x, y)); });
    if (x0 < x1) {
      const std::uint8_t* centres =
          in.data() + std::size_t(y + s.shift) * s.in_pitch + s.shift + x0;
      const int count = x1 - x0;
      bool coded = false;
#if !defined(__CUDA_ARCH__)
      if constexpr (kIsa == Isa::tuned && !kOnDevice) {
        if (count >= simd::Compiled::kBytes) {
          lbp_rows::code_run<simd::Compiled>(centres, s.in_pitch, std::size_t(count),
                                             codes.data() + std::size_t(y) * s.out_pitch + x0);
          coded = true;
        }
      }
#endif
      if (!coded) {
        const int pitch = s.in_pitch;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, count), [&](int x) {
          const std::uint8_t* centre = centres + x;
          emit(x0 + x, lbp_code([&](int dx, int dy) { return centre[dy * pitch + dx]; }));
        });
      }
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, x1, s.out_width),
                         [&](int x) { emit(x, code_clamped(s, in, x, y)); });
  }

  // GPUs: rows [y0, y1) a team thread each, every pixel mapped, stored and counted in its lane.
  template <class In, class Tables, class Codes, class Hist>
  KOKKOS_INLINE_FUNCTION static void count_band(std::true_type, const Team& team, const LbpShape& s,
                                                const LbpInside& inner, const In& in,
                                                const Tables& tables, const Codes& codes,
                                                const Hist& hist, int y0, int y1) {
    const Histogram counts(team, s.bins);
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, y0, y1), [&](int y) {
      code_row(team, s, inner, in, codes, y, [&](int x, std::uint8_t code) {
        std::uint8_t value;
        int bin;
        map_code(s, tables, code, value, bin);
        codes(pitched_index(s.out_pitch, x, y)) = value;
        counts.count(bin);
      });
    });
    counts.merge_into(team, hist);
  }

  // Host backends: rows [y0, y1) coded, then counted (and mapped) one at a time into the thread's
  // sub-histograms, whose totals are added into `hist` at the end.
  template <class In, class Tables, class Codes, class Hist>
  KOKKOS_INLINE_FUNCTION static void count_band(std::false_type, const Team& team,
                                                const LbpShape& s, const LbpInside& inner,
                                                const In& in, const Tables& tables,
                                                const Codes& codes, const Hist& hist, int y0,
                                                int y1) {
#if !defined(__CUDA_ARCH__)
    lbp_rows::CodeCounts counts{};
    for (int y = y0; y < y1; ++y) {
      std::uint8_t* row = codes.data() + std::size_t(y) * s.out_pitch;
      code_row(team, s, inner, in, codes, y, [&](int x, std::uint8_t code) { row[x] = code; });
      if (s.mapped) {
        lbp_rows::count_and_map(row, std::size_t(s.out_width), tables.data(), counts, row);
      } else {
        lbp_rows::count_codes(row, std::size_t(s.out_width), counts);
      }
    }
    for (int code = 0; code < kLbpCodes; ++code) {
      const std::uint32_t total = lbp_rows::code_total(counts, code);
      if (total == 0) continue;
      const int bin = s.mapped ? int(tables(kLbpCodes + code)) : code;
      Kokkos::atomic_add(&hist(bin), total);
    }
#endif
  }
};

template <class Exec, class Schedule>
class KokkosLbpRunner final : public Runner<Lbp> {
 public:
  explicit KokkosLbpRunner(const LbpInput& input)
      : shape_(shape_of(input)),
        tables_(table_bytes(input.params.mapping)),
        gray_(input.gray),
        in_(shape_.in_width, shape_.in_height, "lbp input"),
        tables_buffer_(tables_.data(), tables_.size(), "lbp tables"),
        codes_(shape_.out_width, shape_.out_height, "lbp codes"),
        hists_(2 * std::size_t(shape_.bins), "lbp histograms"),
        state_(half(0), half(1)) {}

  void poison(std::uint8_t byte) override {
    codes_.poison(byte);
    hists_.poison(byte);
    turns_.poisoned();
  }
  void upload() override {
    in_.upload(gray_.data.data());
    tables_buffer_.upload();
  }
  void compute() override {
    const LbpHistogramTurns::Turn turn = turns_.next();
    if (turn.clear_first) Kokkos::deep_copy(Exec{}, half(turn.add_into), 0u);
    Schedule::run(shape_, in_.input(), tables_buffer_.view(), codes_.view(), half(turn.add_into),
                  half(turn.clear_for_next), state_);
  }
  void sync() override { Exec{}.fence(); }
  void download(LbpResult& out) override {
    reshape(out.codes, shape_.out_width, shape_.out_height, 1);
    out.histogram.resize(std::size_t(shape_.bins));
    codes_.download(out.codes.data.data());
    Kokkos::deep_copy(HostView<std::uint32_t>(out.histogram.data(), out.histogram.size()),
                      half(turns_.last()));
  }

 private:
  using Hists = typename OutputBuffer<std::uint32_t, Exec>::View;
  using Hist = decltype(Kokkos::subview(Hists(), std::pair<std::size_t, std::size_t>()));

  // Histogram k (0 or 1) of the two the calls take in turn (LbpHistogramTurns).
  Hist half(int k) const {
    const std::size_t bins = std::size_t(shape_.bins);
    return Kokkos::subview(hists_.view(), std::make_pair(k * bins, (k + 1) * bins));
  }

  LbpShape shape_;
  TableBytes tables_;
  const ImageU8& gray_;
  PitchedImage<Exec> in_;
  InputBuffer<std::uint8_t, Exec> tables_buffer_;
  PitchedImage<Exec> codes_;
  OutputBuffer<std::uint32_t, Exec> hists_;
  LbpHistogramTurns turns_;
  typename Schedule::template State<Hist> state_;
};

// The vector variants' call on device views (Variant::on_views): every frame in one launch on the
// call's stream. Each side is the caller's memory where its rows hold whole 16-byte vectors
// (usable_by_vectors), else a pitched copy in the call's scratch memory: the kernel touches
// nothing past a row's vectors.
template <class Exec, Isa kIsa>
void code_views(const LbpViewCall& call) {
  using Vector = VectorSchedule<Exec, kIsa>;
  const Exec exec = portable::stream_instance<Exec>(call.work.stream);
  const ConstImageView& in = call.in;
  const ImageView& codes = call.codes;
  const int bins = lbp_bin_count(call.params.mapping);
  fill_async(call.histograms, 0, std::size_t(in.frames) * bins * sizeof(std::uint32_t),
             call.work.stream);
  const FrameLayout in_frames = vector_input(in, kVecBytes, call.work, "portable lbp input");
  const FrameLayout out_frames = vector_output(codes, kVecBytes, call.work, "portable lbp codes");
  const LbpShape s = shape_of(in.width, in.height, call.params, portable::int_pitch(in_frames),
                              portable::int_pitch(out_frames));
  // Frame 0's rows as far as an item reaches: its vector [x0, x0 + kVecBytes) of every row and,
  // in input rows that go on past the last vector, the word after it (VectorRows).
  const std::size_t vectors_end = portable::row_pitch(std::size_t(codes.width));
  const std::size_t in_reach =
      vectors_end < in.row_bytes() ? vectors_end + sizeof(std::uint32_t) : vectors_end;
  // The plain mapping reads no table.
  typename Vector::TableView tables;
  if (s.mapped) {
    const TableBytes bytes = table_bytes(call.params.mapping);
    tables = typename Vector::TableView(
        static_cast<const std::uint8_t*>(call.work.scratch->uploaded(
            "portable lbp tables", bytes.data(), bytes.size(), call.work.stream)),
        bytes.size());
  }
  Vector::run_frames(
      exec, s, {in.frames, in_frames.frame_stride, out_frames.frame_stride},
      typename Vector::InBytes(in_frames.data,
                               portable::frame_span(in_frames, in.height, in_reach)),
      tables,
      typename Vector::CodeBytes(out_frames.data,
                                 portable::frame_span(out_frames, codes.height, vectors_end)),
      typename Vector::Hists(call.histograms, std::size_t(in.frames) * bins),
      typename Vector::Hists());
  finish_vector_output(out_frames, codes, call.work);
}

// The variant's call on device views: the vector schedule on CUDA; none elsewhere.
template <class Exec, class Schedule>
std::function<void(const LbpViewCall&)> on_views() {
  if constexpr (backend_of<Exec>() == Backend::cuda &&
                std::is_same<Schedule, VectorSchedule<Exec, Schedule::isa>>::value) {
    return code_views<Exec, Schedule::isa>;
  } else {
    return {};
  }
}

template <class Exec, class Schedule>
void add_variant(VariantList<Lbp>& list) {
  list.push_back({std::string(Schedule::name) + "-" + to_string(backend_of<Exec>()),
                  Layer::portable,
                  backend_of<Exec>(),
                  false,
                  make_runner<KokkosLbpRunner<Exec, Schedule>>,
                  {},
                  Schedule::rank,
                  Schedule::isa,
                  Schedule::simple,
                  on_views<Exec, Schedule>()});
}

}  // namespace kbench::portable_lbp

namespace kbench {

void register_lbp_portable(VariantList<Lbp>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable_lbp::add_variant<Exec, portable_lbp::ScatterViewSchedule<Exec>>(list);
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      portable_lbp::add_variant<Exec, portable_lbp::TeamHistSchedule<Exec, kIsa>>(list);
      portable_lbp::add_variant<Exec, portable_lbp::VectorSchedule<Exec, kIsa>>(list);
      portable_lbp::add_variant<Exec, portable_lbp::RowsSchedule<Exec, kIsa>>(list);
    });
  });
}

}  // namespace kbench
