"""What every call shares: the registry listing, choices, errors, threads, a real photo."""

import sys
import threading
import time
import types

import numpy as np
import pytest

import kbench
import reference
from conftest import sift_like, smooth_image


def test_variants():
    everything = kbench.variants()
    assert {"conv", "lbp", "sad", "sad-pruned", "cemd"} <= {v["algorithm"] for v in everything}
    for v in everything:
        assert set(v) == {"name", "algorithm", "layer", "backend"}
        assert v["layer"] in ("sequential", "native_cpu", "portable", "native_cuda")
        assert v["backend"] in ("serial", "openmp", "cuda")
    conv = kbench.variants("conv")
    assert conv and all(v["algorithm"] == "conv" for v in conv)
    assert conv[0]["layer"] == "sequential"  # the reference first
    with pytest.raises(ValueError, match="algo"):
        kbench.variants("blur")


def test_devices():
    info = kbench.devices()
    assert isinstance(info["cpu"], str) and info["cpu"]
    assert info["threads"] >= 1
    assert isinstance(info["built_with_cuda"], bool)
    if info["gpu"] is None:
        assert info["gpu_unavailable_reason"]


def test_last_run_per_call(rng):
    kbench.lbp(smooth_image(rng, 9, 9))
    assert kbench.last_run()["algorithm"] == "lbp"
    kbench.cemd_match(sift_like(rng, 2), sift_like(rng, 2))
    run = kbench.last_run()
    assert run["algorithm"] == "cemd"
    assert set(run) == {"algorithm", "variant", "layer", "backend", "compute_ms", "total_ms",
                        "detail"}


def test_last_run_is_per_thread(rng):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(kbench.last_run()))
    kbench.conv(smooth_image(rng, 9, 9))
    thread.start()
    thread.join()
    assert seen == [None]


def test_choices(rng):
    image = smooth_image(rng, 20, 20)
    expected = kbench.conv(image, "box")
    for backend in ("serial", "openmp"):
        assert np.array_equal(kbench.conv(image, "box", backend=backend), expected)
        assert kbench.last_run()["backend"] == backend
    assert np.array_equal(kbench.conv(image, "box", layer="sequential"), expected)
    assert kbench.last_run()["layer"] == "sequential"
    with pytest.raises(ValueError, match="backend"):
        kbench.conv(image, backend="metal")
    with pytest.raises(ValueError, match="layer"):
        kbench.conv(image, layer="fast")
    with pytest.raises(ValueError, match="variant"):
        kbench.conv(image, variant="no-such-variant")
    with pytest.raises(ValueError, match="variant"):
        kbench.lbp(image, variant=kbench.variants("conv")[0]["name"])  # another algorithm's


@pytest.mark.skipif(kbench.devices()["gpu"] is not None, reason="this machine has a usable GPU")
def test_missing_gpu_is_a_runtime_error(rng):
    image = smooth_image(rng, 20, 20)
    with pytest.raises(RuntimeError, match="backend cuda"):
        kbench.conv(image, backend="cuda")
    with pytest.raises(RuntimeError, match="native_cuda"):
        kbench.lbp(image, layer="native_cuda")
    cuda = [v["name"] for v in kbench.variants("cemd") if v["backend"] == "cuda"]
    if cuda:
        with pytest.raises(RuntimeError, match=cuda[0]):
            kbench.cemd_match(sift_like(rng, 2), sift_like(rng, 2), variant=cuda[0])


def test_library_errors_become_kbench_error(rng):
    # Options that exclude each other are refused by the C++ library, not by the Python layer.
    target = smooth_image(rng, 20, 20)
    full = [v["name"] for v in kbench.variants("sad") if v["backend"] != "cuda"][0]
    with pytest.raises(kbench.Error, match=full) as raised:
        kbench.match(target, target[:4, :4], method="pruned", variant=full)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, RuntimeError)
    # ...and so is an input the Python layer lets through: out overlapping the input.
    with pytest.raises(ValueError, match="overlaps"):
        kbench.conv(target, "box", out=target)


def test_threads_give_the_same_results(rng):
    images = [smooth_image(rng, 64, 80, 3) for _ in range(4)]
    queries, database = sift_like(rng, 30), sift_like(rng, 50)
    target = smooth_image(rng, 60, 60)
    query = target[20:30, 15:27].copy()

    def work():
        return (
            [kbench.conv(image, "gaussian") for image in images],
            [kbench.lbp(image, "uniform") for image in images],
            kbench.match(target, query, top=3).tolist(),
            kbench.cemd_all_pairs(queries, database, "raw"),
        )

    expected = work()
    results = [None] * 4
    errors = []

    def run(slot):
        try:
            for _ in range(3):
                results[slot] = work()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for result in results:
        assert all(np.array_equal(a, b) for a, b in zip(result[0], expected[0]))
        assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
                   for a, b in zip(result[1], expected[1]))
        assert result[2] == expected[2]
        assert np.array_equal(result[3], expected[3])


def test_the_gil_is_released_during_a_call(rng):
    """While one thread is inside a long call, another runs Python: its loop takes timestamps
    inside the call's span, which a call holding the GIL would not allow."""
    queries, database = sift_like(rng, 3000), sift_like(rng, 6000)
    span = []

    def call():
        start = time.perf_counter()
        kbench.cemd_all_pairs(queries, database, "raw")
        span.extend([start, time.perf_counter()])

    worker = threading.Thread(target=call)
    stamps = []
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    inside = [t for t in stamps if span[0] < t < span[1]]
    assert len(inside) > 100, f"{len(inside)} stamps in the call's {span[1] - span[0]:.3f} s"


def test_real_photo():
    data = pytest.importorskip("skimage.data", reason="scikit-image is not installed")
    photo = data.astronaut()[::4, ::4]  # 128 × 128 RGB
    assert np.array_equal(kbench.lbp(photo, "uniform")[1], reference.lbp(photo, "uniform")[1])
    blurred = kbench.conv(photo, "gaussian")
    expected = reference.conv(photo, kbench._kbench.builtin_mask("gaussian"))
    assert np.abs(blurred.astype(int) - expected).max() <= 1
    query = photo[40:72, 50:90]
    assert kbench.match(photo, query).tolist() == [(40, 50, 0)]


class InterfaceOnly:
    """An object that offers an array only through `__cuda_array_interface__`."""

    def __init__(self, array, typestr="|u1"):
        self.array = array
        self.__cuda_array_interface__ = {"shape": array.shape, "typestr": typestr,
                                         "data": (array.ctypes.data, False), "strides": None,
                                         "version": 3}


def test_cuda_array_interface_outside_cuda_memory():
    image = np.zeros((8, 8), np.uint8)
    with pytest.raises(TypeError, match="image: __cuda_array_interface__ points at memory on no "
                                        "CUDA device"):
        kbench.conv(InterfaceOnly(image))
    with pytest.raises(TypeError, match="image: __cuda_array_interface__ type '<c8'"):
        kbench.conv(InterfaceOnly(image, "<c8"))


class StandInArray:
    """An array of a stand-in `cupy` module, in host memory, exported through DLPack."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_cupy_arrays_get_cupy_results(monkeypatch, rng):
    """CuPy's path through the extension (its array type, results made by cupy.empty within
    cupy.cuda.Device of the input's device), run with a stand-in module whose arrays are in host
    memory; the GPU machine has no CuPy."""
    made = []

    class Device:
        def __init__(self, device):
            made.append(("device", device))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def empty(shape, dtype):
        made.append(("empty", tuple(shape), dtype))
        return StandInArray(np.empty(shape, dtype))

    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.empty = StandInArray, empty
    cupy.cuda = types.SimpleNamespace(Device=Device, get_current_stream=lambda: None)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    image = smooth_image(rng, 24, 32, 3)
    result = kbench.conv(StandInArray(image), "gaussian")
    assert isinstance(result, StandInArray)
    assert np.array_equal(result.array, kbench.conv(image, "gaussian"))
    assert made == [("device", 0), ("empty", (24, 32, 3), "uint8")]
    codes, histogram = kbench.lbp(StandInArray(image[..., 0].copy()))
    assert histogram.array.dtype == np.uint32 and histogram.array.sum() == 24 * 32
    with pytest.raises(TypeError, match="out: a cupy CUDA array like the input"):
        kbench.conv(StandInArray(image), out=np.empty_like(image))
