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

cemd `-l2` cases (`64Kix1Mi-l2`): the Euclidean matching of `cemd-match --metric l2`, nearest two
per query, as a user would do it today — FAISS's brute-force recipe, ||d||² − 2 q·d per block of
the distance matrix (sized from free memory, under 2^31 elements), `topk(2)` per block and merged,
then ||q||² added to the two kept and the square root taken. The torch peers, each as `-cuda` on the
GPU and `-cpu` on the host's threads: `torch-gemm-fp32`, fp32 `torch.addmm` with TF32 off
(torch.backends.cuda.matmul.allow_tf32 = False; every product and partial sum of u8 values is an
integer below 2^24, so the fp32 GEMM is exact); `torch-gemm-fp16`, fp16 inputs (0..255 exact) and
`torch.mm(out_dtype=float32)`, fp32 accumulation and output, where torch has it (CUDA);
`torch-gemm-fp16out`, what a plain half matmul gives: fp16 inputs scaled by 1/16 so that a dot
product fits fp16's range, fp16 output (rounded), scaled back in fp32; `torch-gemm-int-mm`,
`torch._int_mm` (int8 × int8 → int32, cuBLASLt on a GPU) on the values minus 128 (distances do not
change under a shift, and every term fits int32, so exact), the database padded to a multiple of
8 rows and a block of fewer than 17 queries padded to 17. `faiss-gpu-flat`: `faiss.knn_gpu`, where
faiss imports with GPUs. `numpy-gemm-fp32`: the fp32 recipe with NumPy's BLAS on the host. Each is
timed on resident u8 data (the conversions included) and, on a GPU, end to end from the host's
arrays. The check is exact: the nearest two of a sample of queries spread over the set, ranked as
kbench ranks them (the exact integer sum in NumPy int64, the key its float32 correctly rounded
square root, ties to the smaller index); `agreement` counts the sample's queries whose best
(second) index is kbench's and whose best (second) pick has kbench's distance (a tie broken
otherwise agrees on the distance only); max_error is the largest difference of a reported best or
second distance from kbench's, relative (absolute below 1).

Host peers of cemd are skipped above --max-host-gcmp G comparisons (minutes a repetition).

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
    """(queries, database, mode) of a cemd case name: 4Mi, 4Mi-raw, 4Mi-l2, or NxM[-raw|-l2] with
    Ki/Mi."""
    mode, base = "normalised", case
    for suffix in ("raw", "l2"):
        if case.endswith("-" + suffix):
            mode, base = suffix, case[:-len(suffix) - 1]
    if base == "4Mi":
        return 1024, 4096, mode

    def count(text):
        m = re.fullmatch(r"(\d+)(Ki|Mi)?", text)
        if not m:
            raise SystemExit(f"peers.py: cannot read the size '{case}'")
        return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20}[m.group(2)]

    if base.count("x") != 1:
        raise SystemExit(f"peers.py: cannot read the size '{case}'")
    queries, database = base.split("x")
    return count(queries), count(database), mode


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
    with tempfile.TemporaryDirectory() as folder:
        q8, d8 = generated_sets(args.bin, queries, database, folder)
    if mode == "l2":
        records = l2_peers(args, q8, d8)
    else:
        records = cemd_mode_peers(args, q8, d8, mode)
    if not args.peer or "kbench-python" in args.peer:
        records += kbench_python_records(
            "cemd", args.size, f"{queries} queries x {database} database, {mode}, nearest two",
            [q8, d8], lambda q, d: kbench_module().cemd_match(q, d, mode),
            (queries + database) * CELLS * BINS, float(queries) * database, "cmp", args)
    return records


def host_too_slow(name, backend, comparisons, args):
    """True (with a note) for a host peer of more than --max-host-gcmp G comparisons."""
    if backend == "cuda" or comparisons <= args.max_host_gcmp * 1e9:
        return False
    print(f"peers.py: {name} skipped: {comparisons / 1e9:.3g} G comparisons on the host is above "
          f"--max-host-gcmp {args.max_host_gcmp:g}", file=sys.stderr)
    return True


def skipped(name, error):
    """A peer whose library or device is missing: a one-line note, never a failure."""
    first_sentence = re.split(r"(?<=\.)\s", str(error).strip() or type(error).__name__)[0]
    print(f"peers.py: {name} skipped: {first_sentence}", file=sys.stderr)


def cemd_mode_peers(args, q8, d8, mode):
    """The circular EMD (normalised or raw) as whole-array PyTorch and NumPy."""
    queries, database = q8.shape[0], d8.shape[0]
    peers = [("torch-cuda", "cuda"), ("torch-cpu", "openmp"), ("numpy", "serial")]
    rows = np.arange(min(CHECKED_QUERIES, queries))
    expected = reference_best(q8.reshape(-1, CELLS, BINS), d8.reshape(-1, CELLS, BINS), mode,
                              rows)
    comparisons = float(queries) * database
    records = []
    for name, backend in peers:
        if args.peer and name not in args.peer or host_too_slow(name, backend, comparisons, args):
            continue
        try:
            if name == "numpy":
                got = numpy_peer(q8, d8, mode, args.reps, args.budget_s)
            else:
                got = torch_peer(name.split("-")[1], q8, d8, mode, args.reps, args.budget_s)
        except Exception as error:  # a missing library or device
            skipped(name, error)
            continue
        best, timing, e2e, threads, version, device = got
        err = float(np.max(np.abs(best[rows] - expected) / np.maximum(expected, 1e-30)))
        description = (f"{queries} queries x {database} database, {mode}, nearest two, "
                       "cemd-generate SIFT-like sets, seed 1")
        record = peer_record("cemd", name, backend, args.size, description, timing, e2e,
                             (queries + database) * CELLS * BINS, comparisons, "cmp", threads,
                             version, device, err)
        records.append(record)
    return records


# --- cemd -l2: Euclidean nearest two ---------------------------------------------------------

L2_CHECKED_QUERIES = 128  # queries, spread over the set, whose nearest two are computed exactly
REFERENCE_BLOCK_ROWS = 1 << 16  # database rows per int64 step of the exact reference
BLOCK_MEMORY_FRACTION = 0.25  # of the free memory, for one block of the distance matrix
MIN_BLOCK_COLUMNS = 1 << 12  # database rows of a block, at least, before queries are split
MAX_BLOCK_ELEMENTS = (1 << 31) - 1  # so that every kernel of the recipe indexes a block in 32 bits
BLOCK_ROW_MULTIPLE = 8  # database rows of a block are a multiple of this (torch._int_mm's n)
INT_MM_MIN_ROWS = 17  # torch._int_mm wants more than 16 rows in its first operand
INT8_SHIFT = 128  # u8 − 128 is int8; Euclidean distances do not change under a shift
FP16_OPERAND_SCALE = 1 / 16  # a dot product of two scaled u8 rows (< 2^23 / 2^8) fits fp16
PADDED_NORM = 1 << 30  # the int8 path's squared norm for padding rows: above any real distance
GEMM_KINDS = ("fp32", "fp16", "fp16out", "int-mm")
GEMM_DESCRIPTION = {
    "fp32": "fp32 torch.addmm, TF32 off (allow_tf32 False), exact",
    "fp16": "fp16 inputs, torch.mm out_dtype float32 (fp32 accumulation and output)",
    "fp16out": "fp16 inputs scaled by 1/16, torch.mm fp16 output (rounded), scaled back in fp32",
    "int-mm": "torch._int_mm int8 x int8 -> int32 on values - 128, exact",
}


def l2_sample(queries):
    """The checked queries: L2_CHECKED_QUERIES spread over the set, the first and last included."""
    return np.unique(np.linspace(0, queries - 1, min(L2_CHECKED_QUERIES, queries)).astype(int))


def l2_exact_distance(q8, d8, rows, picks):
    """kbench's float32 distance of query rows `rows` to database rows `picks` (inf where −1):
    the exact integer sum of squares, its correctly rounded float32 square root."""
    diff = q8[rows].astype(np.int64) - d8[np.maximum(picks, 0)].astype(np.int64)
    distance = np.sqrt((diff * diff).sum(1).astype(np.float32))
    return np.where(picks >= 0, distance, np.float32(np.inf))


def l2_reference(q8, d8, rows):
    """The nearest two of query rows `rows` as kbench ranks them (include/kbench/cemd.hpp): the
    exact sum of squares in int64, the key its float32 square root then the index (cemd_key).
    (indices, distances), each (len(rows), 2); index −1 and distance inf for a missing second."""
    q = q8[rows].astype(np.int64)
    q_norms = (q * q).sum(1)
    no_key = np.iinfo(np.uint64).max
    keys = np.full((len(rows), 2), no_key, np.uint64)
    for start in range(0, d8.shape[0], REFERENCE_BLOCK_ROWS):
        d = d8[start:start + REFERENCE_BLOCK_ROWS].astype(np.int64)
        sums = q_norms[:, None] + (d * d).sum(1)[None] - 2 * (q @ d.T)
        bits = np.sqrt(sums.astype(np.float32)).view(np.uint32).astype(np.uint64)
        index = np.arange(start, start + d.shape[0], dtype=np.uint64)
        keys = np.partition(np.concatenate([keys, (bits << np.uint64(32)) | index], 1), 1,
                            axis=1)[:, :2]
    keys.sort(axis=1)
    index = np.where(keys == no_key, -1, (keys & np.uint64(0xFFFFFFFF)).astype(np.int64))
    distance = (keys >> np.uint64(32)).astype(np.uint32).view(np.float32)
    return index, np.where(index >= 0, distance, np.float32(np.inf))


def l2_check(q8, d8, rows, reference, found):
    """A peer's nearest two (indices, distances over every query) against kbench's on the
    sample: the agreement counts, and the largest distance error (relative; absolute below 1)."""
    ref_index, ref_distance = reference
    index, distance = found[0][rows], found[1][rows]
    agreement = {"queries": len(rows)}
    for rank, name in enumerate(("best", "second")):
        agreement[f"{name}_index"] = int((index[:, rank] == ref_index[:, rank]).sum())
        same = l2_exact_distance(q8, d8, rows, index[:, rank]) == ref_distance[:, rank]
        agreement[f"{name}_distance"] = int(same.sum())
    present = ref_index >= 0
    error = (np.abs(distance[present].astype(np.float64) - ref_distance[present]) /
             np.maximum(ref_distance[present], 1))
    error = np.where(np.isnan(error), np.inf, error)
    return agreement, float(error.max()) if error.size else 0.0


def l2_blocks(queries, database, free_bytes):
    """(query rows, database rows) of one block of the 4-byte distance matrix within
    BLOCK_MEMORY_FRACTION of `free_bytes` and MAX_BLOCK_ELEMENTS; database rows a multiple of
    BLOCK_ROW_MULTIPLE."""
    elements = max(1, min(MAX_BLOCK_ELEMENTS, int(free_bytes * BLOCK_MEMORY_FRACTION) // 4))
    q_block = max(1, min(queries, elements // MIN_BLOCK_COLUMNS))
    columns = elements // q_block // BLOCK_ROW_MULTIPLE * BLOCK_ROW_MULTIPLE
    columns = max(BLOCK_ROW_MULTIPLE, columns)
    return q_block, min(columns, -(-database // BLOCK_ROW_MULTIPLE) * BLOCK_ROW_MULTIPLE)


def host_free_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 1 << 30


def nearest_two_host(index, squared, database):
    """(indices, distances) on the host from a peer's (queries, ≤2) indices and squared
    distances: a missing second (a database of one row, or a padding row) as −1 and inf."""
    index = np.asarray(index, np.int64)
    distance = np.sqrt(np.maximum(np.asarray(squared, np.float32), 0))
    if index.shape[1] < 2:
        index = np.concatenate([index, np.full_like(index, -1)], 1)
        distance = np.concatenate([distance, np.full_like(distance, np.inf)], 1)
    missing = index >= database
    return np.where(missing, -1, index), np.where(missing, np.float32(np.inf), distance)


def torch_gemm_peer(kind, device_name, q8, d8, reps, budget_s):
    """FAISS's brute-force recipe in PyTorch on `device_name` with the GEMM of `kind`
    (GEMM_KINDS): compute on resident u8 tensors, and end to end from the host's arrays."""
    import torch

    if device_name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device")
    # IEEE fp32 GEMMs, never TF32: the fp32 cross terms of u8 values are then exact.
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(device_name)
    cuda = device_name == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    queries, database = q8.shape[0], d8.shape[0]
    if cuda:
        torch.cuda.empty_cache()  # what earlier peers left cached counts as free here
    free = torch.cuda.mem_get_info()[0] if cuda else host_free_bytes()
    q_block, d_block = l2_blocks(queries, database, free)

    def operands(u8):
        """A GEMM operand of this kind and its rows' squared norms (exact: integers < 2^24)."""
        if kind == "int-mm":
            x = (u8.to(torch.int16) - INT8_SHIFT).to(torch.int8)
            wide = x.to(torch.int32)
            return x, (wide * wide).sum(1, dtype=torch.int32)
        x = u8.float()
        norms = (x * x).sum(1)
        if kind == "fp16":
            return x.half(), norms
        if kind == "fp16out":
            return (x * FP16_OPERAND_SCALE).half(), norms
        return x, norms

    def database_operands(u8):
        b, norms = operands(u8)
        pad = -b.shape[0] % BLOCK_ROW_MULTIPLE
        if kind == "int-mm" and pad:
            b = torch.cat([b, b.new_zeros(pad, b.shape[1])])
            norms = torch.cat([norms, norms.new_full((pad,), PADDED_NORM)])
        return b, norms

    def partial(a, b, b_norms):
        """||b||² − 2 a·b for a block of queries a against a block of database rows b."""
        if kind == "fp32":
            return torch.addmm(b_norms[None], a, b.T, alpha=-2)
        if kind == "fp16":
            cross = torch.mm(a, b.T, out_dtype=torch.float32)
        elif kind == "fp16out":
            cross = torch.mm(a, b.T).float().mul_(1 / FP16_OPERAND_SCALE ** 2)
        else:
            rows = a.shape[0]
            if rows < INT_MM_MIN_ROWS:
                a = torch.cat([a, a.new_zeros(INT_MM_MIN_ROWS - rows, a.shape[1])])
            cross = torch._int_mm(a, b.T)[:rows]
        return cross.mul_(-2).add_(b_norms[None])

    def nearest_two(qd, dd):
        a_all, q_norms = operands(qd)
        b_all, d_norms = database_operands(dd)
        values, indices = [], []
        for qs in range(0, queries, q_block):
            a = a_all[qs:qs + q_block]
            kept = None
            for ds in range(0, b_all.shape[0], d_block):
                dist = partial(a, b_all[ds:ds + d_block], d_norms[ds:ds + d_block])
                v, i = torch.topk(dist, min(2, dist.shape[1]), dim=1, largest=False)
                i += ds
                if kept is not None:
                    v, i = torch.cat([kept[0], v], 1), torch.cat([kept[1], i], 1)
                    v, j = torch.topk(v, 2, dim=1, largest=False)
                    i = i.gather(1, j)
                kept = v, i
            values.append(kept[0] + q_norms[qs:qs + q_block, None])
            indices.append(kept[1])
        return torch.cat(indices), torch.cat(values)

    def to_device(a):
        return torch.from_numpy(a).to(device)

    qd, dd = to_device(q8), to_device(d8)

    def compute():
        r = nearest_two(qd, dd)
        sync()
        return r

    def end_to_end():
        i, v = nearest_two(to_device(q8), to_device(d8))
        return i.cpu(), v.cpu()

    index, squared = compute()
    found = nearest_two_host(index.cpu().numpy(), squared.float().cpu().numpy(), database)
    compute_t = time_peer(compute, reps, budget_s)
    e2e_t = time_peer(end_to_end, reps, budget_s) if cuda else None
    threads = machine_threads() if cuda else torch.get_num_threads()
    label = torch.cuda.get_device_name() if cuda else cpu_name()
    what = f"{GEMM_DESCRIPTION[kind]}, blocks of {q_block} x {d_block}"
    return found, compute_t, e2e_t, threads, f"torch {torch.__version__}", label, what


def faiss_gpu_peer(q8, d8, reps, budget_s):
    """faiss.knn_gpu (FAISS's GPU brute force, fp32): on resident CUDA tensors through
    faiss.contrib.torch_utils, and end to end from the host's float32 arrays."""
    import faiss
    import faiss.contrib.torch_utils  # noqa: F401 (lets knn_gpu take torch tensors)
    import torch

    if not hasattr(faiss, "knn_gpu") or faiss.get_num_gpus() < 1:
        raise RuntimeError("faiss has no GPU support here")
    resources = faiss.StandardGpuResources()
    qd, dd = torch.from_numpy(q8).cuda(), torch.from_numpy(d8).cuda()

    def compute():
        squared, index = faiss.knn_gpu(resources, qd.float(), dd.float(), 2)
        torch.cuda.synchronize()
        return index, squared

    def end_to_end():
        squared, index = faiss.knn_gpu(resources, q8.astype(np.float32), d8.astype(np.float32), 2)
        return index, squared

    index, squared = compute()
    found = nearest_two_host(index.cpu().numpy(), squared.cpu().numpy(), d8.shape[0])
    return (found, time_peer(compute, reps, budget_s), time_peer(end_to_end, reps, budget_s),
            machine_threads(), f"faiss {faiss.__version__}", torch.cuda.get_device_name(),
            "faiss.knn_gpu, fp32 brute force")


def numpy_gemm_peer(q8, d8, reps, budget_s):
    """The fp32 recipe with NumPy's BLAS (exact, as in fp32 on the GPU) and argpartition."""
    q, d = q8.astype(np.float32), d8.astype(np.float32)
    q_norms, d_norms = (q * q).sum(1), (d * d).sum(1)
    q_block, d_block = l2_blocks(q.shape[0], d.shape[0], host_free_bytes())

    def compute():
        indices, values = [], []
        for qs in range(0, q.shape[0], q_block):
            a = q[qs:qs + q_block]
            kept_v = np.empty((a.shape[0], 0), np.float32)
            kept_i = np.empty((a.shape[0], 0), np.int64)
            for ds in range(0, d.shape[0], d_block):
                dist = d_norms[None, ds:ds + d_block] - 2 * (a @ d[ds:ds + d_block].T)
                v = np.concatenate([kept_v, dist], 1)
                i = np.concatenate([kept_i, np.broadcast_to(
                    np.arange(ds, ds + dist.shape[1]), dist.shape)], 1)
                pick = np.argpartition(v, 1, axis=1)[:, :2] if v.shape[1] > 2 else \
                    np.argsort(v, axis=1, kind="stable")
                kept_v = np.take_along_axis(v, pick, 1)
                kept_i = np.take_along_axis(i, pick, 1)
            order = np.argsort(kept_v, axis=1, kind="stable")
            values.append(np.take_along_axis(kept_v, order, 1) + q_norms[qs:qs + q_block, None])
            indices.append(np.take_along_axis(kept_i, order, 1))
        return np.concatenate(indices), np.concatenate(values)

    index, squared = compute()
    found = nearest_two_host(index, squared, d.shape[0])
    return (found, time_peer(compute, reps, budget_s), None, machine_threads(),
            f"numpy {np.__version__}", cpu_name(),
            f"fp32 BLAS GEMM, exact, blocks of {q_block} x {d_block}")


def l2_peer_list():
    """(name, backend, run(q8, d8, reps, budget_s)) of the Euclidean peers."""
    peers = []
    for device_name, backend in (("cuda", "cuda"), ("cpu", "openmp")):
        for kind in GEMM_KINDS:
            peers.append((f"torch-gemm-{kind}-{device_name}", backend,
                          lambda q8, d8, reps, budget, kind=kind, device_name=device_name:
                          torch_gemm_peer(kind, device_name, q8, d8, reps, budget)))
        if device_name == "cuda":
            peers.append(("faiss-gpu-flat", "cuda", faiss_gpu_peer))
    peers.append(("numpy-gemm-fp32", "openmp", numpy_gemm_peer))
    return peers


def l2_peers(args, q8, d8):
    queries, database = q8.shape[0], d8.shape[0]
    comparisons = float(queries) * database
    rows = l2_sample(queries)
    reference = None
    records = []
    for name, backend, run in l2_peer_list():
        if args.peer and name not in args.peer or host_too_slow(name, backend, comparisons, args):
            continue
        try:
            got = run(q8, d8, args.reps, args.budget_s)
        except Exception as error:  # a missing library, device or operator
            skipped(name, error)
            continue
        found, timing, e2e, threads, version, device, what = got
        if reference is None:
            reference = l2_reference(q8, d8, rows)
        agreement, err = l2_check(q8, d8, rows, reference, found)
        description = (f"{queries} queries x {database} database, l2, nearest two, "
                       f"cemd-generate SIFT-like sets, seed 1; {what}")
        record = peer_record("cemd", name, backend, args.size, description, timing, e2e,
                             (queries + database) * CELLS * BINS, comparisons, "cmp", threads,
                             version, device, err)
        record["agreement"] = agreement
        print(f"{'':28s} agrees with kbench on {agreement['queries']} sampled queries: best index "
              f"{agreement['best_index']}, second {agreement['second_index']}; best distance "
              f"{agreement['best_distance']}, second {agreement['second_distance']}")
        records.append(record)
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
    parser.add_argument("--max-host-gcmp", type=float, default=4.0,
                        help="cemd: skip host peers above this many G comparisons")
    args = parser.parse_args()
    records = PEERS[args.algo](args)
    if args.json:
        with open(args.json, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
