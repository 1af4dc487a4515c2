#!/usr/bin/env python3
"""What kbench's Python binding costs over the C++ library call, measured on this machine.

    perf/python_overhead.py [--bin build/cuda/bin] [--json out.jsonl] [--size 1080p]

- Host arrays: conv (3x3 gaussian, RGB) and LBP (gray) on 16x16 and on --size images, new
  results each call and into reused ones (out=), each call timed alone; the extension times its C++ call inside the same call (`library_call_us`), so the
  binding's cost per call (binding_us, the median of the differences) comes from the same calls
  in the same process.
- Where PyTorch sees a CUDA device and kbench has a GPU: the same calls at --size on resident
  CUDA tensors, new results each call and into reused ones (out=), as GPU time per call over
  bursts of calls (peers.py's method) against the C++ call on device views of the same size, from
  the project's `api-overhead` (its device_call_ms), and the calling thread's time per call
  against the C++ call's (device_call_queue_us).

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
from peers import BURST, IMAGE_SIZES, gpu_time_per_call, host_time_per_call  # noqa: E402

CALLS = 2000  # host calls timed one by one


def binding_row(kbench, algorithm, size, how, call):
    """The call's wall time and the binding's share of it, medians over CALLS calls."""
    call()
    walls, bindings = [], []
    for _ in range(CALLS):
        start = time.perf_counter()
        call()
        wall = (time.perf_counter() - start) * 1e6
        walls.append(wall)
        bindings.append(wall - kbench._kbench.library_call_us())
    return {"algorithm": algorithm, "path": f"host arrays, {how}", "size": size,
            "variant": kbench.last_run()["variant"], "python_us": float(np.median(walls)),
            "binding_us": float(np.median(bindings)), "calls": CALLS}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("KBENCH_BUILD", "build/cuda") + "/bin")
    parser.add_argument("--json", help="append JSON lines here")
    parser.add_argument("--size", default="1080p", choices=sorted(IMAGE_SIZES))
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()

    import kbench

    commit = kbench.devices()["commit"]
    width, height = IMAGE_SIZES[args.size]
    rows = []
    for shape, size in (((16, 16), "16x16"), ((height, width), args.size)):
        rgb = np.random.default_rng(1).integers(0, 256, shape + (3,), dtype=np.uint8)
        gray = np.ascontiguousarray(rgb[..., 0])
        conv_out, lbp_out = kbench.conv(rgb, "gaussian"), kbench.lbp(gray)
        rows.append(binding_row(kbench, "conv", size, "new result",
                                lambda: kbench.conv(rgb, "gaussian")))
        rows.append(binding_row(kbench, "conv", size, "out= reused",
                                lambda: kbench.conv(rgb, "gaussian", out=conv_out)))
        rows.append(binding_row(kbench, "lbp", size, "new result", lambda: kbench.lbp(gray)))
        rows.append(binding_row(kbench, "lbp", size, "out= reused",
                                lambda: kbench.lbp(gray, out=lbp_out)))

    try:
        import torch
        usable = torch.cuda.is_available() and kbench.devices()["gpu"] is not None
    except ImportError:
        usable = False
    if usable:
        run = subprocess.run([os.path.join(args.bin, "api-overhead"), args.size],
                             capture_output=True, text=True, check=True)
        device_rows = {}
        for line in run.stdout.splitlines():
            record = json.loads(line) if line.startswith("{") else {}
            if record.get("path") == "device views":
                device_rows[record["algorithm"]] = record
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
            cpp = device_rows[algorithm]
            rows.append({"algorithm": algorithm, "path": f"CUDA tensors, {how}", "size": args.size,
                         "variant": kbench.last_run()["variant"], "cpp_variant": cpp["variant"],
                         "python_us": gpu_s * 1e6, "cpp_us": cpp["device_call_ms"] * 1e3,
                         "python_over_cpp": gpu_s * 1e3 / cpp["device_call_ms"],
                         "host_us": host_s * 1e6, "cpp_host_us": cpp["device_call_queue_us"],
                         "burst": BURST})

    info = kbench.devices()
    print(f"kbench {commit}, {info['cpu']}" + (f", {info['gpu']}" if info["gpu"] else ""))
    print("| algorithm | path | size | Python call | binding's share | C++ call | Python / C++ "
          "| host time per call, Python / C++ |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        binding = f"{r['binding_us']:.2f} µs" if "binding_us" in r else ""
        cpp = f"{r['cpp_us']:.2f} µs" if "cpp_us" in r else ""
        ratio = f"{r['python_over_cpp']:.3f}" if "python_over_cpp" in r else ""
        host = f"{r['host_us']:.2f} / {r['cpp_host_us']:.2f} µs" if "host_us" in r else ""
        print(f"| {r['algorithm']} | {r['path']} | {r['size']} | {r['python_us']:.2f} µs | "
              f"{binding} | {cpp} | {ratio} | {host} |")
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(dict(r, commit=commit, cpu=info["cpu"], gpu=info["gpu"]))
                        + "\n")


if __name__ == "__main__":
    main()
