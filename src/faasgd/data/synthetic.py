"""A seeded, learnable stand-in for MNIST: 28x28 byte images drawn around 10 class prototypes.

Each class has a fixed prototype like a pen stroke on a dark background (a random DENSITY share of
pixels at INK, the rest 0); a row is its class's prototype plus Gaussian noise (NOISE), clipped to
[0, 1] and quantised to bytes like a scanned image. A LABEL_NOISE share of rows carry a random
label, so no model reaches 100 % test accuracy and a target of 1.0 always means "run every epoch". Rows come in
blocks of BLOCK_ROWS, each drawn from its own generator seeded by (DATA_SEED, split, block), so any
row range costs memory proportional to its length and a row has the same values whatever the
sharding, the limit or the training seed. Train and test share the prototypes, hence the distribution.
"""

from functools import lru_cache

import numpy as np

DATA_SEED = 20180611  # fixed: the data set never depends on the training seed
INPUT_DIM = 784  # 28 x 28 pixels, like the MNIST family
N_CLASSES = 10
DENSITY = 0.2  # share of a prototype's pixels that are inked
INK = 0.8  # value of an inked prototype pixel (the background is 0)
NOISE = 0.9  # standard deviation of the per-pixel noise
LABEL_NOISE = 0.08  # share of rows whose label is drawn at random (caps accuracy near 93 %)
BLOCK_ROWS = 1000  # rows drawn from one generator
SPLIT_SIZES = {"train": 60000, "test": 10000}  # default rows per split; any limit is allowed
SPLIT_CODES = {"train": 1, "test": 2}  # 0 seeds the prototypes


@lru_cache(maxsize=1)
def prototypes() -> np.ndarray:
    """Return the (N_CLASSES, INPUT_DIM) float32 class prototypes (read-only)."""
    rng = np.random.default_rng([DATA_SEED, 0])
    protos = (INK * (rng.uniform(size=(N_CLASSES, INPUT_DIM)) < DENSITY)).astype(np.float32)
    protos.flags.writeable = False
    return protos


def count_rows(split: str, limit: int = 0) -> int:
    """Return the rows of `split`: `limit` when given (it may exceed the default size), else the default."""
    return limit if limit > 0 else SPLIT_SIZES[split]


def iter_split_rows(split: str, start: int, stop: int, chunk_rows: int = BLOCK_ROWS):
    """Yield (images, labels) of rows [start, stop) a chunk at a time."""
    for first in range(start, stop, chunk_rows):
        yield read_split_rows(split, first, min(stop, first + chunk_rows))


def read_split_rows(split: str, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Return uint8 images (n, INPUT_DIM) and int64 labels (n,) of rows [start, stop) of `split`."""
    images = np.empty((stop - start, INPUT_DIM), dtype=np.uint8)
    labels = np.empty(stop - start, dtype=np.int64)
    for block in range(start // BLOCK_ROWS, (stop + BLOCK_ROWS - 1) // BLOCK_ROWS):
        first = block * BLOCK_ROWS
        lo, hi = max(start, first), min(stop, first + BLOCK_ROWS)
        block_images, block_labels = draw_block(split, block)
        images[lo - start:hi - start] = block_images[lo - first:hi - first]
        labels[lo - start:hi - start] = block_labels[lo - first:hi - first]
    return images, labels


def draw_block(split: str, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the BLOCK_ROWS images (uint8) and labels of one block, always the same for a (split, block)."""
    rng = np.random.default_rng([DATA_SEED, SPLIT_CODES[split], block])
    labels = rng.integers(0, N_CLASSES, size=BLOCK_ROWS)
    pixels = rng.standard_normal((BLOCK_ROWS, INPUT_DIM), dtype=np.float32)
    pixels *= NOISE
    pixels += prototypes()[labels]
    np.clip(pixels, 0.0, 1.0, out=pixels)
    pixels *= 255.0
    relabel = rng.uniform(size=BLOCK_ROWS) < LABEL_NOISE
    labels[relabel] = rng.integers(0, N_CLASSES, size=int(relabel.sum()))
    return np.rint(pixels, out=pixels).astype(np.uint8), labels
