#pragma once
// Definition of compare::run, included by each algorithm's compare file.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "compare/compare.hpp"
#include "compare/json.hpp"
#include "kbench/system_info.hpp"
#include "progress.hpp"

namespace kbench::compare {

inline bool selected(const std::vector<std::string>& filter, const std::string& value) {
  if (filter.empty()) return true;
  for (const auto& f : filter) {
    if (f == value) return true;
  }
  return false;
}

struct Row {
  std::string variant, layer, backend, status, detail, summary;
  Timing timing;
  double max_error = 0;
  // Portable variants only: "tuned" or "plain" instructions, "simple" or "tuned" schedule
  // (Variant::isa, Variant::simple), which perf/report.py's three Kokkos / native ratios use.
  std::string isa, schedule;
  bool reference = false;  // the registry's first variant, the sequential reference
};

// The check of a variant's output: the case's own where it has one, else Algorithm::check
// against the reference, computed here.
template <class Algorithm>
typename Case<Algorithm>::Check reference_check(const Case<Algorithm>& problem) {
  if (problem.make_check) return problem.make_check(problem.input);
  const auto reference = std::make_shared<const typename Algorithm::Reference>(
      problem.reference ? problem.reference() : Algorithm::reference(problem.input));
  return [&input = problem.input, reference](const typename Algorithm::Output& out) {
    return Algorithm::check(input, *reference, out);
  };
}

// Step 1: every selected variant (the reference always; CUDA ones only with a GPU) checked with
// `check_output` and, when right and options.check_only is not set, timed; a row each, with a
// line of progress.
template <class Algorithm>
std::vector<Row> check_variants(const Options& options, const Case<Algorithm>& problem,
                                const typename Case<Algorithm>::Check& check_output,
                                bool have_gpu) {
  const auto& all = variants<Algorithm>();
  std::vector<Row> rows;
  tools::Progress progress("compare", "checking and timing", std::int64_t(all.size()), "variants");
  std::int64_t started = 0;
  for (const auto& v : all) {
    progress.set_done(started++);
    const bool is_reference = &v == &all.front();
    if (!is_reference && (!selected(options.variants, v.name) ||
                          !selected(options.backends, to_string(v.backend)))) {
      continue;
    }
    if (v.backend == Backend::cuda && !have_gpu) continue;
    Row row{v.name, to_string(v.layer), to_string(v.backend), "ok", "", "", {}, 0, "",
            "",     is_reference};
    if (v.layer == Layer::portable) {
      row.isa = to_string(v.isa);
      row.schedule = v.simple ? "simple" : "tuned";
    }
    const std::string skip_reason = problem.skip ? problem.skip(v) : std::string();
    if (!skip_reason.empty()) {
      row.status = "skipped";
      row.detail = skip_reason;
      rows.push_back(row);
      continue;
    }
    if (!v.handles(problem.input)) {
      row.status = "n/a";
      row.detail = "does not handle this input";
      rows.push_back(row);
      continue;
    }
    std::printf("  [%2lld/%zu] %-*s checking...", static_cast<long long>(started), all.size(),
                variant_column(), v.name.c_str());
    std::fflush(stdout);
    try {
      const auto out = run_checked(v, problem.input);
      const CheckResult check = check_output(out);
      row.max_error = check.max_error;
      if (check.ok && problem.summary) row.summary = problem.summary(out);
      if (!check.ok) {
        row.status = "WRONG";
        row.detail = check.detail;
      } else if (!options.check_only) {
        std::printf(" timing...");
        std::fflush(stdout);
        row.timing = time_variant(v, problem.input, options.timing);
      }
    } catch (const OutOfMemory& e) {
      // Too large for this machine's memory (or the GPU's): not a wrong variant.
      row.status = "skipped";
      row.detail = e.what();
      std::cerr << "compare: skipping " << v.name << ": " << e.what() << '\n';
    } catch (const std::exception& e) {
      row.status = "FAILED";
      row.detail = e.what();
    }
    std::printf(" %s\n", row.status.c_str());
    rows.push_back(row);
  }
  return rows;
}

// A wrong or failed variant (skipped ones and those that do not handle the input are neither).
inline bool failed(const Row& row) {
  return row.status == "WRONG" || row.status == "FAILED";
}

// What the table and the JSON lines say of a timed row.
struct Figures {
  double ms;  // compute-only time where there is one, else the end-to-end time
  double gbps, gops;
  double speedup;  // against the reference; 0 where the reference was not timed
};

// The reference's compute time, 0 where it was not timed.
inline double reference_ms(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    if (row.reference && row.status == "ok") return row.timing.compute.median_ms;
  }
  return 0;
}

inline Figures figures_of(const Row& row, const Workload& work, double reference_ms) {
  const Timing& t = row.timing;
  const double ms = t.has_compute ? t.compute.median_ms : t.end_to_end.median_ms;
  return {ms, work.bytes / (ms * 1e6), work.operations / (ms * 1e6),
          reference_ms > 0 ? reference_ms / ms : 0};
}

// Step 2: the table of every row, then the summaries of the correct variants that have one.
template <class Algorithm>
void print_table(const Options& options, const Case<Algorithm>& problem, const Workload& work,
                 const std::vector<Row>& rows) {
  const bool batch = problem.frames > 1;
  std::printf("\n%-*s %-11s %-7s %10s %10s %10s %9s %9s %8s %6s%s\n", variant_column(), "variant",
              "layer", "backend", "median ms", "min ms", "e2e ms", "GB/s",
              (std::string("G") + work.operation_unit + "/s").c_str(), "speedup", "error",
              batch ? "   us/frame" : "");
  const double reference = reference_ms(rows);
  for (const Row& row : rows) {
    if (row.status != "ok") {
      std::printf("%-*s %-11s %-7s %s%s%s\n", variant_column(), row.variant.c_str(),
                  row.layer.c_str(), row.backend.c_str(), row.status.c_str(),
                  row.detail.empty() ? "" : ": ", row.detail.c_str());
      continue;
    }
    if (options.check_only) {
      std::printf("%-*s %-11s %-7s checked, max error %g\n", variant_column(), row.variant.c_str(),
                  row.layer.c_str(), row.backend.c_str(), row.max_error);
      continue;
    }
    const Timing& t = row.timing;
    const Figures f = figures_of(row, work, reference);
    char compute_median[16] = "-", compute_min[16] = "-", e2e[16] = "-", speedup_text[16] = "-";
    if (f.speedup > 0) std::snprintf(speedup_text, sizeof speedup_text, "%.1f", f.speedup);
    if (t.has_compute) {
      std::snprintf(compute_median, sizeof compute_median, "%.4f", t.compute.median_ms);
      std::snprintf(compute_min, sizeof compute_min, "%.4f", t.compute.min_ms);
    }
    if (t.has_end_to_end) std::snprintf(e2e, sizeof e2e, "%.4f", t.end_to_end.median_ms);
    char per_frame[24] = "";
    if (batch) std::snprintf(per_frame, sizeof per_frame, " %10.2f", f.ms * 1e3 / problem.frames);
    std::printf("%-*s %-11s %-7s %10s %10s %10s %9.2f %9.2f %8s %6.2g%s\n", variant_column(),
                row.variant.c_str(), row.layer.c_str(), row.backend.c_str(), compute_median,
                compute_min, e2e, f.gbps, f.gops, speedup_text, row.max_error, per_frame);
  }
  bool summary_title = false;
  for (const Row& row : rows) {
    if (row.summary.empty()) continue;
    if (!summary_title) std::printf("\n");
    summary_title = true;
    std::printf("%-*s %s\n", variant_column(), row.variant.c_str(), row.summary.c_str());
  }
}

// Step 3: a JSON line for each timed row, for perf/.
template <class Algorithm>
void write_json_lines(std::ostream& json, const Case<Algorithm>& problem, const Workload& work,
                      const std::vector<Row>& rows) {
  const std::string date = utc_timestamp();
  const double reference = reference_ms(rows);
  for (const Row& row : rows) {
    if (row.status != "ok") continue;
    const Timing& t = row.timing;
    const Figures f = figures_of(row, work, reference);
    JsonObject line;
    line.add("algorithm", Algorithm::name).add("variant", row.variant).add("layer", row.layer);
    line.add("backend", row.backend).add("case", problem.name);
    if (!row.isa.empty()) line.add("isa", row.isa).add("schedule", row.schedule);
    line.add("description", problem.description).add("reps", t.reps);
    if (problem.frames > 1) {
      line.add("frames", problem.frames).add("per_frame_ms", f.ms / problem.frames);
    }
    line.add("batch", t.batch).add("rotation", t.rotation);
    if (t.has_compute) {
      line.add("compute_min_ms", t.compute.min_ms).add("compute_median_ms", t.compute.median_ms);
      line.add("compute_max_ms", t.compute.max_ms);
    }
    if (t.has_end_to_end) {
      line.add("e2e_min_ms", t.end_to_end.min_ms).add("e2e_median_ms", t.end_to_end.median_ms);
      line.add("e2e_max_ms", t.end_to_end.max_ms);
    }
    line.add("bytes", work.bytes).add("operations", work.operations);
    line.add("operation_unit", work.operation_unit).add("gb_per_s", f.gbps);
    line.add("gops_per_s", f.gops);
    // Absent where the sequential reference was skipped at this case.
    if (f.speedup > 0) line.add("speedup_vs_sequential", f.speedup);
    line.add("max_error", row.max_error).add("threads", host_threads());
    line.add("device", row.backend == "cuda" ? gpu_name() : cpu_name());
    if (!row.summary.empty()) line.add("summary", row.summary);
    line.add("date", date).add("commit", build_commit());
    json << line.str() << '\n';
  }
}

template <class Algorithm>
int run(const Options& options, const Case<Algorithm>& problem) {
  const Workload work = Algorithm::workload(problem.input);
  const bool have_gpu = gpu_available();

  std::printf("%s on %s (%s)\n", Algorithm::name, problem.name.c_str(),
              problem.description.c_str());
  std::printf("host: %s, %d threads%s%s\n", cpu_name().c_str(), host_threads(),
              have_gpu ? "; GPU: " : "", have_gpu ? gpu_name().c_str() : "");
  for (const std::string& note : problem.notes) std::printf("%s\n", note.c_str());
  std::printf("computing the reference%s%s...\n",
              problem.make_check ? " " : (problem.reference ? " by " : ""),
              problem.reference_source.c_str());
  std::fflush(stdout);
  const typename Case<Algorithm>::Check check_output = reference_check(problem);

  std::ofstream json;
  if (!options.json_path.empty()) {
    json.open(options.json_path, std::ios::app);
    if (!json) throw Error("cannot open '" + options.json_path + "' for appending");
  }

  const std::vector<Row> rows = check_variants(options, problem, check_output, have_gpu);
  print_table(options, problem, work, rows);
  if (json.is_open() && !options.check_only) write_json_lines(json, problem, work, rows);
  return std::any_of(rows.begin(), rows.end(), failed) ? 1 : 0;
}

}  // namespace kbench::compare
