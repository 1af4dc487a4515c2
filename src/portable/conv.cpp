// Portable conv: one Kokkos source for every execution space (Serial, OpenMP, CUDA). Three
// schedules walk the pixel computation (conv_pixel), written once: a flat MDRange over output
// pixels, team tiles staged with their halo in scratch, and a row-vector one that treats an
// interleaved row as one byte stream; masks of size 3 get compile-time unrolled code. A fourth,
// the band walk, runs the native CUDA kernel's arithmetic for 3×3 masks
// (kbench/detail/conv_band.hpp); a fifth, on host spaces, the SIMD CPU variants' walk over rows of
// floats (kbench/detail/conv_rows.hpp). The row-vector, band and rows schedules go through helpers
// with hardware instructions, so they are registered with Isa::tuned and Isa::plain (`-plain`). On
// CUDA the band variants also take the caller's device views. In full: see
// docs/conv.md#schedules-in-detail
#include <algorithm>
#include <climits>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "kbench/conv.hpp"
#include "kbench/detail/conv_band.hpp"
#include "kbench/detail/conv_rows.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_conv {

using portable::backend_of;
using portable::Bytes16;
using portable::InputBuffer;
using portable::PitchedImage;

// Output (x, y) reads the window centred on input (x + shift, y + shift). Images are pitched
// (portable::PitchedImage): input row y starts at byte y · in_pitch, output row y at y ·
// out_pitch. A 3×3 mask also travels as values, which kernels receive as launch arguments.
struct ConvShape {
  int in_width, in_height, out_width, out_height, channels, shift, mask_size;
  int in_pitch, out_pitch;
  conv_band::Taps3x3 taps;
};

// The shape of a width × height × channels input with rows in_pitch bytes apart, into an output
// with rows out_pitch bytes apart.
ConvShape shape_of(int width, int height, int channels, const Mask& mask, Border border,
                   int in_pitch, int out_pitch) {
  const ImageSize out = conv_output_size(width, height, mask, border);
  ConvShape shape;
  shape.in_width = width;
  shape.in_height = height;
  shape.out_width = out.width;
  shape.out_height = out.height;
  shape.channels = channels;
  shape.shift = border == Border::crop ? mask.radius() : 0;
  shape.mask_size = mask.size;
  shape.in_pitch = in_pitch;
  shape.out_pitch = out_pitch;
  shape.taps = mask.size == 3 ? conv_band::taps_of(mask) : conv_band::Taps3x3{};
  return shape;
}

// The shape with pitched rows (portable::row_pitch) on both sides.
ConvShape shape_of(const ConvInput& input) {
  const ImageSize out =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  const int channels = input.image.channels;
  return shape_of(input.image.width, input.image.height, channels, input.mask, input.border,
                  int(portable::row_pitch(std::size_t(input.image.width) * channels)),
                  int(portable::row_pitch(std::size_t(out.width) * channels)));
}

// The images every schedule takes, from the runners' own buffers as from the caller's memory, so
// that both run the same kernels.
template <class Exec>
using InView = Kokkos::View<const std::uint8_t*, typename Exec::memory_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged | Kokkos::RandomAccess>>;
template <class Exec>
using OutView = Kokkos::View<std::uint8_t*, typename Exec::memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
// The mask in the caller's scratch memory. Runners keep theirs in an InputBuffer, whose
// random-access view reads through the texture path, which Kokkos 3.4 gives only to memory it
// allocated itself.
template <class Exec>
using WeightsView = Kokkos::View<const float*, typename Exec::memory_space,
                                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Frames of one shape, each after the one before: frame f's input starts f · in_stride bytes
// after frame 0's, its output f · out_stride bytes after.
struct ConvFrames {
  int count;
  std::size_t in_stride, out_stride;
};

// One output pixel, all channels. `Source` reads a clamped input sample: from the image in
// device memory, or from a staged tile. kSize > 0 fixes the mask size at compile time.
template <int kSize, class Source, class Mask, class Out>
KOKKOS_INLINE_FUNCTION void conv_pixel(const ConvShape& s, const Source& source, const Mask& mask,
                                       const Out& out, int x, int y) {
  const int n = kSize > 0 ? kSize : s.mask_size;
  const int r = n / 2;
  // The channel loops run to the compile-time maximum so sum[] stays in registers (a run-time
  // bound would index it dynamically and move it to local memory on GPUs).
  constexpr int kMaxChannels = 4;
  float sum[kMaxChannels] = {0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      const float w = mask(j * n + i);
      for (int c = 0; c < kMaxChannels; ++c) {
        if (c < s.channels)
          sum[c] += w * float(source(x + s.shift + i - r, y + s.shift + j - r, c));
      }
    }
  }
  const std::size_t base = std::size_t(y) * s.out_pitch + std::size_t(x) * s.channels;
  for (int c = 0; c < kMaxChannels; ++c) {
    if (c < s.channels) out(base + c) = conv_to_pixel(sum[c]);
  }
}

template <class In>
struct ImageSource {
  ConvShape s;
  In in;
  KOKKOS_INLINE_FUNCTION std::uint8_t operator()(int x, int y, int c) const {
    const int cx = clamp_coordinate(x, s.in_width), cy = clamp_coordinate(y, s.in_height);
    return in(std::size_t(cy) * s.in_pitch + std::size_t(cx) * s.channels + c);
  }
};

// Flat schedule: one work item per output pixel. Iterate::Left makes x the fastest index on
// every backend (contiguous per thread on the host, coalesced across a warp on CUDA).
template <class Exec, int kTileX = 32, int kTileY = 8>
struct MDRangeSchedule {
  static constexpr const char* name = "kokkos-mdrange";
  static constexpr Isa isa = Isa::plain;
  static constexpr bool simple = true;

  template <int kSize, class In, class MaskView, class Out>
  static void run(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                  const Out& out) {
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
    const ImageSource<In> source{s, in};
    for (const portable::LaunchRows& rows : portable::row_chunks(s.out_height, kTileY)) {
      Kokkos::parallel_for(
          "conv_mdrange", Policy(exec, {0, rows.begin}, {s.out_width, rows.end}, {kTileX, kTileY}),
          KOKKOS_LAMBDA(int x, int y) { conv_pixel<kSize>(s, source, mask, out, x, y); });
    }
  }
};

// Tiled schedule: each team stages a kTileX × kTileY output tile plus its halo in team scratch,
// then computes the tile from scratch, so each input sample is read from memory once per tile.
template <class Exec, int kTileX = 64, int kTileY = 8>
struct TeamTiledSchedule {
  static constexpr const char* name = "kokkos-team-tiled";
  static constexpr Isa isa = Isa::plain;
  static constexpr bool simple = false;
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Scratch = Kokkos::View<std::uint8_t*, typename Exec::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  struct TileSource {
    ConvShape s;
    Scratch tile;
    int tile_x0, tile_y0, tile_width;  // input coordinates of the tile's first staged sample
    KOKKOS_INLINE_FUNCTION std::uint8_t operator()(int x, int y, int c) const {
      return tile((std::size_t(y - tile_y0) * tile_width + (x - tile_x0)) * s.channels + c);
    }
  };

  template <int kSize, class In, class MaskView, class Out>
  static void run(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                  const Out& out) {
    const int r = s.mask_size / 2;
    const int staged_width = kTileX + 2 * r, staged_height = kTileY + 2 * r;
    const std::size_t scratch_bytes = std::size_t(staged_width) * staged_height * s.channels;
    const int tiles_x = (s.out_width + kTileX - 1) / kTileX;
    const int tiles_y = (s.out_height + kTileY - 1) / kTileY;
    const ImageSource<In> source{s, in};
    auto policy = Kokkos::TeamPolicy<Exec>(exec, tiles_x * tiles_y, Kokkos::AUTO)
                      .set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(scratch_bytes)));
    Kokkos::parallel_for(
        "conv_team_tiled", policy, KOKKOS_LAMBDA(const Team& team) {
          const int out_x0 = (team.league_rank() % tiles_x) * kTileX;
          const int out_y0 = (team.league_rank() / tiles_x) * kTileY;
          const TileSource tile{s, Scratch(team.team_scratch(0), scratch_bytes),
                                out_x0 + s.shift - r, out_y0 + s.shift - r, staged_width};
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, int(scratch_bytes)), [&](int k) {
            const int c = k % s.channels, p = k / s.channels;
            tile.tile(k) =
                source(tile.tile_x0 + p % staged_width, tile.tile_y0 + p / staged_width, c);
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTileX * kTileY), [&](int k) {
            const int x = out_x0 + k % kTileX, y = out_y0 + k / kTileX;
            if (x < s.out_width && y < s.out_height) conv_pixel<kSize>(s, tile, mask, out, x, y);
          });
        });
  }
};

// The bytes of one input row that a run of kBytes output bytes needs with kC channels: kLead
// before the run's first byte (kC for clamp, 0 for crop, whose output is shifted by the radius)
// and kSpan in all.
template <int kC, int kShift, int kBytes>
struct RowWindow {
  static constexpr int kLead = (1 - kShift) * kC;
  static constexpr int kSpan = kBytes + 2 * kC;
};

// Pitched rows (16-byte aligned) and 16-byte runs: the run's own bytes in one 16-byte load, the
// halo in 32-bit words that neighbouring runs have just brought into the cache.
template <class Window, Isa kIsa, class Vectors, class Words>
struct VectorRowLoader {
  static_assert(Window::kSpan - Window::kLead <= 16 + 8, "the trailing halo fits two words");
  static constexpr int kTrailWords = (Window::kSpan - Window::kLead - 16 + 3) / 4;
  static constexpr int kLeadWords = Window::kLead > 0 ? 1 : 0;
  Vectors in_vectors;
  Words in_words;
  int in_row_bytes, in_pitch;

  // Whether the windows of a run starting at byte k0 are inside their rows.
  KOKKOS_INLINE_FUNCTION bool covers(int k0) const {
    return k0 >= 4 * kLeadWords && k0 + 16 + 4 * kTrailWords <= in_row_bytes;
  }
  KOKKOS_INLINE_FUNCTION void load(int row, int k0, float (&v)[Window::kSpan]) const {
    const std::size_t at = std::size_t(row) * in_pitch + k0;
    // bytes[0] is input byte k0 − 4·kLeadWords.
    std::uint32_t bytes[kLeadWords + 4 + kTrailWords];
    if (kLeadWords) bytes[0] = in_words(at / 4 - 1);
    const Bytes16 centre = in_vectors(at / 16);
    for (int w = 0; w < 4; ++w) bytes[kLeadWords + w] = centre.word[w];
    for (int w = 0; w < kTrailWords; ++w) bytes[kLeadWords + 4 + w] = in_words(at / 4 + 4 + w);
    constexpr int kFirst = 4 * kLeadWords - Window::kLead;  // the window's first byte in bytes[]
    for (int t = 0; t < Window::kSpan; ++t) {
      v[t] = conv_band::byte_to_float<kIsa>(bytes[(kFirst + t) / 4], (kFirst + t) % 4);
    }
  }
};

// Row-vector schedule for 3×3 masks: a work item produces 16 consecutive output bytes of kRows
// consecutive rows. It reads each of its kRows + 2 input rows once and keeps everything
// in registers. Runs whose window leaves the row (clamped borders, row tails) take the
// per-sample path; other mask sizes use MDRange.
template <class Exec, Isa kIsa, int kRows = 2, int kTileSegments = 32, int kTileRows = 4>
struct RowVectorSchedule {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-rowvec" : "kokkos-rowvec-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  static constexpr int kBytes = sizeof(Bytes16);
  static_assert(portable::kRowAlignBytes % kBytes == 0, "pitched rows start on a vector");
  using Memory = typename Exec::memory_space;
  using Words = Kokkos::View<const std::uint32_t*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Vectors = Kokkos::View<const Bytes16*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using OutWords = Kokkos::View<std::uint32_t*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  template <int kSize, class In, class MaskView, class Out>
  static void run(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                  const Out& out) {
    if (kSize != 3) {
      MDRangeSchedule<Exec>::template run<kSize>(exec, s, in, mask, out);
      return;
    }
    const bool crop = s.shift == 1;
    switch (s.channels) {
      case 1:
        crop ? run_fixed<1, 1>(exec, s, in, mask, out) : run_fixed<1, 0>(exec, s, in, mask, out);
        break;
      case 2:
        crop ? run_fixed<2, 1>(exec, s, in, mask, out) : run_fixed<2, 0>(exec, s, in, mask, out);
        break;
      case 3:
        crop ? run_fixed<3, 1>(exec, s, in, mask, out) : run_fixed<3, 0>(exec, s, in, mask, out);
        break;
      default:
        crop ? run_fixed<4, 1>(exec, s, in, mask, out) : run_fixed<4, 0>(exec, s, in, mask, out);
        break;
    }
  }

  // kC channels; kShift 1 for crop, 0 for clamp.
  template <int kC, int kShift, class In, class MaskView, class Out>
  static void run_fixed(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                        const Out& out) {
    using Window = RowWindow<kC, kShift, kBytes>;
    const Words in_words(reinterpret_cast<const std::uint32_t*>(in.data()), in.size() / 4);
    const Vectors in_vectors(reinterpret_cast<const Bytes16*>(in.data()), in.size() / kBytes);
    launch<kC, kShift>(exec, s,
                       VectorRowLoader<Window, kIsa, Vectors, Words>{in_vectors, in_words,
                                                                     s.in_width * kC, s.in_pitch},
                       in, mask, out);
  }

  template <int kC, int kShift, class Loader, class In, class MaskView, class Out>
  static void launch(const Exec& exec, const ConvShape& s, const Loader& loader, const In& in,
                     const MaskView& mask, const Out& out) {
    using Window = RowWindow<kC, kShift, kBytes>;
    const int out_row_bytes = s.out_width * kC;
    const OutWords out_words(reinterpret_cast<std::uint32_t*>(out.data()), out.size() / 4);
    const ImageSource<In> source{s, in};
    const int segments = (out_row_bytes + kBytes - 1) / kBytes;
    const int groups = (s.out_height + kRows - 1) / kRows;
    // Launch bounds let a GPU give each item up to 128 registers, so every row's loads can be in
    // flight at once (host backends ignore them).
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>,
                              Kokkos::LaunchBounds<kTileSegments * kTileRows, 4>>;
    for (const portable::LaunchRows& chunk : portable::row_chunks(groups, kTileRows)) {
      Kokkos::parallel_for(
          "conv_rowvec",
          Policy(exec, {0, chunk.begin}, {segments, chunk.end}, {kTileSegments, kTileRows}),
          KOKKOS_LAMBDA(int segment, int group) {
            const int k0 = segment * kBytes, y0 = group * kRows;
            if (k0 + kBytes > out_row_bytes || !loader.covers(k0)) {
              edge(s, source, mask, out, k0, y0);
              return;
            }
            float m[9];
            for (int t = 0; t < 9; ++t) m[t] = mask(t);
            float sum[kRows][kBytes] = {};
            for (int row = 0; row < kRows + 2; ++row) {
              float v[Window::kSpan];
              loader.load(clamp_coordinate(y0 + kShift - 1 + row, s.in_height), k0, v);
              // Input row `row` is mask row j = row − r of output row r.
              for (int r = 0; r < kRows; ++r) {
                const int j = row - r;
                if (j < 0 || j > 2) continue;
                // One fused multiply-add per tap (a sum of products would add a multiply).
                for (int t = 0; t < kBytes; ++t) {
                  sum[r][t] += m[3 * j] * v[t];
                  sum[r][t] += m[3 * j + 1] * v[t + kC];
                  sum[r][t] += m[3 * j + 2] * v[t + 2 * kC];
                }
              }
            }
            for (int r = 0; r < kRows && y0 + r < s.out_height; ++r) {
              // Pitched rows: the run starts on a word.
              const std::size_t at = std::size_t(y0 + r) * s.out_pitch + k0;
              for (int w = 0; w < kBytes / 4; ++w) {
                std::uint32_t packed = 0;
                for (int b = 0; b < 4; ++b) {
                  packed |= std::uint32_t(conv_to_pixel(sum[r][4 * w + b])) << (8 * b);
                }
                out_words(at / 4 + w) = packed;
              }
            }
          });
    }
  }

  // The per-sample path, with clamped reads, for items at the image's edges.
  template <class Source, class MaskView, class Out>
  KOKKOS_INLINE_FUNCTION static void edge(const ConvShape& s, const Source& source,
                                          const MaskView& mask, const Out& out, int k0, int y0) {
    const int out_row_bytes = s.out_width * s.channels;
    for (int r = 0; r < kRows && y0 + r < s.out_height; ++r) {
      for (int k = k0; k < k0 + kBytes && k < out_row_bytes; ++k) {
        const int x = k / s.channels, c = k % s.channels;
        float sum = 0.f;
        for (int j = 0; j < 3; ++j) {
          for (int i = 0; i < 3; ++i) {
            sum +=
                mask(j * 3 + i) * float(source(x + s.shift + i - 1, y0 + r + s.shift + j - 1, c));
          }
        }
        out(std::size_t(y0 + r) * s.out_pitch + k) = conv_to_pixel(sum);
      }
    }
  }
};

// The row-vector schedule with four rows per item: fewer input rows read per output row, more
// registers.
template <class Exec, Isa kIsa>
struct RowVectorScheduleR4 : RowVectorSchedule<Exec, kIsa, 4> {
  static constexpr const char* name =
      kIsa == Isa::tuned ? "kokkos-rowvec-r4" : "kokkos-rowvec-r4-plain";
};

// Band schedule for 3×3 masks, either border: a work item is conv_band::kBandBytes bytes of a
// row and a band of rows of one frame, walked as the native CUDA kernel walks them
// (conv_band::convolve_band); one launch covers every frame. It loads the words beside its bytes
// itself, where the native kernel takes them from the neighbouring lanes by shuffle, which Kokkos
// does not offer portably. Pitched rows make every width a whole number of vectors: an item
// touches the bytes of its row's vectors only, [0, 16 · segments) from each row's start (crop's
// items cover the output row, whose taps end inside the input row). Other mask sizes take the
// row-vector schedule.
template <class Exec, Isa kIsa, int kThreads = 128, int kBlocksPerMultiprocessor = 5>
struct BandSchedule {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-band" : "kokkos-band-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  using Memory = typename Exec::memory_space;
  using Words = Kokkos::View<const std::uint32_t*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Vectors = Kokkos::View<const Bytes16*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using OutVectors = Kokkos::View<Bytes16*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int kVectorBytes = conv_band::kBandBytes;
  static_assert(sizeof(Bytes16) == kVectorBytes, "a work item's bytes are one vector");

  // Input rows of one work item's band: its vector of each row and the words beside it (clamp:
  // the word before and the word after; crop, whose window starts at the item's first byte: the
  // word after, and for 3 and 4 channels the second word after).
  template <int kC, bool kClamp>
  struct LoadedRows {
    using Span = conv_band::WindowSpan<kC, kClamp>;
    struct Slot {
      Bytes16 chunk;
      std::uint32_t before, after, after2;
    };
    static_assert(!(kClamp && Span::needs_second_after), "clamp reads one word after the bytes");

    Vectors in_vectors;  // the item's frame
    Words in_words;
    int row_bytes, in_pitch, in_height;
    int first_row;  // band input row 0
    int b0;

    // The same rows of the frame `frame` strides of `stride` bytes after this one.
    KOKKOS_INLINE_FUNCTION LoadedRows in_frame(std::size_t frame, std::size_t stride) const {
      LoadedRows rows = *this;
      rows.in_vectors = portable::shifted(in_vectors, frame * (stride / kVectorBytes));
      rows.in_words = portable::shifted(in_words, frame * (stride / sizeof(std::uint32_t)));
      return rows;
    }

    KOKKOS_INLINE_FUNCTION void load(Slot& slot, int n) const {
      const std::size_t at =
          std::size_t(clamp_coordinate(first_row + n, in_height)) * in_pitch + b0;
      slot.chunk = in_vectors(at / kVectorBytes);
      // The words beside the item's bytes where the row has them, else one of its own words,
      // which clamp_window (row start) and clamp_row_end (row end) replace, or which feed only
      // crop outputs past the row's end.
      const std::size_t word = at / 4;
      if constexpr (kClamp) {
        slot.before = in_words(b0 > 0 ? word - 1 : word);
      } else if constexpr (Span::needs_second_after) {
        slot.after2 = in_words(b0 + kVectorBytes + 4 < row_bytes ? word + 5 : word + 3);
      }
      slot.after = in_words(b0 + kVectorBytes < row_bytes ? word + 4 : word + 3);
    }

    KOKKOS_INLINE_FUNCTION conv_band::Window window(const Slot& slot) const {
      conv_band::Window win = {{kClamp ? slot.before : 0u, slot.chunk.word[0], slot.chunk.word[1],
                                slot.chunk.word[2], slot.chunk.word[3], slot.after,
                                Span::needs_second_after ? slot.after2 : 0u}};
      conv_band::clamp_window<kC, kClamp, kIsa>(win, b0);
      return win;
    }
  };

  struct VectorRowSink {
    OutVectors out;     // the item's frame
    std::size_t first;  // the item's vector in the band's first output row
    int row_vectors;

    KOKKOS_INLINE_FUNCTION void store(int t, const conv_band::Pixels16& pixels) const {
      Bytes16 vector;
      for (int w = 0; w < kVectorBytes / 4; ++w) vector.word[w] = pixels.w[w];
      out(first + std::size_t(t) * row_vectors) = vector;
    }
  };

  template <int kSize, class In, class MaskView, class Out>
  static void run(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                  const Out& out) {
    if (kSize != 3) {
      RowVectorSchedule<Exec, kIsa>::template run<kSize>(exec, s, in, mask, out);
      return;
    }
    if constexpr (kSize == 3) run_frames(exec, s, ConvFrames{1, 0, 0}, in, out);
  }

  // Every frame: `in` and `out` are frame 0's rows, the others follow at the frames' strides
  // (multiples of kVectorBytes). A single frame takes the kernel without frame arithmetic, whose
  // pointers stay launch arguments.
  template <class In, class Out>
  static void run_frames(const Exec& exec, const ConvShape& s, const ConvFrames& frames,
                         const In& in, const Out& out) {
    if (frames.count == 1) {
      run_channels<false>(exec, s, frames, in, out);
    } else {
      run_channels<true>(exec, s, frames, in, out);
    }
  }

  template <bool kBatch, class In, class Out>
  static void run_channels(const Exec& exec, const ConvShape& s, const ConvFrames& frames,
                           const In& in, const Out& out) {
    if (s.shift == 0) {
      run_border<true, kBatch>(exec, s, frames, in, out);
    } else {
      run_border<false, kBatch>(exec, s, frames, in, out);
    }
  }

  template <bool kClamp, bool kBatch, class In, class Out>
  static void run_border(const Exec& exec, const ConvShape& s, const ConvFrames& frames,
                         const In& in, const Out& out) {
    switch (s.channels) {
      case 1:
        return run_fixed<1, kClamp, kBatch>(exec, s, frames, in, out);
      case 2:
        return run_fixed<2, kClamp, kBatch>(exec, s, frames, in, out);
      case 3:
        return run_fixed<3, kClamp, kBatch>(exec, s, frames, in, out);
      default:
        return run_fixed<4, kClamp, kBatch>(exec, s, frames, in, out);
    }
  }

  // Items cover the output rows' vectors; clamp's bands start a row above their first output
  // (clamped), crop's at it.
  template <int kC, bool kClamp, bool kBatch, class In, class Out>
  static void run_fixed(const Exec& exec, const ConvShape& s, const ConvFrames& frames,
                        const In& in, const Out& out) {
    static_assert(portable::kRowAlignBytes % kVectorBytes == 0, "pitched rows hold whole vectors");
    const int row_bytes = s.in_width * kC;
    const int segments = (s.out_width * kC + kVectorBytes - 1) / kVectorBytes;
    // Bands sized so that the items of all frames about fill the machine once.
    const int band_rows =
        conv_band::band_rows(s.out_height, (long long)segments * frames.count,
                             portable::resident_items<Exec>(kThreads, kBlocksPerMultiprocessor));
    const int bands = (s.out_height + band_rows - 1) / band_rows;
    const LoadedRows<kC, kClamp> rows{
        Vectors(reinterpret_cast<const Bytes16*>(in.data()), in.size() / kVectorBytes),
        Words(reinterpret_cast<const std::uint32_t*>(in.data()), in.size() / 4),
        row_bytes,
        s.in_pitch,
        s.in_height,
        0,
        0};
    const OutVectors out_vectors(reinterpret_cast<Bytes16*>(out.data()), out.size() / kVectorBytes);
    const int out_height = s.out_height;
    const int out_row_vectors = s.out_pitch / kVectorBytes;
    const conv_band::Taps3x3 taps = s.taps;
    const std::size_t in_stride = frames.in_stride;
    const std::size_t out_stride_vectors = frames.out_stride / kVectorBytes;
    // Items of a frame, and frames per launch so that a launch's items fit its int range.
    const int frame_items = segments * bands;
    const int launch_frames = std::max(1, INT_MAX / frame_items);
    using Policy =
        Kokkos::RangePolicy<Exec, Kokkos::LaunchBounds<kThreads, kBlocksPerMultiprocessor>>;
    for (int first = 0; first < frames.count; first += launch_frames) {
      const int count = std::min(launch_frames, frames.count - first);
      Kokkos::parallel_for(
          "conv_band", Policy(exec, 0, count * frame_items), KOKKOS_LAMBDA(int item) {
            // The item's frame, and its place in the frame (kBatch is a constant: the
            // single-frame kernel does no frame arithmetic).
            int rest = item;
            LoadedRows<kC, kClamp> source = rows;
            OutVectors frame_out = out_vectors;
            if (kBatch) {
              const int frame = item / frame_items;
              rest = item - frame * frame_items;
              const std::size_t f = std::size_t(first + frame);
              source = rows.in_frame(f, in_stride);
              frame_out = portable::shifted(out_vectors, f * out_stride_vectors);
            }
            const int band = rest / segments, segment = rest - band * segments;
            const int y0 = band * band_rows;
            source.first_row = kClamp ? y0 - 1 : y0;
            source.b0 = segment * kVectorBytes;
            const VectorRowSink sink{frame_out, std::size_t(y0) * out_row_vectors + segment,
                                     out_row_vectors};
            const int outputs = out_height - y0 < band_rows ? out_height - y0 : band_rows;
            conv_band::convolve_band<kC, kClamp, kIsa>(source, sink, taps, outputs,
                                                       row_bytes - source.b0);
          });
    }
  }
};

// The native SIMD variants' band walk (kbench/detail/conv_rows.hpp) for host execution spaces:
// one work item per core walks a contiguous band of output rows, strip by strip, each input row's
// strip turned into floats once. Isa::tuned calls the row helpers of the highest level this CPU
// has through conv_rows::row_kernels (a Kokkos kernel carries no target attribute of its own);
// Isa::plain (`-plain`) runs the same walk with conv_rows::PlainOps, one float at a time in plain
// C++. A GPU would run each band on one thread, so the schedule is registered for host spaces
// only.
template <class Exec, Isa kIsa>
struct RowsSchedule {
  static constexpr const char* name = kIsa == Isa::tuned ? "kokkos-rows" : "kokkos-rows-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;

  template <int kSize, class In, class MaskView, class Out>
  static void run(const Exec& exec, const ConvShape& s, const In& in, const MaskView& mask,
                  const Out& out) {
    const int r = s.mask_size / 2;
    const std::size_t in_row = std::size_t(s.in_width) * s.channels;
    const conv_rows::BandJob job{in.data(),
                                 std::size_t(s.in_pitch),
                                 out.data(),
                                 std::size_t(s.out_pitch),
                                 mask.data(),
                                 s.mask_size,
                                 s.channels,
                                 s.in_height,
                                 s.shift,
                                 std::ptrdiff_t(in_row),
                                 std::size_t(s.out_width) * s.channels,
                                 s.shift == 0 ? std::ptrdiff_t(r) * s.channels : 0};
    if constexpr (kIsa == Isa::tuned) {
      walk(exec, job, s.out_height, conv_rows::row_kernels(s.mask_size));
    } else {
      walk(exec, job, s.out_height, conv_rows::LevelRows<conv_rows::PlainOps, kSize>{});
    }
  }

  template <class Rows>
  static void walk(const Exec& exec, const conv_rows::BandJob& job, int out_height,
                   const Rows& helpers) {
    const int bands = exec.concurrency();
    Kokkos::parallel_for(
        "conv_rows", Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Static>>(exec, 0, bands),
        [=](int band) {
          const int y0 = int(std::int64_t(out_height) * band / bands);
          const int y1 = int(std::int64_t(out_height) * (band + 1) / bands);
          if (y0 < y1) conv_rows::convolve_band(job, y0, y1, helpers);
        });
  }
};

// The schedule's kernel for the shape's mask: 3 × 3 compiled apart, other sizes at run time.
template <class Schedule, class Exec, class In, class MaskView, class Out>
void convolve(const Exec& exec, const ConvShape& shape, const In& in, const MaskView& mask,
              const Out& out) {
  if (shape.mask_size == 3) {
    Schedule::template run<3>(exec, shape, in, mask, out);
  } else {
    Schedule::template run<0>(exec, shape, in, mask, out);
  }
}

// The device side of a portable conv run: the pitched input and output images and the mask.
template <class Exec>
struct ConvDevice {
  explicit ConvDevice(const ConvInput& input)
      : shape(shape_of(input)),
        in(shape.in_width * shape.channels, shape.in_height, "conv input"),
        mask(input.mask.weights.data(), input.mask.weights.size(), "conv mask"),
        out(shape.out_width * shape.channels, shape.out_height, "conv output") {}

  template <class Schedule>
  void convolve() const {
    portable_conv::convolve<Schedule>(Exec(), shape,
                                      InView<Exec>(in.view().data(), in.view().size()), mask.view(),
                                      OutView<Exec>(out.view().data(), out.view().size()));
  }

  ConvShape shape;
  PitchedImage<Exec> in;
  InputBuffer<float, Exec> mask;
  PitchedImage<Exec> out;
};

template <class Exec, class Schedule>
class KokkosConvRunner final : public Runner<Conv> {
 public:
  explicit KokkosConvRunner(const ConvInput& input) : image_(input.image), device_(input) {}

  void poison(std::uint8_t byte) override { device_.out.poison(byte); }
  void upload() override {
    device_.in.upload(image_.data.data());
    device_.mask.upload();
  }
  void compute() override { device_.template convolve<Schedule>(); }
  void sync() override { Exec{}.fence(); }
  void download(ImageU8& out) override {
    const ConvShape& s = device_.shape;
    reshape(out, s.out_width, s.out_height, s.channels);
    device_.out.download(out.data.data());
  }

 private:
  const ImageU8& image_;
  ConvDevice<Exec> device_;
};

// End to end from page-locked host memory (PinnedHostView): the user's image is copied there
// before the clock starts, as the native end-to-end variants' is; the timed call copies it to the
// device, convolves and copies the result back, in Exec's order (Kokkos 3.4 gives no portable
// second stream to overlap them).
template <class Exec, class Schedule>
class KokkosConvE2eRunner final : public Runner<Conv> {
 public:
  explicit KokkosConvE2eRunner(const ConvInput& input)
      : image_(input.image),
        device_(input),
        host_in_(Kokkos::view_alloc("conv pinned input", Kokkos::WithoutInitializing),
                 input.image.data.size()),
        host_out_(Kokkos::view_alloc("conv pinned output", Kokkos::WithoutInitializing),
                  std::size_t(device_.shape.out_width) * device_.shape.channels *
                      device_.shape.out_height) {}

  void poison(std::uint8_t byte) override {
    device_.out.poison(byte);
    std::fill_n(host_out_.data(), host_out_.size(), byte);
  }
  void upload() override {
    std::copy(image_.data.begin(), image_.data.end(), host_in_.data());
    device_.mask.upload();
  }
  void compute() override {
    device_.in.upload(host_in_.data());
    device_.template convolve<Schedule>();
    device_.out.download(host_out_.data());
  }
  void sync() override { Exec{}.fence(); }
  void download(ImageU8& out) override {
    const ConvShape& s = device_.shape;
    reshape(out, s.out_width, s.out_height, s.channels);
    std::copy_n(host_out_.data(), host_out_.size(), out.data.data());
  }

 private:
  const ImageU8& image_;
  ConvDevice<Exec> device_;
  portable::PinnedHostView<Exec> host_in_, host_out_;
};

// The band variants' call on device views (Variant::on_views), every frame on the call's stream.
// A 3×3 mask runs BandSchedule::run_frames, all frames in one launch; other masks take the band
// schedule's fallback, one launch (or row chunk) per frame. Each
// side is the caller's memory where its rows hold whole 16-byte vectors (usable_by_vectors), else
// a pitched copy in the call's scratch memory: the schedules touch nothing past a row's vectors.
template <class Exec, Isa kIsa>
void convolve_views(const ConvViewCall& call) {
  using Band = BandSchedule<Exec, kIsa>;
  const Exec exec = portable::stream_instance<Exec>(call.work.stream);
  const Mask& mask = *call.mask;
  const ConstImageView& in = call.in;
  const ImageView& out = call.out;
  const FrameLayout in_frames =
      vector_input(in, portable::kRowAlignBytes, call.work, "portable conv input");
  const FrameLayout out_frames =
      vector_output(out, portable::kRowAlignBytes, call.work, "portable conv output");
  const ConvShape s = shape_of(in.width, in.height, in.channels, mask, call.border,
                               portable::int_pitch(in_frames), portable::int_pitch(out_frames));
  // Frame 0's rows, to the end of each row's last vector.
  const InView<Exec> in0(in_frames.data, portable::frame_span(in_frames, in.height,
                                                              portable::row_pitch(in.row_bytes())));
  const OutView<Exec> out0(
      out_frames.data,
      portable::frame_span(out_frames, out.height, portable::row_pitch(out.row_bytes())));
  if (mask.size == 3) {
    Band::run_frames(exec, s, {in.frames, in_frames.frame_stride, out_frames.frame_stride}, in0,
                     out0);
  } else {
    const WeightsView<Exec> weights(static_cast<const float*>(call.work.scratch->uploaded(
                                        "portable conv mask", mask.weights.data(),
                                        mask.weights.size() * sizeof(float), call.work.stream)),
                                    mask.weights.size());
    for (int f = 0; f < in.frames; ++f) {
      convolve<Band>(exec, s, portable::shifted(in0, std::size_t(f) * in_frames.frame_stride),
                     weights, portable::shifted(out0, std::size_t(f) * out_frames.frame_stride));
    }
  }
  finish_vector_output(out_frames, out, call.work);
}

// The call on device views of a band variant: CUDA only, host backends have none.
template <class Exec, Isa kIsa>
std::function<void(const ConvViewCall&)> band_on_views() {
  if constexpr (backend_of<Exec>() == Backend::cuda) {
    return convolve_views<Exec, kIsa>;
  } else {
    return {};
  }
}

// Ranks: the band walk, then rows of vectors, then tiles, then the flat pass.
template <class Exec, class Schedule, class Runner = KokkosConvRunner<Exec, Schedule>>
void add_variant(VariantList<Conv>& list, int rank, const char* suffix = "",
                 bool end_to_end = false, std::function<void(const ConvViewCall&)> on_views = {}) {
  list.push_back({std::string(Schedule::name) + suffix + "-" + to_string(backend_of<Exec>()),
                  Layer::portable,
                  backend_of<Exec>(),
                  end_to_end,
                  make_runner<Runner>,
                  {},
                  rank,
                  Schedule::isa,
                  Schedule::simple,
                  std::move(on_views)});
}

}  // namespace kbench::portable_conv

namespace kbench {

void register_conv_portable(VariantList<Conv>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable_conv::add_variant<Exec, portable_conv::MDRangeSchedule<Exec>>(list, 1);
    portable_conv::add_variant<Exec, portable_conv::TeamTiledSchedule<Exec>>(list, 2);
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      portable_conv::add_variant<Exec, portable_conv::RowVectorSchedule<Exec, kIsa>>(list, 3);
      portable_conv::add_variant<Exec, portable_conv::RowVectorScheduleR4<Exec, kIsa>>(list, 2);
      portable_conv::add_variant<Exec, portable_conv::BandSchedule<Exec, kIsa>>(
          list, 4, "", false, portable_conv::band_on_views<Exec, kIsa>());
      if constexpr (portable::backend_of<Exec>() != Backend::cuda) {
        portable_conv::add_variant<Exec, portable_conv::RowsSchedule<Exec, kIsa>>(list, 5);
      } else if constexpr (kIsa == Isa::tuned) {
        using Band = portable_conv::BandSchedule<Exec, kIsa>;
        portable_conv::add_variant<Exec, Band, portable_conv::KokkosConvE2eRunner<Exec, Band>>(
            list, kNotChosen, "-e2e-pinned", true);
      }
    });
  });
}

}  // namespace kbench
