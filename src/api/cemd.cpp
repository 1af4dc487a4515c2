// kbench::cemd_match and kbench::cemd_all_pairs on descriptor views, host or device, through the
// chosen cemd variant.
#include <cstring>
#include <limits>

#include "api_support.hpp"
#include "kbench/cemd.hpp"

namespace kbench {
namespace {

// The call's input: the host views' descriptors, or (device views) their counts.
CemdInput input_of(const DescriptorView& queries, const DescriptorView& database,
                   const CemdMatchOptions& options, bool all_pairs, bool on_device) {
  api::check_descriptor_view(queries, "queries");
  api::check_descriptor_view(database, "database");
  CemdInput input;
  input.params = {options.distance, all_pairs, options.ratio};
  if (on_device) {
    input.queries.count = queries.rows;
    input.database.count = database.rows;
  } else {
    input.queries = api::descriptors_of(queries, "queries");
    input.database = api::descriptors_of(database, "database");
  }
  validate_cemd_input(input);
  return input;
}

std::string shape_of(const CemdInput& input) {
  return std::to_string(input.queries.count) + "x" + std::to_string(input.database.count) + "/" +
         to_string(input.params.distance) + (input.params.all_pairs ? "/all" : "");
}

CemdMatch match_of(const CemdNeighbours& n, float ratio) {
  return {n.best_index, n.best_distance, n.second_index, n.second_distance,
          ratio_accepted(n, ratio)};
}

// A device view's descriptors as packed u8 rows on the device: the view itself, or a copy in the
// context's scratch memory (compacted, or converted from floats and checked, which waits for the
// stream so that a bad value is refused before anything is written).
const std::uint8_t* packed_on_device(const DescriptorView& view, const char* what,
                                     const ViewWork& work) {
  const bool u8 = view.type == DescriptorType::u8;
  const std::size_t stride = view.row_stride ? view.row_stride : (u8 ? 1 : 4) * kDescriptorBytes;
  if (u8 && stride == kDescriptorBytes) return static_cast<const std::uint8_t*>(view.data);
  const std::string name = std::string("api cemd ") + what;
  auto* packed = static_cast<std::uint8_t*>(
      work.scratch->bytes(name, std::size_t(view.rows) * kDescriptorBytes));
  if (u8) {
    copy_rows_async(packed, kDescriptorBytes, view.data, stride, kDescriptorBytes,
                    std::size_t(view.rows), work.stream);
    return packed;
  }
  auto* first_bad = static_cast<std::uint32_t*>(work.scratch->bytes(name + " bad value", 4));
  fill_async(first_bad, 0xFF, sizeof(std::uint32_t), work.stream);
  descriptors_to_u8_async(static_cast<const float*>(view.data), stride, view.rows, packed,
                          first_bad, work.stream);
  std::uint32_t bad = 0;
  copy_rows_async(&bad, sizeof bad, first_bad, sizeof bad, sizeof bad, 1, work.stream);
  synchronize(work.stream);
  if (bad != kNoBadValue) {
    const std::size_t row = bad / kDescriptorBytes, column = bad % kDescriptorBytes;
    float value = 0;
    copy_rows_async(&value, sizeof value,
                    static_cast<const unsigned char*>(view.data) + row * stride + column * 4,
                    sizeof value, sizeof value, 1, work.stream);
    synchronize(work.stream);
    throw Error(std::string(what) + ": value at row " + std::to_string(row) + ", column " +
                std::to_string(column) + " is " + std::to_string(value) +
                "; descriptor values are whole numbers 0..255");
  }
  return packed;
}

// The call on device views, queued on options.stream: the matrix into `matrix` when it has
// data, else the nearest two per query as keys in the context's scratch memory, whose device
// address is returned.
std::uint64_t* cemd_on_device(Context& context, const CemdInput& input,
                              const DescriptorView& queries, const DescriptorView& database,
                              const DistanceMatrixView* matrix, const CemdMatchOptions& options,
                              const Choice& choice) {
  const Variant<Cemd>& variant = api::choose<Cemd>(context, input, choice, shape_of(input), true);
  const ViewWork work = api::begin_device_call(context, options.stream);
  const std::uint8_t* query_rows = packed_on_device(queries, "queries", work);
  const std::uint8_t* database_rows = packed_on_device(database, "database", work);
  std::uint64_t* keys = nullptr;
  CemdViewCall call{
      query_rows, queries.rows, database_rows, database.rows, options.distance, nullptr,
      0,          nullptr,      work};
  if (matrix) {
    call.matrix = matrix->data;
    call.matrix_stride =
        matrix->row_stride ? matrix->row_stride : std::size_t(database.rows) * sizeof(float);
  } else {
    keys = static_cast<std::uint64_t*>(work.scratch->bytes(
        "api cemd keys", 2 * std::size_t(queries.rows) * sizeof(std::uint64_t)));
    call.keys = keys;
  }
  api::run_on_views(
      context, variant, [&] { variant.on_views(call); }, options.stream);
  return keys;
}

}  // namespace

std::vector<CemdMatch> cemd_match(Context& context, const DescriptorView& queries,
                                  const DescriptorView& database, const CemdMatchOptions& options,
                                  const Choice& choice) {
  const bool on_device =
      api::device_call(context, {{"queries", queries.place}, {"database", database.place}});
  const CemdInput input = input_of(queries, database, options, false, on_device);
  std::vector<CemdMatch> matches;
  matches.reserve(std::size_t(queries.rows));
  if (on_device) {
    const ScopedDevice on(context.options().device);
    const std::uint64_t* device_keys =
        cemd_on_device(context, input, queries, database, nullptr, options, choice);
    std::vector<std::uint64_t> keys(2 * std::size_t(queries.rows));
    const std::size_t bytes = keys.size() * sizeof(std::uint64_t);
    copy_rows_async(keys.data(), bytes, device_keys, bytes, bytes, 1, options.stream.handle);
    synchronize(options.stream.handle);
    for (const CemdNeighbours& n : neighbours_from_keys(keys.data(), queries.rows)) {
      matches.push_back(match_of(n, options.ratio));
    }
    return matches;
  }
  const Variant<Cemd>& variant = api::choose<Cemd>(context, input, choice, shape_of(input));
  const CemdResult result = api::run(context, variant, input);
  for (const CemdNeighbours& n : result.neighbours) matches.push_back(match_of(n, options.ratio));
  return matches;
}

void cemd_all_pairs(Context& context, const DescriptorView& queries, const DescriptorView& database,
                    const DistanceMatrixView& matrix, const CemdMatchOptions& options,
                    const Choice& choice) {
  const bool on_device = api::device_call(
      context,
      {{"queries", queries.place}, {"database", database.place}, {"matrix", matrix.place}});
  const CemdInput input = input_of(queries, database, options, true, on_device);
  if (!matrix.data) throw Error("matrix: no memory (null pointer)");
  if (matrix.rows != queries.rows || matrix.cols != database.rows) {
    throw Error("matrix: the view is " + std::to_string(matrix.rows) + " x " +
                std::to_string(matrix.cols) + "; this call writes " + std::to_string(queries.rows) +
                " x " + std::to_string(database.rows) + " (queries x database)");
  }
  const std::size_t row_bytes = std::size_t(database.rows) * sizeof(float);
  const std::size_t stride =
      api::checked_stride("matrix", matrix.row_stride, row_bytes, sizeof(float));
  if (on_device) {
    const ScopedDevice on(context.options().device);
    cemd_on_device(context, input, queries, database, &matrix, options, choice);
    return;
  }
  const Variant<Cemd>& variant = api::choose<Cemd>(context, input, choice, shape_of(input));
  const CemdResult result = api::run(context, variant, input);
  for (int q = 0; q < queries.rows; ++q) {
    std::memcpy(reinterpret_cast<unsigned char*>(matrix.data) + std::size_t(q) * stride,
                result.matrix.data() + std::size_t(q) * database.rows, row_bytes);
  }
}

CemdPieceMatcher::CemdPieceMatcher(Context& context, const DescriptorView& queries,
                                   const CemdMatchOptions& options, const Choice& choice)
    : context_(context), queries_(queries), options_(options), choice_(choice) {
  api::check_descriptor_view(queries, "queries");
  if (api::device_call(context, {{"queries", queries.place}})) {
    const ScopedDevice on(context.options().device);
    device_ = DeviceMemory(2 * std::size_t(queries.rows) * sizeof(std::uint64_t),
                           context.options().device);
    fill_async(device_.data(), 0xFF, device_.size(), options.stream.handle);
  } else {
    host_.assign(std::size_t(queries.rows), Top2{});
  }
}

CemdPieceMatcher::~CemdPieceMatcher() = default;

void CemdPieceMatcher::add(const DescriptorView& piece, std::int64_t first_row) {
  const bool on_device = api::device_call(
      context_, {{"queries", queries_.place}, {"the database piece", piece.place}});
  if (first_row < 0 || piece.rows < 0 ||
      first_row + piece.rows > std::numeric_limits<std::int32_t>::max()) {
    throw Error("a database piece of " + std::to_string(piece.rows) + " rows from row " +
                std::to_string(first_row) + ": rows are numbered from 0 to 2^31 - 2");
  }
  if (!on_device) {
    const std::vector<CemdMatch> found = cemd_match(context_, queries_, piece, options_, choice_);
    for (std::size_t q = 0; q < found.size(); ++q) {
      const CemdMatch& m = found[q];
      host_[q] = top2_merge(
          host_[q], top2_of(first_row, m.index, m.distance, m.second_index, m.second_distance));
    }
    any_ = true;
    return;
  }
  const CemdInput input = input_of(queries_, piece, options_, false, true);
  const ScopedDevice on(context_.options().device);
  const std::uint64_t* keys =
      cemd_on_device(context_, input, queries_, piece, nullptr, options_, choice_);
  merge_top2_keys_async(static_cast<std::uint64_t*>(device_.data()), keys, queries_.rows,
                        std::uint32_t(first_row), options_.stream.handle);
  any_ = true;
}

std::vector<Top2> CemdPieceMatcher::keys() {
  if (!any_) throw Error("cemd piece matching: no database piece was added");
  if (!device_.data()) return host_;
  static_assert(sizeof(Top2) == 2 * sizeof(std::uint64_t), "a query's two device keys are a Top2");
  const ScopedDevice on(context_.options().device);
  std::vector<Top2> keys(std::size_t(queries_.rows));
  copy_rows_async(keys.data(), device_.size(), device_.data(), device_.size(), device_.size(), 1,
                  options_.stream.handle);
  synchronize(options_.stream.handle);
  return keys;
}

std::vector<CemdMatch> CemdPieceMatcher::matches() {
  std::vector<CemdMatch> matches;
  for (const Top2& t : keys()) matches.push_back(match_of(neighbours_from(t), options_.ratio));
  return matches;
}

}  // namespace kbench
