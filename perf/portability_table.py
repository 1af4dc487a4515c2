#!/usr/bin/env python3
"""The tables of perf/cpu_portability.sh: per case and build, the fastest native CPU variant and
the fastest Kokkos-OpenMP variant on all threads and their ratio; then, per build, both over
the thread counts of the sweep (speedup against one thread).

    perf/portability_table.py OUTDIR BUILD_DIR [BUILD_DIR ...]
    perf/portability_table.py --best COMPARE_JSONL SKIP   the fastest native CPU and Kokkos-OpenMP
                                                          variants among the lines after the first
                                                          SKIP (one case's run), on one line
"""

import json
import os
import sys


def rows_of(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def best(rows, layer):
    mine = [r for r in rows if r["layer"] == layer and r["backend"] == "openmp"]
    return min(mine, key=lambda r: r["compute_median_ms"]) if mine else None


def cases_of(rows):
    keys = []
    for r in rows:
        key = (r["algorithm"], r["case"], r["description"])
        if key not in keys:
            keys.append(key)
    return keys


def main():
    if sys.argv[1] == "--best":
        rows = rows_of(sys.argv[2])[int(sys.argv[3]):]
        native, portable = best(rows, "native_cpu"), best(rows, "portable")
        if native and portable:
            print(native["variant"], portable["variant"])
        return 0
    out, builds = sys.argv[1], [os.path.basename(b.rstrip("/")) for b in sys.argv[2:]]
    runs = {b: rows_of(os.path.join(out, b, "compare.jsonl")) for b in builds}
    keys = []
    for b in builds:
        keys += [k for k in cases_of(runs[b]) if k not in keys]
    first = next((r for b in builds for r in runs[b]), None)
    if first is None:
        print("no compare.jsonl rows under", out)
        return 1
    print(f"# Kokkos-OpenMP against the native CPU layer\n\n{first['device']}, "
          f"{first['threads']} threads, {first['date'][:10]}, commit {first['commit']}\n")
    print("| case | build | best native CPU | best Kokkos-OpenMP | Kokkos / native |")
    print("|---|---|---|---|---|")
    for algorithm, case, description in keys:
        for b in builds:
            rows = [r for r in runs[b] if (r["algorithm"], r["case"], r["description"]) ==
                    (algorithm, case, description)]
            native, portable = best(rows, "native_cpu"), best(rows, "portable")
            if not native or not portable:
                continue
            ratio = portable["compute_median_ms"] / native["compute_median_ms"]
            print(f"| {algorithm} {case} | {b} | `{native['variant']}` "
                  f"{native['compute_median_ms']:.3f} ms | `{portable['variant']}` "
                  f"{portable['compute_median_ms']:.3f} ms | {ratio:.2f}× |")
    for b in builds:
        sweep = rows_of(os.path.join(out, b, "sweep.jsonl"))
        if not sweep:
            continue
        full = runs[b]
        print(f"\n## OpenMP thread sweep, {b} (ms; speedup against 1 thread)\n")
        counts = sorted({r["threads"] for r in sweep + full})
        print("| case | variant | " + " | ".join(str(t) for t in counts) + " |")
        print("|---|---|" + "---|" * len(counts))
        for algorithm, case, description in cases_of(sweep):
            same = [r for r in sweep + full if (r["algorithm"], r["case"], r["description"]) ==
                    (algorithm, case, description)]
            layers = ("native_cpu", "portable")  # not the reference compare also runs
            for variant in dict.fromkeys(r["variant"] for r in sweep
                                         if r in same and r["layer"] in layers):
                by_threads = {r["threads"]: r["compute_median_ms"] for r in same
                              if r["variant"] == variant}
                one = by_threads.get(1)
                cells = []
                for t in counts:
                    ms = by_threads.get(t)
                    cells.append("" if ms is None else
                                 f"{ms:.3f}" + (f" ({one / ms:.1f}×)" if one else ""))
                print(f"| {algorithm} {case} | `{variant}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
