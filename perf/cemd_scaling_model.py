#!/usr/bin/env python3
"""Predicts the rate of cemd-match over many GPUs and nodes (issue 11), and where it stops scaling.

From one measured single-GPU rate and the machine's bandwidths and latencies, the time of one
batch of Q queries against a database of D descriptors sharded over P GPUs (G per node, one
node = one MPI rank or G ranks, the node's traffic is the same) is

  T(P) = broadcast(Q x 128 B) + read(D/P rows) + overhead + Q * ceil(D/P) / R + reduce(Q x 16 B)

and the rate is Q*D / T(P). docs/scale-out.md explains the terms and the assumptions.

  perf/cemd_scaling_model.py --rate 20                  # G comparisons/s of one GPU
  perf/cemd_scaling_model.py --from results/runs.csv    # or scaling.jsonl, or compare's JSONL
  perf/cemd_scaling_model.py --rate 20 --net-gbs 50 --gpus 8,24,1000 --plot model.png

Prints Markdown (also to --markdown FILE). Python 3 standard library; --plot needs matplotlib.
"""

import argparse
import csv
import json
import math
import sys
from dataclasses import dataclass, replace

DESCRIPTOR_BYTES = 128  # one SIFT descriptor, u8
TOP2_BYTES = 16  # a query's nearest two: two 64-bit keys (distance bits, database row)
ANCHOR_RATE = 1.2e9  # Warn et al. 2010: comparisons/s on 24 GPUs (GTX 295 era) in 6 nodes
ANCHOR_GPUS = 24


@dataclass(frozen=True)
class Machine:
    name: str
    gpu_rate: float  # comparisons/s of one GPU, the measured kernel rate
    gpus_per_node: int
    pcie: float  # bytes/s host <-> one GPU
    network: float  # bytes/s of one node's link
    latency: float  # s per network message
    disk: float  # bytes/s a node reads its GPUs' database rows at
    gpu_overhead: float  # s per GPU and batch: launches, synchronisation, small copies
    merge_rate: float  # queries/s a host core merges nearest-two lists at


@dataclass(frozen=True)
class Workload:
    name: str
    queries: int
    database: int

    @property
    def comparisons(self):
        return self.queries * self.database


def size_name(n):
    for unit, scale in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def parse_size(text):
    scale = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for unit, factor in scale.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def collective(levels, message, machine):
    """The cheaper of a binomial tree (levels whole messages) and a pipelined (scatter +
    allgather, or reduce-scatter + gather) algorithm (two message times, 2 x levels latencies),
    as MPI libraries choose by message size."""
    if levels == 0:
        return 0.0
    tree = levels * (machine.latency + message / machine.network)
    pipelined = 2 * levels * machine.latency + 2 * message / machine.network
    return min(tree, pipelined)


def batch_time(machine, workload, gpus):
    """Seconds of one batch on `gpus` GPUs, by term."""
    used = min(gpus, workload.database)  # a GPU without database rows has nothing to do
    nodes = math.ceil(used / machine.gpus_per_node)
    gpus_on_node = min(used, machine.gpus_per_node)
    levels = math.ceil(math.log2(nodes)) if nodes > 1 else 0
    rows = math.ceil(workload.database / used)
    query_bytes = workload.queries * DESCRIPTOR_BYTES
    top2_bytes = workload.queries * TOP2_BYTES
    # Queries: over the network to every node, then to each GPU over its own PCIe link.
    broadcast = collective(levels, query_bytes, machine) + query_bytes / machine.pcie
    # Each node reads its GPUs' rows from disk (before matching, as cemd-match does); the PCIe
    # copies run on two streams under the kernels and cost only when they are the slower.
    read = gpus_on_node * rows * DESCRIPTOR_BYTES / machine.disk
    kernel = workload.queries * rows / machine.gpu_rate
    copy = rows * DESCRIPTOR_BYTES / machine.pcie
    compute = machine.gpu_overhead + max(kernel, copy)
    # Nearest two back from each GPU, merged on the node, then across nodes (every level
    # merges Q lists on one core).
    merge = workload.queries / machine.merge_rate
    reduce = top2_bytes / machine.pcie + (gpus_on_node - 1) * merge
    reduce += collective(levels, top2_bytes, machine) + levels * merge
    total = broadcast + read + compute + reduce
    rate = workload.comparisons / total
    return {
        "gpus": gpus,
        "nodes": nodes,
        "rows": rows,
        "broadcast": broadcast,
        "read": read,
        "compute": compute,
        "reduce": reduce,
        "total": total,
        "rate": rate,
        "efficiency": rate / (gpus * machine.gpu_rate),
    }


def limits(machine, workload, largest=10**7):
    """The GPU count of the highest rate, and the first at which efficiency falls below 50%
    (None when neither happens up to `largest`), on a geometric grid of GPU counts."""
    counts, p = [], 1.0
    while p <= largest:
        counts.append(int(p))
        p = max(p * 1.02, p + 1)
    terms = [batch_time(machine, workload, n) for n in counts]
    peak = max(terms, key=lambda t: t["rate"])
    half = next((t for t in terms if t["efficiency"] < 0.5), None)
    return peak, half


def ms(seconds):
    return f"{seconds * 1e3:.3g}"


def rate_text(rate):
    return f"{rate / 1e12:.3g} T/s" if rate >= 1e12 else f"{rate / 1e9:.3g} G/s"


def table(machine, workloads, gpu_counts):
    lines = [
        f"### {machine.name}",
        "",
        f"One GPU: {rate_text(machine.gpu_rate)}; {machine.gpus_per_node} GPUs per node; PCIe "
        f"{machine.pcie / 1e9:.3g} GB/s per GPU; network {machine.network / 1e9:.3g} GB/s, "
        f"{machine.latency * 1e6:.3g} us per message; disk {machine.disk / 1e9:.3g} GB/s per "
        f"node; {machine.gpu_overhead * 1e3:.3g} ms per GPU and batch.",
        "",
        "| workload | GPUs | nodes | rows per GPU | broadcast ms | read ms | match ms | "
        "reduce ms | batch s | rate | efficiency |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in workloads:
        for n in gpu_counts:
            t = batch_time(machine, w, n)
            lines.append(
                f"| {w.name} | {n} | {t['nodes']} | {t['rows']:,} | {ms(t['broadcast'])} | "
                f"{ms(t['read'])} | {ms(t['compute'])} | {ms(t['reduce'])} | "
                f"{t['total']:.4g} | {rate_text(t['rate'])} | {t['efficiency']:.0%} |"
            )
    lines += ["", "Where it stops scaling:", ""]
    for w in workloads:
        peak, half = limits(machine, w)
        half_text = (
            "efficiency below 50% already on one GPU: the batch is too small for its fixed "
            "costs"
            if half and half["gpus"] == 1
            else f"efficiency below 50% from about {half['gpus']:,} GPUs "
            f"({half['rows']:,} rows, {w.queries * half['rows'] / 1e9:.3g} G comparisons per "
            f"GPU: the match is then no longer than the fixed broadcast, reduce and overhead)"
            if half
            else "efficiency stays above 50% up to 10^7 GPUs"
        )
        peak_text = (
            f"the rate peaks at {rate_text(peak['rate'])} near {peak['gpus']:,} GPUs"
            if peak["gpus"] < 10**7 * 0.98
            else "the rate still grows at 10^7 GPUs"
        )
        lines.append(f"- {w.name}: {half_text}; {peak_text}.")
    return lines


def rate_from_file(path):
    """The single-GPU rate in a scaling runs.csv (strong study, one process), a scaling.jsonl
    (likewise), or compare's JSON lines (the fastest checked CUDA cemd variant, compute only)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".csv"):
        rows = list(csv.DictReader(text.splitlines()))
        alone = [r for r in rows if r["study"] == "strong" and r["config"] == "alone"]
        if alone:
            return float(alone[0]["match_rate"]), rows
        sys.exit(f"{path}: no strong single-process run")
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    cemd = [r for r in records if r.get("algorithm") == "cemd" and r.get("backend") == "cuda"]
    alone = [r for r in cemd if r.get("study") == "strong" and r.get("config") == "alone"]
    if alone:
        return alone[0]["gops_per_s"] * 1e9, None
    rates = [r["gops_per_s"] for r in cemd if r.get("gops_per_s") and "study" not in r]
    if not rates:
        sys.exit(f"{path}: no CUDA cemd rate")
    return max(rates) * 1e9, None


def measured_lines(machine, runs):
    """The measured strong runs beside the model: the match (the slowest GPU's share, as
    cemd-match times it) and end to end (the whole batch)."""
    strong = [r for r in runs if r["study"] == "strong"]
    workload = Workload("measured", int(strong[0]["queries"]), int(strong[0]["database"]))
    lines = ["", "Measured (strong study) against the model:", ""]
    lines += [
        "| run | GPUs | match rate measured | model | end to end measured | model |",
        "|---|---|---|---|---|---|",
    ]
    for r in strong:
        model = batch_time(machine, workload, int(r["gpus"]))
        lines.append(
            f"| {r['config']} | {r['gpus']} | {rate_text(float(r['match_rate']))} | "
            f"{rate_text(workload.comparisons / model['compute'])} | "
            f"{rate_text(float(r['end_to_end_rate']))} | {rate_text(model['rate'])} |"
        )
    return lines


def plot(path, machine, workloads):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("cemd_scaling_model: matplotlib is missing; no plot", file=sys.stderr)
        return
    counts = sorted({int(1.25**k) for k in range(0, 73)})
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for w in workloads:
        ax.loglog(counts, [batch_time(machine, w, n)["rate"] for n in counts], label=w.name)
    ax.loglog(counts, [n * machine.gpu_rate for n in counts], "k:", label="linear")
    ax.plot([ANCHOR_GPUS], [ANCHOR_RATE], "r*", markersize=12, label="Warn et al. 2010")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("comparisons/s")
    ax.set_title(f"cemd-match model, {machine.name}")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--rate", type=float, help="one GPU's rate, G comparisons/s (default 20)")
    source.add_argument("--from", dest="source", help="runs.csv, scaling.jsonl or compare JSONL")
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--pcie-gbs", type=float, default=50, help="per GPU (PCIe 5 x16: ~50)")
    parser.add_argument("--net-gbs", type=float, default=25, help="per node (200 Gb/s: 25)")
    parser.add_argument("--net-latency-us", type=float, default=3)
    parser.add_argument("--disk-gbs", type=float, default=5, help="per node (NVMe: ~5)")
    parser.add_argument("--gpu-overhead-ms", type=float, default=2)
    parser.add_argument("--merge-mqs", type=float, default=200, help="M queries/s merged per core")
    parser.add_argument("--gpus", default="1,2,8,24,1000", help="GPU counts of the table")
    parser.add_argument(
        "--workload",
        action="append",
        help="NAME=QxD (e.g. bench=64Kix16Mi); default: the benchmark, georeferencing, the "
        "paper's 4Mi case",
    )
    parser.add_argument("--markdown", help="also write the Markdown here")
    parser.add_argument("--plot", help="PNG of rate against GPUs (needs matplotlib)")
    args = parser.parse_args()

    runs = None
    if args.source:
        gpu_rate, runs = rate_from_file(args.source)
        origin = f"measured, {args.source}"
    else:
        gpu_rate = (args.rate or 20) * 1e9
        origin = "given" if args.rate else "the issue's target"
    machine = Machine(
        name=f"H200-class cluster model (one GPU: {rate_text(gpu_rate)}, {origin})",
        gpu_rate=gpu_rate,
        gpus_per_node=args.gpus_per_node,
        pcie=args.pcie_gbs * 1e9,
        network=args.net_gbs * 1e9,
        latency=args.net_latency_us * 1e-6,
        disk=args.disk_gbs * 1e9,
        gpu_overhead=args.gpu_overhead_ms * 1e-3,
        merge_rate=args.merge_mqs * 1e6,
    )
    workloads = [
        Workload("benchmark 64Ki x 16Mi", 1 << 16, 1 << 24),
        Workload("georeferencing 1Mi x 2Gi", 1 << 20, (1 << 31) - 1),
        Workload("paper case 1Ki x 4Ki", 1 << 10, 1 << 12),
    ]
    if args.workload:
        workloads = []
        for spec in args.workload:
            name, _, size = spec.partition("=")
            q, _, d = size.partition("x")
            workloads.append(Workload(f"{name} {size}", parse_size(q), parse_size(d)))
    gpu_counts = [int(n) for n in args.gpus.split(",")]

    # The anchor's era: its per-GPU rate (1.2 G/s over 24 GPUs), 4 GPUs per node (two dual-GPU
    # GTX 295 cards), PCIe 2.0, Gigabit Ethernet, one disk.
    anchor = replace(
        machine,
        name="2010 cluster as in Warn et al. (per-GPU rate implied by the anchor)",
        gpu_rate=ANCHOR_RATE / ANCHOR_GPUS,
        gpus_per_node=4,
        pcie=5e9,
        network=0.125e9,
        latency=50e-6,
        disk=0.1e9,
        gpu_overhead=5e-3,
        merge_rate=50e6,
    )
    lines = ["# cemd-match scaling model", ""]
    lines += table(machine, workloads, gpu_counts)
    if runs:
        lines += measured_lines(machine, runs)
    lines += [""] + table(anchor, workloads[:1], [ANCHOR_GPUS])
    ours = batch_time(machine, workloads[0], ANCHOR_GPUS)
    old = batch_time(anchor, workloads[0], ANCHOR_GPUS)
    lines += [
        "",
        f"Anchor: Warn et al. (2010) measured {rate_text(ANCHOR_RATE)} on {ANCHOR_GPUS} GPUs. "
        f"The model of their cluster gives {rate_text(old['rate'])} "
        f"({old['efficiency']:.0%} efficiency) on {workloads[0].name}; the H200-class model "
        f"gives {rate_text(ours['rate'])} on {ANCHOR_GPUS} GPUs, "
        f"{ours['rate'] / ANCHOR_RATE:,.0f}x the anchor.",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    if args.plot:
        plot(args.plot, machine, workloads)


if __name__ == "__main__":
    main()
