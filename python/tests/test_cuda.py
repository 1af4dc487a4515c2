"""CUDA arrays (PyTorch tensors on the GPU): used in place, results on the same device, equal to
the NumPy calls' results, computed on the caller's current stream. Skipped, with the reason,
where PyTorch, a CUDA device or a CUDA build of kbench is missing."""

import numpy as np
import pytest

import kbench
from conftest import sift_like, smooth_image

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("PyTorch sees no CUDA device", allow_module_level=True)
if kbench.devices()["gpu"] is None:
    pytest.skip("this kbench has no usable GPU: " + kbench.devices()["gpu_unavailable_reason"],
                allow_module_level=True)

from kbench import _kbench  # noqa: E402  (after the skips: the addresses the library was handed)


def on_gpu(array):
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


def handed(name):
    return _kbench.handed_views()[name]


@pytest.mark.parametrize("channels", [None, 3, 4])
def test_conv_in_place_on_the_device(rng, channels):
    image = smooth_image(rng, 120, 200, channels)
    tensor = on_gpu(image)
    result = kbench.conv(tensor, "gaussian")
    assert isinstance(result, torch.Tensor) and result.device == tensor.device
    assert handed("image") == tensor.data_ptr()
    assert handed("out") == result.data_ptr()
    assert np.array_equal(result.cpu().numpy(), kbench.conv(image, "gaussian"))


def test_conv_batch_and_out(rng):
    frames = np.stack([smooth_image(rng, 64, 96, 3) for _ in range(5)])
    tensor = on_gpu(frames)
    out = torch.empty_like(tensor)
    assert kbench.conv(tensor, "sharpen", "clamp", out) is out
    assert handed("out") == out.data_ptr()
    assert np.array_equal(out.cpu().numpy(), kbench.conv(frames, "sharpen"))
    with pytest.raises(TypeError, match="out: a torch CUDA array"):
        kbench.conv(tensor, "sharpen", "clamp", np.empty(frames.shape, np.uint8))


def test_conv_on_the_current_stream(rng):
    image = smooth_image(rng, 256, 256, 3)
    tensor = on_gpu(image)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        result = kbench.conv(tensor, "box")
    stream.synchronize()
    assert np.array_equal(result.cpu().numpy(), kbench.conv(image, "box"))


def test_a_copy_only_for_a_non_contiguous_tensor(rng):
    image = smooth_image(rng, 80, 100, 3)
    flipped = on_gpu(image).flip(1)  # negative strides: made contiguous first
    result = kbench.conv(flipped, "gaussian")
    assert np.array_equal(result.cpu().numpy(), kbench.conv(image[:, ::-1], "gaussian"))


@pytest.mark.parametrize("mapping", ["plain", "uniform", "rotation-invariant"])
def test_lbp(rng, mapping):
    frames = np.stack([smooth_image(rng, 90, 130) for _ in range(3)])
    tensor = on_gpu(frames)
    codes, histogram = kbench.lbp(tensor, mapping)
    assert codes.is_cuda and histogram.is_cuda
    assert handed("image") == tensor.data_ptr()
    expected_codes, expected_histogram = kbench.lbp(frames, mapping)
    assert np.array_equal(codes.cpu().numpy(), expected_codes)
    assert histogram.dtype == torch.int32
    assert np.array_equal(histogram.cpu().numpy(), expected_histogram.astype(np.int32))


def test_lbp_into_given_tensors(rng):
    image = smooth_image(rng, 64, 80)
    tensor = on_gpu(image)
    codes = torch.empty_like(tensor)
    histogram = torch.empty(59, dtype=torch.int32, device=tensor.device)
    result = kbench.lbp(tensor, "uniform", out=(codes, histogram))
    assert result[0] is codes and result[1] is histogram
    assert handed("out[0]") == codes.data_ptr()
    expected_codes, expected_histogram = kbench.lbp(image, "uniform")
    assert np.array_equal(codes.cpu().numpy(), expected_codes)
    assert np.array_equal(histogram.cpu().numpy(), expected_histogram.astype(np.int32))


def test_sad_map_and_match(rng):
    target = smooth_image(rng, 140, 180)
    query = target[50:80, 70:110].copy()
    t, q = on_gpu(target), on_gpu(query)
    score_map = kbench.sad_map(t, q)
    assert score_map.is_cuda and handed("target") == t.data_ptr()
    assert np.array_equal(score_map.cpu().numpy(), kbench.sad_map(target, query))
    best = kbench.match(t, q)
    assert (best["row"][0], best["col"][0], best["score"][0]) == (50, 70, 0)
    several = kbench.match(t, q, top=5, separation=1, method="full")
    assert np.array_equal(several, kbench.match(target, query, top=5, separation=1, method="full"))


def test_cemd(rng):
    database = sift_like(rng, 300)
    queries = np.clip(database[:40].astype(np.int32) + rng.integers(-3, 4, (40, 128)), 0,
                      255).astype(np.uint8)
    q, d = on_gpu(queries), on_gpu(database.astype(np.float32))
    for distance in ("normalised", "raw", "l2"):
        found = kbench.cemd_match(q, d, distance, variant="cuda-final")
        assert handed("queries") == q.data_ptr() and handed("database") == d.data_ptr()
        expected = kbench.cemd_match(queries, database, distance, variant="cuda-final")
        assert np.array_equal(found["index"], expected["index"])
        assert np.array_equal(found["second_index"], expected["second_index"])
        assert np.array_equal(found["distance"], expected["distance"])
        matrix = kbench.cemd_all_pairs(q, d, distance, variant="cuda-final")
        assert matrix.is_cuda and handed("matrix") == matrix.data_ptr()
        expected_matrix = kbench.cemd_all_pairs(queries, database, distance, variant="cuda-final")
        assert np.array_equal(matrix.cpu().numpy(), expected_matrix)


def test_bad_device_input(rng):
    bad = on_gpu(sift_like(rng, 4).astype(np.float32))
    bad[2, 7] = float("nan")
    with pytest.raises(kbench.Error, match="value at row 2, column 7 is nan"):
        kbench.cemd_all_pairs(bad, bad)
    with pytest.raises(kbench.Error, match="takes gray"):
        kbench.lbp(on_gpu(smooth_image(rng, 20, 20, 3)))
    with pytest.raises(TypeError, match="dtype float64"):
        kbench.conv(torch.zeros((8, 8), dtype=torch.float64, device="cuda"))


def test_no_host_transfer_in_calls_on_tensors(rng):
    """The CUDA activity of calls on resident tensors, as PyTorch's profiler (CUPTI) records it:
    kbench's kernels and no copy between host and device."""
    profiler = pytest.importorskip("torch.profiler", reason="PyTorch has no profiler")
    image = on_gpu(smooth_image(rng, 256, 320, 3))
    gray = on_gpu(smooth_image(rng, 256, 320))
    out = torch.empty_like(image)
    lbp_out = kbench.lbp(gray)
    torch.cuda.synchronize()
    with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as profile:
        kbench.conv(image, "gaussian", out=out)
        kbench.lbp(gray, out=lbp_out)
        kbench.conv(image, "sharpen")
        torch.cuda.synchronize()
    names = [event.name for event in profile.events()]
    if not names:
        pytest.skip("the profiler recorded no CUDA activity (no CUPTI)")
    assert any("conv" in name.lower() for name in names), names
    assert any("lbp" in name.lower() for name in names), names
    transfers = [n for n in names if "memcpy" in n.lower() and ("htod" in n.lower() or
                                                                  "dtoh" in n.lower())]
    assert not transfers, transfers



class InterfaceOnly:
    """A CUDA array offered only through `__cuda_array_interface__`, as Numba's are."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


def test_arrays_with_only_the_cuda_array_interface(rng):
    image = smooth_image(rng, 64, 96, 3)
    tensor, out = on_gpu(image), torch.zeros(image.shape, dtype=torch.uint8, device="cuda")
    given = InterfaceOnly(out)
    assert kbench.conv(InterfaceOnly(tensor), "gaussian", out=given) is given
    assert handed("image") == tensor.data_ptr() and handed("out") == out.data_ptr()
    torch.cuda.synchronize()
    assert np.array_equal(out.cpu().numpy(), kbench.conv(image, "gaussian"))
    target = smooth_image(rng, 90, 120)
    query = target[30:50, 40:70].copy()
    found = kbench.match(InterfaceOnly(on_gpu(target)), InterfaceOnly(on_gpu(query)))
    assert (found["row"][0], found["col"][0], found["score"][0]) == (30, 40, 0)
    with pytest.raises(TypeError, match="pass out="):
        kbench.conv(InterfaceOnly(tensor))
    with pytest.raises(TypeError, match="out: a CUDA array like the input"):
        kbench.conv(InterfaceOnly(tensor), out=np.zeros(image.shape, np.uint8))


def test_cemd_piece_matcher_on_the_device(rng):
    database = sift_like(rng, 300)
    database[250:] = database[20:70]  # exact ties between pieces
    queries = np.concatenate([database[[33]], sift_like(rng, 40)])
    q, d = on_gpu(queries), on_gpu(database)
    for distance in ("normalised", "raw", "l2"):
        expected = kbench.cemd_match(queries, database, distance, variant="cuda-final")
        matcher = kbench.CemdPieceMatcher(q, distance, variant="cuda-final")
        for first, rows in ((250, 50), (0, 1), (1, 149), (150, 100)):
            matcher.add(d[first:first + rows], first)
        with pytest.raises(kbench.Error, match="one place"):
            matcher.add(database[:3], 0)
        assert np.array_equal(matcher.matches(), expected), distance
