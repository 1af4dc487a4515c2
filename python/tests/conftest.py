"""Shared fixtures: seeded synthetic images and descriptors."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


def smooth_image(rng, height, width, channels=None):
    """A uint8 image with both noise and smooth regions (flat areas exercise LBP's >= and
    conv's rounding, noise everything else)."""
    shape = (height, width) if channels is None else (height, width, channels)
    y, x = np.indices((height, width))
    base = (3 * x + 2 * y) % 256
    if channels is not None:
        base = base[..., None]
    noise = rng.integers(-40, 41, size=shape)
    image = np.clip(base + noise, 0, 255).astype(np.uint8)
    image[: height // 4, : width // 4] = 128  # a flat block
    return image


def sift_like(rng, count):
    """Sparse descriptors in 0..255 with a few dominant bins per cell and some empty cells."""
    values = rng.integers(0, 256, size=(count, 16, 8))
    values[rng.random((count, 16, 8)) < 0.6] = 0
    values[rng.random((count, 16)) < 0.1] = 0  # empty cells
    return values.reshape(count, 128).astype(np.uint8)


@pytest.fixture(scope="session", autouse=True)
def kokkos_on_the_main_thread():
    """The first call starts Kokkos, whose host spaces (Kokkos 3.4) then run only on that thread:
    make it pytest's main thread, so that every test there may run the portable host variants."""
    import kbench

    kbench.conv(np.zeros((3, 3), np.uint8), "identity")
