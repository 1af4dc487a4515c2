#pragma once
// What the tools (filter, lbp, match, cemd-match, cemd-generate, compare) share: the exit
// statuses, a command line that refuses what it does not know, the options every tool has
// (--backend, --variant, --verbose, --quiet), one --verbose line for the variant that ran, and one
// way to end on an error.
//
// Exit statuses: 0 success; 1 the run failed (an input refused, a file that cannot be read or
// written, memory that cannot be had, a choice this build or machine cannot run); 2 the command
// line is wrong (an unknown option, a stray argument, a value out of range, options that exclude
// each other, an output that is an input or another output).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "kbench/context.hpp"
#include "kbench/error.hpp"
#include "kbench/file_io.hpp"
#include "kbench/system_info.hpp"
#include "progress.hpp"

namespace kbench::tools {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// What --help says of the statuses, shared by every tool's footer.
inline const char* exit_status_help() {
  return "Exit status: 0 done; 1 the run failed (input refused, file not readable or writable, "
         "out of memory, variant not available here); 2 usage error (unknown option, stray "
         "argument, bad value, an output equal to an input or to another output).\n";
}

// The size of the last allocation that failed in this process (allocation_report.cpp), 0 if
// none was recorded.
std::size_t failed_allocation_bytes();

// True for the options Kokkos::initialize takes (Kokkos 3.4 leaves unknown ones in place).
inline bool is_kokkos_option(const std::string& argument) {
  for (const char* flag : {"--kokkos-disable-warnings", "--kokkos-tune-internals",
                           "--kokkos-tools-help", "--kokkos-help"}) {
    if (argument == flag) return true;
  }
  for (const char* option : {"--kokkos-threads=", "--kokkos-numa=", "--kokkos-device-id=",
                             "--kokkos-device=", "--kokkos-ndevices=", "--kokkos-num-devices=",
                             "--kokkos-tools-library=", "--kokkos-tools-args="}) {
    if (argument.rfind(option, 0) == 0) return true;
  }
  return false;
}

// Parses the command line. Kokkos' own options are left for Kokkos; anything else CLI11 does not
// take is refused. Returns the status to exit with (0 after --help), or nothing to go on. `silent`
// (the ranks other than 0 of an MPI job) prints nothing.
inline std::optional<int> parse_command_line(CLI::App& app, const char* program, int argc,
                                             char** argv, bool silent = false) {
  app.allow_extras();
  app.footer(exit_status_help());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return silent ? 0 : app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return silent ? 0 : app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (!silent) std::cerr << program << ": " << e.what() << " (see --help)\n";
    return kExitUsage;
  }
  for (const std::string& extra : app.remaining()) {
    if (is_kokkos_option(extra)) continue;
    const bool option = extra.size() > 1 && extra[0] == '-';
    if (!silent) {
      const bool kokkos = extra.rfind("--kokkos-", 0) == 0;
      std::cerr << program << ": " << (option ? "unknown option '" : "unexpected argument '")
                << extra << "' ("
                << (kokkos ? "Kokkos options take their value after '=', e.g. "
                             "--kokkos-threads=4"
                           : "see --help")
                << ")\n";
    }
    return kExitUsage;
  }
  return std::nullopt;
}

// Runs a tool's work and turns what it throws into the exit status and a one-line `message`
// (empty when the work returned a status of its own).
template <class Body>
int run_guarded_message(const Body& body, std::string* message) {
  try {
    return body();
  } catch (const UsageError& e) {
    *message = e.what();
    return kExitUsage;
  } catch (const Error& e) {
    *message = e.what();
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    const std::size_t bytes = failed_allocation_bytes();
    *message =
        "out of memory" +
        (bytes ? ": could not allocate " + byte_count(bytes) + " of host memory" : std::string());
    return kExitFailure;
  } catch (const std::exception& e) {
    *message = e.what();
    return kExitFailure;
  }
}

// run_guarded_message, with the message printed as "<program>: <message>".
template <class Body>
int run_guarded(const char* program, const Body& body) {
  std::string message;
  const int status = run_guarded_message(body, &message);
  if (!message.empty()) std::cerr << program << ": " << message << '\n';
  return status;
}

// An unsigned 64-bit option given as plain digits: no sign, nothing that wraps.
inline std::function<std::string(const std::string&)> whole_number_u64() {
  return [](const std::string& text) -> std::string {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
      return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
    }
    const std::string digits = text.substr(std::min(text.find_first_not_of('0'), text.size()));
    const std::string max = "18446744073709551615";
    if (digits.size() > max.size() || (digits.size() == max.size() && digits > max)) {
      return "'" + text + "' is larger than 18446744073709551615";
    }
    return {};
  };
}

// Lowe's ratio: above 0 and at most 1.
inline CLI::Validator ratio_range() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
        return value > 0 && value <= 1 ? "" : "the ratio must be above 0 and at most 1";
      },
      "(0, 1]");
}

// cemd-match's and compare's choice of descriptor distance: --metric cemd|l2 and, for cemd,
// --mode normalised|raw. distance_name() turns them into parse_descriptor_distance's name.
struct DistanceOptions {
  std::string metric = "cemd", mode = "normalised";
  std::string distance_name() const { return metric == "l2" ? "l2" : mode; }
};

inline void add_distance_options(CLI::App& app, DistanceOptions& options,
                                 const std::string& prefix = "") {
  app.add_option("--metric", options.metric, prefix + "Distance: circular EMD or Euclidean (l2)")
      ->check(CLI::IsMember({"cemd", "l2"}))
      ->capture_default_str();
  app.add_option("--mode", options.mode,
                 prefix + "CEMD mode: cells as distributions (normalised) or raw values (raw)")
      ->check(CLI::IsMember({"normalised", "raw"}))
      ->capture_default_str();
}

// The options every tool shares.
struct RunOptions {
  std::string variant, backend;
  bool verbose = false;
  bool quiet = false;
};

inline void add_quiet(CLI::App& app, RunOptions& options) {
  app.add_flag("-q,--quiet", options.quiet,
               "No progress line (shown only when stderr is a terminal, for work over a second)");
}

inline void add_run_options(CLI::App& app, RunOptions& options) {
  app.add_option("--backend", options.backend,
                 "Only variants of this backend (default: the fastest this machine has)")
      ->check(CLI::IsMember({"serial", "openmp", "cuda"}));
  app.add_option("--variant", options.variant,
                 "Run this registry variant (compare --list shows them)");
  app.add_flag("--verbose", options.verbose,
               "Print on stderr the variant that ran and its time (and what the readers did)");
  add_quiet(app, options);
}

// The image tools' two positional paths: the image to read and what to write, `output_help`
// saying what.
inline void add_image_paths(CLI::App& app, std::string& input, std::string& output,
                            const std::string& output_help) {
  app.add_option("input", input, "Image to read (PNG, JPEG, BMP, PPM, PGM; - for standard input)")
      ->required();
  app.add_option("output", output, output_help)->required();
}

// Turns the progress line on where it can be seen and was not silenced.
inline void enable_progress(const RunOptions& options) {
  Progress::enabled() = !options.quiet && Progress::terminal();
}

// The --verbose line, the same in every tool.
inline void print_variant_line(const char* program, const std::string& algorithm,
                               const std::string& variant, const std::string& layer,
                               const std::string& backend, const std::string& times) {
  std::fprintf(stderr, "%s: %s variant %s (%s, %s): %s\n", program, algorithm.c_str(),
               variant.c_str(), layer.c_str(), backend.c_str(), times.c_str());
}

// Runs one library call (`body`, given the Choice that --variant and --backend make) with a
// progress line saying `what`; with --verbose, says which variant ran and how long it took.
template <class Body>
void call(const char* program, Context& context, const RunOptions& options, const std::string& what,
          const Body& body) {
  {
    Progress progress(program, what);
    body(Choice{options.variant, options.backend, ""});
  }
  if (options.verbose) {
    const CallInfo& ran = context.last_call();
    char text[96];
    std::snprintf(text, sizeof text, "compute %.3f ms, %.3f ms with transfers", ran.compute_ms,
                  ran.total_ms);
    const std::string times = text;
    print_variant_line(program, ran.algorithm, ran.variant, ran.layer, ran.backend,
                       times + (ran.detail.empty() ? "" : "; " + ran.detail));
  }
}

}  // namespace kbench::tools
