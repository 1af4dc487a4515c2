// Portable sad: one Kokkos source for every execution space (Serial, OpenMP, CUDA).
//
// - kokkos-mdrange: an MDRange over map positions, each summing its r × c bytes, then the argmin
//   as a parallel_reduce over the map.
// - kokkos-team: teams own a tile of map positions; each chunk of query rows and the target
//   strip below the tile are staged in team scratch as packed words, and every work item sums
//   4·kWords neighbouring positions in registers (accumulate_sad_row). The map is written and the
//   argmin reduced in the same kernel.
// - kokkos-fused: the team kernel without the map: only the argmin leaves the device.
// The team and fused kernels sum through sad4 (vabsdiff4 on CUDA devices, psadbw on x86 hosts):
// they are registered twice, as built with Isa::tuned and with Isa::plain (`-plain`, four byte
// differences per word everywhere). kokkos-mdrange subtracts bytes itself and is plain as it is.
//
// The argmin is a Min reduction over 64-bit sad_key()s, not Kokkos::MinLoc: MinLoc leaves ties
// unspecified, the packed key makes the shared (score, row, col) rule explicit.
#include <memory>

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
    for (const portable::RowRange& rows : portable::row_chunks(s.map_height, kTileY)) {
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

template <class Exec, class Method>
void add_variant(VariantList<Sad>& list) {
  list.push_back({std::string(Method::name) + "-" + to_string(backend_of<Exec>()), Layer::portable,
                  backend_of<Exec>(), false, make_runner<KokkosSadRunner<Exec, Method>>,
                  [](const SadInput& input) {
                    return (Method::writes_map || !input.params.want_map) &&
                           Method::fits(validate_sad_input(input));
                  },
                  0, Method::isa, Method::simple});
}

}  // namespace kbench::portable_sad

namespace kbench {

void register_sad_portable(VariantList<Sad>& list) {
  portable::for_each_exec_space([&](auto exec) {
    using Exec = typename decltype(exec)::type;
    portable_sad::add_variant<Exec, portable_sad::MDRangeMethod<Exec>>(list);
    portable::for_each_isa([&](auto isa) {
      constexpr Isa kIsa = decltype(isa)::value;
      portable_sad::add_variant<Exec, portable_sad::TeamMethod<Exec, true, kIsa>>(list);
      portable_sad::add_variant<Exec, portable_sad::TeamMethod<Exec, false, kIsa>>(list);
    });
  });
}

}  // namespace kbench
