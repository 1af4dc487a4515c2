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

CUDA arrays are used in place on the GPU: PyTorch tensors (read through PyTorch's C DLPack
exporter), CuPy arrays, and other arrays through DLPack or ``__cuda_array_interface__``. The call
is queued on the array library's current stream (for an array known only by its interface, on
the stream the interface names, else CUDA's legacy default stream), and the result is a new array
of the same library on the same device; for arrays of other libraries pass ``out``, which must
live where the input does. A CUDA array whose pixels are not packed along its rows is made
contiguous first (one copy on the device, PyTorch and CuPy only). :func:`match` and
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
    "CemdPieceMatcher",
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
_ANY = ("", "", "")  # no variant, backend or layer asked for: the fastest for the input


# --- Arguments ---------------------------------------------------------------------------------


def _empty_cupy(device: int, shape: tuple[int, ...], dtype: str) -> Any:
    """A new CuPy array on CUDA device ``device``: the extension's results like a CuPy input."""
    cupy = sys.modules["cupy"]
    with cupy.cuda.Device(device):
        return cupy.empty(shape, dtype=dtype)


def _choice(
    algorithms: Sequence[str], variant: Optional[str], backend: Optional[str],
    layer: Optional[str]
) -> tuple[str, str, str]:
    """The C++ Choice's fields; refuses names this build lacks and what this machine can't run."""
    if variant is None and backend is None and layer is None:
        return _ANY
    if backend is not None and backend not in _BACKENDS:
        raise ValueError(f"backend: '{backend}' is not one of {', '.join(_BACKENDS)}")
    if layer is not None and layer not in _LAYERS:
        raise ValueError(f"layer: '{layer}' is not one of {', '.join(_LAYERS)}")
    needs_gpu = backend == "cuda" or layer == "native_cuda"
    what = f"backend {backend}" if backend == "cuda" else f"layer {layer}"
    if variant is not None:
        found = [v for v in _variants_named().get(variant, ()) if v["algorithm"] in algorithms]
        if not found:
            names = ", ".join(v["name"] for v in _all_variants() if v["algorithm"] in algorithms)
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


@functools.lru_cache(maxsize=None)
def _variants_named() -> dict:
    """The registered variants by name (a name may serve several algorithms), made once."""
    table: dict = {}
    for v in _all_variants_cached():
        table.setdefault(v["name"], []).append(v)
    return table


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


def _mask_weights(mask: Union[str, Any]) -> Union[str, np.ndarray]:
    """A built-in mask's name as it is (the extension knows them), or checked float32 weights."""
    if isinstance(mask, str):
        return mask
    try:
        weights = np.asarray(mask)
    except Exception as e:  # e.g. an array on a GPU
        raise TypeError(f"mask: cannot be read as a NumPy array ({e})") from None
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
    return _kbench.conv(image, _mask_weights(mask), _option(border, "border", _BORDERS), out,
                        *_choice(("conv",), variant, backend, layer))


def lbp(
    image: Any,
    mapping: str = "plain",
    border: str = "clamp",
    out: Optional[tuple[Any, Any]] = None,
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
        plain (also "default", scikit-image's name): the code itself, 256 bins. uniform: the 58 uniform codes (at most two 0/1
        changes round the circle) labelled 0..57 in increasing code order, every other code 58;
        59 bins. rotation-invariant: the smallest of the code's 8 bit rotations; 36 bins, one
        per such code in increasing order.
    border : {"clamp", "crop"}
        clamp: every pixel, edge pixels repeating outside. crop: the pixels whose 8 neighbours
        lie inside (the output shrinks by 1 on every side; the image must be at least 3×3).
    out : (codes, histogram), optional
        Where to write, as the result's pair: arrays of the image's library and device, of the
        result's shapes and dtypes; the codes with each row's pixels adjacent in memory (any
        row stride), the histogram C-contiguous.
    variant, backend, layer : str, optional
        Which implementation runs (:func:`variants`); None: the fastest for this input.

    Returns
    -------
    codes : numpy.ndarray of uint8
        H'×W', or N×H'×W' for several frames: the mapped code of each pixel.
    histogram : numpy.ndarray of uint32
        bins, or N×bins for several frames (int32 for a PyTorch tensor).
    (``out``'s arrays when given.)

    Notes
    -----
    Images with packed pixels along each row are read in place; other layouts are copied once.
    """
    mapping = "plain" if mapping == "default" else _option(mapping, "mapping", _MAPPINGS)
    return _kbench.lbp(image, mapping, _option(border, "border", _BORDERS), out,
                       *_choice(("lbp",), variant, backend, layer))


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
    return _kbench.sad_map(target, query, *_choice(("sad",), variant, backend, layer))


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
    top = _count(top, "top", 1)
    separation = 0 if separation is None else _count(separation, "separation", 1)
    method = _option(method, "method", _METHODS)
    choice = _choice(("sad", "sad-pruned"), variant, backend, layer)
    rows = _kbench.match(target, query, top, separation, method, *choice)
    return rows.view(MATCH_DTYPE).reshape(-1)


def _count(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: an integer, not {type(value).__name__}")
    if value < least or value > np.iinfo(np.int32).max:
        raise ValueError(f"{name}: {value}; at least {least}")
    return int(value)


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
    distance = _option(distance, "distance", _DISTANCES)
    ratio = _ratio(ratio)
    choice = _choice(("cemd",), variant, backend, layer)
    return _match_rows(_kbench.cemd_match(queries, database, distance, ratio, *choice))


def _ratio(ratio: float) -> float:
    ratio = float(ratio)
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio: {ratio}; it lies in (0, 1]")
    return ratio


def _match_rows(arrays: tuple) -> np.ndarray:
    """The extension's five arrays of matches as rows of CEMD_MATCH_DTYPE."""
    index, best, second_index, second, accepted = arrays
    result = np.empty(len(index), dtype=CEMD_MATCH_DTYPE)
    result["index"] = index
    result["distance"] = best
    result["second_index"] = second_index
    result["second_distance"] = second
    result["accepted"] = accepted
    return result


class CemdPieceMatcher:
    """Each query's two nearest descriptors over a database given a piece at a time.

    For a database larger than memory (or than the GPU's), or read while the piece before is
    matched: ``add`` each piece with the row its first descriptor has in the whole database, then
    ``matches()`` gives what :func:`cemd_match` over the whole database would give with the same
    variant (ties to the smaller index, whatever the pieces or their order). With PyTorch or
    CuPy queries on a GPU, ``add`` only queues the piece on the library's current stream and the
    nearest two so far stay on the device; the matcher keeps each piece alive until ``matches()``
    has waited for it (write no new values into a piece's memory before then). Use a matcher on
    the thread that made it.

    Parameters
    ----------
    queries : array_like of uint8 or float32
        N×128 SIFT descriptors, on the host or a GPU; every piece must be in the same place.
    distance, ratio, variant, backend, layer
        As in :func:`cemd_match`.

    Examples
    --------
    >>> m = kbench.CemdPieceMatcher(queries, "l2")
    >>> for first in range(0, len(database), 1 << 20):
    ...     m.add(database[first:first + (1 << 20)], first)
    >>> found = m.matches()
    """

    def __init__(
        self,
        queries: Any,
        distance: str = "normalised",
        ratio: float = 0.8,
        *,
        variant: Optional[str] = None,
        backend: Optional[str] = None,
        layer: Optional[str] = None,
    ) -> None:
        self._matcher = _kbench.CemdPieceMatcher(
            queries, _option(distance, "distance", _DISTANCES), _ratio(ratio),
            *_choice(("cemd",), variant, backend, layer))

    def add(self, piece: Any, first_row: int) -> None:
        """Matches ``piece`` (M×128, like the queries), its rows numbered from ``first_row``."""
        if isinstance(first_row, bool) or not isinstance(first_row, (int, np.integer)):
            raise TypeError(f"first_row: {first_row!r} is not an integer")
        self._matcher.add(piece, int(first_row))

    def matches(self) -> np.ndarray:
        """The nearest two of every piece added, as :func:`cemd_match` returns them."""
        return _match_rows(self._matcher.matches())


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
    return _kbench.cemd_all_pairs(queries, database, _option(distance, "distance", _DISTANCES),
                                  *_choice(("cemd",), variant, backend, layer))
