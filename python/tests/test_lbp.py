"""kbench.lbp against a NumPy implementation of lbp.hpp's definition."""

import numpy as np
import pytest

import kbench
import reference
from conftest import smooth_image

BINS = {"plain": 256, "uniform": 59, "rotation-invariant": 36}


@pytest.mark.parametrize("mapping", list(BINS))
@pytest.mark.parametrize("border", ["clamp", "crop"])
def test_gray(rng, mapping, border):
    image = smooth_image(rng, 31, 45)
    codes, histogram = kbench.lbp(image, mapping, border)
    expected_codes, expected_histogram = reference.lbp(image, mapping, border)
    assert codes.dtype == np.uint8 and histogram.dtype == np.uint32
    assert histogram.shape == (BINS[mapping],)
    assert np.array_equal(codes, expected_codes)
    assert np.array_equal(histogram, expected_histogram)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_colour_is_compared_in_gray(rng, channels):
    image = smooth_image(rng, 20, 26, channels)
    codes, histogram = kbench.lbp(image, "uniform")
    expected_codes, expected_histogram = reference.lbp(image, "uniform")
    assert np.array_equal(codes, expected_codes)
    assert np.array_equal(histogram, expected_histogram)


def test_reference_tables_follow_the_header():
    # A flat region codes as 255 (every neighbour >= centre); 255 is uniform, the last of the 58.
    codes, _ = kbench.lbp(np.full((5, 5), 7, np.uint8))
    assert (codes == 255).all()
    codes, histogram = kbench.lbp(np.full((5, 5), 7, np.uint8), "uniform")
    assert (codes == 57).all() and histogram[57] == 25
    values, _, _ = reference.lbp_tables("rotation-invariant")
    assert values[0b10000000] == 1 and values[0b00000110] == 3


def test_single_bright_pixel():
    image = np.zeros((3, 3), np.uint8)
    image[1, 1] = 9
    codes, _ = kbench.lbp(image, border="crop")
    assert codes.shape == (1, 1) and codes[0, 0] == 0
    image[0, 2] = 9  # neighbour 2 (top right) now equals the centre
    codes, _ = kbench.lbp(image, border="crop")
    assert codes[0, 0] == 1 << 2


@pytest.mark.parametrize("mapping", list(BINS))
def test_batch_equals_single_calls(rng, mapping):
    frames = np.stack([smooth_image(rng, 18, 30) for _ in range(4)])
    codes, histograms = kbench.lbp(frames, mapping)
    assert codes.shape == frames.shape and histograms.shape == (4, BINS[mapping])
    for f in range(len(frames)):
        one_codes, one_histogram = kbench.lbp(frames[f], mapping)
        assert np.array_equal(codes[f], one_codes)
        assert np.array_equal(histograms[f], one_histogram)


def test_colour_batch(rng):
    frames = np.stack([smooth_image(rng, 18, 30, 3) for _ in range(3)])
    codes, histograms = kbench.lbp(frames, border="crop")
    assert codes.shape == (3, 16, 28) and histograms.shape == (3, 256)
    for f in range(3):
        expected_codes, expected_histogram = reference.lbp(frames[f], border="crop")
        assert np.array_equal(codes[f], expected_codes)
        assert np.array_equal(histograms[f], expected_histogram)


def test_narrow_gray_batch_as_four_axes(rng):
    frames = rng.integers(0, 256, (6, 10, 4, 1), dtype=np.uint8)
    codes, histograms = kbench.lbp(frames)
    assert codes.shape == (6, 10, 4)
    for f in range(6):
        assert np.array_equal(codes[f], reference.lbp(frames[f, :, :, 0])[0])


@pytest.mark.parametrize("make", [lambda a: a[2:30, 3:40], lambda a: a[::2, ::3],
                                  lambda a: a.T])
def test_strided_input_equals_contiguous(rng, make):
    image = make(smooth_image(rng, 40, 44))
    codes, histogram = kbench.lbp(image, "uniform")
    expected_codes, expected_histogram = kbench.lbp(np.ascontiguousarray(image), "uniform")
    assert np.array_equal(codes, expected_codes)
    assert np.array_equal(histogram, expected_histogram)


def test_bad_input():
    with pytest.raises(TypeError, match="image"):
        kbench.lbp(np.zeros((8, 8), np.float64))
    with pytest.raises(ValueError, match="image.*5 channels"):
        kbench.lbp(np.zeros((2, 8, 8, 5), np.uint8))
    with pytest.raises(ValueError, match="image"):
        kbench.lbp(np.zeros((2, 2), np.uint8), border="crop")
    with pytest.raises(ValueError, match="image.*empty"):
        kbench.lbp(np.zeros((0, 0), np.uint8))
    with pytest.raises(ValueError, match="mapping"):
        kbench.lbp(np.zeros((8, 8), np.uint8), "rotation_invariant")


def test_into_given_arrays(rng):
    frames = np.stack([smooth_image(rng, 30, 40) for _ in range(3)])
    expected_codes, expected_histogram = kbench.lbp(frames, "uniform", "crop")
    padded = np.zeros((3, 28, 48), np.uint8)  # the codes at a row pitch of 48
    codes, histogram = padded[:, :, 5:43], np.zeros((3, 59), np.uint32)
    result = kbench.lbp(frames, "uniform", "crop", out=(codes, histogram))
    assert result[0] is codes and result[1] is histogram
    assert np.array_equal(codes, expected_codes) and np.array_equal(histogram, expected_histogram)
    assert not padded[:, :, :5].any() and not padded[:, :, 43:].any()
    assert np.array_equal(kbench.lbp(frames[0], "default")[1], kbench.lbp(frames[0], "plain")[1])


def test_bad_out():
    image = np.zeros((8, 8), np.uint8)
    with pytest.raises(TypeError, match="out: a .codes, histogram. tuple"):
        kbench.lbp(image, out=np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match=r"out\[0\].*shape"):
        kbench.lbp(image, out=(np.zeros((8, 9), np.uint8), np.zeros(256, np.uint32)))
    with pytest.raises(TypeError, match=r"out\[1\].*expected uint32"):
        kbench.lbp(image, out=(np.zeros((8, 8), np.uint8), np.zeros(256, np.int64)))
    with pytest.raises(ValueError, match=r"out\[1\].*C-contiguous"):
        kbench.lbp(image, out=(np.zeros((8, 8), np.uint8), np.zeros(512, np.uint32)[::2]))
    with pytest.raises(ValueError, match=r"out\[1\].*shape"):
        kbench.lbp(image, "uniform", out=(np.zeros((8, 8), np.uint8), np.zeros(256, np.uint32)))


def test_every_host_variant_agrees(rng):
    image = smooth_image(rng, 29, 51)
    expected_codes, expected_histogram = reference.lbp(image, "rotation-invariant")
    ran = 0
    for v in kbench.variants("lbp"):
        if v["backend"] == "cuda":
            continue
        try:
            codes, histogram = kbench.lbp(image, "rotation-invariant", variant=v["name"])
        except kbench.Error as e:
            assert "does not handle" in str(e)
            continue
        assert kbench.last_run()["variant"] == v["name"]
        assert np.array_equal(codes, expected_codes), v["name"]
        assert np.array_equal(histogram, expected_histogram), v["name"]
        ran += 1
    assert ran >= 2
