"""kbench.sad_map and kbench.match against a brute-force NumPy SAD."""

import numpy as np
import pytest

import kbench
import reference
from conftest import smooth_image


def cut(rng, target, row, col, height, width, noise=3):
    query = target[row:row + height, col:col + width].astype(np.int64)
    query += rng.integers(-noise, noise + 1, size=query.shape)
    return np.clip(query, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (13, 4), (16, 16), (40, 50)])
def test_sad_map(rng, shape):
    target = smooth_image(rng, 40, 50)
    query = cut(rng, target, 0, 0, *shape)
    result = kbench.sad_map(target, query)
    assert result.dtype == np.int32
    assert np.array_equal(result, reference.sad_map(target, query))


def test_sad_map_in_gray(rng):
    target = smooth_image(rng, 30, 34, 3)
    query = smooth_image(rng, 7, 9, 4)
    assert np.array_equal(kbench.sad_map(target, query), reference.sad_map(target, query))


def test_match_finds_the_cut(rng):
    target = smooth_image(rng, 60, 70)
    query = cut(rng, target, 21, 33, 12, 9)
    expected = reference.sad_map(target, query)
    best = kbench.match(target, query)
    assert best.dtype == kbench.MATCH_DTYPE and best.shape == (1,)
    row, col = np.unravel_index(np.argmin(expected), expected.shape)
    assert (best["row"][0], best["col"][0], best["score"][0]) == (row, col, expected[row, col])
    assert (row, col) == (21, 33)


@pytest.mark.parametrize("method", ["auto", "full", "pruned"])
def test_ties_go_to_the_smallest_row_then_column(method):
    target = np.zeros((10, 12), np.uint8)
    target[6, 2] = target[3, 8] = target[3, 9] = 200
    query = np.full((1, 1), 200, np.uint8)
    best = kbench.match(target, query, method=method)
    assert best.tolist() == [(3, 8, 0)]


@pytest.mark.parametrize("separation", [None, 1, 3])
@pytest.mark.parametrize("method", ["auto", "full"])
def test_top_k(rng, separation, method):
    target = smooth_image(rng, 36, 44)
    query = cut(rng, target, 10, 12, 6, 8)
    found = kbench.match(target, query, top=5, separation=separation, method=method)
    score_map = reference.sad_map(target, query)
    rows, cols = (6, 8) if separation is None else (separation, separation)
    assert found.tolist() == reference.top_matches(score_map, 5, rows, cols)


def test_pruned_top_k_without_separation(rng):
    target = smooth_image(rng, 36, 44)
    query = cut(rng, target, 10, 12, 6, 8)
    found = kbench.match(target, query, top=4, separation=1, method="pruned")
    assert found.tolist() == reference.top_matches(reference.sad_map(target, query), 4, 1, 1)
    with pytest.raises(ValueError, match="separation"):
        kbench.match(target, query, top=4, method="pruned")


def test_strided_input_equals_contiguous(rng):
    big = smooth_image(rng, 50, 60, 3)
    target, query = big[5:45, 3:50], big[20:28:2, 10:40:3]
    assert np.array_equal(kbench.sad_map(target, query),
                          kbench.sad_map(np.ascontiguousarray(target), np.ascontiguousarray(query)))
    assert np.array_equal(kbench.match(target, query, top=3),
                          kbench.match(np.ascontiguousarray(target), np.ascontiguousarray(query),
                                       top=3))


def test_bad_input(rng):
    target = smooth_image(rng, 20, 20)
    with pytest.raises(ValueError, match="query.*larger"):
        kbench.sad_map(target, smooth_image(rng, 21, 5))
    with pytest.raises(ValueError, match="query.*larger"):
        kbench.match(target, smooth_image(rng, 5, 21))
    with pytest.raises(TypeError, match="target"):
        kbench.match(target.astype(np.int16), target[:4, :4])
    with pytest.raises(TypeError, match="query"):
        kbench.sad_map(target, target[:4, :4].astype(np.float64))
    with pytest.raises(ValueError, match="query"):
        kbench.sad_map(target, np.zeros((0, 3), np.uint8))
    with pytest.raises(ValueError, match="top"):
        kbench.match(target, target[:4, :4], top=0)
    with pytest.raises(ValueError, match="method"):
        kbench.match(target, target[:4, :4], method="fast")
    with pytest.raises(ValueError, match="target"):
        kbench.match(np.zeros((2, 20, 20, 1), np.uint8), target[:4, :4])


def test_match_variants(rng):
    target = smooth_image(rng, 40, 48)
    query = cut(rng, target, 7, 30, 8, 8)
    expected = reference.top_matches(reference.sad_map(target, query), 1, 8, 8)
    ran = 0
    for v in kbench.variants("sad") + kbench.variants("sad-pruned"):
        if v["backend"] == "cuda":
            continue
        try:
            found = kbench.match(target, query, variant=v["name"])
        except kbench.Error as e:
            assert "does not handle" in str(e)
            continue
        assert kbench.last_run()["variant"] == v["name"]
        assert found.tolist() == expected, v["name"]
        ran += 1
    assert ran >= 2
