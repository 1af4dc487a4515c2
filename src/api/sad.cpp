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

SadInput gray_input(const ConstImageView& target, const ConstImageView& query) {
  api::check_image_view(target, "target");
  api::check_image_view(query, "query");
  api::require_host(target.place, "target");
  api::require_host(query.place, "query");
  if (target.frames != 1 || query.frames != 1) {
    throw Error("target, query: one frame each (" + std::to_string(target.frames) + " and " +
                std::to_string(query.frames) + " given)");
  }
  return SadInput{to_gray(api::image_of(target, 0)), to_gray(api::image_of(query, 0)), {}};
}

bool names_variant_of(const std::string& name, const VariantList<SadPruned>& list) {
  for (const auto& v : list) {
    if (v.name == name) return true;
  }
  return false;
}

}  // namespace

void sad_map(Context& context, const ConstImageView& target, const ConstImageView& query,
             const SadMapView& map, const Choice& choice) {
  SadInput input = gray_input(target, query);
  input.params.want_map = true;
  const SadShape shape = validate_sad_input(input);
  if (!map.data) throw Error("map: the view has no data (null pointer)");
  if (!map.place.on_host()) throw Error("map: a CUDA device view; this version takes host views");
  if (map.width != shape.map_width || map.height != shape.map_height) {
    throw Error("map: the view is " + std::to_string(map.width) + " x " +
                std::to_string(map.height) + "; the map of this target and query is " +
                std::to_string(shape.map_width) + " x " + std::to_string(shape.map_height));
  }
  const std::size_t row_bytes = std::size_t(map.width) * sizeof(std::int32_t);
  const std::size_t pitch = api::checked_stride("map", map.pitch, row_bytes, sizeof(std::int32_t));
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
  SadInput input = gray_input(target, query);
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
