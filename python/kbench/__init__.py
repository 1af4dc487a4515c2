"""kbench: image and feature kernels on NumPy arrays.

Each function is one call of the kbench C++ library (``include/kbench/kbench.hpp``):

- :func:`conv` -- mask convolution of uint8 images (1 to 4 channels, batches)
- :func:`lbp` -- Local Binary Pattern codes and histograms
- :func:`sad_map`, :func:`match` -- SAD template matching
- :func:`cemd_match`, :func:`cemd_all_pairs` -- circular EMD between SIFT descriptors

and :func:`variants`, :func:`devices`, :func:`last_run` say what can run and what ran.

Every function takes ``variant``, ``backend`` and ``layer`` (``None``: the fastest registered
variant for this machine and input), runs with the GIL released, and keeps one library context
per Python thread, so threads may call at once. The first call starts Kokkos; its portable host
variants (Kokkos 3.4) then run only on that thread, and other threads get the other variants.

Memory layout: arrays whose pixels lie packed along each row (C-contiguous arrays, a slice of
rows, a crop of columns) are read in place, their row stride used as the image's pitch; any
other layout (a step along a row, reversed axes, channels not adjacent) is copied once into a
packed array before the call.

CUDA arrays (PyTorch tensors and CuPy arrays on a CUDA device, through DLPack) are used in place
on the GPU: the call is queued on the array library's current stream, and the result is a new
array of the same library on the same device (``out``, when given, must be one too). A CUDA array
that is not C-contiguous is made contiguous first (one copy on the device). :func:`match` and
:func:`cemd_match` return NumPy arrays: they wait for their stream and bring back positions and
matches. On CUDA arrays ``match`` runs full search, and images are gray (one channel). The
calls run on the context's device, CUDA device 0.

Errors: a wrong dtype raises TypeError, a wrong shape or value ValueError, a backend or variant
this machine cannot run RuntimeError, each naming the argument. What the C++ library itself
refuses raises :class:`kbench.Error` (both a ValueError and a RuntimeError) with its message.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _kbench
from ._kbench import Error

__all__ = [
    "Error",
    "builtin_masks",
    "cemd_all_pairs",
    "cemd_match",
    "conv",
    "devices",
    "last_run",
    "lbp",
    "match",
    "sad_map",
    "variants",
    "MATCH_DTYPE",
    "CEMD_MATCH_DTYPE",
]

#: The rows :func:`match` returns: the query's top-left corner in the target and its SAD.
MATCH_DTYPE = np.dtype([("row", np.int32), ("col", np.int32), ("score", np.int32)])
#: The rows :func:`cemd_match` returns, one per query.
CEMD_MATCH_DTYPE = np.dtype(
    [
        ("index", np.int32),
        ("distance", np.float32),
        ("second_index", np.int32),
        ("second_distance", np.float32),
        ("accepted", np.bool_),
    ]
)

_BACKENDS = ("serial", "openmp", "cuda")
_LAYERS = ("sequential", "native_cpu", "portable", "native_cuda")
_BORDERS = ("clamp", "crop")
_MAPPINGS = ("plain", "uniform", "rotation-invariant")
_DISTANCES = ("normalised", "raw", "l2")
_METHODS = ("auto", "full", "pruned")
_MAX_MASK = 63


# --- Arguments ---------------------------------------------------------------------------------


def _cuda_library(value: Any) -> Optional[str]:
    """"torch" or "cupy" for a CUDA array of that library, else None (looked up only where the
    library is already imported)."""
    if type(value) is np.ndarray:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.is_cuda:
        return "torch"
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(value, cupy.ndarray):
        return "cupy"
    return None


def _array(value: Any, name: str) -> Any:
    """``value`` as a NumPy array, without a copy when it is one; a CUDA array as it is (made
    C-contiguous where it is not), for the extension's ``place_of`` to map."""
    library = _cuda_library(value)
    if library == "torch":
        return value if value.is_contiguous() else value.contiguous()
    if library == "cupy":
        return value if value.flags.c_contiguous else sys.modules["cupy"].ascontiguousarray(value)
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except Exception as e:  # e.g. an array on a device other than CUDA
        raise TypeError(f"{name}: cannot be read as a NumPy array ({e})") from None


def _dtype_name(array: Any) -> str:
    """The dtype's NumPy name (uint8, float32, ...), for NumPy, PyTorch and CuPy arrays."""
    if _cuda_library(array) == "torch":
        return str(array.dtype).replace("torch.", "")
    return np.dtype(array.dtype).name


def _size(array: Any) -> int:
    return array.numel() if _cuda_library(array) == "torch" else array.size


def _require_dtype(array: Any, name: str, dtypes: Sequence[Any], advice: str = "") -> None:
    if type(array) is np.ndarray:
        if any(array.dtype == d for d in dtypes):  # the common case, without building names
            return
    elif _dtype_name(array) in [np.dtype(d).name for d in dtypes]:
        return
    wanted = " or ".join(np.dtype(d).name for d in dtypes)
    raise TypeError(f"{name}: dtype {_dtype_name(array)}; expected {wanted}{advice}")


def _require_nonempty(array: Any, name: str) -> None:
    if _size(array) == 0:
        raise ValueError(f"{name}: an empty array (shape {tuple(array.shape)})")


def _stream(array: Any) -> int:
    """The CUDA stream a call on ``array`` is queued on: its library's current one (0: host)."""
    library = _cuda_library(array)
    if library == "torch":
        return sys.modules["torch"].cuda.current_stream(array.device).cuda_stream
    if library == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    return 0


def _empty_like(like: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """A new array of ``shape`` and ``dtype`` where ``like`` lives: NumPy, or the same CUDA
    library on the same device. In PyTorch, uint32 (histograms) becomes int32, since PyTorch's
    uint32 has few operations; the counts of a frame of fewer than 2^31 pixels fit."""
    library = _cuda_library(like)
    if library == "torch":
        torch = sys.modules["torch"]
        name = "int32" if np.dtype(dtype).name == "uint32" else np.dtype(dtype).name
        return torch.empty(shape, dtype=getattr(torch, name), device=like.device)
    if library == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)


def _image4(value: Any, name: str, gray_batches: bool = False) -> tuple[np.ndarray, str]:
    """A uint8 image argument as an N×H×W×C view of the same memory, and its form.

    Forms: "hw" (H×W), "hwc" (H×W×C), "nhw" (N×H×W, only where ``gray_batches``), "nhwc".
    """
    array = _array(value, name)
    _require_dtype(
        array, name, [np.uint8], " (convert with np.clip(x, 0, 255).astype(np.uint8))"
    )
    _require_nonempty(array, name)
    if array.ndim == 2:
        return array[None, :, :, None], "hw"
    if array.ndim == 3:
        if gray_batches and array.shape[2] > 4:
            return array[:, :, :, None], "nhw"
        form, array = "hwc", array[None]
    elif array.ndim == 4:
        form = "nhwc"
    else:
        raise ValueError(f"{name}: {array.ndim} axes (shape {tuple(array.shape)}); expected H×W, "
                         "H×W×C or N×H×W×C")
    if array.shape[3] > 4:
        raise ValueError(f"{name}: {array.shape[3]} channels; images have 1 to 4")
    return array, form


def _output(out: Any, name: str, shape: tuple[int, ...], dtype: Any, like: Any) -> Any:
    """The caller's output array, checked, or a new one where ``like`` lives."""
    if out is None:
        return _empty_like(like, shape, dtype)
    library = _cuda_library(like)
    if _cuda_library(out) != library or (library is None and not isinstance(out, np.ndarray)):
        where = f"a {library} CUDA array" if library else "a NumPy array"
        raise TypeError(f"{name}: {where} like the input, not {type(out).__name__}")
    _require_dtype(out, name, [dtype])
    if tuple(out.shape) != shape:
        raise ValueError(f"{name}: shape {tuple(out.shape)}; this call writes {shape}")
    if library is None and not out.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    return out


def _choice(
    algorithms: Sequence[str], variant: Optional[str], backend: Optional[str],
    layer: Optional[str]
) -> tuple[str, str, str]:
    """The C++ Choice's fields; refuses names this build lacks and what this machine can't run."""
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend: '{backend}' is not one of {', '.join(_BACKENDS)}")
    if layer is not None and layer not in _LAYERS:
        raise ValueError(f"layer: '{layer}' is not one of {', '.join(_LAYERS)}")
    needs_gpu = backend == "cuda" or layer == "native_cuda"
    what = f"backend {backend}" if backend == "cuda" else f"layer {layer}"
    if variant is not None:
        known = [v for v in _all_variants() if v["algorithm"] in algorithms]
        found = [v for v in known if v["name"] == variant]
        if not found:
            names = ", ".join(v["name"] for v in known)
            raise ValueError(
                f"variant: no {' or '.join(algorithms)} variant named '{variant}' in this build "
                f"(known: {names})"
            )
        if found[0]["backend"] == "cuda":
            needs_gpu, what = True, f"variant {variant}"
    if needs_gpu and devices()["gpu"] is None:
        info = devices()
        reason = ("this kbench was built without CUDA" if not info["built_with_cuda"]
                  else info["gpu_unavailable_reason"] or "no usable GPU")
        raise RuntimeError(f"{what} needs a CUDA GPU; {reason}")
    return variant or "", backend or "", layer or ""


def _option(value: str, name: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
    return value


@functools.lru_cache(maxsize=None)
def _all_variants_cached() -> tuple:
    return tuple(_kbench.variants())


def _all_variants() -> list[dict]:
    return [dict(v) for v in _all_variants_cached()]


# --- Information -------------------------------------------------------------------------------


def variants(algo: Optional[str] = None) -> list[dict]:
    """The variants this build registers.

    Parameters
    ----------
    algo : str, optional
        Only this algorithm's variants: "conv", "lbp", "sad", "sad-pruned" or "cemd".

    Returns
    -------
    list of dict
        One dict per variant, in registry order: ``name``, ``algorithm``, ``layer``
        ("sequential", "native_cpu", "portable", "native_cuda") and ``backend`` ("serial",
        "openmp", "cuda"). A name is what the ``variant`` argument of the calls takes.
    """
    found = _all_variants()
    if algo is None:
        return found
    names = list(_kbench.algorithm_names())
    if algo not in names:
        raise ValueError(f"algo: '{algo}' is not one of {', '.join(names)}")
    return [v for v in found if v["algorithm"] == algo]


@functools.lru_cache(maxsize=None)
def _devices_cached() -> tuple:
    return tuple(_kbench.devices().items())


def devices() -> dict:
    """What this machine and build offer.

    Returns
    -------
    dict
        ``cpu`` (its name), ``threads`` (host threads), ``built_with_cuda``, ``gpu`` (the CUDA
        device's name, or None where none is usable), ``gpu_unavailable_reason`` ("" when a GPU
        is usable) and ``commit`` (the commit kbench was built from).
    """
    return dict(_devices_cached())


def last_run() -> Optional[dict]:
    """What this thread's last call ran, or None before its first call.

    Returns
    -------
    dict or None
        ``algorithm``, ``variant``, ``layer``, ``backend``, ``compute_ms`` (the computation
        alone), ``total_ms`` (with copies) and ``detail`` (what the run found beyond its result,
        e.g. how much the pruned search skipped).
    """
    return _kbench.last_run()


def builtin_masks() -> list[str]:
    """The names of the built-in 3×3 masks that :func:`conv` takes."""
    return list(_kbench.builtin_mask_names())


# --- Calls ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _builtin_weights(name: str) -> np.ndarray:
    """A built-in mask's weights, made once (read-only, shared by the calls)."""
    names = builtin_masks()
    if name not in names:
        raise ValueError(f"mask: '{name}' is not a built-in mask ({', '.join(names)})")
    weights = _kbench.builtin_mask(name)
    weights.flags.writeable = False
    return weights


def _mask_weights(mask: Union[str, Any]) -> np.ndarray:
    if isinstance(mask, str):
        return _builtin_weights(mask)
    weights = _array(mask, "mask")
    if weights.dtype.kind not in "fiu":
        raise TypeError(f"mask: dtype {weights.dtype}; expected real numbers (float32)")
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1] or weights.shape[0] % 2 == 0:
        raise ValueError(f"mask: shape {weights.shape}; a mask is an odd N×N square")
    if weights.shape[0] > _MAX_MASK:
        raise ValueError(f"mask: {weights.shape[0]}×{weights.shape[0]}; at most "
                         f"{_MAX_MASK}×{_MAX_MASK}")
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    if not np.all(np.isfinite(weights)):
        raise ValueError("mask: weights must be finite (as float32)")
    return weights


def conv(
    image: Any,
    mask: Union[str, Any] = "gaussian",
    border: str = "clamp",
    out: Optional[np.ndarray] = None,
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> np.ndarray:
    """Convolve uint8 images with an N×N mask (applied as a correlation).

    ``out(y, x, c) = Σ mask(j, i) · image(y + j − r, x + i − r, c)``, ``r = (N − 1) / 2``,
    accumulated in float, rounded to nearest and clamped to 0..255 (within ±1 of the exact
    result). An alpha channel (the last of 2 or 4) is copied through, not convolved.

    Parameters
    ----------
    image : array_like of uint8
        H×W, H×W×C (C 1 to 4) or N×H×W×C (N frames, all in one call).
    mask : str or array_like of float
        A built-in mask's name (:func:`builtin_masks`) or an odd N×N array of finite weights,
        N ≤ 63 (converted to float32).
    border : {"clamp", "crop"}
        clamp: the output has the image's size, edge pixels repeat outside. crop: only pixels
        whose whole window lies inside (the output shrinks by r on every side).
    out : numpy.ndarray of uint8, optional
        Where to write: the output's shape, uint8, writable, with each row's pixels adjacent in
        memory (any row stride); it may not overlap ``image``.
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`); None: the fastest for this input.

    Returns
    -------
    numpy.ndarray of uint8
        The convolved images, of the input's form (``out`` when given).

    Notes
    -----
    Images with packed pixels along each row are read in place; other layouts are copied once.
    """
    frames, form = _image4(image, "image")
    weights = _mask_weights(mask)
    border = _option(border, "border", _BORDERS)
    choice = _choice(["conv"], variant, backend, layer)
    n, h, w, c = frames.shape
    size = weights.shape[0]
    if size > h or size > w:
        raise ValueError(f"mask: {size}×{size} is larger than the {w}×{h} image")
    if border == "crop":
        h, w = h - (size - 1), w - (size - 1)
    shape4 = (n, h, w, c)
    shape = {"hw": (h, w), "hwc": (h, w, c), "nhwc": shape4}[form]
    result = _output(out, "out", shape, np.uint8, like=frames)
    _kbench.conv(frames, _as4(result, form), weights, border, *choice, stream=_stream(frames))
    return result


def _as4(array: Any, form: str) -> Any:
    """An output array of the given form as an N×H×W×C view of the same memory."""
    if form == "hw":
        return array[None, :, :, None]
    if form == "hwc":
        return array[None]
    if form == "nhw":
        return array[:, :, :, None]
    return array


def lbp(
    image: Any,
    mapping: str = "plain",
    border: str = "clamp",
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Local Binary Pattern codes and their histogram.

    Bit k of a pixel's code is set when neighbour k (clockwise from the top-left one) is at
    least the centre; colour images are converted to gray first (integer BT.601 luma, an alpha
    channel ignored).

    Parameters
    ----------
    image : array_like of uint8
        H×W (gray), H×W×C (C 1 to 4: colour), N×H×W (N gray frames; a 3-axis array whose last
        axis is longer than 4) or N×H×W×C. To pass gray frames 4 pixels wide or less, give them
        as N×H×W×1.
    mapping : {"plain", "uniform", "rotation-invariant"}
        plain: the code itself, 256 bins. uniform: the 58 uniform codes (at most two 0/1
        changes round the circle) labelled 0..57 in increasing code order, every other code 58;
        59 bins. rotation-invariant: the smallest of the code's 8 bit rotations; 36 bins, one
        per such code in increasing order.
    border : {"clamp", "crop"}
        clamp: every pixel, edge pixels repeating outside. crop: the pixels whose 8 neighbours
        lie inside (the output shrinks by 1 on every side; the image must be at least 3×3).
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`); None: the fastest for this input.

    Returns
    -------
    codes : numpy.ndarray of uint8
        H'×W', or N×H'×W' for several frames: the mapped code of each pixel.
    histogram : numpy.ndarray of uint32
        bins, or N×bins for several frames (int32 for a PyTorch tensor).

    Notes
    -----
    Images with packed pixels along each row are read in place; other layouts are copied once.
    """
    frames, form = _image4(image, "image", gray_batches=True)
    mapping = _option(mapping, "mapping", _MAPPINGS)
    border = _option(border, "border", _BORDERS)
    choice = _choice(["lbp"], variant, backend, layer)
    n, h, w, _ = frames.shape
    if border == "crop":
        if h < 3 or w < 3:
            raise ValueError(f"image: {w}×{h}; border 'crop' needs at least 3×3")
        h, w = h - 2, w - 2
    bins = _kbench.lbp_bin_count(mapping)
    codes = _empty_like(frames, (n, h, w, 1), np.uint8)
    histogram = _empty_like(frames, (n, bins), np.uint32)
    _kbench.lbp(frames, codes, histogram, mapping, border, *choice, stream=_stream(frames))
    if form in ("hw", "hwc"):
        return codes[0, :, :, 0], histogram[0]
    return codes[:, :, :, 0], histogram


def _gray_pair(target: Any, query: Any) -> tuple[np.ndarray, np.ndarray]:
    """Target and query as 1×H×W×C views, the query no larger than the target."""
    arrays = []
    for value, name in ((target, "target"), (query, "query")):
        array, form = _image4(value, name)
        if form == "nhwc":
            raise ValueError(f"{name}: {array.ndim} axes; expected one image, H×W or H×W×C")
        arrays.append(array)
    t, q = arrays
    if q.shape[1] > t.shape[1] or q.shape[2] > t.shape[2]:
        raise ValueError(f"query: {q.shape[2]}×{q.shape[1]} is larger than the target "
                         f"{t.shape[2]}×{t.shape[1]}")
    return t, q


def sad_map(
    target: Any,
    query: Any,
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> np.ndarray:
    """The sum of absolute differences of ``query`` at every position of ``target``.

    ``map(i, j) = Σ_{k,l} |target(i + k, j + l) − query(k, l)|``; colour images are compared in
    gray (integer BT.601 luma).

    Parameters
    ----------
    target, query : array_like of uint8
        H×W or H×W×C (C 1 to 4) images; the query no larger than the target.
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`, algorithm "sad"); None: the fastest.

    Returns
    -------
    numpy.ndarray of int32
        (target height − query height + 1) × (target width − query width + 1).
    """
    t, q = _gray_pair(target, query)
    choice = _choice(["sad"], variant, backend, layer)
    result = _empty_like(t, (t.shape[1] - q.shape[1] + 1, t.shape[2] - q.shape[2] + 1), np.int32)
    _kbench.sad_map(t, q, result, *choice, stream=_stream(t))
    return result


def match(
    target: Any,
    query: Any,
    top: int = 1,
    separation: Optional[int] = None,
    method: str = "auto",
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> np.ndarray:
    """The best positions of ``query`` in ``target`` by SAD, exact.

    Parameters
    ----------
    target, query : array_like of uint8
        H×W or H×W×C images (colour compared in gray); the query no larger than the target.
    top : int
        How many positions to return (fewer when the map has no more far enough apart).
    separation : int, optional
        The least distance between returned positions, in pixels: a position is kept when it
        is at least this many rows or columns away from every better one. None: the query's
        size (boxes do not overlap); 1: no separation.
    method : {"auto", "full", "pruned"}
        auto: the bound-pruned exact search for one position and for several without
        separation, full search otherwise. pruned cannot keep several positions apart.
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`, algorithms "sad" and "sad-pruned"; a
        variant's algorithm decides the method); None: the fastest.

    Returns
    -------
    numpy.ndarray of MATCH_DTYPE
        Fields ``row``, ``col`` (the query's top-left corner) and ``score`` (the SAD), best
        first; ties go to the smallest row, then column.
    """
    t, q = _gray_pair(target, query)
    top = _count(top, "top", 1)
    separation = 0 if separation is None else _count(separation, "separation", 1)
    method = _option(method, "method", _METHODS)
    choice = _choice(["sad", "sad-pruned"], variant, backend, layer)
    rows = _kbench.match(t, q, top, separation, method, *choice, stream=_stream(t))
    return np.array(rows, dtype=np.int32).reshape(-1, 3).copy().view(MATCH_DTYPE).reshape(-1)


def _count(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: an integer, not {type(value).__name__}")
    if value < least or value > np.iinfo(np.int32).max:
        raise ValueError(f"{name}: {value}; at least {least}")
    return int(value)


def _descriptors(value: Any, name: str) -> Any:
    array = _array(value, name)
    _require_dtype(array, name, [np.uint8, np.float32])
    if array.ndim != 2 or array.shape[1] != 128:
        raise ValueError(f"{name}: shape {tuple(array.shape)}; descriptor sets are N×128")
    _require_nonempty(array, name)
    return array


def _cemd_args(queries: Any, database: Any, distance: str, variant, backend, layer):
    q = _descriptors(queries, "queries")
    d = _descriptors(database, "database")
    distance = _option(distance, "distance", _DISTANCES)
    return q, d, distance, _choice(["cemd"], variant, backend, layer)


def cemd_match(
    queries: Any,
    database: Any,
    distance: str = "normalised",
    ratio: float = 0.8,
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> np.ndarray:
    """Each query's two nearest database descriptors, and Lowe's ratio test.

    Parameters
    ----------
    queries, database : array_like of uint8 or float32
        N×128 SIFT descriptors (4×4 cells × 8 orientation bins); float32 values must be whole
        numbers 0..255.
    distance : {"normalised", "raw", "l2"}
        normalised: the sum over cells of the circular EMD of the cells as distributions (0 for
        an empty cell). raw: the circular EMD on the raw values. l2: the Euclidean distance.
    ratio : float
        Accepted when distance < ratio · second_distance; in (0, 1].
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`, algorithm "cemd"); None: the fastest.

    Returns
    -------
    numpy.ndarray of CEMD_MATCH_DTYPE
        One row per query: ``index``, ``distance``, ``second_index`` (−1 for a database of one
        descriptor), ``second_distance`` and ``accepted``. Ties go to the smaller index.
    """
    q, d, distance, choice = _cemd_args(queries, database, distance, variant, backend, layer)
    ratio = float(ratio)
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio: {ratio}; it lies in (0, 1]")
    index, best, second_index, second, accepted = _kbench.cemd_match(
        q, d, distance, ratio, *choice, stream=_stream(q))
    result = np.empty(len(index), dtype=CEMD_MATCH_DTYPE)
    result["index"] = index
    result["distance"] = best
    result["second_index"] = second_index
    result["second_distance"] = second
    result["accepted"] = accepted
    return result


def cemd_all_pairs(
    queries: Any,
    database: Any,
    distance: str = "normalised",
    *,
    variant: Optional[str] = None,
    backend: Optional[str] = None,
    layer: Optional[str] = None,
) -> np.ndarray:
    """The distance of every query to every database descriptor.

    Parameters
    ----------
    queries, database : array_like of uint8 or float32
        N×128 and M×128 SIFT descriptors (float32 values whole numbers 0..255).
    distance : {"normalised", "raw", "l2"}
        As in :func:`cemd_match`.
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`, algorithm "cemd"); None: the fastest.

    Returns
    -------
    numpy.ndarray of float32
        N×M distances.
    """
    q, d, distance, choice = _cemd_args(queries, database, distance, variant, backend, layer)
    result = _empty_like(q, (q.shape[0], d.shape[0]), np.float32)
    _kbench.cemd_all_pairs(q, d, result, distance, *choice, stream=_stream(q))
    return result
