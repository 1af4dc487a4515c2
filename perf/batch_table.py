#!/usr/bin/env python3
"""Batch figures against the copy floor, as Markdown.

    perf/batch_table.py BATCH_JSONL [API_JSONL]

BATCH_JSONL holds compare --batch lines; API_JSONL (default: api.jsonl beside it) holds
api-overhead's lines, whose "device copy" line gives the device's copy bandwidth. Per case: each
variant's time per frame, the copy floor per frame (bytes read + written / copy bandwidth), their
ratio, and the Kokkos / native ratio of the same path.
"""
import json
import os
import sys


def main():
    batch_path = sys.argv[1]
    api_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(batch_path), "api.jsonl")
    copy_gbps = None
    if os.path.exists(api_path):
        for line in open(api_path):
            row = json.loads(line)
            if row.get("path") == "device copy":
                copy_gbps = row["copy_gb_per_s"]
    rows = [json.loads(line) for line in open(batch_path) if line.strip()]
    print(f"Copy bandwidth: {copy_gbps:.0f} GB/s (read + write)" if copy_gbps else
          "Copy bandwidth: not measured")
    print()
    print("| algorithm | case | variant | µs per frame | floor µs | × floor | Kokkos / native |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        if "per_frame_ms" not in row:
            continue
        frame_bytes = row["bytes"] / row["frames"]
        floor_us = frame_bytes / (copy_gbps * 1e3) if copy_gbps else None
        per_frame_us = row["per_frame_ms"] * 1e3
        ratio = ""
        if row["layer"] == "portable":
            native = native_of(rows, row)
            if native:
                ratio = f"{per_frame_us / (native['per_frame_ms'] * 1e3):.2f}"
        print(f"| {row['algorithm']} | {row['case']} | {row['variant']} | {per_frame_us:.2f} | "
              f"{floor_us:.2f} | {per_frame_us / floor_us:.2f} | {ratio} |" if floor_us else
              f"| {row['algorithm']} | {row['case']} | {row['variant']} | {per_frame_us:.2f} | - | "
              f"- | {ratio} |")


def native_of(rows, portable):
    """The native CUDA row of the same case and path (views or frame by frame)."""
    views = portable["variant"].endswith("-views")
    for row in rows:
        if (row["case"] == portable["case"] and row["algorithm"] == portable["algorithm"] and
                row["layer"] == "native_cuda" and row["variant"].endswith("-views") == views):
            return row
    return None


if __name__ == "__main__":
    main()
