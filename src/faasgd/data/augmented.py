"""Fashion-MNIST augmented F-fold (`fashion-mnist-xF`), made per worker shard from the real images, never stored.

Row i of the training split is copy c = i % F of Fashion-MNIST training image s = i // F (source-major),
so a shard [start, stop) needs only the sources [start // F, ceil(stop / F)): any worker makes its own
rows without the others, and memory grows with its shard, not the set. Copy 0 is the image itself;
copy c >= 1 is it rotated by up to +-MAX_DEGREES about its centre, shifted by up to +-MAX_SHIFT pixels
(bilinear, zeros outside) and given Gaussian noise (NOISE_SIGMA of 255), rounded back to uint8. A
source's copies are drawn from np.random.default_rng([seed, s]) alone, so a row is the same whichever
worker makes it and however its shard is chunked; the data set's seed is SEED (the job's `seed` drives
initialisation and minibatch order, not the data).

Held out by source: the split's rows after `limit` and the rows held out for validation are whole
sources (catalog.row_group is F, data/shard.py rounds up to it), so no copy of a validation image
ever trains. The test split is Fashion-MNIST's test set unchanged.
"""

from collections.abc import Iterator

import numpy as np

from faasgd.data import fashion

FACTORS = (2, 4, 8, 16, 21)  # x16: 960,000 rows, 753 MB as uint8; x21: 1,260,000 rows, 988 MB (~1 GB)
NAMES = {f"fashion-mnist-x{factor}": factor for factor in FACTORS}
SEED = 0  # the data set's own seed: every job sees the same rows
MAX_DEGREES = 12.0  # rotation, uniform in [-12, 12] degrees
MAX_SHIFT = 3.0  # translation, uniform in [-3, 3] pixels each way (sub-pixel: bilinear)
NOISE_SIGMA = 8.0  # Gaussian pixel noise, in 0..255 units
CHUNK_ROWS = 256  # augmented rows made at a time (about 40 bytes of temporaries per pixel: ~8 MB)
SIDE, PAD = 28, 2  # image side; zero border so that every bilinear tap outside the image reads 0


def factor(dataset: str) -> int:
    """How many rows `dataset` makes of each source image (1: not an augmented set)."""
    return NAMES.get(dataset, 1)


def iter_split_rows(factor: int, split: str, start: int, stop: int, data_dir: str | None = None,
                    seed: int = SEED) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield uint8 images (k, 28, 28) and labels (k,) of rows [start, stop) of the augmented `split`."""
    if split == "test":
        yield from fashion.iter_split_rows(split, start, stop, data_dir)
        return
    first, last = start // factor, -(-stop // factor)  # the sources the rows come from
    per_chunk = max(1, CHUNK_ROWS // factor)
    source = first
    for images, labels in fashion.iter_split_rows(split, first, last, data_dir, chunk_rows=per_chunk):
        rows = augment(images, source, factor, seed)
        low, high = max(start, source * factor), min(stop, (source + len(labels)) * factor)
        base = source * factor
        yield rows[low - base:high - base], np.repeat(labels, factor)[low - base:high - base]
        source += len(labels)


def augment(images: np.ndarray, first_source: int, factor: int, seed: int = SEED) -> np.ndarray:
    """The `factor` copies of each of `images` (sources first_source, first_source + 1, ...): (k * factor, 28, 28)."""
    k = len(images)
    angles, shifts, noise = draws(range(first_source, first_source + k), factor, seed)
    warped = warp(np.repeat(images, factor, axis=0), angles, shifts)
    warped += noise
    out = np.clip(np.rint(warped), 0, 255).astype(np.uint8)
    out[::factor] = images  # copy 0: the image itself
    return out


def draws(sources: range, factor: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: angle (radians), shift (dy, dx) and noise (28, 28), each source's from its own generator."""
    n = len(sources) * factor
    angles, shifts = np.empty(n, np.float32), np.empty((n, 2), np.float32)
    noise = np.empty((n, SIDE, SIDE), np.float32)
    for i, source in enumerate(sources):
        rng = np.random.default_rng([seed, source])
        rows = slice(i * factor, (i + 1) * factor)
        angles[rows] = np.deg2rad(rng.uniform(-MAX_DEGREES, MAX_DEGREES, factor))
        shifts[rows] = rng.uniform(-MAX_SHIFT, MAX_SHIFT, (factor, 2))
        noise[rows] = rng.standard_normal((factor, SIDE, SIDE), dtype=np.float32)
    noise *= NOISE_SIGMA
    return angles, shifts, noise


def warp(images: np.ndarray, angles: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Rotate each image by its angle about its centre, then shift it by (dy, dx): bilinear, float32 (k, 28, 28).

    Output pixel p samples the input at R(-angle) (p - centre - shift) + centre; taps outside read 0.
    """
    k, wide = len(images), SIDE + 2 * PAD
    padded = np.zeros((k, wide, wide), np.float32)
    padded[:, PAD:PAD + SIDE, PAD:PAD + SIDE] = images
    centre = (SIDE - 1) / 2
    grid = np.arange(SIDE, dtype=np.float32) - centre
    dy = grid[None, :, None] - shifts[:, 0, None, None]  # (k, 28, 1)
    dx = grid[None, None, :] - shifts[:, 1, None, None]  # (k, 1, 28)
    cos, sin = np.cos(angles)[:, None, None], np.sin(angles)[:, None, None]
    fx = np.clip(cos * dx + sin * dy + centre, -PAD, SIDE + 0.999)  # (k, 28, 28) source x, in the zero border
    fy = np.clip(cos * dy - sin * dx + centre, -PAD, SIDE + 0.999)
    kind = np.int32 if k * wide * wide < 2 ** 31 else np.int64
    index = (np.floor(fy) + PAD).astype(kind)
    index *= wide
    index += (np.floor(fx) + PAD).astype(kind)
    index += (np.arange(k, dtype=kind) * wide * wide)[:, None, None]  # into padded.ravel()
    fx -= np.floor(fx)  # the fractional parts: bilinear weights
    fy -= np.floor(fy)
    flat = padded.ravel()

    def tap(offset: int) -> np.ndarray:
        return flat.take(index + offset)  # a flat take: several times faster than take_along_axis

    out = tap(0) * (1 - fx)
    out += tap(1) * fx
    out *= 1 - fy
    bottom = tap(wide) * (1 - fx)
    bottom += tap(wide + 1) * fx
    bottom *= fy
    out += bottom
    return out
