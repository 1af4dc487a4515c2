#!/usr/bin/env python3
"""Turns compare's JSON lines into Markdown tables and PNG plots.

    perf/report.py RESULTS.jsonl [--markdown report.md] [--plots DIR]

    perf/report.py RESULTS.jsonl --portability    (only the Kokkos / native summary, for README)

    perf/report.py WIDTHS.jsonl --widths [--markdown widths.md] [--plots DIR]
                                                  (perf/width_sweep.sh's results, issue 12)

    perf/report.py RESULTS.jsonl --ceilings CEILINGS.jsonl [--markdown report.md]
                                                  (adds the CPU fraction-of-ceiling table, from
                                                  cpu-ceiling's JSON lines; perf/cpu_check.sh)

Tables, per algorithm: each case's full results; time and speedup vs the sequential reference
per size (the reports' layout); where each parallel variant starts beating the sequential
reference (crossover); Kokkos / native per size and backend, three ways (below); the OpenMP
thread sweep. After them, the Kokkos / native ratios of every algorithm in one summary table.

Kokkos / native (issue 14): per case and backend, the best native compute-only time (native CUDA
on the GPU, the OpenMP CPU variants on the host) against three sets of portable variants, each
inside the one before: tuned (every portable variant), plain (kernels of standard C++ only: the
`-plain` builds, whose kbench helpers take their C++ forms, and schedules that use no helper) and
simple (the idiomatic first schedules: one MDRange pass, ScatterView counting). compare writes
each portable variant's "isa" (tuned/plain) and "schedule" (tuned/simple); for results written
before it did, simple schedules are known by name and the plain set is left empty.
Plots (when matplotlib is installed): time and speedup vs size, one line per variant, per layer.
sad-pruned: speedup of each pruned variant over the full search timed on the same input (the
"sad" records of the same case), per noise σ, as a table and a plot like the paper's Fig. 6.
CPU ceilings (issue 13, with --ceilings): each OpenMP variant's throughput as a fraction of the
host's ceiling measured by cpu-ceiling on all threads: sad's byte-SADs/s against the fastest
psadbw/vpsadbw rate, lbp's and conv's bytes/s against the copy bandwidth.
"""

import re

import argparse
import collections
import json
import os
import sys

# Hardware ceilings for the achieved-fraction column: device-to-device copy bandwidth (read +
# write) and fp32 rate. Copy figures as measured on such machines; fp32 from the datasheet.
CEILINGS = {
    "H200": {"gb_per_s": 4300.0, "gflop_per_s": 67000.0},
    "H100": {"gb_per_s": 3000.0, "gflop_per_s": 67000.0},
}


# Simple schedules by name, for results written before compare printed "schedule".
SIMPLE_SCHEDULES = ("kokkos-mdrange", "kokkos-scatterview")
# The native variants a backend's portable variants are measured against.
NATIVE_LAYER = {"cuda": "native_cuda", "openmp": "native_cpu"}


def portable_sets(r):
    """The sets of the Kokkos / native table a portable record belongs to: tuned always, plain
    where its kernels are standard C++ only, simple for the simple schedules."""
    simple = r.get("schedule") == "simple" if "schedule" in r else any(
        r["variant"].startswith(name + "-") for name in SIMPLE_SCHEDULES)
    sets = {"tuned"}
    if r.get("isa") == "plain":
        sets.add("plain")
    if simple:
        sets.add("simple")
    return sets


# The cpu-ceiling measurement and the record field each algorithm's CPU fraction compares.
CPU_CEILING_OF = {
    "sad": ("packed_sad", "gops_per_s", "Gsad/s"),
    "lbp": ("copy_bandwidth", "gb_per_s", "GB/s"),
    "conv": ("copy_bandwidth", "gb_per_s", "GB/s"),
}


def load_ceilings(path):
    """cpu-ceiling's JSON lines as {ceiling: its best line} (the fastest instruction of each)."""
    best = {}
    for r in load(path):
        name = r.get("ceiling")
        if name and (name not in best or r["value"] > best[name]["value"]):
            best[name] = r
    return best


def cpu_ceiling_table(main, ceilings):
    """Each OpenMP variant's throughput against the host ceiling of its algorithm."""
    if not ceilings:
        return []
    rows = [r for r in main if r.get("backend") == "openmp" and r["algorithm"] in CPU_CEILING_OF
            and CPU_CEILING_OF[r["algorithm"]][0] in ceilings]
    if not rows:
        return []
    parts = []
    for name in ("packed_sad", "copy_bandwidth"):
        c = ceilings.get(name)
        if c:
            parts.append(f"{name} {fmt(c['value'])} {c['unit']} ({c.get('instruction', '')}, "
                         f"{c.get('threads', '?')} threads, {c.get('cpu', '?')}, level "
                         f"{c.get('level', '?')})")
    out = ["## CPU variants against the host's ceilings", "",
           "Ceilings from cpu-ceiling on all threads: " + "; ".join(parts) + ". sad: byte-SADs/s "
           "against the fastest psadbw/vpsadbw rate; lbp and conv: bytes moved per second "
           "against the copy bandwidth (read + write).", "",
           "| algorithm | case | variant | layer | achieved | ceiling | % of ceiling |",
           "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["algorithm"], case_key(r["case"]))):
        name, field, unit = CPU_CEILING_OF[r["algorithm"]]
        achieved, ceiling = r.get(field, 0.0), ceilings[name]["value"]
        out.append(f"| {r['algorithm']} | {r['case']} | {r['variant']} | {r['layer']} | "
                   f"{fmt(achieved)} {unit} | {fmt(ceiling)} {unit} | "
                   f"{100 * achieved / ceiling:.1f} |")
    return out + [""]


def ceiling_for(device):
    for key, value in CEILINGS.items():
        if key in device:
            return value
    return None


def case_key(case):
    """Orders cases by pixel count where the name says it (480p < 1080p < 4k < WxH...)."""
    named = {"480p": 640 * 480, "720p": 1280 * 720, "1080p": 1920 * 1080, "4k": 3840 * 2160,
             "8k": 7680 * 4320}
    if case in named:
        return (0, named[case], case)
    if "x" in case:
        try:
            w, h = case.lower().split("x")[:2]
            return (0, int(w) * int(h), case)
        except ValueError:
            pass
    return (1, 0, case)


def load(path):
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{number}: not a JSON line ({e})")
    return records


def main_time(r):
    """Compute-only time where the variant has one, else its end-to-end time."""
    return r.get("compute_median_ms", r.get("e2e_median_ms"))


def fmt(value, digits=4):
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.1f}"
    return f"{value:.{digits}g}"


def speedup(r):
    """Speedup vs the sequential reference; '-' where compare skipped it (too slow)."""
    value = r.get("speedup_vs_sequential")
    return "-" if value is None else f"{value:.1f}"


def error_text(r):
    """The record's max error; "other definition" for a peer that computes something else."""
    return f"{r['max_error']:g}" if "max_error" in r else "other definition"


def split_runs(records):
    """Main runs (all threads; peers, perf/peers.py, always) apart from the OpenMP thread sweep's
    reduced-thread runs."""
    max_threads = max((r.get("threads", 1) for r in records), default=1)
    main, sweep = [], []
    for r in records:
        in_main = r.get("threads", 1) == max_threads or r.get("layer") == "peer"
        (main if in_main else sweep).append(r)
    # The sweep's top point is the main run of the same variant.
    sweep += [r for r in main if r["backend"] == "openmp"]
    return main, sweep


def latest(records):
    """The last record for each (algorithm, case, variant)."""
    table = collections.OrderedDict()
    for r in records:
        table[(r["algorithm"], r["case"], r["variant"])] = r
    return list(table.values())


def markdown(records, ceilings=None):
    main, sweep = split_runs(records)
    main = latest(main)
    lines = []
    first = records[0]
    lines.append(f"# Results: {first.get('device', '?')}")
    lines.append("")
    devices = sorted({r.get("device", "?") for r in records})
    dates = sorted({r.get("date", "?")[:10] for r in records})
    commits = sorted({r.get("commit", "?") for r in records})
    lines.append(f"Devices: {', '.join(devices)}. Dates: {', '.join(dates)}. "
                 f"Commits: {', '.join(commits)}.")
    lines.append("")
    lines.append("Times are medians in ms. *compute* is the kernel work on resident data "
                 "(batched launches, inputs rotated past the cache); *e2e* adds the host↔device "
                 "copies. Speedup is against the plain sequential reference (seq-aos or its "
                 "algorithm's equivalent) on the same case. % of peak: achieved bytes/s against "
                 "the device's copy bandwidth, for GPU variants.")
    by_algo = collections.OrderedDict()
    for r in main:
        by_algo.setdefault(r["algorithm"], []).append(r)
    for algo, rows in by_algo.items():
        cases = sorted({r["case"] for r in rows}, key=case_key)
        lines += ["", f"## {algo}", ""]
        for case in cases:
            case_rows = [r for r in rows if r["case"] == case]
            unit = case_rows[0].get("operation_unit", "op")
            lines.append(f"### {algo} — {case} ({case_rows[0].get('description', '')})")
            lines.append("")
            lines.append(f"| variant | layer | backend | compute ms | min ms | e2e ms | GB/s | "
                         f"G{unit}/s | speedup | % of peak BW | max error |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
            for r in case_rows:
                ceiling = ceiling_for(r.get("device", "")) if r["backend"] == "cuda" else None
                peak = f"{100 * r['gb_per_s'] / ceiling['gb_per_s']:.1f}" if ceiling else "-"
                lines.append(
                    f"| {r['variant']} | {r['layer']} | {r['backend']} | "
                    f"{fmt(r.get('compute_median_ms'))} | {fmt(r.get('compute_min_ms'))} | "
                    f"{fmt(r.get('e2e_median_ms'))} | {r['gb_per_s']:.1f} | "
                    f"{r['gops_per_s']:.1f} | {speedup(r)} | {peak} | "
                    f"{error_text(r)} |")
            lines.append("")
        # Reports' layout: time (speedup) per size.
        variants = list(collections.OrderedDict.fromkeys(r["variant"] for r in rows))
        lines.append(f"### {algo}: time in ms (speedup vs sequential) per size")
        lines.append("")
        lines.append("| variant | " + " | ".join(cases) + " |")
        lines.append("|---|" + "---|" * len(cases))
        index = {(r["variant"], r["case"]): r for r in rows}
        for v in variants:
            cells = []
            for case in cases:
                r = index.get((v, case))
                cells.append(f"{fmt(main_time(r))} ({speedup(r)}×)" if r else "-")
            lines.append(f"| {v} | " + " | ".join(cells) + " |")
        lines.append("")
        lines += crossover(rows, cases)
        lines += kokkos_native_table(rows, cases)
        lines += thread_sweep([r for r in sweep if r["algorithm"] == algo])
    lines += pruned_table(records)
    lines += cemd_table(records)
    lines += cemd_l2_table(records)
    lines += portability_summary(main)
    lines += cpu_ceiling_table(main, ceilings)
    return "\n".join(lines) + "\n"


# Full search each pruned variant is measured against, by backend: the fastest full search of that
# kind (on OpenMP, the SIMD variant of whichever CPU level ran; the blocked map in older runs).
FULL_SEARCH = {"cuda": ["cuda-regblock-vsad-p32"],
               "openmp": ["omp-simd-avx512", "omp-simd-avx2", "omp-simd-generic", "omp-blocked"],
               "serial": ["seq"]}
PHOTO_SIGMA = 5.0  # compare's default σ for the photo cases


def pruned_case(case):
    """(case family, σ) of a sad case name such as photo3072-q128-s10-nomap; the best K positions
    (photo3072-q128-s10-top10) are a family of their own, photo3072-q128-top10."""
    base = case[:-len("-nomap")] if case.endswith("-nomap") else case
    top = re.search(r"-top[0-9]+$", base)
    asked = top.group(0) if top else ""
    base = base[:len(base) - len(asked)]
    match = re.match(r"(.*)-s([0-9.]+)$", base)
    if match:
        return match.group(1) + asked, float(match.group(2))
    return base + asked, PHOTO_SIGMA if base.startswith("photo") else None


def pruned_speedups(records):
    """(family, σ, pruned variant, pruned ms, full-search variant, full ms, speedup, summary)."""
    main = latest(split_runs(records)[0])
    full = {(r["case"], r["variant"]): r for r in main if r["algorithm"] == "sad"}
    rows = []
    for r in main:
        if r["algorithm"] != "sad-pruned":
            continue
        baseline = next((full[(r["case"], v)] for v in FULL_SEARCH.get(r["backend"], [])
                         if (r["case"], v) in full), None)
        if not baseline:
            continue
        family, sigma = pruned_case(r["case"])
        rows.append((family, sigma, r["variant"], main_time(r), baseline["variant"],
                     main_time(baseline), main_time(baseline) / main_time(r),
                     r.get("summary", "")))
    return sorted(rows, key=lambda x: (x[0], x[1] if x[1] is not None else -1, x[2]))


def pruned_table(records):
    rows = pruned_speedups(records)
    if not rows:
        return []
    lines = ["## sad-pruned against full search on the same input", "",
             "| case | σ | pruned variant | ms | full search | ms | speedup | pruning |",
             "|---|---|---|---|---|---|---|---|"]
    for family, sigma, variant, ms, full_variant, full_ms, gain, summary in rows:
        lines.append(f"| {family} | {'-' if sigma is None else f'{sigma:g}'} | {variant} | "
                     f"{fmt(ms)} | {full_variant} | {fmt(full_ms)} | {gain:.1f}× | {summary} |")
    return lines + [""]


def cemd_cases(records):
    """cemd records of the main runs by case, the GPU and host variants alike."""
    main = latest(split_runs(records)[0])
    return [r for r in main if r["algorithm"] == "cemd"]


def cemd_table(records):
    """Warn et al.'s Table I layout: kernel and total seconds and comparisons per second, per
    variant, on each nearest-two case of 4·2^20 comparisons (4Mi, 4Mi-raw)."""
    rows = [r for r in cemd_cases(records) if r["case"] in ("4Mi", "4Mi-raw")]
    if not rows:
        return []
    lines = ["## cemd in the layout of Warn et al.'s Table I (4·2^20 comparisons)", "",
             "| case | variant | kernel s | total s | kernel comparisons/s | total comparisons/s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        comparisons = r["operations"]
        kernel = r.get("compute_median_ms")
        total = r.get("e2e_median_ms", kernel)

        def rate(ms):
            return "-" if ms is None else f"{comparisons / (ms / 1e3):.3g}"

        def seconds(ms):
            return "-" if ms is None else f"{ms / 1e3:.4g}"

        lines.append(f"| {r['case']} | {r['variant']} | {seconds(kernel)} | {seconds(total)} | "
                     f"{rate(kernel)} | {rate(total)} |")
    return lines + [""]


def cemd_l2_table(records):
    """Euclidean matching (issue 36): per l2 nearest-two case, every GPU variant and peer, compute
    (end-to-end for streamed variants) and end-to-end comparisons/s, the ratio to the fastest, and
    the peers' agreement with kbench's exact nearest two on their sample."""
    rows = [r for r in cemd_cases(records) if r["case"].endswith("-l2")
            and (r["backend"] == "cuda" or r.get("layer") == "peer")]
    if not rows:
        return []
    lines = ["## cemd, Euclidean nearest two (l2): variants and peers", "",
             "| case | variant | layer | backend | ms | G comparisons/s | end-to-end G/s | "
             "vs fastest | agreement (best / second index, of sampled) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case in sorted({r["case"] for r in rows}, key=lambda c: min(
            r["operations"] for r in rows if r["case"] == c)):
        group = sorted((r for r in rows if r["case"] == case), key=main_time)
        fastest = main_time(group[0])
        for r in group:
            rate = r["operations"] / (main_time(r) / 1e3) / 1e9
            e2e = r.get("e2e_median_ms")
            e2e_rate = "-" if e2e is None else f"{r['operations'] / (e2e / 1e3) / 1e9:.4g}"
            agree = r.get("agreement")
            agreement = "-" if not agree else (
                f"{agree.get('best_index', '?')} / {agree.get('second_index', '?')} of "
                f"{agree.get('queries', '?')}")
            lines.append(f"| {case} | {r['variant']} | {r.get('layer', '-')} | {r['backend']} | "
                         f"{main_time(r):.4g} | {rate:.4g} | {e2e_rate} | "
                         f"{main_time(r) / fastest:.3g}× | {agreement} |")
    return lines + [""]


def crossover(rows, cases):
    """Per parallel variant, the smallest case where it beats the sequential reference, and the
    smallest from which it beats it at every larger case too (compute-only, and with the
    host<->device copies where the variant has them)."""
    if len(cases) < 2:
        return []

    def first_and_from(speedups):
        """speedups: (case, speedup) in size order."""
        faster = [c for c, s in speedups if s > 1]
        stays = None
        for c, s in reversed(speedups):
            if s <= 1:
                break
            stays = c
        return (faster[0] if faster else "never"), (stays or "never")

    out = ["### where each parallel variant starts beating the sequential reference (crossover)",
           "", "| variant | layer | backend | first faster | faster from | "
           "first faster, with transfers | faster from, with transfers |",
           "|---|---|---|---|---|---|---|"]
    index = {(r["variant"], r["case"]): r for r in rows}
    for v in collections.OrderedDict.fromkeys(r["variant"] for r in rows):
        # Cases without a sequential time (skipped as too slow) say nothing about the crossover.
        series = [index[(v, c)] for c in cases
                  if (v, c) in index and index[(v, c)].get("speedup_vs_sequential")]
        if not series or series[0]["layer"] == "sequential":
            continue
        compute = first_and_from([(r["case"], r["speedup_vs_sequential"]) for r in series])
        # The reference's time is speedup × this variant's main time.
        e2e = [(r["case"], r["speedup_vs_sequential"] * main_time(r) / r["e2e_median_ms"])
               for r in series if "e2e_median_ms" in r]
        with_copies = first_and_from(e2e) if e2e else ("-", "-")
        out.append(f"| {v} | {series[0]['layer']} | {series[0]['backend']} | {compute[0]} | "
                   f"{compute[1]} | {with_copies[0]} | {with_copies[1]} |")
    return out + [""]


def kokkos_native_ratios(rows, cases):
    """Per case and backend with native variants: (case, backend, best native record, {set: best
    portable record of that set or None}) from compute-only times."""
    out = []
    for case in cases:
        for backend, native_layer in NATIVE_LAYER.items():
            timed = [r for r in rows if r["case"] == case and r["backend"] == backend
                     and "compute_median_ms" in r]
            native = min((r for r in timed if r["layer"] == native_layer),
                         key=lambda r: r["compute_median_ms"], default=None)
            portable = [r for r in timed if r["layer"] == "portable"]
            if not native or not portable:
                continue
            best = {}
            for name in ("tuned", "plain", "simple"):
                best[name] = min((r for r in portable if name in portable_sets(r)),
                                 key=lambda r: r["compute_median_ms"], default=None)
            out.append((case, backend, native, best))
    return out


def ratio_cells(native, r):
    """'variant', 'ms', 'ratio' cells of a portable record against the native one."""
    if r is None:
        return ["—", "—", "—"]
    return [r["variant"], fmt(r["compute_median_ms"]),
            f"{r['compute_median_ms'] / native['compute_median_ms']:.2f}×"]


def kokkos_native_table(rows, cases):
    """Best Kokkos compute time over best native compute time, per size and backend, for the
    tuned, plain and simple sets of portable variants."""
    ratios = kokkos_native_ratios(rows, cases)
    if not ratios:
        return []
    out = ["### Kokkos / native: tuned, plain and simple portable variants (best compute-only "
           "time of each)", "",
           "Tuned: any portable variant; plain: kernels of standard C++ only (`-plain` builds and "
           "helper-free schedules); simple: one MDRange pass or ScatterView counting. Native: "
           "native CUDA for the cuda backend, the OpenMP CPU variants for openmp.", "",
           "| case | backend | best native | ms | best tuned Kokkos | ms | / native | "
           "best plain Kokkos | ms | / native | best simple Kokkos | ms | / native |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, backend, native, best in ratios:
        cells = [case, backend, native["variant"], fmt(native["compute_median_ms"])]
        for name in ("tuned", "plain", "simple"):
            cells += ratio_cells(native, best[name])
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def best_peer(rows, case, backend):
    """The fastest peer (perf/peers.py) of a case on the same kind of device: GPU peers for cuda,
    host peers (any thread count) otherwise; None without one."""
    peers = [r for r in rows if r["layer"] == "peer" and r["case"] == case and
             (r["backend"] == "cuda") == (backend == "cuda") and "compute_median_ms" in r]
    return min(peers, key=lambda r: r["compute_median_ms"], default=None)


def portability_summary(main):
    """The Kokkos / native ratios of every algorithm, case and backend in one table (the README's
    portability figures): best native time, then tuned / plain / simple ratios."""
    lines = []
    for algo in collections.OrderedDict.fromkeys(r["algorithm"] for r in main):
        rows = [r for r in main if r["algorithm"] == algo]
        cases = sorted({r["case"] for r in rows}, key=case_key)
        for case, backend, native, best in kokkos_native_ratios(rows, cases):
            def cell(name):
                r = best[name]
                if r is None:
                    return "—"
                ratio = r["compute_median_ms"] / native["compute_median_ms"]
                return f"{ratio:.2f}× (`{r['variant']}`)"
            peer = best_peer(rows, case, backend)
            peer_cell = "—" if peer is None else (
                f"{peer['compute_median_ms'] / native['compute_median_ms']:.2f}× "
                f"(`{peer['variant']}`)")
            lines.append(f"| {algo} | {case} | {backend} | {fmt(native['compute_median_ms'])} "
                         f"(`{native['variant']}`) | {cell('tuned')} | {cell('plain')} | "
                         f"{cell('simple')} | {peer_cell} |")
    if not lines:
        return []
    return ["## Kokkos / native, every algorithm: tuned, plain and simple", "",
            "Best compute-only time of each set over the best native one (native CUDA for cuda, "
            "the OpenMP CPU variants for openmp); the plain set is what Kokkos reaches without "
            "target-specific instructions, the simple set what its first idiomatic schedule "
            "reaches; the best peer is the fastest library timed by perf/peers.py on the same "
            "kind of device (below 1: the library is faster).", "",
            "| algorithm | case | backend | best native ms | tuned Kokkos / native | "
            "plain Kokkos / native | simple Kokkos / native | best peer / native |",
            "|---|---|---|---|---|---|---|---|"] + lines + [""]


def thread_sweep(records):
    if not records:
        return []
    threads = sorted({r.get("threads", 1) for r in records})
    if len(threads) < 2:
        return []
    case = records[0]["case"]
    index = {(r["variant"], r.get("threads", 1)): r for r in records if r["case"] == case}
    variants = list(collections.OrderedDict.fromkeys(v for v, _ in index))
    out = [f"### OpenMP thread sweep ({case}): time in ms (speedup over {threads[0]} "
           f"thread{'s' if threads[0] > 1 else ''})", "",
           "| variant | " + " | ".join(f"{t} threads" for t in threads) + " |",
           "|---|" + "---|" * len(threads)]
    for v in variants:
        base = index.get((v, threads[0]))
        cells = []
        for t in threads:
            r = index.get((v, t))
            if r and base:
                cells.append(f"{fmt(main_time(r))} ({main_time(base) / main_time(r):.1f}×)")
            else:
                cells.append("-")
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    return out + [""]


def save_plot(fig, plt, directory, name):
    fig.tight_layout()
    path = os.path.join(directory, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"report.py: wrote {path}")


def pyplot():
    """matplotlib's pyplot without a display, or None (with a note) where it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed; no plots", file=sys.stderr)
        return None
    return plt


def plots(records, directory):
    plt = pyplot()
    if plt is None:
        return
    main, _ = split_runs(records)
    main = latest(main)
    os.makedirs(directory, exist_ok=True)
    for algo in sorted({r["algorithm"] for r in main}):
        rows = [r for r in main if r["algorithm"] == algo]
        cases = sorted({r["case"] for r in rows}, key=case_key)
        if len(cases) < 2:
            continue
        fig, (ax_time, ax_speed) = plt.subplots(1, 2, figsize=(13, 5))
        styles = {"sequential": ":", "native_cpu": "-.", "portable": "--", "native_cuda": "-"}
        for v in collections.OrderedDict.fromkeys(r["variant"] for r in rows):
            series = {r["case"]: r for r in rows if r["variant"] == v}
            xs = [c for c in cases if c in series]
            layer = series[xs[0]]["layer"]
            ax_time.plot(xs, [main_time(series[c]) for c in xs], styles.get(layer, "-"),
                         marker="o", label=v)
            ax_speed.plot(xs, [series[c].get("speedup_vs_sequential") or float("nan") for c in xs],
                          styles.get(layer, "-"), marker="o", label=v)
        ax_time.set_yscale("log")
        ax_time.set_ylabel("median ms (compute, or e2e for streamed variants)")
        ax_speed.set_yscale("log")
        ax_speed.set_ylabel("speedup vs sequential reference")
        for ax in (ax_time, ax_speed):
            ax.set_xlabel("case")
            ax.grid(True, which="both", alpha=0.3)
        ax_speed.legend(fontsize=7, ncol=2)
        fig.suptitle(f"{algo} on {rows[0].get('device', '?')}")
        save_plot(fig, plt, directory, f"{algo}.png")
    pruned_plot(records, directory, plt)
    cemd_plot(records, directory, plt)
    cemd_plot(records, directory, plt, "l2")


def cemd_plot(records, directory, plt, distance="normalised"):
    """Warn et al.'s Fig. 1: comparisons per second against the comparisons of a run, per GPU
    variant (and GPU peer), nearest-two cases of one distance (compute-only; end-to-end for
    streamed variants): normalised into cemd_throughput.png, l2 into cemd_l2_throughput.png."""
    if distance == "l2":
        rows = [r for r in cemd_cases(records) if r["backend"] == "cuda"
                and r["case"].endswith("-l2")]
    else:
        rows = [r for r in cemd_cases(records)
                if r["backend"] == "cuda" and not re.search(r"-(raw|l2|all)$", r["case"])]
    variants = collections.OrderedDict.fromkeys(r["variant"] for r in rows)
    fig, ax = plt.subplots(figsize=(8, 5))
    drawn = 0
    for v in variants:
        series = sorted((r["operations"], r["operations"] / (main_time(r) / 1e3))
                        for r in rows if r["variant"] == v)
        if len(series) < 2:
            continue
        ax.plot([x for x, _ in series], [y for _, y in series], marker="o", label=v)
        drawn += 1
    if drawn == 0:
        plt.close(fig)
        return
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("comparisons per run (queries × database)")
    ax.set_ylabel("comparisons per second")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(f"cemd ({distance}, nearest two) on {rows[0].get('device', '?')}")
    save_plot(fig, plt, directory,
              "cemd_l2_throughput.png" if distance == "l2" else "cemd_throughput.png")


def pruned_plot(records, directory, plt):
    """The paper's Fig. 6: speedup over full search against σ, per case family and variant."""
    rows = [r for r in pruned_speedups(records) if r[1] is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for family, variant in collections.OrderedDict.fromkeys((r[0], r[2]) for r in rows):
        series = sorted((r[1], r[6]) for r in rows if r[0] == family and r[2] == variant)
        if len(series) < 2:
            continue
        ax.plot([x for x, _ in series], [y for _, y in series], marker="o",
                label=f"{variant} ({family})")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("query noise σ (grey levels)")
    ax.set_ylabel("speedup over full search on the same input")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    devices = sorted({r.get("device", "?") for r in records if r["algorithm"] == "sad-pruned"})
    fig.suptitle(f"sad-pruned on {' and '.join(devices)}")
    save_plot(fig, plt, directory, "sad_pruned_noise.png")


WIDTH_REFERENCE = 3840


def case_pixels(case):
    match = re.fullmatch(r"(\d+)x(\d+)", case)
    return (int(match.group(1)), int(match.group(1)) * int(match.group(2))) if match else None


def width_series(records):
    """Per algorithm and series (native / Kokkos CUDA, compute-only / end to end): width -> (best
    variant, pixels per second). The best variant of a layer at each width, by median time."""
    series = collections.defaultdict(dict)
    for r in latest(split_runs(records)[0]):
        size = case_pixels(r["case"])
        if r.get("backend") != "cuda" or size is None:
            continue
        layer = {"native_cuda": "native", "portable": "kokkos"}.get(r["layer"])
        if layer is None:
            continue
        width, pixels = size
        for kind, key in (("compute", "compute_median_ms"), ("e2e", "e2e_median_ms")):
            if key not in r:
                continue
            rate = pixels / (r[key] * 1e-3)
            best = series[(r["algorithm"], f"{layer} {kind}")]
            if width not in best or rate > best[width][1]:
                best[width] = (r["variant"], rate)
    return series


def width_tables(records):
    """Per algorithm: pixels per second against width, each series' ratio to its 3840 width."""
    series = width_series(records)
    lines = ["# Throughput against image width (issue 12)", "",
             f"Best CUDA variant per layer at each width, Gpixel/s; (×) is the time per pixel over "
             f"the same series' at width {WIDTH_REFERENCE} (target ≤ 1.15)."]
    for algo in sorted({a for a, _ in series}):
        names = sorted(n for a, n in series if a == algo)
        widths = sorted({w for n in names for w in series[(algo, n)]})
        lines += ["", f"## {algo}", "",
                  "| width | " + " | ".join(names) + " | Kokkos / native, compute |",
                  "|---:|" + "---|" * (len(names) + 1)]
        for w in widths:
            cells = []
            for n in names:
                points = series[(algo, n)]
                if w not in points:
                    cells.append("—")
                    continue
                variant, rate = points[w]
                ref = points.get(WIDTH_REFERENCE)
                ratio = f" ({ref[1] / rate:.2f}×)" if ref else ""
                cells.append(f"{rate / 1e9:.2f}{ratio} `{variant}`")
            native, kokkos = (series[(algo, f"{layer} compute")].get(w)
                              for layer in ("native", "kokkos"))
            cells.append(f"{native[1] / kokkos[1]:.2f}×" if native and kokkos else "—")
            lines.append(f"| {w} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def width_plot(records, directory):
    plt = pyplot()
    if plt is None:
        return
    series = width_series(records)
    os.makedirs(directory, exist_ok=True)
    styles = {"native compute": "-", "kokkos compute": "--", "native e2e": "-.",
              "kokkos e2e": ":"}
    for algo in sorted({a for a, _ in series}):
        fig, ax = plt.subplots(figsize=(9, 5))
        for name in sorted(n for a, n in series if a == algo):
            points = series[(algo, name)]
            widths = sorted(points)
            ax.plot(widths, [points[w][1] / 1e9 for w in widths], styles.get(name, "-"),
                    marker="o", label=name)
        ax.axvline(WIDTH_REFERENCE, color="grey", alpha=0.4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("image width (pixels)")
        ax.set_ylabel("Gpixel/s (best CUDA variant of the layer)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.suptitle(f"{algo}: throughput against width")
        save_plot(fig, plt, directory, f"{algo}_widths.png")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="compare --json output (JSON lines)")
    parser.add_argument("--markdown", help="write the tables here (default: stdout)")
    parser.add_argument("--plots", help="write PNG plots into this directory")
    parser.add_argument("--portability", action="store_true",
                        help="only the Kokkos / native summary table (tuned, plain, simple)")
    parser.add_argument("--widths", action="store_true",
                        help="throughput against width (perf/width_sweep.sh's results)")
    parser.add_argument("--ceilings",
                        help="cpu-ceiling's JSON lines: adds the CPU fraction-of-ceiling table")
    args = parser.parse_args()
    records = load(args.results)
    if not records:
        sys.exit(f"{args.results}: no results")
    if args.portability:
        text = "\n".join(portability_summary(latest(split_runs(records)[0])))
    elif args.widths:
        text = width_tables(records)
    else:
        text = markdown(records, load_ceilings(args.ceilings) if args.ceilings else None)
    if args.markdown:
        tmp = args.markdown + ".partial"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.markdown)
    else:
        sys.stdout.write(text)
    if args.plots:
        (width_plot if args.widths else plots)(records, args.plots)


if __name__ == "__main__":
    main()
