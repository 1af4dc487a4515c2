"""kbench.conv against a float64 NumPy correlation with replicate border."""

import numpy as np
import pytest

import kbench
import reference
from conftest import smooth_image


def assert_close(actual, expected):
    assert actual.shape == expected.shape
    assert actual.dtype == np.uint8
    difference = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
    assert difference.max() <= 1, f"largest difference {difference.max()}"


@pytest.mark.parametrize("name", kbench.builtin_masks())
@pytest.mark.parametrize("channels", [None, 1, 2, 3, 4])
def test_builtin_masks(rng, name, channels):
    image = smooth_image(rng, 37, 53, channels)
    mask = kbench._kbench.builtin_mask(name)
    result = kbench.conv(image, name)
    as_hwc = image if channels else image[..., None]
    expected = reference.conv(as_hwc, mask)
    assert_close(result, expected if channels else expected[..., 0])


def test_builtin_names_match_the_library():
    assert {"identity", "box", "gaussian", "sharpen", "edge", "emboss"} <= set(
        kbench.builtin_masks())
    image = np.arange(25, dtype=np.uint8).reshape(5, 5)
    assert np.array_equal(kbench.conv(image, "identity"), image)


@pytest.mark.parametrize("size", [1, 5, 7, 15])
@pytest.mark.parametrize("border", ["clamp", "crop"])
def test_array_masks(rng, size, border):
    image = smooth_image(rng, 41, 29, 3)
    mask = rng.normal(0, 1, (size, size)) / size
    result = kbench.conv(image, mask, border=border)
    expected = reference.conv(image, mask.astype(np.float32), border)
    assert_close(result, expected)


def test_crop_shape(rng):
    image = smooth_image(rng, 20, 30)
    assert kbench.conv(image, np.ones((5, 5)) / 25, border="crop").shape == (16, 26)


def test_batch_equals_single_calls(rng):
    frames = np.stack([smooth_image(rng, 24, 40, 3) for _ in range(5)])
    batch = kbench.conv(frames, "sharpen")
    assert batch.shape == frames.shape
    for f in range(len(frames)):
        assert np.array_equal(batch[f], kbench.conv(frames[f], "sharpen"))


def test_out_is_written_and_returned(rng):
    image = smooth_image(rng, 16, 16, 3)
    out = np.zeros_like(image)
    result = kbench.conv(image, "box", out=out)
    assert result is out
    assert np.array_equal(out, kbench.conv(image, "box"))


def test_out_with_a_row_pitch(rng):
    image = smooth_image(rng, 16, 20)
    big = np.zeros((16, 32), dtype=np.uint8)
    kbench.conv(image, "box", out=big[:, 4:24])
    assert np.array_equal(big[:, 4:24], kbench.conv(image, "box"))
    assert not big[:, :4].any() and not big[:, 24:].any()


def test_bad_out(rng):
    image = smooth_image(rng, 16, 16)
    with pytest.raises(ValueError, match="out"):
        kbench.conv(image, out=np.zeros((16, 15), np.uint8))
    with pytest.raises(TypeError, match="out"):
        kbench.conv(image, out=np.zeros((16, 16), np.float32))
    read_only = np.zeros((16, 16), np.uint8)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        kbench.conv(image, out=read_only)
    with pytest.raises(ValueError, match="out"):
        kbench.conv(image, out=np.zeros((16, 32), np.uint8)[:, ::2])
    with pytest.raises(ValueError, match="overlaps"):
        kbench.conv(image, out=image)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[3:40],  # a slice of rows
        lambda a: a[:, 5:30],  # a crop of columns: rows keep their pitch
        lambda a: a[::2],  # every other row
        lambda a: a[:, ::2],  # every other column: copied
        lambda a: a[::-1],  # reversed rows: copied
        lambda a: a[:, :, ::-1],  # BGR: copied
        lambda a: np.asfortranarray(a),  # copied
    ],
)
def test_strided_input_equals_contiguous(rng, make):
    image = make(smooth_image(rng, 48, 40, 3))
    expected = kbench.conv(np.ascontiguousarray(image), "gaussian")
    assert np.array_equal(kbench.conv(image, "gaussian"), expected)
    assert np.array_equal(kbench.conv(image[..., 0], "gaussian"),
                          kbench.conv(np.ascontiguousarray(image[..., 0]), "gaussian"))


def test_strided_batch(rng):
    frames = np.stack([smooth_image(rng, 24, 40, 3) for _ in range(4)])
    view = frames[::2, 2:20, 3:33]
    assert np.array_equal(kbench.conv(view, "edge"),
                          kbench.conv(np.ascontiguousarray(view), "edge"))


def test_bad_images():
    with pytest.raises(TypeError, match="image"):
        kbench.conv(np.zeros((8, 8)))  # float64
    with pytest.raises(TypeError, match="image"):
        kbench.conv(np.zeros((8, 8), np.int16))
    with pytest.raises(ValueError, match="image.*5 channels"):
        kbench.conv(np.zeros((8, 8, 5), np.uint8))
    with pytest.raises(ValueError, match="image.*empty"):
        kbench.conv(np.zeros((0, 8), np.uint8))
    with pytest.raises(ValueError, match="image"):
        kbench.conv(np.zeros(8, np.uint8))
    with pytest.raises(TypeError, match="image: dtype object"):
        kbench.conv(np.array([[1, 2], [3, 4]], dtype=object))
    with pytest.raises(TypeError, match="image: dtype bool"):
        kbench.conv(np.zeros((8, 8), bool))
    with pytest.raises(TypeError, match="out: a NumPy array like the input, not list"):
        kbench.conv(np.zeros((8, 8), np.uint8), out=[0] * 64)


def test_nested_lists_are_read_through_numpy():
    with pytest.raises(TypeError, match="image: dtype int64"):  # NumPy's integer for a list
        kbench.conv([[1, 2], [3, 4]])


def test_bad_masks():
    image = np.zeros((8, 8), np.uint8)
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, "blurry")
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, np.ones((4, 4)))
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, np.ones((3, 5)))
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, np.ones((65, 65)))
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="mask"):
        kbench.conv(image, np.ones((9, 9)))  # larger than the image
    with pytest.raises(TypeError, match="mask"):
        kbench.conv(image, np.ones((3, 3), dtype=complex))
    with pytest.raises(ValueError, match="border"):
        kbench.conv(image, border="wrap")


def test_last_run_names_a_conv_variant(rng):
    kbench.conv(smooth_image(rng, 16, 16), "box")
    run = kbench.last_run()
    assert run["algorithm"] == "conv"
    assert run["variant"] in [v["name"] for v in kbench.variants("conv")]
    assert run["total_ms"] >= run["compute_ms"] >= 0


def test_every_host_variant_agrees(rng):
    image = smooth_image(rng, 33, 47, 3)
    expected = reference.conv(image, kbench._kbench.builtin_mask("gaussian"))
    ran = 0
    for v in kbench.variants("conv"):
        if v["backend"] == "cuda":
            continue
        try:
            result = kbench.conv(image, "gaussian", variant=v["name"])
        except kbench.Error as e:  # a variant for other inputs (e.g. other channel counts)
            assert "does not handle" in str(e)
            continue
        assert kbench.last_run()["variant"] == v["name"]
        assert_close(result, expected)
        ran += 1
    assert ran >= 2
