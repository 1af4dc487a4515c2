"""Independent NumPy implementations of the definitions in kbench's headers, for the tests.

Each follows the header comment of its algorithm (conv.hpp, lbp.hpp, sad.hpp, cemd.hpp) in the
plainest form, in float64 or exact integers, without reusing anything of the library.
"""

import numpy as np


def gray(image):
    """Integer BT.601 luma of H×W×C (C 3 or 4); the first channel of C 1 or 2 (lbp.hpp)."""
    image = np.asarray(image)
    if image.ndim == 2:
        return image
    if image.shape[-1] < 3:
        return image[..., 0]
    r, g, b = (image[..., k].astype(np.int64) for k in range(3))
    return ((299 * r + 587 * g + 114 * b + 500) // 1000).astype(np.uint8)


def conv(image, mask, border="clamp"):
    """Correlation with replicate border in float64, rounded to nearest and clamped (conv.hpp).

    image H×W×C; an alpha channel (the last of 2 or 4) is copied through.
    """
    image = np.asarray(image)
    mask = np.asarray(mask, dtype=np.float64)
    n = mask.shape[0]
    r = n // 2
    h, w, c = image.shape
    padded = np.pad(image.astype(np.float64), ((r, r), (r, r), (0, 0)), mode="edge")
    total = np.zeros((h, w, c))
    for j in range(n):
        for i in range(n):
            total += mask[j, i] * padded[j:j + h, i:i + w, :]
    out = np.clip(np.rint(total), 0, 255).astype(np.uint8)
    if c in (2, 4):
        out[..., c - 1] = image[..., c - 1]
    if border == "crop":
        out = out[r:h - r, r:w - r]
    return out


# Neighbour k's offset (dx, dy), clockwise from the top-left one (lbp.hpp).
LBP_OFFSETS = [(-1, -1), (0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0)]


def lbp_codes(gray_image, border="clamp"):
    """Plain LBP codes: bit k set when neighbour k >= centre; clamp repeats edges, crop drops
    the outer ring."""
    g = np.asarray(gray_image).astype(np.int64)
    h, w = g.shape
    padded = np.pad(g, 1, mode="edge")
    codes = np.zeros((h, w), dtype=np.int64)
    for k, (dx, dy) in enumerate(LBP_OFFSETS):
        neighbour = padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
        codes |= (neighbour >= g).astype(np.int64) << k
    if border == "crop":
        codes = codes[1:h - 1, 1:w - 1]
    return codes


def _transitions(code):
    bits = [(code >> k) & 1 for k in range(8)]
    return sum(bits[k] != bits[(k + 1) % 8] for k in range(8))


def _min_rotation(code):
    return min(((code >> r) | (code << (8 - r))) & 0xFF for r in range(8))


def lbp_tables(mapping):
    """(value per code, bin per code, bin count) for a mapping, from lbp.hpp's definitions."""
    codes = range(256)
    if mapping == "plain":
        return np.arange(256), np.arange(256), 256
    if mapping == "uniform":
        uniform = [c for c in codes if _transitions(c) <= 2]
        assert len(uniform) == 58
        label = {c: i for i, c in enumerate(uniform)}
        values = np.array([label.get(c, 58) for c in codes])
        return values, values, 59
    rotations = [_min_rotation(c) for c in codes]
    distinct = sorted(set(rotations))
    assert len(distinct) == 36
    bins = np.array([distinct.index(v) for v in rotations])
    return np.array(rotations), bins, 36


def lbp(image, mapping="plain", border="clamp"):
    """(codes, histogram) of one image (H×W or H×W×C), as kbench.lbp returns them."""
    codes = lbp_codes(gray(image), border)
    values, bins, count = lbp_tables(mapping)
    histogram = np.bincount(bins[codes].ravel(), minlength=count)
    return values[codes].astype(np.uint8), histogram.astype(np.uint32)


def sad_map(target, query):
    """S(i, j) = Σ |T(i + k, j + l) − Q(k, l)| over the query (sad.hpp), exact in int64."""
    t = gray(target).astype(np.int64)
    q = gray(query).astype(np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(t, q.shape)
    return np.abs(windows - q).sum(axis=(2, 3))


def top_matches(score_map, k, separation_rows, separation_cols):
    """The k best positions in (score, row, col) order, each kept when no kept one lies within
    fewer than the separation rows and columns of it (sad.hpp, top_matches)."""
    rows, cols = np.indices(score_map.shape)
    order = np.lexsort((cols.ravel(), rows.ravel(), score_map.ravel()))
    kept = []
    for index in order:
        r, c = divmod(int(index), score_map.shape[1])
        if all(abs(r - kr) >= separation_rows or abs(c - kc) >= separation_cols
               for kr, kc, _ in kept):
            kept.append((r, c, int(score_map[r, c])))
        if len(kept) == k:
            break
    return kept


def _circular_emd(f, g):
    """min over k of Σ_i |D(i) − D(k)|, D the cumulative differences, over the last axis."""
    d = np.cumsum(f - g, axis=-1)
    return np.abs(d[..., :, None] - d[..., None, :]).sum(axis=-2).min(axis=-1)


def cemd_distances(queries, database, distance="normalised"):
    """The queries × database distance matrix in float64 (cemd.hpp's definitions)."""
    a = np.asarray(queries, dtype=np.int64)[:, None, :]
    b = np.asarray(database, dtype=np.int64)[None, :, :]
    if distance == "l2":
        return np.sqrt(((a - b) ** 2).sum(axis=-1).astype(np.float64))
    f = a.reshape(a.shape[0], 1, 16, 8)
    g = b.reshape(1, b.shape[1], 16, 8)
    if distance == "raw":
        return _circular_emd(f, g).sum(axis=-1).astype(np.float64)
    mass_f = f.sum(axis=-1, keepdims=True)
    mass_g = g.sum(axis=-1, keepdims=True)
    numerator = _circular_emd(f * mass_g, g * mass_f).astype(np.float64)
    denominator = (mass_f * mass_g)[..., 0].astype(np.float64)
    terms = np.where(denominator > 0, numerator / np.maximum(denominator, 1), 0.0)
    return terms.sum(axis=-1)
