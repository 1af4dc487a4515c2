// Portable conv: one Kokkos source for every execution space (Serial, OpenMP, CUDA).
//
// The pixel computation (ConvPixel) is written once; two schedules walk it: a flat MDRange over
// output pixels, and a team-tiled one that stages each tile plus its halo in team scratch.
// Masks of size 3 get a compile-time unrolled instantiation; other sizes use the run-time loop.
#include <memory>

#include "kbench/conv.hpp"
#include "portable/kokkos_support.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_conv {

using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

// Output (x, y) reads the window centred on input (x + shift, y + shift).
struct ConvShape {
  int in_width, in_height, out_width, out_height, channels, shift, mask_size;
};

ConvShape shape_of(const ConvInput& input) {
  const ImageSize out =
      conv_output_size(input.image.width, input.image.height, input.mask, input.border);
  return {input.image.width,
          input.image.height,
          out.width,
          out.height,
          input.image.channels,
          input.border == Border::crop ? input.mask.radius() : 0,
          input.mask.size};
}

// One output pixel, all channels. `Source` reads a clamped input sample: from the image in
// device memory, or from a staged tile. kSize > 0 fixes the mask size at compile time.
template <int kSize, class Source, class Mask, class Out>
KOKKOS_INLINE_FUNCTION void conv_pixel(const ConvShape& s, const Source& source, const Mask& mask,
                                       const Out& out, int x, int y) {
  const int n = kSize > 0 ? kSize : s.mask_size;
  const int r = n / 2;
  float sum[4] = {0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      const float w = mask(j * n + i);
      for (int c = 0; c < s.channels; ++c) {
        sum[c] += w * float(source(x + s.shift + i - r, y + s.shift + j - r, c));
      }
    }
  }
  const std::size_t base = (std::size_t(y) * s.out_width + x) * s.channels;
  for (int c = 0; c < s.channels; ++c) out(base + c) = conv_to_pixel(sum[c]);
}

template <class In>
struct ImageSource {
  ConvShape s;
  In in;
  KOKKOS_INLINE_FUNCTION std::uint8_t operator()(int x, int y, int c) const {
    const int cx = clamp_coordinate(x, s.in_width), cy = clamp_coordinate(y, s.in_height);
    return in((std::size_t(cy) * s.in_width + cx) * s.channels + c);
  }
};

// Flat schedule: one work item per output pixel. Iterate::Left makes x the fastest index on
// every backend (contiguous per thread on the host, coalesced across a warp on CUDA).
template <class Exec, int kTileX = 32, int kTileY = 8>
struct MDRangeSchedule {
  static constexpr const char* name = "kokkos-mdrange";

  template <int kSize, class In, class MaskView, class Out>
  static void run(const ConvShape& s, const In& in, const MaskView& mask, const Out& out) {
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
    const ImageSource<In> source{s, in};
    Kokkos::parallel_for(
        "conv_mdrange", Policy({0, 0}, {s.out_width, s.out_height}, {kTileX, kTileY}),
        KOKKOS_LAMBDA(int x, int y) { conv_pixel<kSize>(s, source, mask, out, x, y); });
  }
};

// Tiled schedule: each team stages a kTileX × kTileY output tile plus its halo in team scratch,
// then computes the tile from scratch, so each input sample is read from memory once per tile.
template <class Exec, int kTileX = 64, int kTileY = 8>
struct TeamTiledSchedule {
  static constexpr const char* name = "kokkos-team-tiled";
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
  static void run(const ConvShape& s, const In& in, const MaskView& mask, const Out& out) {
    const int r = s.mask_size / 2;
    const int staged_width = kTileX + 2 * r, staged_height = kTileY + 2 * r;
    const std::size_t scratch_bytes = std::size_t(staged_width) * staged_height * s.channels;
    const int tiles_x = (s.out_width + kTileX - 1) / kTileX;
    const int tiles_y = (s.out_height + kTileY - 1) / kTileY;
    const ImageSource<In> source{s, in};
    auto policy = Kokkos::TeamPolicy<Exec>(tiles_x * tiles_y, Kokkos::AUTO)
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

template <class Exec, class Schedule>
class KokkosConvRunner final : public Runner<Conv> {
 public:
  explicit KokkosConvRunner(const ConvInput& input)
      : shape_(shape_of(input)),
        in_(input.image.data.data(), input.image.sample_count(), "conv input"),
        mask_(input.mask.weights.data(), input.mask.weights.size(), "conv mask"),
        out_(std::size_t(shape_.out_width) * shape_.out_height * shape_.channels, "conv output") {}

  void poison(std::uint8_t byte) override { out_.poison(byte); }
  void upload() override {
    in_.upload();
    mask_.upload();
  }
  void compute() override {
    if (shape_.mask_size == 3) {
      Schedule::template run<3>(shape_, in_.view(), mask_.view(), out_.view());
    } else {
      Schedule::template run<0>(shape_, in_.view(), mask_.view(), out_.view());
    }
  }
  void sync() override { Exec{}.fence(); }
  void download(ImageU8& out) override {
    reshape(out, shape_.out_width, shape_.out_height, shape_.channels);
    out_.download(out.data.data());
  }

 private:
  ConvShape shape_;
  InputBuffer<std::uint8_t, Exec> in_;
  InputBuffer<float, Exec> mask_;
  OutputBuffer<std::uint8_t, Exec> out_;
};

// Preference: a GPU backend before the host ones; the team-tiled schedule before the flat one.
template <class Exec, class Schedule>
void add_variant(VariantList<Conv>& list, int preference) {
  list.push_back({std::string(Schedule::name) + "-" + to_string(backend_of<Exec>()),
                  Layer::portable,
                  backend_of<Exec>(),
                  false,
                  [](const ConvInput& input) -> std::unique_ptr<Runner<Conv>> {
                    return std::make_unique<KokkosConvRunner<Exec, Schedule>>(input);
                  },
                  {},
                  preference});
}

}  // namespace kbench::portable_conv

namespace kbench {

void register_conv_portable(VariantList<Conv>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = decltype(exec);
    const int base = portable::backend_of<Exec>() == Backend::cuda ? 15 : 0;
    portable_conv::add_variant<Exec, portable_conv::MDRangeSchedule<Exec>>(list, base + 1);
    portable_conv::add_variant<Exec, portable_conv::TeamTiledSchedule<Exec>>(list, base + 2);
  });
}

}  // namespace kbench
