// kbench::sad_map and kbench::match on views: full search through the chosen sad variant, or the
// exact pruned search through the chosen sad-pruned variant.
#include <cstdio>
#include <cstring>

#include "api_support.hpp"
#include "kbench/sad.hpp"
#include "kbench/sad_pruned.hpp"

namespace kbench {
namespace {

std::string shape_of(const SadInput& input) {
  return std::to_string(input.target.width) + "x" + std::to_string(input.target.height) + "/" +
         std::to_string(input.query.width) + "x" + std::to_string(input.query.height) + "/" +
         std::to_string(input.params.want_map) + "/" + std::to_string(input.params.top_k) + "/" +
         std::to_string(input.params.min_separation);
}

// The call's input: the host images in gray, or the shapes of device views, which are gray.
SadInput input_of(const ConstImageView& target, const ConstImageView& query, bool on_device) {
  if (target.frames != 1 || query.frames != 1) {
    throw Error("target, query: one frame each (" + std::to_string(target.frames) + " and " +
                std::to_string(query.frames) + " given)");
  }
  if (!on_device) {
    return SadInput{to_gray(api::image_of(target, 0)), to_gray(api::image_of(query, 0)), {}};
  }
  for (const auto& [view, name] : {std::pair{target, "target"}, std::pair{query, "query"}}) {
    if (view.channels != 1) {
      throw Error(std::string(name) + ": " + std::to_string(view.channels) +
                  " channels; sad on a device view takes gray (one channel)");
    }
  }
  return SadInput{api::image_shape(target.width, target.height, 1),
                  api::image_shape(query.width, query.height, 1),
                  {}};
}

// Full search on device views, queued on `stream`: the map into `map` when it has data, the best
// position's sad_key into the context's scratch memory, whose device address is returned.
std::uint64_t* search_on_device(Context& context, const SadInput& input,
                                const ConstImageView& target, const ConstImageView& query,
                                const SadMapView* map, const Stream& stream, const Choice& choice) {
  const Variant<Sad>& variant = api::choose<Sad>(context, input, choice, shape_of(input), true);
  const ViewWork work = api::begin_device_call(context, stream);
  auto* key =
      static_cast<std::uint64_t*>(work.scratch->bytes("api sad best key", sizeof(std::uint64_t)));
  api::run_on_views(
      context, variant,
      [&] {
        variant.on_views(SadViewCall{target, query, map, key, work});
      },
      stream);
  return key;
}

// Full search on device views for `options.top` positions, waited for: the best key alone, or
// the map in the context's scratch memory, brought to the host for the non-maximum suppression.
std::vector<SadMatch> match_on_device(Context& context, SadInput& input,
                                      const ConstImageView& target, const ConstImageView& query,
                                      const MatchOptions& options, const Choice& choice) {
  input.params.want_map = options.top > 1;
  const SadShape shape = validate_sad_input(input);
  const ScopedDevice on(context.options().device);
  SadMapView map;
  if (input.params.want_map) {
    const std::size_t bytes = shape.map_size() * sizeof(std::int32_t);
    const ViewWork work = api::begin_device_call(context, options.stream);
    map = {static_cast<std::int32_t*>(work.scratch->bytes("api sad map", bytes)), shape.map_width,
           shape.map_height, 0, MemoryPlace::cuda(context.options().device)};
  }
  const std::uint64_t* device_key =
      search_on_device(context, input, target, query, &map, options.stream, choice);
  std::uint64_t key = 0;
  copy_rows_async(&key, sizeof key, device_key, sizeof key, sizeof key, 1, options.stream.handle);
  SadResult result;
  result.map_width = shape.map_width;
  result.map_height = shape.map_height;
  if (map.data) {
    result.map.resize(shape.map_size());
    copy_rows_async(result.map.data(), shape.map_size() * sizeof(std::int32_t), map.data,
                    shape.map_size() * sizeof(std::int32_t),
                    shape.map_size() * sizeof(std::int32_t), 1, options.stream.handle);
  }
  synchronize(options.stream.handle);
  result.best = match_from_key(key, shape.map_width);
  return map.data ? top_matches(result, input) : std::vector<SadMatch>{result.best};
}

bool names_variant_of(const std::string& name, const VariantList<SadPruned>& list) {
  for (const auto& v : list) {
    if (v.name == name) return true;
  }
  return false;
}

}  // namespace

void sad_map(Context& context, const ConstImageView& target, const ConstImageView& query,
             const SadMapView& map, const SadMapOptions& options, const Choice& choice) {
  api::check_image_view(target, "target");
  api::check_image_view(query, "query");
  if (!map.data) throw Error("map: the view has no data (null pointer)");
  const bool on_device = api::device_call(
      context, {{"target", target.place}, {"query", query.place}, {"map", map.place}});
  SadInput input = input_of(target, query, on_device);
  input.params.want_map = true;
  const SadShape shape = validate_sad_input(input);
  if (map.width != shape.map_width || map.height != shape.map_height) {
    throw Error("map: the view is " + std::to_string(map.width) + " x " +
                std::to_string(map.height) + "; the map of this target and query is " +
                std::to_string(shape.map_width) + " x " + std::to_string(shape.map_height));
  }
  const std::size_t row_bytes = std::size_t(map.width) * sizeof(std::int32_t);
  const std::size_t pitch = api::checked_stride("map", map.pitch, row_bytes, sizeof(std::int32_t));
  if (on_device) {
    const ScopedDevice on(context.options().device);
    search_on_device(context, input, target, query, &map, options.stream, choice);
    return;
  }
  const Variant<Sad>& variant = api::choose<Sad>(context, input, choice, shape_of(input));
  const SadResult result = api::run(context, variant, input);
  for (int y = 0; y < map.height; ++y) {
    std::memcpy(reinterpret_cast<unsigned char*>(map.data) + std::size_t(y) * pitch,
                result.map.data() + std::size_t(y) * map.width, row_bytes);
  }
}

std::vector<SadMatch> match(Context& context, const ConstImageView& target,
                            const ConstImageView& query, const MatchOptions& options,
                            const Choice& choice) {
  api::check_image_view(target, "target");
  api::check_image_view(query, "query");
  const bool on_device =
      api::device_call(context, {{"target", target.place}, {"query", query.place}});
  SadInput input = input_of(target, query, on_device);
  if (options.top < 1) throw Error("top: " + std::to_string(options.top) + "; at least 1");
  if (options.separation < 0) {
    throw Error("separation: " + std::to_string(options.separation) + "; at least 0");
  }
  input.params.top_k = options.top;
  input.params.min_separation = options.separation;
  // A variant named chooses its algorithm, and so the method.
  const bool pruned_variant = names_variant_of(choice.variant, variants<SadPruned>());
  if (!choice.variant.empty() && options.method != MatchMethod::automatic &&
      pruned_variant != (options.method == MatchMethod::pruned)) {
    throw UsageError(
        "variant " + choice.variant + " is not a " +
        (options.method == MatchMethod::pruned ? "pruned (sad-pruned)" : "full search (sad)") +
        " variant");
  }
  // Pruning answers the best position and the best several without separation; several kept
  // apart need the whole map's non-maximum suppression.
  const bool prunable = options.top == 1 || options.separation == 1;
  const bool pruned =
      options.method == MatchMethod::pruned || pruned_variant ||
      (options.method == MatchMethod::automatic && choice.variant.empty() && prunable);
  if (on_device) {
    if (options.method == MatchMethod::pruned || pruned_variant) {
      throw UsageError(
          "the pruned search takes host views; on device views match runs full search "
          "(MatchMethod::full or automatic)");
    }
    return match_on_device(context, input, target, query, options, choice);
  }
  if (pruned && !prunable) {
    throw UsageError(
        "pruned matching finds several positions only without separation (separation 1); use "
        "full search");
  }
  if (pruned) {
    input.params.want_map = false;
    validate_sad_pruned_input(input);
    const Variant<SadPruned>& variant =
        api::choose<SadPruned>(context, input, choice, shape_of(input));
    const SadPrunedResult result = api::run(context, variant, input);
    const PruneStats& stats = result.stats;
    char detail[160];
    std::snprintf(detail, sizeof detail, "%.4f%% of %llu windows pruned by the first bounds%s",
                  100.0 * double(stats.windows - stats.after_bounds) / double(stats.windows),
                  static_cast<unsigned long long>(stats.windows),
                  stats.full_search ? "; too few: searched in full" : "");
    api::describe_call(context, detail);
    return options.top > 1 ? result.top : std::vector<SadMatch>{result.best};
  }
  // Full search: one position needs only the argmin (fused); several need the map.
  input.params.want_map = options.top > 1;
  validate_sad_input(input);
  const Variant<Sad>& variant = api::choose<Sad>(context, input, choice, shape_of(input));
  const SadResult result = api::run(context, variant, input);
  return options.top > 1 ? top_matches(result, input) : std::vector<SadMatch>{result.best};
}

}  // namespace kbench
