// What every lbp variant shares: mappings and their tables, validation, output shapes, the
// check against the reference, and the user call.
#include <algorithm>
#include <limits>

#include "host_kernels/lbp.hpp"
#include "kbench/detail/lbp_codes.hpp"
#include "kbench/error.hpp"
#include "kbench/harness.hpp"
#include "kbench/lbp.hpp"
#include "kbench/system_info.hpp"

namespace kbench {

LbpMapping parse_lbp_mapping(const std::string& text) {
  if (text == "plain") return LbpMapping::plain;
  if (text == "uniform") return LbpMapping::uniform;
  if (text == "rotation-invariant") return LbpMapping::rotation_invariant;
  throw Error("LBP mapping '" + text + "' is not plain, uniform or rotation-invariant");
}

const char* to_string(LbpMapping mapping) {
  switch (mapping) {
    case LbpMapping::plain:
      return "plain";
    case LbpMapping::uniform:
      return "uniform";
    case LbpMapping::rotation_invariant:
      return "rotation-invariant";
  }
  return "?";
}

int lbp_bin_count(LbpMapping mapping) {
  return lbp_tables(mapping).bins;
}

LbpTables lbp_tables(LbpMapping mapping) {
  LbpTables t{};
  switch (mapping) {
    case LbpMapping::plain:
      for (int c = 0; c < kLbpCodes; ++c) t.value[c] = t.bin[c] = std::uint8_t(c);
      t.bins = kLbpCodes;
      break;
    case LbpMapping::uniform: {
      // Uniform codes get labels in increasing code order; all others share the last label.
      constexpr int kNonUniform = 58;
      int next = 0;
      for (int c = 0; c < kLbpCodes; ++c) {
        const int label = lbp_transitions(c) <= 2 ? next++ : kNonUniform;
        t.value[c] = t.bin[c] = std::uint8_t(label);
      }
      t.bins = kNonUniform + 1;
      break;
    }
    case LbpMapping::rotation_invariant: {
      // A code is its class's representative when no rotation is smaller; representatives take
      // bins in increasing code order.
      int rank[kLbpCodes] = {};
      int next = 0;
      for (int c = 0; c < kLbpCodes; ++c) {
        if (lbp_min_rotation(c) == unsigned(c)) rank[c] = next++;
      }
      for (int c = 0; c < kLbpCodes; ++c) {
        const unsigned representative = lbp_min_rotation(c);
        t.value[c] = std::uint8_t(representative);
        t.bin[c] = std::uint8_t(rank[representative]);
      }
      t.bins = next;
      break;
    }
  }
  return t;
}

ImageSize lbp_output_size(int width, int height, Border border) {
  checked_sample_count(width, height, 1, 1);
  if (border == Border::crop && (width < 3 || height < 3)) {
    throw Error(
        "LBP with border crop codes only pixels with 8 neighbours inside the image, so it "
        "needs at least 3x3; the image is " +
        std::to_string(width) + "x" + std::to_string(height) + " (use border clamp)");
  }
  const ImageSize out =
      border == Border::crop ? ImageSize{width - 2, height - 2} : ImageSize{width, height};
  if (std::uint64_t(out.width) * std::uint64_t(out.height) >
      std::numeric_limits<std::uint32_t>::max()) {
    throw Error("LBP of a " + std::to_string(width) + "x" + std::to_string(height) +
                " image codes more pixels than a 32-bit histogram bin can count");
  }
  return out;
}

void validate_lbp_input(const LbpInput& input) {
  lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  if (input.gray.channels != 1) {
    throw Error("LBP takes a one-channel gray image, not " + std::to_string(input.gray.channels) +
                " channels (convert with to_gray)");
  }
}

LbpResult make_lbp_output(const LbpInput& input) {
  const ImageSize size = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  LbpResult out;
  out.codes = ImageU8(size.width, size.height, 1);
  out.histogram.assign(lbp_bin_count(input.params.mapping), 0u);
  return out;
}

Lbp::Reference Lbp::reference(const LbpInput& input) {
  validate_lbp_input(input);
  LbpResult out = make_lbp_output(input);
  host_lbp::walk_plain(input, host_lbp::geometry_of(input), lbp_tables(input.params.mapping), out);
  return out;
}

namespace {

// The output's shape against the reference's: an empty string when it is right.
std::string shape_mismatch(const LbpInput& input, const LbpResult& out, const ImageSize& want,
                           std::size_t bins) {
  if (out.codes.width == want.width && out.codes.height == want.height && out.codes.channels == 1 &&
      out.histogram.size() == bins) {
    return "";
  }
  return "output is " + std::to_string(out.codes.width) + "x" + std::to_string(out.codes.height) +
         "x" + std::to_string(out.codes.channels) + " with " +
         std::to_string(out.histogram.size()) + " bins, expected " + std::to_string(want.width) +
         "x" + std::to_string(want.height) + "x1 with " + std::to_string(bins) + " bins (" +
         to_string(input.params.mapping) + ")";
}

// Compares rows of `out` with reference code rows, row k of `want` being output row row_of(k),
// and the histograms; max_error counts the differing pixels and bins.
template <class RowOf>
CheckResult compare_codes(const ImageU8& want, RowOf row_of,
                          const std::vector<std::uint32_t>& histogram, const LbpResult& out) {
  CheckResult result;
  std::size_t wrong_pixels = 0;
  int first_x = 0, first_y = 0, first_k = 0;
  for (int k = 0; k < want.height; ++k) {
    const std::uint8_t* got = &out.codes.at(0, row_of(k), 0);
    const std::uint8_t* expected = &want.at(0, k, 0);
    for (int x = 0; x < want.width; ++x) {
      if (got[x] != expected[x] && wrong_pixels++ == 0) {
        first_x = x;
        first_y = row_of(k);
        first_k = k;
      }
    }
  }
  std::size_t wrong_bins = 0, first_bin = 0;
  for (std::size_t b = 0; b < histogram.size(); ++b) {
    if (out.histogram[b] != histogram[b] && wrong_bins++ == 0) first_bin = b;
  }
  result.max_error = double(wrong_pixels + wrong_bins);
  result.ok = wrong_pixels == 0 && wrong_bins == 0;
  if (wrong_pixels) {
    result.detail = std::to_string(wrong_pixels) +
                    " pixels differ, first (x=" + std::to_string(first_x) +
                    ", y=" + std::to_string(first_y) + ") is " +
                    std::to_string(int(out.codes.at(first_x, first_y, 0))) + ", reference " +
                    std::to_string(int(want.at(first_x, first_k, 0)));
  }
  if (wrong_bins) {
    result.detail += std::string(wrong_pixels ? "; " : "") + std::to_string(wrong_bins) +
                     " histogram bins differ, first bin " + std::to_string(first_bin) + " is " +
                     std::to_string(out.histogram[first_bin]) + ", reference " +
                     std::to_string(histogram[first_bin]);
  }
  return result;
}

}  // namespace

CheckResult Lbp::check(const LbpInput& input, const Reference& reference, const LbpResult& out) {
  const ImageU8& want = reference.codes;
  CheckResult result;
  result.detail =
      shape_mismatch(input, out, ImageSize{want.width, want.height}, reference.histogram.size());
  if (!result.detail.empty()) {
    result.max_error = double(want.sample_count() + reference.histogram.size());
    return result;
  }
  return compare_codes(
      want, [](int k) { return k; }, reference.histogram, out);
}

Lbp::RowsReference Lbp::reference_rows(const LbpInput& input, std::vector<int> rows) {
  validate_lbp_input(input);
  const host_lbp::Geometry g = host_lbp::geometry_of(input);
  const LbpTables tables = lbp_tables(input.params.mapping);
  if (rows.empty()) throw Error("a reference of sampled rows needs at least one row");
  for (const int y : rows) {
    if (y < 0 || y >= g.out_height) {
      throw Error("row " + std::to_string(y) + " is outside the " + std::to_string(g.out_height) +
                  " rows of the LBP output");
    }
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  RowsReference reference;
  reference.codes = ImageU8(g.out_width, int(rows.size()), 1);
  reference.histogram.assign(std::size_t(tables.bins), 0u);
  // Every row counts into the histogram (seq-rows' row walk, which the tests hold equal to the
  // plain reference); the sampled ones are kept.
  std::vector<std::uint8_t> row = allocate_samples<std::uint8_t>(std::size_t(g.out_width), "a row");
  const host_lbp::Rect inner = host_lbp::inside(g);
  std::size_t next = 0;
  for (int y = 0; y < g.out_height; ++y) {
    host_lbp::code_row(input.gray.data.data(), g, inner, tables, y, row.data(),
                       reference.histogram.data());
    if (next < rows.size() && rows[next] == y) {
      std::copy(row.begin(), row.end(), &reference.codes.at(0, int(next), 0));
      ++next;
    }
  }
  reference.rows = std::move(rows);
  return reference;
}

CheckResult Lbp::check_rows(const LbpInput& input, const RowsReference& reference,
                            const LbpResult& out) {
  const ImageSize size = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  CheckResult result;
  result.detail = shape_mismatch(input, out, size, reference.histogram.size());
  if (!result.detail.empty()) return result;
  return compare_codes(
      reference.codes, [&](int k) { return reference.rows[std::size_t(k)]; }, reference.histogram,
      out);
}

Workload Lbp::workload(const LbpInput& input) {
  const ImageSize out = lbp_output_size(input.gray.width, input.gray.height, input.params.border);
  const double coded = double(out.width) * out.height;
  const double bins = lbp_bin_count(input.params.mapping);
  return {double(input.gray.pixel_count()) + coded + bins * sizeof(std::uint32_t), coded, "pixel"};
}

LbpResult local_binary_pattern(const ImageU8& image, const LbpParams& params) {
  LbpInput input{to_gray(image), params};
  validate_lbp_input(input);
  return run_once(best_variant<Lbp>(input, gpu_available()), input);
}

}  // namespace kbench
