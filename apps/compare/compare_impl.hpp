#pragma once
// Definition of compare::run, included by each algorithm's compare file.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

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
};

template <class Algorithm>
int run(const Options& options, const Case<Algorithm>& problem) {
  const auto& all = variants<Algorithm>();
  const Variant<Algorithm>& reference_variant = all.front();
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
  typename Algorithm::Reference reference;
  typename Case<Algorithm>::Check check_output;
  if (problem.make_check) {
    check_output = problem.make_check(problem.input);
  } else {
    reference = problem.reference ? problem.reference() : Algorithm::reference(problem.input);
    check_output = [&](const typename Algorithm::Output& out) {
      return Algorithm::check(problem.input, reference, out);
    };
  }

  std::ofstream json;
  if (!options.json_path.empty()) {
    json.open(options.json_path, std::ios::app);
    if (!json) throw Error("cannot open '" + options.json_path + "' for appending");
  }

  std::vector<Row> rows;
  double reference_ms = 0;
  int failures = 0;
  tools::Progress progress("compare", "checking and timing", std::int64_t(all.size()), "variants");
  std::int64_t started = 0;
  for (const auto& v : all) {
    progress.set_done(started++);
    const bool is_reference = &v == &reference_variant;
    if (!is_reference && (!selected(options.variants, v.name) ||
                          !selected(options.backends, to_string(v.backend)))) {
      continue;
    }
    if (v.backend == Backend::cuda && !have_gpu) continue;
    Row row{v.name, to_string(v.layer), to_string(v.backend), "ok", "", "", {}, 0, "", ""};
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
    if (row.status != "ok" && row.status != "skipped") ++failures;
    if (is_reference && row.status == "ok") reference_ms = row.timing.compute.median_ms;
    rows.push_back(row);
  }

  const bool batch = problem.frames > 1;
  std::printf("\n%-*s %-11s %-7s %10s %10s %10s %9s %9s %8s %6s%s\n", variant_column(), "variant",
              "layer", "backend", "median ms", "min ms", "e2e ms", "GB/s",
              (std::string("G") + work.operation_unit + "/s").c_str(), "speedup", "error",
              batch ? "   us/frame" : "");
  const std::string date = utc_timestamp();
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
    // Throughput and speedup use compute-only time where there is one, else the end-to-end time.
    const double ms = t.has_compute ? t.compute.median_ms : t.end_to_end.median_ms;
    const double gbps = work.bytes / (ms * 1e6);
    const double gops = work.operations / (ms * 1e6);
    const double speedup = reference_ms > 0 ? reference_ms / ms : 0;
    char compute_median[16] = "-", compute_min[16] = "-", e2e[16] = "-", speedup_text[16] = "-";
    if (speedup > 0) std::snprintf(speedup_text, sizeof speedup_text, "%.1f", speedup);
    if (t.has_compute) {
      std::snprintf(compute_median, sizeof compute_median, "%.4f", t.compute.median_ms);
      std::snprintf(compute_min, sizeof compute_min, "%.4f", t.compute.min_ms);
    }
    if (t.has_end_to_end) std::snprintf(e2e, sizeof e2e, "%.4f", t.end_to_end.median_ms);
    char per_frame[24] = "";
    if (batch) std::snprintf(per_frame, sizeof per_frame, " %10.2f", ms * 1e3 / problem.frames);
    std::printf("%-*s %-11s %-7s %10s %10s %10s %9.2f %9.2f %8s %6.2g%s\n", variant_column(),
                row.variant.c_str(), row.layer.c_str(), row.backend.c_str(), compute_median,
                compute_min, e2e, gbps, gops, speedup_text, row.max_error, per_frame);
    if (json.is_open()) {
      JsonObject line;
      line.add("algorithm", Algorithm::name).add("variant", row.variant).add("layer", row.layer);
      line.add("backend", row.backend).add("case", problem.name);
      if (!row.isa.empty()) line.add("isa", row.isa).add("schedule", row.schedule);
      line.add("description", problem.description).add("reps", t.reps);
      if (batch) line.add("frames", problem.frames).add("per_frame_ms", ms / problem.frames);
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
      line.add("operation_unit", work.operation_unit).add("gb_per_s", gbps);
      line.add("gops_per_s", gops);
      // Absent where the sequential reference was skipped at this case.
      if (speedup > 0) line.add("speedup_vs_sequential", speedup);
      line.add("max_error", row.max_error).add("threads", host_threads());
      line.add("device", row.backend == "cuda" ? gpu_name() : cpu_name());
      if (!row.summary.empty()) line.add("summary", row.summary);
      line.add("date", date).add("commit", build_commit());
      json << line.str() << '\n';
    }
  }
  bool summary_title = false;
  for (const Row& row : rows) {
    if (row.summary.empty()) continue;
    if (!summary_title) std::printf("\n");
    summary_title = true;
    std::printf("%-*s %s\n", variant_column(), row.variant.c_str(), row.summary.c_str());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace kbench::compare
