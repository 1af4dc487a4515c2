// Portable sad: one Kokkos source for every execution space (Serial, OpenMP, CUDA).
// kokkos-mdrange: an MDRange over map positions, then the argmin as a parallel_reduce.
// kokkos-team: teams own a tile of positions, stage query rows and the target strip in scratch as
// packed words, and each work item sums 4·kWords neighbouring positions in registers, the map and
// the argmin in one kernel; kokkos-fused: the same without the map. Those two sum through sad4, so
// they are registered with Isa::tuned and Isa::plain (`-plain`); on CUDA they also take the
// caller's device views. kokkos-simd-rows: a team per block of map rows, each thread summing
// register blocks of positions with packed SADs over byte vectors (cpu_simd::SadBlock, as the
// native SIMD variants do), tuned and plain. The argmin is a Min reduction over 64-bit
// sad_key()s, not Kokkos::MinLoc, whose ties are unspecified: the packed key makes the shared
// (score, row, col) rule explicit. Each schedule: docs/sad.md#schedules-in-detail
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "kbench/detail/cpu_sad_bytes.hpp"
#include "kbench/image.hpp"
#include "kbench/sad.hpp"
#include "portable/kokkos_support.hpp"
#include "portable/sad_team.hpp"

// Named (not anonymous) namespace: CUDA extended lambdas may not live in internal-linkage
// functions.
namespace kbench::portable_sad {

using portable::backend_of;

// Map positions per team in map_argmin's reduction.
constexpr std::int64_t kArgminTeamPositions = 4096;

// The map's smallest sad_key: a team per run of positions, reduced inside the team and then
// across teams. A team reduction because Kokkos 3.4's RangePolicy reduction on CUDA draws
// compute-sanitizer racecheck's shared-memory hazard warnings; its team reductions do not.
template <class Exec>
std::uint64_t map_argmin(const MapView<Exec>& map) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const std::int64_t positions = std::int64_t(map.extent(0));
  const int teams = int((positions + kArgminTeamPositions - 1) / kArgminTeamPositions);
  std::uint64_t best = kNoSadKey;
  Kokkos::parallel_reduce(
      "sad_argmin", Policy(teams, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& team, std::uint64_t& partial) {
        const std::int64_t begin = team.league_rank() * kArgminTeamPositions;
        const std::int64_t end =
            begin + kArgminTeamPositions < positions ? begin + kArgminTeamPositions : positions;
        std::uint64_t team_best = kNoSadKey;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, begin, end),
            [&](std::int64_t index, std::uint64_t& item_best) {
              item_best = sad_min(item_best, sad_key(map(index), std::uint32_t(index)));
            },
            Kokkos::Min<std::uint64_t>(team_best));
        partial = sad_min(partial, team_best);
      },
      Kokkos::Min<std::uint64_t>(best));
  return best;
}

// One work item per map position; Iterate::Left makes the column the fastest index (coalesced
// across a CUDA warp, contiguous per host thread).
template <class Exec>
struct MDRangeMethod {
  static constexpr const char* name = "kokkos-mdrange";
  static constexpr Isa isa = Isa::plain;
  static constexpr bool simple = true;
  static constexpr bool writes_map = true;
  static bool fits(const SadShape&) { return true; }

  MDRangeMethod(const SadInput& input, const SadShape&)
      : target(input.target.data.data(), input.target.sample_count(), "sad target"),
        query(input.query.data.data(), input.query.sample_count(), "sad query") {}
  void upload() {
    target.upload();
    query.upload();
  }
  std::uint64_t run(const SadShape& s, const MapView<Exec>& map) const {
    using Policy =
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2, Kokkos::Iterate::Left, Kokkos::Iterate::Left>>;
    const auto t = target.view();
    const auto q = query.view();
    constexpr int kTileX = 32, kTileY = 8;
    for (const portable::LaunchRows& rows : portable::row_chunks(s.map_height, kTileY)) {
      Kokkos::parallel_for(
          "sad_mdrange", Policy({0, rows.begin}, {s.map_width, rows.end}, {kTileX, kTileY}),
          KOKKOS_LAMBDA(int j, int i) {
            std::int32_t sum = 0;
            for (int k = 0; k < s.query_height; ++k) {
              const std::size_t t_row = std::size_t(i + k) * s.target_width + j;
              const std::size_t q_row = std::size_t(k) * s.query_width;
              for (int l = 0; l < s.query_width; ++l) {
                const int d = int(t(t_row + l)) - int(q(q_row + l));
                sum += d < 0 ? -d : d;
              }
            }
            map(std::size_t(i) * s.map_width + j) = sum;
          });
    }
    return map_argmin<Exec>(map);
  }

  InputBuffer<std::uint8_t, Exec> target, query;
};

// ---- kokkos-simd-rows ------------------------------------------------------------------------

// A team per block of kRows map rows: for each band of query rows, the team's threads take the
// row's register blocks (cpu_simd::SadBlock), add the band's sums into the map, and the last band
// reduces the argmin.
template <class Exec, class Bytes>
struct SimdRowsSearch {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Block = cpu_simd::SadBlockShape<Bytes>;
  static constexpr int kRows = Block::kRows, kPositions = Block::kPositions;

  cpu_simd::PaddedSad layout;  // pointers into the method's buffers in Exec's memory
  SadShape s;
  int band_rows;
  MapView<Exec> map;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team, std::uint64_t& best) const {
    const int i0 = team.league_rank() * kRows;
    const int rows = s.map_height - i0 < kRows ? s.map_height - i0 : kRows;
    const int column_blocks = (s.map_width + kPositions - 1) / kPositions;
    for (int k_begin = 0; k_begin < s.query_height; k_begin += band_rows) {
      const int k_end = s.query_height - k_begin < band_rows ? s.query_height : k_begin + band_rows;
      const bool first_band = k_begin == 0, last_band = k_end == s.query_height;
      std::uint64_t band_best = kNoSadKey;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, column_blocks),
          [&](int column_block, std::uint64_t& partial) {
            const int j0 = column_block * kPositions;
            std::uint32_t sums[kRows][kPositions];
            cpu_simd::SadBlock<Bytes, kRows, kPositions>::sum(layout, i0, j0, k_begin, k_end, sums);
            const int cols = s.map_width - j0 < kPositions ? s.map_width - j0 : kPositions;
            for (int ii = 0; ii < rows; ++ii) {
              const std::size_t row_start = std::size_t(i0 + ii) * s.map_width + j0;
              for (int p = 0; p < cols; ++p) {
                const std::int32_t sum = std::int32_t(
                    sums[ii][p] + (first_band ? 0u : std::uint32_t(map(row_start + p))));
                map(row_start + p) = sum;
                if (last_band)
                  partial = sad_min(partial, sad_key(sum, std::uint32_t(row_start + p)));
              }
            }
          },
          Kokkos::Min<std::uint64_t>(band_best));
      best = sad_min(best, band_best);
      team.team_barrier();  // the band's map sums are in before the next band reads them
    }
  }
};

// Register blocks of packed SADs (cpu_simd::CompiledBytes: the widest byte vector the file is
// compiled for with Isa::tuned, PlainBytes with Isa::plain and under nvcc) over zero-padded
// copies of target and query, a team per block of map rows.
template <class Exec, Isa kIsa>
struct SimdRowsMethod {
  using Bytes = cpu_simd::CompiledBytes<kIsa>;
  using Search = SimdRowsSearch<Exec, Bytes>;
  static constexpr const char* name =
      kIsa == Isa::tuned ? "kokkos-simd-rows" : "kokkos-simd-rows-plain";
  static constexpr Isa isa = kIsa;
  static constexpr bool simple = false;
  static constexpr bool writes_map = true;
  static bool fits(const SadShape&) { return true; }

  SimdRowsMethod(const SadInput& input, const SadShape& s)
      : sizes(s.target_width, s.query_width, Bytes::kBytes, Search::kPositions, kCacheLineBytes),
        padded_target(sizes.target_pitch * std::size_t(s.target_height + Search::kRows - 1)),
        padded_query(std::size_t(sizes.query_pitch) * s.query_height + Bytes::kBytes),
        target(padded_target.data(), padded_target.size(), "sad padded target"),
        query(padded_query.data(), padded_query.size(), "sad padded query") {
    for (int y = 0; y < s.target_height; ++y) {
      std::copy_n(input.target.data.data() + std::size_t(y) * s.target_width, s.target_width,
                  padded_target.data() + std::size_t(y) * sizes.target_pitch);
    }
    for (int k = 0; k < s.query_height; ++k) {
      std::copy_n(input.query.data.data() + std::size_t(k) * s.query_width, s.query_width,
                  padded_query.data() + std::size_t(k) * sizes.query_pitch);
    }
    // The tail mask follows the query rows.
    const int tail_bytes = s.query_width % Bytes::kBytes;
    std::fill_n(padded_query.data() + std::size_t(sizes.query_pitch) * s.query_height, tail_bytes,
                std::uint8_t(0xFF));
  }
  void upload() {
    target.upload();
    query.upload();
  }
  std::uint64_t run(const SadShape& s, const MapView<Exec>& map) const {
    using Policy = Kokkos::TeamPolicy<Exec>;
    const std::uint8_t* q = query.view().data();
    const Search search{
        {target.view().data(), sizes.target_pitch, q, s.query_width, sizes.query_pitch,
         sizes.whole_chunk_bytes, q + std::size_t(sizes.query_pitch) * s.query_height},
        s,
        sizes.band_rows,
        map};
    const int row_blocks = (s.map_height + Search::kRows - 1) / Search::kRows;
    std::uint64_t best = kNoSadKey;
    Kokkos::parallel_reduce("sad_simd_rows", Policy(row_blocks, Kokkos::AUTO), search,
                            Kokkos::Min<std::uint64_t>(best));
    return best;
  }

  cpu_simd::PaddedSadSizes sizes;
  std::vector<std::uint8_t> padded_target, padded_query;
  InputBuffer<std::uint8_t, Exec> target, query;
};

template <class Exec, class Method>
class KokkosSadRunner final : public Runner<Sad> {
 public:
  explicit KokkosSadRunner(const SadInput& input)
      : want_map_(input.params.want_map),
        shape_(validate_sad_input(input)),
        method_(input, shape_),
        map_(Method::writes_map ? shape_.map_size() : 0, "sad map") {}

  void poison(std::uint8_t byte) override {
    map_.poison(byte);
    std::fill_n(reinterpret_cast<std::uint8_t*>(&best_key_), sizeof best_key_, byte);
  }
  void upload() override { method_.upload(); }
  void compute() override { best_key_ = method_.run(shape_, map_.view()); }
  void sync() override { Exec{}.fence(); }
  void download(SadResult& out) override {
    out.map_width = shape_.map_width;
    out.map_height = shape_.map_height;
    out.best = match_from_key(best_key_, shape_.map_width);
    if (want_map_) {
      out.map.resize(shape_.map_size());
      map_.download(out.map.data());
    } else {
      out.map.clear();
    }
  }

 private:
  bool want_map_;
  SadShape shape_;
  Method method_;
  OutputBuffer<std::int32_t, Exec> map_;
  std::uint64_t best_key_ = kNoSadKey;
};

// ---- Calls on device views (Variant::on_views) ------------------------------------------------

template <class Exec, class T>
using UnmanagedView =
    Kokkos::View<T*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Key = unsigned long long;  // Kokkos' 64-bit atomic min type; holds a sad_key()
static_assert(sizeof(Key) == sizeof(std::uint64_t), "64-bit keys");

constexpr int kPackedWordBytes = int(sizeof(std::uint32_t));

// pack_rows on the device: word e of rows `pitch_words` words apart holds bytes 4w .. 4w + 3 of
// the caller's row (rows `pitch` bytes apart), zero past `width`, so every word of a row is
// written, its padding included.
template <class Exec>
struct PackViewRows {
  UnmanagedView<Exec, const std::uint8_t> bytes;
  UnmanagedView<Exec, std::uint32_t> words;
  std::size_t pitch;
  int width, pitch_words;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t e) const {
    const std::int64_t y = e / pitch_words;
    const int w = int(e - y * pitch_words);
    std::uint32_t word = 0;
    for (int b = 0; b < kPackedWordBytes; ++b) {
      const int x = kPackedWordBytes * w + b;
      if (x < width) word |= std::uint32_t(bytes(std::size_t(y) * pitch + x)) << (8 * b);
    }
    words(e) = word;
  }
};

// The gray frame of `view` packed into `pitch_words`-word rows of the scratch memory `name`,
// queued on `exec`.
template <class Exec>
typename InputBuffer<std::uint32_t, Exec>::View packed_view(const Exec& exec,
                                                            const ConstImageView& view,
                                                            int pitch_words, const ViewWork& work,
                                                            const char* name) {
  const std::size_t count = std::size_t(pitch_words) * std::size_t(view.height);
  auto* packed =
      static_cast<std::uint32_t*>(work.scratch->bytes(name, count * sizeof(std::uint32_t)));
  const std::size_t span = std::size_t(view.height - 1) * view.row_pitch() + view.row_bytes();
  const PackViewRows<Exec> pack{UnmanagedView<Exec, const std::uint8_t>(view.data, span),
                                UnmanagedView<Exec, std::uint32_t>(packed, count), view.row_pitch(),
                                view.width, pitch_words};
  Kokkos::parallel_for(
      "sad_pack_view_rows",
      Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(count)),
      pack);
  // A random-access view converts from a view, not from a pointer (its CUDA texture fetch).
  return UnmanagedView<Exec, const std::uint32_t>(packed, count);
}

// A team per tile, its smallest sad_key lowering key(0) (an atomic min): no result goes back to
// the host, so nothing waits for the kernel.
template <class Exec, bool kWriteMap, Isa kIsa>
struct ViewTileSearch {
  TileSad<Exec, kWriteMap, kIsa> tile;
  UnmanagedView<Exec, Key> key;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename TileSad<Exec, kWriteMap, kIsa>::Team& team) const {
    const std::uint64_t best = tile(team, team.league_rank(), tile.staging(team));
    Kokkos::single(Kokkos::PerTeam(team), [&] { Kokkos::atomic_fetch_min(&key(0), Key(best)); });
  }
};

template <class Exec, bool kWriteMap, Isa kIsa>
void enqueue_view_search(const Exec& exec, const TileSad<Exec, kWriteMap, kIsa>& tile,
                         const UnmanagedView<Exec, Key>& key) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const ViewTileSearch<Exec, kWriteMap, kIsa> kernel{tile, key};
  const std::size_t scratch = tile.scratch_bytes();
  Kokkos::parallel_for(
      kWriteMap ? "sad_team_views" : "sad_fused_views",
      Policy(exec, tile.tiles(), tile_team_size<Policy>(scratch, kernel, Kokkos::ParallelForTag()))
          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
      kernel);
}

// The team variants' call on device views, queued on the call's stream: the target and query
// packed on the device as the runner packs them on the host, the key reset to kNoSadKey, then the
// team kernel, writing the caller's map rows directly when a map is given (the fused kernel
// otherwise). Bit-identical to the runners: the same tiles sum the same words.
template <class Exec, Isa kIsa>
void search_views(const SadViewCall& call) {
  const Exec exec = portable::stream_instance<Exec>(call.work.stream);
  const SadShape s = shape_of(call);
  const TeamGeometry g = team_geometry<Exec>(s);
  if (g.chunk_rows == 0) throw Error("kokkos sad on views: the query is too wide for team scratch");
  const auto target =
      packed_view(exec, call.target, g.pitch_words, call.work, "portable sad packed target");
  const auto query =
      packed_view(exec, call.query, g.query_words, call.work, "portable sad packed query");
  fill_async(call.best_key, 0xFF, sizeof(std::uint64_t), call.work.stream);  // kNoSadKey
  const UnmanagedView<Exec, Key> key(reinterpret_cast<Key*>(call.best_key), 1);
  if (call.map && call.map->data) {
    const std::size_t pitch =
        call.map->pitch ? call.map->pitch / sizeof(std::int32_t) : std::size_t(s.map_width);
    const MapView<Exec> map(call.map->data, std::size_t(s.map_height - 1) * pitch + s.map_width);
    enqueue_view_search(exec, TileSad<Exec, true, kIsa>{g, target, query, map, pitch}, key);
  } else {
    enqueue_view_search(exec, TileSad<Exec, false, kIsa>{g, target, query, MapView<Exec>(), 0},
                        key);
  }
}

// The call on device views of the team and fused variants (one function: it writes the map when
// one is given): CUDA only, host backends have none.
template <class Exec, class Method>
std::function<void(const SadViewCall&)> on_views() {
  if constexpr (backend_of<Exec>() == Backend::cuda &&
                std::is_same<Method, TeamMethod<Exec, Method::writes_map, Method::isa>>::value) {
    return search_views<Exec, Method::isa>;
  } else {
    return {};
  }
}

// Ranks: the fused search (no map) where no map is asked for, then the team search with its map,
// then the flat MDRange pass.
template <class Exec, class Method>
void add_variant(VariantList<Sad>& list, int rank) {
  list.push_back({std::string(Method::name) + "-" + to_string(backend_of<Exec>()), Layer::portable,
                  backend_of<Exec>(), false, make_runner<KokkosSadRunner<Exec, Method>>,
                  [](const SadInput& input) {
                    return (Method::writes_map || !input.params.want_map) &&
                           Method::fits(validate_sad_input(input));
                  },
                  rank, Method::isa, Method::simple, on_views<Exec, Method>()});
}

}  // namespace kbench::portable_sad

namespace kbench {

void register_sad_portable(VariantList<Sad>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable_sad::add_variant<Exec, portable_sad::MDRangeMethod<Exec>>(list, 0);
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      portable_sad::add_variant<Exec, portable_sad::TeamMethod<Exec, true, kIsa>>(list, 1);
      portable_sad::add_variant<Exec, portable_sad::TeamMethod<Exec, false, kIsa>>(list, 2);
      // First on host backends; on CUDA its blocks are plain byte loops, one thread each.
      portable_sad::add_variant<Exec, portable_sad::SimdRowsMethod<Exec, kIsa>>(
          list, portable::backend_of<Exec>() == Backend::cuda ? 0 : 3);
    });
  });
}

}  // namespace kbench
