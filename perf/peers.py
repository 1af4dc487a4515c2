#!/usr/bin/env python3
"""Times what a user would pick instead of kbench on the same case, and appends JSON lines in
compare's schema (layer "peer") so that perf/report.py puts the peers beside the project's
variants.

    perf/peers.py --algo cemd --size 4Mi --json results.jsonl [--bin build/cuda/bin]

Where kbench's Python package imports, its calls run in this process on the same arrays (layer
"python": on the NumPy arrays, and as resident PyTorch CUDA tensors where there is a GPU, also
into reused results; perf/python_overhead.py measures the binding's own cost).

conv: the 3x3 gaussian on an RGB u8 image with a replicated border — OpenCV `filter2D` and
`GaussianBlur` on the host's threads, and PyTorch `conv2d` on the GPU (u8 in, u8 out, rounded;
end to end from pinned host memory). lbp: scikit-image `local_binary_pattern` (P 8, R 1; its
diagonal neighbours are interpolated, so its codes are not kbench's) plus a 256-bin histogram.
The images are seeded photo-like frames of the case's size made here (these operations take the
same time whatever the pixels are); max_error is the largest difference in grey levels from a
float64 NumPy evaluation of the same mask (conv), or blank where the peer computes another
definition (lbp). sad: OpenCV `matchTemplate` with `TM_SQDIFF` (squared differences, what a user
would pick; another definition than SAD) and its minimum.

cemd: the circular EMD of include/kbench/cemd.hpp (normalised: each cell as a distribution; or
raw) with the nearest two per query, written as whole-array operations — PyTorch on the GPU
(`torch-cuda`), PyTorch on the CPU threads (`torch-cpu`) and NumPy (`numpy`). The descriptors come
from the project's own `cemd-generate` (same generator as compare, seed 1), so the peers see
SIFT-like sets of the case's shape. Each peer's nearest distances are checked against a float64
NumPy evaluation of the definition on a sample of queries (max_error, relative).

A peer whose library is missing is skipped with a note on stderr, never a failure.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

CELLS, BINS = 16, 8
CHECKED_QUERIES = 32


def size_of(case):
    """(queries, database, mode) of a cemd case name: 4Mi, 4Mi-raw, or NxM[-raw] with Ki/Mi."""
    raw = case.endswith("-raw")
    base = case[:-4] if raw else case
    if base == "4Mi":
        return 1024, 4096, "raw" if raw else "normalised"

    def count(text):
        m = re.fullmatch(r"(\d+)(Ki|Mi)?", text)
        if not m:
            raise SystemExit(f"peers.py: cannot read the size '{case}'")
        return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20}[m.group(2)]

    queries, database = base.split("x")
    return count(queries), count(database), "raw" if raw else "normalised"


def generated_sets(binary_dir, queries, database, folder):
    q, d = os.path.join(folder, "q.npy"), os.path.join(folder, "d.npy")
    subprocess.run([os.path.join(binary_dir, "cemd-generate"), "--database", d, "--rows",
                    str(database), "--queries", q, "--query-rows", str(queries), "--seed", "1"],
                   check=True, stdout=subprocess.DEVNULL)
    return np.load(q), np.load(d)


def cell_terms(xp, q, d, mode):
    """(b, m) distances of query rows q (b, 16, 8) against database rows d (m, 16, 8), float32
    prefix sums (every intermediate an integer below 2^24, so exact), via the median form."""
    f, g = q.cumsum(-1), d.cumsum(-1)
    if mode == "raw":
        diff = f[:, None] - g[None]
        num = diff - median8(xp, diff)
        return abs_(xp, num).sum(-1).sum(-1)
    mass_f, mass_g = f[..., -1], g[..., -1]
    diff = mass_g[None, :, :, None] * f[:, None] - mass_f[:, None, :, None] * g[None]
    num = abs_(xp, diff - median8(xp, diff)).sum(-1)
    den = mass_f[:, None] * mass_g[None]
    den = np.maximum(den, 1) if xp is np else den.clamp(min=1)
    return (num / den).sum(-1)


def median8(xp, x):
    """A median of the last axis (any value between the 4th and 5th smallest gives the same sum
    of absolute deviations): the lower one."""
    if xp is np:
        return np.partition(x, 3, axis=-1)[..., 3:4]
    return x.median(-1, keepdim=True).values


def abs_(xp, x):
    return np.abs(x) if xp is np else x.abs()


def reference_best(q, d, mode, rows):
    """float64 nearest distance for the query rows `rows`, straight from the definition."""
    best = []
    f = q[rows].astype(np.float64).cumsum(-1)
    g = d.astype(np.float64).cumsum(-1)
    for i in range(len(rows)):
        if mode == "raw":
            diff = f[i][None] - g
            best.append(np.abs(diff - np.median(diff, axis=-1, keepdims=True)).sum((-1, -2)).min())
            continue
        mf, mg = f[i][:, -1], g[:, :, -1]
        diff = mg[:, :, None] * f[i][None] - mf[None, :, None] * g
        num = np.abs(diff - np.median(diff, axis=-1, keepdims=True)).sum(-1)
        den = mf[None] * mg
        best.append(np.where(den > 0, num / np.where(den > 0, den, 1), 0).sum(-1).min())
    return np.array(best)


def nearest_two_blocks(xp, q, d, mode, block, two_smallest):
    out = []
    for start in range(0, q.shape[0], block):
        out.append(two_smallest(cell_terms(xp, q[start:start + block], d, mode)))
    return out


def time_peer(run, reps, budget_s):
    """Median, min and max seconds of run() over up to `reps` calls within about budget_s."""
    times = []
    begin = time.perf_counter()
    while len(times) < reps and (not times or time.perf_counter() - begin < budget_s):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[0], times[-1], len(times)


def torch_peer(device_name, q8, d8, mode, reps, budget_s):
    """PyTorch on `device_name` ("cuda" or "cpu"): compute on resident tensors, and end to end
    from the host's uint8 arrays to the nearest two back on the host."""
    import torch

    if device_name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device")
    device = torch.device(device_name)
    sync = torch.cuda.synchronize if device_name == "cuda" else (lambda: None)
    # Blocks of queries sized so one block's (b, m, 16, 8) float32 differences stay near 1 GiB.
    block = max(1, (1 << 30) // (d8.shape[0] * CELLS * BINS * 4 * (1 if device_name == "cuda" else 8)))

    def two_smallest(dist):
        return torch.topk(dist, 2, dim=1, largest=False)

    def to_device(a):
        return torch.from_numpy(a).to(device).reshape(-1, CELLS, BINS).float()

    q, d = to_device(q8), to_device(d8)

    def compute():
        r = nearest_two_blocks(torch, q, d, mode, block, two_smallest)
        sync()
        return r

    def end_to_end():
        qq, dd = to_device(q8), to_device(d8)
        r = nearest_two_blocks(torch, qq, dd, mode, block, two_smallest)
        return [(v.cpu(), i.cpu()) for v, i in r]

    result = compute()
    best = torch.cat([v[:, 0] for v, _ in result]).cpu().numpy()
    compute_t = time_peer(compute, reps, budget_s)
    e2e_t = time_peer(end_to_end, reps, budget_s) if device_name == "cuda" else None
    threads = torch.get_num_threads() if device_name == "cpu" else machine_threads()
    label = torch.cuda.get_device_name() if device_name == "cuda" else cpu_name()
    return best, compute_t, e2e_t, threads, f"torch {torch.__version__}", label


def numpy_peer(q8, d8, mode, reps, budget_s):
    q = q8.reshape(-1, CELLS, BINS).astype(np.float32)
    d = d8.reshape(-1, CELLS, BINS).astype(np.float32)
    block = max(1, (1 << 27) // (d.shape[0] * CELLS * BINS * 4))

    def two_smallest(dist):
        idx = np.argpartition(dist, 1, axis=1)[:, :2]
        return np.take_along_axis(dist, idx, axis=1), idx

    def compute():
        return nearest_two_blocks(np, q, d, mode, block, two_smallest)

    result = compute()
    best = np.concatenate([v.min(axis=1) for v, _ in result])
    return (best, time_peer(compute, reps, budget_s), None, machine_threads(),
            f"numpy {np.__version__}", cpu_name())


def machine_threads():
    """The thread count compare records for its main runs."""
    return int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def cemd_peers(args):
    queries, database, mode = size_of(args.size)
    peers = [("torch-cuda", "cuda"), ("torch-cpu", "openmp"), ("numpy", "serial")]
    with tempfile.TemporaryDirectory() as folder:
        q8, d8 = generated_sets(args.bin, queries, database, folder)
    rows = np.arange(min(CHECKED_QUERIES, queries))
    expected = reference_best(q8.reshape(-1, CELLS, BINS), d8.reshape(-1, CELLS, BINS), mode,
                              rows)
    comparisons = float(queries) * database
    records = []
    for name, backend in peers:
        if args.peer and name not in args.peer:
            continue
        try:
            if name == "numpy":
                got = numpy_peer(q8, d8, mode, args.reps, args.budget_s)
            else:
                got = torch_peer(name.split("-")[1], q8, d8, mode, args.reps, args.budget_s)
        except Exception as error:  # a missing library or device: skipped, with a note
            print(f"peers.py: {name} skipped: {error}", file=sys.stderr)
            continue
        best, timing, e2e, threads, version, device = got
        err = float(np.max(np.abs(best[rows] - expected) / np.maximum(expected, 1e-30)))
        description = (f"{queries} queries x {database} database, {mode}, nearest two, "
                       "cemd-generate SIFT-like sets, seed 1")
        record = peer_record("cemd", name, backend, args.size, description, timing, e2e,
                             (queries + database) * CELLS * BINS, comparisons, "cmp", threads,
                             version, device, err)
        records.append(record)
    if not args.peer or "kbench-python" in args.peer:
        distance = {"normalised": "normalised", "raw": "raw"}[mode]
        records += kbench_python_records(
            "cemd", args.size, f"{queries} queries x {database} database, {mode}, nearest two",
            [q8, d8], lambda q, d: kbench_module().cemd_match(q, d, distance),
            (queries + database) * CELLS * BINS, comparisons, "cmp", args)
    return records


IMAGE_SIZES = {"480p": (640, 480), "720p": (1280, 720), "1080p": (1920, 1080),
               "4k": (3840, 2160), "8k": (7680, 4320)}
GAUSSIAN_3X3 = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / 16


def image_size(case):
    if case in IMAGE_SIZES:
        return IMAGE_SIZES[case]
    m = re.fullmatch(r"(\d+)x(\d+)", case)
    if not m:
        raise SystemExit(f"peers.py: cannot read the size '{case}'")
    return int(m.group(1)), int(m.group(2))


def photo_like(width, height, channels, seed=1):
    """Smooth shading, a few hard-edged shapes and mild noise, u8."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    planes = []
    for c in range(channels):
        fx, fy = rng.uniform(1, 4, 2)
        base = 128 + 60 * np.sin(2 * np.pi * fx * x / width + c) * np.cos(2 * np.pi * fy * y / height)
        for _ in range(8):
            x0, y0 = rng.integers(0, width), rng.integers(0, height)
            base[y0:y0 + height // 6, x0:x0 + width // 6] += rng.uniform(-50, 50)
        planes.append(base + rng.normal(0, 4, (height, width)))
    img = np.stack(planes, -1) if channels > 1 else planes[0]
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def conv_reference(img):
    """float64 3x3 gaussian with a replicated border, before rounding."""
    p = np.pad(img.astype(np.float64), ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = img.shape[:2]
    out = np.zeros(img.shape, np.float64)
    for dy in range(3):
        for dx in range(3):
            out += GAUSSIAN_3X3[dy, dx] * p[dy:dy + h, dx:dx + w]
    return out


def torch_conv_peer(img, reps, budget_s):
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device")
    device = torch.device("cuda")
    h, w, c = img.shape
    weight = torch.from_numpy(np.repeat(GAUSSIAN_3X3[None, None], c, 0)).to(device)
    pinned = torch.from_numpy(img).pin_memory()
    out_host = torch.empty_like(pinned).pin_memory()

    def filtered(u8):
        x = u8.permute(2, 0, 1)[None].float()
        x = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate")
        y = torch.nn.functional.conv2d(x, weight, groups=c)
        return y[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8)

    resident = pinned.to(device)

    def compute():
        r = filtered(resident)
        torch.cuda.synchronize()
        return r

    def end_to_end():
        out_host.copy_(filtered(pinned.to(device, non_blocking=True)), non_blocking=True)
        torch.cuda.synchronize()
        return out_host

    result = compute().cpu().numpy()
    return (result, time_peer(compute, reps, budget_s), time_peer(end_to_end, reps, budget_s),
            machine_threads(), f"torch {torch.__version__}", torch.cuda.get_device_name())


def opencv_peer(name, img, reps, budget_s):
    import cv2

    if name == "opencv-filter2d":
        def run():
            return cv2.filter2D(img, -1, GAUSSIAN_3X3, borderType=cv2.BORDER_REPLICATE)
    else:
        def run():
            return cv2.GaussianBlur(img, (3, 3), 0, borderType=cv2.BORDER_REPLICATE)
    return (run(), time_peer(run, reps, budget_s), None, cv2.getNumThreads(),
            f"opencv {cv2.__version__}", cpu_name())


def peer_record(algorithm, name, backend, case, description, timing, e2e, data_bytes,
                operations, unit, threads, version, device, err, layer="peer"):
    """One JSON line in compare's schema (layer "peer"), printed as a row too; `err` None where
    the peer computes another definition."""
    med, lo, hi, reps = timing
    record = {
        "algorithm": algorithm, "variant": name, "layer": layer, "backend": backend,
        "case": case, "description": f"{description}; {version}", "reps": reps, "batch": 1,
        "rotation": 1, "compute_min_ms": lo * 1e3, "compute_median_ms": med * 1e3,
        "compute_max_ms": hi * 1e3, "bytes": float(data_bytes), "operations": float(operations),
        "operation_unit": unit, "gb_per_s": data_bytes / med / 1e9,
        "gops_per_s": operations / med / 1e9, "threads": threads, "device": device,
        "commit": version,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if err is not None:
        record["max_error"] = err
    if e2e:
        record.update({"e2e_median_ms": e2e[0] * 1e3, "e2e_min_ms": e2e[1] * 1e3,
                       "e2e_max_ms": e2e[2] * 1e3})
    print(f"{name:28s} {layer:7s}{backend:8s} {med * 1e3:10.3f} ms {operations / med / 1e9:10.4f} "
          f"G {unit}/s" + ("" if err is None else f"  error {err:.2g}"))
    return record


def image_record(algorithm, name, backend, case, description, img, timing, e2e, threads,
                 version, device, err):
    """An image peer's record: one operation per pixel, the image read and written once."""
    return peer_record(algorithm, name, backend, case, description, timing, e2e, 2.0 * img.size,
                       float(img.shape[0] * img.shape[1]), "px", threads, version, device, err)


BURST = 50  # calls queued between two CUDA events when timing calls on device tensors


def gpu_time_per_call(torch, call, reps):
    """Median GPU seconds per call of `call` (which queues work on torch's current stream) over
    `reps` bursts of BURST calls between two CUDA events."""
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(BURST):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / BURST)
    times.sort()
    return times[len(times) // 2], times[0], times[-1], reps


def host_time_per_call(torch, call, reps):
    """Median host seconds per call of `call` over `reps` bursts of BURST calls queued without
    waiting: what the binding and the library cost the calling thread."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(BURST):
            call()
        times.append((time.perf_counter() - start) / BURST)
    torch.cuda.synchronize()
    return float(np.median(times))


def kbench_python_records(algorithm, case, description, arrays, call, data_bytes, operations,
                          unit, args, call_into=None):
    """kbench's Python call in this process on the peers' arrays, as layer "python" rows: on the
    NumPy arrays (the whole call, copies included where a GPU variant runs), and where PyTorch
    has a CUDA device on the same arrays as resident CUDA tensors (GPU time per call, no copy),
    also into a reused result where `call_into(*arrays, out)` takes one; the tensor rows' host_us
    is the calling thread's time per call. (The binding's own cost: perf/python_overhead.py.)"""
    try:
        import kbench
    except Exception as error:
        print(f"peers.py: kbench's Python package skipped: {error}", file=sys.stderr)
        return []
    version = "kbench " + kbench.devices()["commit"]
    call(*arrays)
    run = kbench.last_run()
    walls = []
    for _ in range(args.reps):
        t = time.perf_counter()
        call(*arrays)
        walls.append(time.perf_counter() - t)
    walls.sort()
    timing = walls[len(walls) // 2], walls[0], walls[-1], len(walls)
    records = [peer_record(algorithm, "kbench-python", run["backend"], case,
                           f"{description}; variant {run['variant']}", timing, None, data_bytes,
                           operations, unit, machine_threads(), version,
                           kbench.devices()["gpu"] or cpu_name(), None, layer="python")]
    try:
        import torch
    except Exception:
        return records
    if not torch.cuda.is_available() or kbench.devices()["gpu"] is None:
        return records
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in arrays]
    calls = [("kbench-python-cuda-tensor", "resident CUDA tensors", lambda: call(*tensors))]
    if call_into is not None:
        out = call(*tensors)
        calls.append(("kbench-python-cuda-tensor-out", "resident CUDA tensors, out= reused",
                      lambda: call_into(*tensors, out)))
    for name, what, tensor_call in calls:
        timing = gpu_time_per_call(torch, tensor_call, args.reps)
        run = kbench.last_run()
        record = peer_record(algorithm, name, "cuda", case,
                             f"{description}; {what}, variant {run['variant']}", timing, None,
                             data_bytes, operations, unit, machine_threads(), version,
                             kbench.devices()["gpu"], None, layer="python")
        record["host_us"] = host_time_per_call(torch, tensor_call, args.reps) * 1e6
        print(f"{'':28s} host time per call {record['host_us']:.2f} us")
        records.append(record)
    return records


def conv_peers(args):
    width, height = image_size(args.size)
    img = photo_like(width, height, 3)
    expected = conv_reference(img)
    description = f"{width}x{height}x3 gaussian 3x3 clamp, photo-like frame made by perf/peers.py"
    records = []
    for name, backend in [("opencv-filter2d", "openmp"), ("opencv-gaussianblur", "openmp"),
                          ("torch-conv2d-cuda", "cuda")]:
        if args.peer and name not in args.peer:
            continue
        try:
            if name.startswith("opencv"):
                got = opencv_peer(name, img, args.reps, args.budget_s)
            else:
                got = torch_conv_peer(img, args.reps, args.budget_s)
        except Exception as error:  # a missing library or device: skipped, with a note
            print(f"peers.py: {name} skipped: {error}", file=sys.stderr)
            continue
        out, timing, e2e, threads, version, device = got
        err = float(np.max(np.abs(out.astype(np.float64) - expected)))
        records.append(image_record("conv", name, backend, args.size, description, img, timing,
                                    e2e, threads, version, device, err))
    if not args.peer or "kbench-python" in args.peer:
        records += kbench_python_records(
            "conv", args.size, description, [img], lambda x: kbench_module().conv(x, "gaussian"),
            2.0 * img.size, float(width * height), "px", args,
            call_into=lambda x, out: kbench_module().conv(x, "gaussian", out=out))
    return records


def kbench_module():
    import kbench

    return kbench


def lbp_peers(args):
    width, height = image_size(args.size)
    img = photo_like(width, height, 1)
    description = (f"{width}x{height} gray, 8 neighbours radius 1 (interpolated diagonals), "
                   "256-bin histogram, photo-like frame made by perf/peers.py")
    records = []
    if not args.peer or "skimage-lbp" in args.peer:
        try:
            from skimage.feature import local_binary_pattern
            import skimage

            def run():
                codes = local_binary_pattern(img, 8, 1, method="default")
                return np.bincount(codes.astype(np.int64).ravel(), minlength=256)

            run()
            timing = time_peer(run, args.reps, args.budget_s)
            records.append(image_record("lbp", "skimage-lbp", "serial", args.size, description,
                                        img, timing, None, 1,
                                        f"scikit-image {skimage.__version__}", cpu_name(), None))
        except ImportError as error:
            print(f"peers.py: skimage-lbp skipped: {error}", file=sys.stderr)
    if not args.peer or "kbench-python" in args.peer:
        records += kbench_python_records("lbp", args.size, description, [img],
                                         lambda x: kbench_module().lbp(x), 2.0 * img.size,
                                         float(width * height), "px", args,
                                         call_into=lambda x, out: kbench_module().lbp(x, out=out))
    return records


SAD_CASES = {"test1": (1500, 150), "test2": (2000, 200), "test3": (2500, 250)}


def sad_peers(args):
    """OpenCV matchTemplate with TM_SQDIFF (squared differences, FFT-based: what a user picks for
    template matching; another definition than SAD) and its minimum, on a query cut from the
    target with small noise."""
    if args.size in SAD_CASES:
        side, q = SAD_CASES[args.size]
        width = height = side
        qw = qh = q
    else:
        m = re.fullmatch(r"(\d+)x(\d+)/(\d+)x(\d+)", args.size)
        if not m:
            raise SystemExit(f"peers.py: cannot read the sad size '{args.size}' (testN or WxH/wxh)")
        width, height, qw, qh = map(int, m.groups())
    target = photo_like(width, height, 1)
    rng = np.random.default_rng(2)
    y0, x0 = int(rng.integers(0, height - qh + 1)), int(rng.integers(0, width - qw + 1))
    query = np.clip(target[y0:y0 + qh, x0:x0 + qw].astype(np.int16) +
                    rng.integers(-2, 3, (qh, qw)), 0, 255).astype(np.uint8)
    positions = float((height - qh + 1) * (width - qw + 1))
    records = []
    if not args.peer or "opencv-matchtemplate-sqdiff" in args.peer:
        try:
            import cv2

            def run():
                return cv2.minMaxLoc(cv2.matchTemplate(target, query, cv2.TM_SQDIFF))[2]

            found = run()
            timing = time_peer(run, args.reps, args.budget_s)
            description = (f"{width}x{height} target, {qw}x{qh} query cut at (row {y0}, col {x0})"
                           f" with noise ±2, squared differences (FFT), minimum found at (row "
                           f"{found[1]}, col {found[0]}); photo-like frame made by perf/peers.py")
            records.append(peer_record("sad", "opencv-matchtemplate-sqdiff", "openmp", args.size,
                                       description, timing, None, target.size + query.size,
                                       positions * qw * qh, "sad", cv2.getNumThreads(),
                                       f"opencv {cv2.__version__}", cpu_name(), None))
        except ImportError as error:
            print(f"peers.py: opencv-matchtemplate-sqdiff skipped: {error}", file=sys.stderr)
    if not args.peer or "kbench-python" in args.peer:
        records += kbench_python_records(
            "sad", args.size, f"{width}x{height} target, {qw}x{qh} query, the best position",
            [target, query], lambda t, q: kbench_module().match(t, q, method="full"),
            target.size + query.size, positions * qw * qh, "sad", args)
    return records


PEERS = {"conv": conv_peers, "lbp": lbp_peers, "sad": sad_peers, "cemd": cemd_peers}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", required=True, choices=sorted(PEERS))
    parser.add_argument("--size", required=True, help="the case, as compare names it")
    parser.add_argument("--json", help="append JSON lines here")
    parser.add_argument("--bin", default=os.environ.get("KBENCH_BUILD", "build/cuda") + "/bin",
                        help="where the project's tools are (default $KBENCH_BUILD/bin)")
    parser.add_argument("--peer", nargs="*", help="only these peers")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=20.0,
                        help="time one peer for about this long at most")
    args = parser.parse_args()
    records = PEERS[args.algo](args)
    if args.json:
        with open(args.json, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
