"""kbench.cemd_match and kbench.cemd_all_pairs against a NumPy circular EMD (cemd.hpp)."""

import numpy as np
import pytest

import kbench
import reference
from conftest import sift_like

TOLERANCE = 1e-6  # kCemdRelativeTolerance: float sums against the float64 reference


@pytest.mark.parametrize("distance", ["normalised", "raw", "l2"])
def test_all_pairs(rng, distance):
    queries, database = sift_like(rng, 17), sift_like(rng, 23)
    matrix = kbench.cemd_all_pairs(queries, database, distance)
    assert matrix.dtype == np.float32 and matrix.shape == (17, 23)
    expected = reference.cemd_distances(queries, database, distance)
    if distance == "raw":
        assert np.array_equal(matrix, expected.astype(np.float32))
    else:
        np.testing.assert_allclose(matrix, expected, rtol=TOLERANCE, atol=1e-6)


def test_reference_against_a_hand_computed_cell():
    a = np.zeros((1, 128), np.uint8)
    b = np.zeros((1, 128), np.uint8)
    a[0, 0] = 10  # cell 0: all mass in bin 0
    b[0, 4] = 10  # cell 0: all mass in bin 4, half way round the circle
    assert reference.cemd_distances(a, b, "raw")[0, 0] == 40
    assert reference.cemd_distances(a, b, "normalised")[0, 0] == 4
    assert kbench.cemd_all_pairs(a, b, "raw")[0, 0] == 40
    assert kbench.cemd_all_pairs(a, b, "normalised")[0, 0] == 4
    b[0, 4], b[0, 7] = 0, 10  # one bin away the other way round
    assert kbench.cemd_all_pairs(a, b, "raw")[0, 0] == 10


@pytest.mark.parametrize("distance", ["normalised", "raw", "l2"])
def test_match(rng, distance):
    database = sift_like(rng, 40)
    queries = np.concatenate([database[[3, 17, 29]], sift_like(rng, 6)])
    queries[:3] = np.clip(queries[:3].astype(int) + rng.integers(-2, 3, (3, 128)), 0, 255)
    found = kbench.cemd_match(queries, database, distance, ratio=0.9)
    assert found.dtype == kbench.CEMD_MATCH_DTYPE and found.shape == (9,)
    expected = reference.cemd_distances(queries, database, distance)
    for q in range(len(queries)):
        row = expected[q]
        order = np.lexsort((np.arange(len(row)), row))
        best, second = order[0], order[1]
        # The index found is the reference's, or one whose distance ties it within tolerance.
        assert abs(row[found["index"][q]] - row[best]) <= TOLERANCE * max(row[best], 1)
        assert abs(row[found["second_index"][q]] - row[second]) <= TOLERANCE * max(row[second], 1)
        np.testing.assert_allclose(found["distance"][q], row[best], rtol=TOLERANCE, atol=1e-6)
        np.testing.assert_allclose(found["second_distance"][q], row[second], rtol=TOLERANCE,
                                   atol=1e-6)
        assert found["accepted"][q] == (found["distance"][q] < np.float32(0.9) *
                                        found["second_distance"][q])
    assert found["index"][:3].tolist() == [3, 17, 29]


def test_ties_go_to_the_smaller_index(rng):
    database = sift_like(rng, 6)
    database[4] = database[1]
    found = kbench.cemd_match(database[[1]], database, "raw")
    assert found[0]["index"] == 1 and found[0]["second_index"] == 4
    assert found[0]["distance"] == 0 and found[0]["second_distance"] == 0
    assert not found[0]["accepted"]


def test_database_of_one(rng):
    found = kbench.cemd_match(sift_like(rng, 3), sift_like(rng, 1))
    assert found["index"].tolist() == [0, 0, 0]
    assert found["second_index"].tolist() == [-1, -1, -1]
    assert not found["accepted"].any()


def test_float32_equals_uint8(rng):
    queries, database = sift_like(rng, 5), sift_like(rng, 9)
    assert np.array_equal(kbench.cemd_all_pairs(queries.astype(np.float32), database),
                          kbench.cemd_all_pairs(queries, database))
    assert np.array_equal(kbench.cemd_match(queries, database.astype(np.float32)),
                          kbench.cemd_match(queries, database))


def test_strided_input_equals_contiguous(rng):
    wide = np.concatenate([sift_like(rng, 12), sift_like(rng, 12)], axis=1)  # 12 × 256
    queries = wide[:, 128:]  # rows 256 bytes apart: in place
    database = sift_like(rng, 20)[::2]  # every other row: in place
    fortran = np.asfortranarray(sift_like(rng, 7))  # copied
    thinned = queries.astype(np.float32)[::3]  # float32 rows 3 × 512 bytes apart: in place
    for q, d in [(queries, database), (fortran, database), (thinned, database)]:
        assert np.array_equal(kbench.cemd_all_pairs(q, d, "raw"),
                              kbench.cemd_all_pairs(np.ascontiguousarray(q),
                                                    np.ascontiguousarray(d), "raw"))


def test_bad_input(rng):
    good = sift_like(rng, 4)
    with pytest.raises(ValueError, match="queries.*128"):
        kbench.cemd_match(good[:, :127], good)
    with pytest.raises(ValueError, match="database"):
        kbench.cemd_all_pairs(good, np.zeros((0, 128), np.uint8))
    with pytest.raises(TypeError, match="queries"):
        kbench.cemd_match(good.astype(np.float64), good)
    with pytest.raises(TypeError, match="database"):
        kbench.cemd_match(good, good.astype(np.int16))
    nan = good.astype(np.float32)
    nan[2, 5] = np.nan
    with pytest.raises(ValueError, match="queries.*row 2, column 5"):
        kbench.cemd_match(nan, good)
    fraction = good.astype(np.float32)
    fraction[0, 0] = 0.5
    with pytest.raises(ValueError, match="database"):
        kbench.cemd_all_pairs(good, fraction)
    with pytest.raises(ValueError, match="distance"):
        kbench.cemd_match(good, good, "emd")
    with pytest.raises(ValueError, match="ratio"):
        kbench.cemd_match(good, good, ratio=1.5)


def test_every_host_variant_agrees(rng):
    queries, database = sift_like(rng, 9), sift_like(rng, 33)
    expected = reference.cemd_distances(queries, database, "normalised")
    ran = 0
    for v in kbench.variants("cemd"):
        if v["backend"] == "cuda":
            continue
        try:
            matrix = kbench.cemd_all_pairs(queries, database, variant=v["name"])
        except kbench.Error as e:
            assert "does not handle" in str(e)
            continue
        assert kbench.last_run()["variant"] == v["name"]
        np.testing.assert_allclose(matrix, expected, rtol=TOLERANCE, atol=1e-6, err_msg=v["name"])
        ran += 1
    assert ran >= 2


@pytest.mark.parametrize("distance", ["normalised", "raw", "l2"])
def test_piece_matcher_equals_one_call(rng, distance):
    database = sift_like(rng, 70)
    database[50:60] = database[5:15]  # exact ties between pieces
    queries = np.concatenate([database[[7]], sift_like(rng, 12)])
    expected = kbench.cemd_match(queries, database, distance)
    assert expected[0]["index"] == 7 and expected[0]["second_index"] == 52
    for cut in ([(0, 70)], [(0, 1), (1, 30), (31, 39)], [(50, 20), (0, 25), (25, 25)]):
        matcher = kbench.CemdPieceMatcher(queries, distance)
        for first, rows in cut:
            matcher.add(database[first:first + rows], first)
        found = matcher.matches()
        assert found.dtype == kbench.CEMD_MATCH_DTYPE
        assert np.array_equal(found, expected), cut


def test_piece_matcher_refuses_what_it_cannot_match(rng):
    queries = sift_like(rng, 4)
    matcher = kbench.CemdPieceMatcher(queries)
    with pytest.raises(kbench.Error, match="no database piece"):
        matcher.matches()
    with pytest.raises(kbench.Error, match="rows are numbered"):
        matcher.add(sift_like(rng, 3), -1)
    with pytest.raises(TypeError, match="first_row"):
        matcher.add(sift_like(rng, 3), 1.5)
    with pytest.raises(ValueError, match="piece: shape"):
        matcher.add(np.zeros((3, 64), np.uint8), 0)
    matcher.add(sift_like(rng, 1), 9)
    assert matcher.matches()["index"].tolist() == [9, 9, 9, 9]
