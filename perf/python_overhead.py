#!/usr/bin/env python3
"""What kbench's Python binding costs over the C++ library call, measured on this machine.

    perf/python_overhead.py [--bin build/cuda/bin] [--json out.jsonl] [--size 1080p]

It runs the project's `api-overhead` (the C++ calls) and then makes the same calls from Python in
this process:

- host arrays: conv (3x3 gaussian, RGB) and LBP (gray) on a 16x16 image through the sequential
  layer (a call whose own time is small and steady), each call timed alone, 2000 of them;
  binding_us is Python's 10th percentile less C++'s (the calls least disturbed by the rest of
  the machine, which the two processes share unevenly);
- where PyTorch sees a CUDA device and kbench has a GPU: the same calls at --size on resident
  CUDA tensors, new results each call and into reused ones (out=), as GPU time per call over
  bursts of calls (peers.py's method) against the C++ call on device views of the same size
  (api-overhead's device_call_ms), and the calling thread's time per call.

One JSON line per row goes to --json; a markdown table to stdout.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import BURST, gpu_time_per_call, host_time_per_call  # noqa: E402

SMALL_CALLS = 2000  # as api-overhead's time_small_host_calls


def cpp_rows(bin_dir, size):
    """api-overhead's JSON lines (it prints the small host calls first, then the size's rows)."""
    run = subprocess.run([os.path.join(bin_dir, "api-overhead"), size], capture_output=True,
                         text=True, check=True)
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def p10_call_us(call):
    call()
    times = []
    for _ in range(SMALL_CALLS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[int(0.1 * (len(times) - 1))] * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("KBENCH_BUILD", "build/cuda") + "/bin")
    parser.add_argument("--json", help="append JSON lines here")
    parser.add_argument("--size", default="1080p", help="the device tensors' size (1080p, 4k)")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()

    import kbench

    cpp = cpp_rows(args.bin, args.size)
    commit = kbench.devices()["commit"]
    rows = []
    rgb = np.random.default_rng(1).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    gray = np.ascontiguousarray(rgb[..., 0])
    python_calls = {"conv": lambda: kbench.conv(rgb, "gaussian", layer="sequential"),
                    "lbp": lambda: kbench.lbp(gray, layer="sequential")}
    for line in cpp:
        if line.get("path") != "host views, small":
            continue
        algorithm = line["algorithm"]
        python_us = p10_call_us(python_calls[algorithm])
        rows.append({"algorithm": algorithm, "path": "host arrays", "size": "16x16",
                     "variant": kbench.last_run()["variant"], "cpp_variant": line["variant"],
                     "python_us": python_us, "cpp_us": line["call_p10_us"],
                     "binding_us": python_us - line["call_p10_us"]})

    device_rows = {line["algorithm"]: line for line in cpp if line.get("path") == "device views"}
    try:
        import torch
        usable = torch.cuda.is_available() and kbench.devices()["gpu"] is not None
    except ImportError:
        usable = False
    if usable and device_rows:
        width, height = {"1080p": (1920, 1080), "4k": (3840, 2160)}[args.size]
        image = torch.randint(0, 256, (height, width, 3), dtype=torch.uint8, device="cuda")
        plane = image[..., 0].contiguous()
        conv_out = kbench.conv(image, "gaussian")
        lbp_out = kbench.lbp(plane)
        cases = [("conv", "new result", lambda: kbench.conv(image, "gaussian")),
                 ("conv", "out= reused", lambda: kbench.conv(image, "gaussian", out=conv_out)),
                 ("lbp", "new result", lambda: kbench.lbp(plane)),
                 ("lbp", "out= reused", lambda: kbench.lbp(plane, out=lbp_out))]
        for algorithm, how, call in cases:
            gpu_s = gpu_time_per_call(torch, call, args.reps)[0]
            host_s = host_time_per_call(torch, call, args.reps)
            cpp_line = device_rows[algorithm]
            rows.append({"algorithm": algorithm, "path": f"CUDA tensors, {how}", "size": args.size,
                         "variant": kbench.last_run()["variant"],
                         "cpp_variant": cpp_line["variant"], "python_us": gpu_s * 1e6,
                         "cpp_us": cpp_line["device_call_ms"] * 1e3,
                         "python_over_cpp": gpu_s * 1e3 / cpp_line["device_call_ms"],
                         "host_us": host_s * 1e6, "cpp_host_us": cpp_line["device_call_queue_us"],
                         "burst": BURST})

    print(f"kbench {commit}, {kbench.devices()['cpu']}"
          + (f", {kbench.devices()['gpu']}" if kbench.devices()["gpu"] else ""))
    print("| algorithm | path | size | Python | C++ | Python − C++ | Python / C++ | host time "
          "per call, Python / C++ |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['python_over_cpp']:.3f}" if "python_over_cpp" in r else ""
        host = (f"{r['host_us']:.2f} / {r['cpp_host_us']:.2f} µs" if "host_us" in r else "")
        print(f"| {r['algorithm']} | {r['path']} | {r['size']} | {r['python_us']:.2f} µs | "
              f"{r['cpp_us']:.2f} µs | {r['python_us'] - r['cpp_us']:.2f} µs | {ratio} | {host} |")
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(dict(r, commit=commit, cpu=kbench.devices()["cpu"],
                                        gpu=kbench.devices()["gpu"])) + "\n")


if __name__ == "__main__":
    main()
