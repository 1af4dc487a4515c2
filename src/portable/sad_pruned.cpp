// Portable sad-pruned: one Kokkos source for every execution space, the GPU scheme of the
// native layer.
//
// 1. Row sums H(y, x) = Σ_{l<c} T(y, x + l): a team per row chunk scans the chunk's bytes in
//    scratch and differences the prefix.
// 2. Strip bounds l_i = Σ_k | |x_k|₁ − |y_{i,k}|₁ | for every window: a team per tile of
//    kTileColumns columns × tile_rows window rows stacks H down its columns in scratch (a local
//    column prefix), so a strip's sum is two scratch reads; the tile's smallest (bound, index)
//    is its candidate.
// 3. The candidates' exact SADs (step 5 with E_guess unset) give the first E_guess.
// 4. Windows whose bound does not exceed E_guess are compacted with a parallel_scan.
// 5. A team per survivor refines it strip by strip: one reduction gives the strip's exact SAD
//    and its target sum together, the bound grows, and the team leaves once it exceeds the
//    shared E_guess; a finished window lowers E_guess with an atomic min on its sad_key.
// When more than kPruneFullSearchFraction of the windows survive step 4, the fused full search
// (kokkos-fused) runs instead.
#include <algorithm>

#include "kbench/sad_pruned.hpp"
#include "portable/kokkos_support.hpp"
#include "portable/sad_team.hpp"

namespace kbench::portable_pruned {

using portable::backend_of;
using portable::InputBuffer;
using portable::OutputBuffer;

constexpr int kTileColumns = 32;    // windows across a bound tile
constexpr int kColumnSegments = 4;  // a tile's column prefix is built in this many row segments
constexpr int kMaxTileRows = 128;   // window rows per bound tile, at most
// A tile offers its best-bounded window per this many window rows as a candidate for the first
// E_guess: a tile's single best bound is often a window a pixel away from the match, whose SAD
// is far above the match's, and a loose first E_guess prunes little.
constexpr int kCandidateRows = 32;
constexpr int kRowChunk = 2048;  // H values a row-sum team produces
constexpr int kDeviceTeam = 32;  // threads per refining team on a device (a warp)
constexpr int kDeviceTileTeam = kTileColumns * kColumnSegments;

template <class Exec>
using U32View = typename OutputBuffer<std::uint32_t, Exec>::View;
template <class Exec>
using Scratch = Kokkos::View<std::uint32_t*, typename Exec::scratch_memory_space,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Teams of one thread on host backends, GPU-sized teams on devices.
template <class Exec>
int team_threads(int device_threads) {
  return portable::reads_host_memory<Exec>() ? 1 : device_threads;
}

// Target bytes x .. x + 3 of one packed row, for any x.
KOKKOS_INLINE_FUNCTION std::uint32_t unaligned_word(const std::uint32_t* row, int x) {
  const std::uint32_t lo = row[x / 4];
  const int shift = 8 * (x % 4);
  return shift == 0 ? lo : (lo >> shift) | (row[x / 4 + 1] << (32 - shift));
}

struct Geometry {
  SadShape s;
  StripLayout strips;
  int query_words;
  int target_pitch_words;  // packed target row, with a word to spare for unaligned reads
  int tile_rows;           // window rows per bound tile; 0 when a tile does not fit in scratch
  int tiles_x, tiles_y;
  int row_chunks;  // H chunks per target row
  int candidates_per_tile;

  int candidates() const { return tiles_x * tiles_y * candidates_per_tile; }
};

template <class Exec>
std::size_t tile_scratch_bytes(const Geometry& g, int tile_rows) {
  return Scratch<Exec>::shmem_size(std::size_t(tile_rows + g.s.query_height + 1) * kTileColumns) +
         Scratch<Exec>::shmem_size(kTileColumns * kColumnSegments);
}
template <class Exec>
std::size_t row_scratch_bytes(const Geometry& g) {
  return Scratch<Exec>::shmem_size(std::size_t(kRowChunk + g.s.query_width + 1));
}

template <class Exec>
Geometry geometry(const SadShape& s) {
  Geometry g{s,
             strip_layout(s),
             words_for(s.query_width),
             words_for(s.target_width) + 1,
             0,
             0,
             0,
             (s.map_width + kRowChunk - 1) / kRowChunk,
             0};
  const std::size_t limit = std::size_t(Kokkos::TeamPolicy<Exec>::scratch_size_max(0));
  for (int rows = std::min(kMaxTileRows, s.map_height); rows >= 1; --rows) {
    if (tile_scratch_bytes<Exec>(g, rows) <= limit) {
      g.tile_rows = rows;
      break;
    }
  }
  if (row_scratch_bytes<Exec>(g) > limit) g.tile_rows = 0;
  if (g.tile_rows > 0) {
    g.tiles_x = (s.map_width + kTileColumns - 1) / kTileColumns;
    g.tiles_y = (s.map_height + g.tile_rows - 1) / g.tile_rows;
    g.candidates_per_tile = (g.tile_rows + kCandidateRows - 1) / kCandidateRows;
  }
  return g;
}

template <class Exec>
void row_sums(const Geometry& g, const typename InputBuffer<std::uint8_t, Exec>::View& target,
              const U32View<Exec>& sums) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  const int width = g.s.map_width, c = g.s.query_width, n = g.s.target_width;
  const std::size_t scratch = row_scratch_bytes<Exec>(g);
  Kokkos::parallel_for(
      "pruned_row_sums",
      Policy(g.s.target_height * g.row_chunks, team_threads<Exec>(kDeviceTileTeam))
          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int y = team.league_rank() / g.row_chunks;
        const int x0 = (team.league_rank() % g.row_chunks) * kRowChunk;
        const int outputs = width - x0 < kRowChunk ? width - x0 : kRowChunk;
        const int bytes = outputs + c - 1;
        Scratch<Exec> prefix(team.team_scratch(0), std::size_t(bytes) + 1);
        const std::size_t row = std::size_t(y) * n + x0;
        Kokkos::parallel_scan(Kokkos::TeamThreadRange(team, bytes),
                              [&](int x, std::uint32_t& partial, bool final) {
                                partial += target(row + x);
                                if (final) prefix(x + 1) = partial;
                              });
        Kokkos::single(Kokkos::PerTeam(team), [&] { prefix(0) = 0; });
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, outputs), [&](int x) {
          sums(std::size_t(y) * width + x0 + x) = prefix(x + c) - prefix(x);
        });
        team.team_barrier();  // a block may run the next league rank in the same scratch
      });
}

// Strip bounds of every window into `bounds`; per kCandidateRows window rows of each tile, the
// smallest sad_key(bound, index) into `candidates`.
template <class Exec>
void strip_bounds(const Geometry& g, const U32View<Exec>& sums,
                  const typename InputBuffer<std::uint32_t, Exec>::View& query_strips,
                  const U32View<Exec>& bounds,
                  const typename OutputBuffer<std::uint64_t, Exec>::View& candidates) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  const int stack_rows = g.tile_rows + g.s.query_height;  // H rows a tile stacks
  const std::size_t scratch = tile_scratch_bytes<Exec>(g, g.tile_rows);
  Kokkos::parallel_for(
      "pruned_strip_bounds",
      Policy(g.tiles_x * g.tiles_y, team_threads<Exec>(kDeviceTileTeam))
          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
      KOKKOS_LAMBDA(const Team& team) {
        const int i0 = (team.league_rank() / g.tiles_x) * g.tile_rows;
        const int j0 = (team.league_rank() % g.tiles_x) * kTileColumns;
        const int rows = g.s.map_height - i0 < g.tile_rows ? g.s.map_height - i0 : g.tile_rows;
        const int stacked = rows + g.s.query_height - 1;
        const int segment = (stacked + kColumnSegments - 1) / kColumnSegments;
        // stack(t, col): Σ of H rows i0 .. i0 + t − 1 in column j0 + col.
        Scratch<Exec> stack(team.team_scratch(0), std::size_t(stack_rows + 1) * kTileColumns);
        Scratch<Exec> totals(team.team_scratch(0), kTileColumns * kColumnSegments);
        const auto at = [&](int t, int col) -> std::uint32_t& {
          return stack(std::size_t(t) * kTileColumns + col);
        };
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTileColumns * kColumnSegments),
                             [&](int e) {
                               const int col = e % kTileColumns, part = e / kTileColumns;
                               const int j = j0 + col < g.s.map_width ? j0 + col : j0;
                               const int t0 = part * segment;
                               const int t1 = t0 + segment < stacked ? t0 + segment : stacked;
                               std::uint32_t sum = 0;
                               if (part == 0) at(0, col) = 0;
                               for (int t = t0; t < t1; ++t) {
                                 sum += sums(std::size_t(i0 + t) * g.s.map_width + j);
                                 at(t + 1, col) = sum;
                               }
                               totals(e) = sum;
                             });
        team.team_barrier();
        // Each segment adds the totals of the segments above it.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kTileColumns * kColumnSegments),
                             [&](int e) {
                               const int col = e % kTileColumns, part = e / kTileColumns;
                               std::uint32_t above = 0;
                               for (int q = 0; q < part; ++q)
                                 above += totals(q * kTileColumns + col);
                               const int t0 = part * segment;
                               const int t1 = t0 + segment < stacked ? t0 + segment : stacked;
                               for (int t = t0; t < t1; ++t) at(t + 1, col) += above;
                             });
        team.team_barrier();
        for (int group = 0; group < g.candidates_per_tile; ++group) {
          const int r0 = group * kCandidateRows;
          const int r1 = r0 + kCandidateRows < rows ? r0 + kCandidateRows : rows;
          std::uint64_t best = kNoSadKey;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, (r1 > r0 ? r1 - r0 : 0) * kTileColumns),
              [&](int e, std::uint64_t& partial) {
                const int r = r0 + e / kTileColumns, col = e % kTileColumns;
                if (j0 + col >= g.s.map_width) return;
                std::uint32_t bound = 0;
                for (int k = 0; k < g.strips.count; ++k) {
                  const std::uint32_t y =
                      at(r + g.strips.end(k), col) - at(r + g.strips.begin(k), col);
                  bound += abs_difference(query_strips(k), y);
                }
                const std::size_t index = std::size_t(i0 + r) * g.s.map_width + j0 + col;
                bounds(index) = bound;
                partial = sad_min(partial, sad_key(std::int32_t(bound), std::uint32_t(index)));
              },
              Kokkos::Min<std::uint64_t>(best));
          // A group past the map's last row repeats the tile's first window.
          if (best == kNoSadKey)
            best = sad_key(0, std::uint32_t(std::size_t(i0) * g.s.map_width + j0));
          Kokkos::single(Kokkos::PerTeam(team), [&] {
            candidates(std::size_t(team.league_rank()) * g.candidates_per_tile + group) = best;
          });
        }
        team.team_barrier();  // a block may run the next league rank in the same scratch
      });
}

// The score of the shared key as one thread of the team reads it, so that the whole team takes
// the same branch.
template <class Team, class View>
KOKKOS_INLINE_FUNCTION std::uint32_t limit_of(const Team& team, const View& guess) {
  std::uint64_t seen = Kokkos::volatile_load(guess.data());
  team.team_broadcast(seen, 0);
  return std::uint32_t(seen >> 32);
}

// Refines the windows list(0 .. count) (indices in the low 32 bits) from their bounds, strip by
// strip, against the shared key `guess`; alive(k) counts windows left after strip k.
template <class Exec, class List>
void refine(const Geometry& g, const List& list, int count,
            const typename InputBuffer<std::uint32_t, Exec>::View& target,
            const typename InputBuffer<std::uint32_t, Exec>::View& query,
            const typename InputBuffer<std::uint32_t, Exec>::View& query_strips,
            const U32View<Exec>& bounds,
            const typename OutputBuffer<std::uint64_t, Exec>::View& guess,
            const typename OutputBuffer<std::uint64_t, Exec>::View& alive) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Team = typename Policy::member_type;
  if (count == 0) return;
  const int q_words = g.query_words;
  const std::uint32_t tail_mask =
      g.s.query_width % 4 ? (1u << (8 * (g.s.query_width % 4))) - 1u : ~0u;
  Kokkos::parallel_for(
      "pruned_refine", Policy(count, team_threads<Exec>(kDeviceTeam)),
      KOKKOS_LAMBDA(const Team& team) {
        const std::uint32_t w = std::uint32_t(list(team.league_rank()));
        const int i = int(w / std::uint32_t(g.s.map_width));
        const int j = int(w % std::uint32_t(g.s.map_width));
        std::uint32_t bound = bounds(w);
        for (int k = 0; k < g.strips.count; ++k) {
          if (bound > limit_of(team, guess)) return;
          const int y0 = g.strips.begin(k);
          // SAD in the high word, target sum in the low one: neither reaches 2^32.
          std::uint64_t packed = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, (g.strips.end(k) - y0) * q_words),
              [&](int e, std::uint64_t& partial) {
                const int y = y0 + e / q_words, word = e % q_words;
                const std::uint32_t mask = word + 1 == q_words ? tail_mask : ~0u;
                const std::uint32_t t =
                    unaligned_word(target.data() + std::size_t(i + y) * g.target_pitch_words,
                                   j + 4 * word) &
                    mask;
                partial +=
                    (std::uint64_t(sad4(t, query(std::size_t(y) * q_words + word), 0)) << 32) +
                    sad4(t, 0, 0);
              },
              packed);
          bound = bound - abs_difference(query_strips(k), std::uint32_t(packed)) +
                  std::uint32_t(packed >> 32);
          if (bound > limit_of(team, guess)) return;
          Kokkos::single(Kokkos::PerTeam(team), [&] {
            Kokkos::atomic_add(&alive(k), std::uint64_t(1));
            if (k + 1 == g.strips.count) {
              Kokkos::atomic_fetch_min(&guess(0), sad_key(std::int32_t(bound), w));
            }
          });
        }
      });
}

template <class Exec>
class PrunedRunner final : public Runner<SadPruned> {
 public:
  explicit PrunedRunner(const SadInput& input)
      : shape_(validate_sad_pruned_input(input)),
        g_(geometry<Exec>(shape_)),
        packed_target_(pack_rows(input.target, g_.target_pitch_words, shape_.target_height)),
        packed_query_(pack_rows(input.query, g_.query_words, shape_.query_height)),
        strip_sums_(query_strip_sums(input.query, g_.strips)),
        target_bytes_(input.target.data.data(), input.target.sample_count(), "pruned target"),
        target_(packed_target_.data(), packed_target_.size(), "pruned packed target"),
        query_(packed_query_.data(), packed_query_.size(), "pruned packed query"),
        query_strips_(strip_sums_.data(), strip_sums_.size(), "pruned query strips"),
        sums_(std::size_t(shape_.target_height) * shape_.map_width, "pruned row sums"),
        bounds_(shape_.map_size(), "pruned bounds"),
        survivors_(shape_.map_size(), "pruned survivors"),
        candidates_(std::size_t(std::max(1, g_.candidates())), "pruned candidates"),
        guess_(1, "pruned guess"),
        alive_(std::size_t(g_.strips.count), "pruned alive"),
        full_search_(input, shape_) {
    if (g_.tile_rows == 0) throw Error("kokkos-pruned: the query is too large for team scratch");
  }

  void poison(std::uint8_t byte) override {
    guess_.poison(byte);
    alive_.poison(byte);
    stats_ = PruneStats{};
    stats_.windows = stats_.after_bounds = ~std::uint64_t(0) / 0xFF * byte;
  }
  void upload() override {
    target_bytes_.upload();
    target_.upload();
    query_.upload();
    query_strips_.upload();
    full_search_.upload();
  }
  void compute() override {
    stats_ = PruneStats{};
    stats_.windows = shape_.map_size();
    const auto guess = guess_.view();
    Kokkos::deep_copy(Exec{}, guess, kNoSadKey);
    row_sums<Exec>(g_, target_bytes_.view(), sums_.view());
    strip_bounds<Exec>(g_, sums_.view(), query_strips_.view(), bounds_.view(), candidates_.view());
    refine<Exec>(g_, candidates_.view(), g_.candidates(), target_.view(), query_.view(),
                 query_strips_.view(), bounds_.view(), guess, alive_.view());
    std::uint64_t first_guess = kNoSadKey;
    Kokkos::deep_copy(first_guess, Kokkos::subview(guess, 0));
    const std::uint32_t limit = std::uint32_t(first_guess >> 32);
    const auto bounds = bounds_.view();
    const auto survivors = survivors_.view();
    std::uint32_t count = 0;
    Kokkos::parallel_scan(
        "pruned_survivors",
        Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(0,
                                                                   std::int64_t(shape_.map_size())),
        KOKKOS_LAMBDA(std::int64_t index, std::uint32_t & offset, bool final) {
          if (bounds(index) > limit) return;
          if (final) survivors(offset) = std::uint32_t(index);
          ++offset;
        },
        count);
    stats_.after_bounds = count;
    if (double(count) > kPruneFullSearchFraction * double(shape_.map_size())) {
      stats_.full_search = true;
      best_key_ = full_search_.run(shape_, {});
      return;
    }
    Kokkos::deep_copy(Exec{}, alive_.view(), std::uint64_t(0));
    refine<Exec>(g_, survivors, int(count), target_.view(), query_.view(), query_strips_.view(),
                 bounds, guess, alive_.view());
    Kokkos::deep_copy(best_key_, Kokkos::subview(guess, 0));
  }
  void sync() override { Exec{}.fence(); }
  void download(SadPrunedResult& out) override {
    out.best = match_from_key(best_key_, shape_.map_width);
    out.stats = stats_;
    if (!stats_.full_search) {
      out.stats.after_strip.resize(std::size_t(g_.strips.count));
      alive_.download(out.stats.after_strip.data());
    }
  }

 private:
  SadShape shape_;
  Geometry g_;
  std::vector<std::uint32_t> packed_target_, packed_query_, strip_sums_;
  InputBuffer<std::uint8_t, Exec> target_bytes_;
  InputBuffer<std::uint32_t, Exec> target_, query_, query_strips_;
  OutputBuffer<std::uint32_t, Exec> sums_, bounds_, survivors_;
  OutputBuffer<std::uint64_t, Exec> candidates_, guess_, alive_;
  portable_sad::TeamMethod<Exec, false> full_search_;
  std::uint64_t best_key_ = kNoSadKey;
  PruneStats stats_;
};

}  // namespace kbench::portable_pruned

namespace kbench {

void register_sad_pruned_portable(VariantList<SadPruned>& list) {
  using portable::backend_of;
  portable::for_each_exec_space([&](auto exec) {
    using Exec = decltype(exec);
    list.push_back({std::string("kokkos-pruned-") + to_string(backend_of<Exec>()), Layer::portable,
                    backend_of<Exec>(), false, make_runner<portable_pruned::PrunedRunner<Exec>>,
                    [](const SadInput& input) {
                      const SadShape s = validate_sad_pruned_input(input);
                      return portable_pruned::geometry<Exec>(s).tile_rows > 0 &&
                             portable_sad::TeamMethod<Exec, false>::fits(s);
                    },
                    backend_of<Exec>() == Backend::cuda ? 25 : 5});
  });
}

}  // namespace kbench
