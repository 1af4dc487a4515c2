// kbench::cemd_match and kbench::cemd_all_pairs on descriptor views, through the chosen cemd
// variant.
#include <cstring>

#include "api_support.hpp"
#include "kbench/cemd.hpp"

namespace kbench {
namespace {

CemdInput input_of(const DescriptorView& queries, const DescriptorView& database,
                   const CemdMatchOptions& options, bool all_pairs) {
  api::check_descriptor_view(queries, "queries");
  api::check_descriptor_view(database, "database");
  CemdInput input{api::descriptors_of(queries, "queries"),
                  api::descriptors_of(database, "database"),
                  {options.distance, all_pairs, options.ratio}};
  validate_cemd_input(input);
  return input;
}

std::string shape_of(const CemdInput& input) {
  return std::to_string(input.queries.count) + "x" + std::to_string(input.database.count) + "/" +
         to_string(input.params.distance) + (input.params.all_pairs ? "/all" : "");
}

}  // namespace

std::vector<CemdMatch> cemd_match(Context& context, const DescriptorView& queries,
                                  const DescriptorView& database, const CemdMatchOptions& options,
                                  const Choice& choice) {
  const CemdInput input = input_of(queries, database, options, false);
  const Variant<Cemd>& variant = api::choose<Cemd>(context, input, choice, shape_of(input));
  const CemdResult result = api::run(context, variant, input);
  std::vector<CemdMatch> matches;
  matches.reserve(result.neighbours.size());
  for (const CemdNeighbours& n : result.neighbours) {
    matches.push_back({n.best_index, n.best_distance, n.second_index, n.second_distance,
                       ratio_accepted(n, options.ratio)});
  }
  return matches;
}

void cemd_all_pairs(Context& context, const DescriptorView& queries, const DescriptorView& database,
                    float* matrix, std::size_t row_stride, const CemdMatchOptions& options,
                    const Choice& choice) {
  const CemdInput input = input_of(queries, database, options, true);
  if (!matrix) throw Error("matrix: no memory (null pointer)");
  const std::size_t row_bytes = std::size_t(database.rows) * sizeof(float);
  const std::size_t stride = api::checked_stride("matrix", row_stride, row_bytes, sizeof(float));
  const Variant<Cemd>& variant = api::choose<Cemd>(context, input, choice, shape_of(input));
  const CemdResult result = api::run(context, variant, input);
  for (int q = 0; q < queries.rows; ++q) {
    std::memcpy(reinterpret_cast<unsigned char*>(matrix) + std::size_t(q) * stride,
                result.matrix.data() + std::size_t(q) * database.rows, row_bytes);
  }
}

}  // namespace kbench
