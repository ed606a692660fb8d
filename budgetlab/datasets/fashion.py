"""``fashion-AvB``: two Fashion-MNIST classes, from the IDX files of Debian's ``dataset-fashion-mnist``.

The files (``{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` in /usr/share/datasets/fashion-mnist, or
in ``$BUDGETLAB_FASHION_DIR``) hold 60,000 training and 10,000 test images, 6,000 and 1,000 per class;
the family keeps that official split (the seed only orders a session's stream), so a pair has 12,000
training and 2,000 test images. The family is listed only where the files exist. Pixels are stored as
uint8 and served divided by 255. The IDX files are parsed here (gzip + ``np.frombuffer``); the images
(about 2 s of decompression) once per machine, then read memory-mapped from the dataset cache; listing reads only
the small label files.
"""

from __future__ import annotations

import gzip
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from budgetlab.datasets.base import DatasetError
from budgetlab.datasets.cache import cached_arrays
from budgetlab.datasets.family import read_only
from budgetlab.datasets.pairs import PairFamily, pair_positions

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
FILES = ("train-images-idx3", "train-labels-idx1", "t10k-images-idx3", "t10k-labels-idx1")
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot")
# IDX type codes (the third magic byte) and the numpy dtypes they denote; multi-byte types are big-endian.
CACHE_VERSION = 1  # of the images' parsing below: a new value parses the files again
_IDX_TYPES: dict[int, np.dtype[Any]] = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
                                        0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def fashion_dir() -> Path:
    return Path(os.environ.get("BUDGETLAB_FASHION_DIR", DEFAULT_DIR))


def parse_idx(raw: bytes) -> np.ndarray:
    """An IDX file's array: magic (0, 0, type, ndim), ndim big-endian uint32 sizes, then the data."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise DatasetError("not an IDX file (bad magic number)")
    dtype, ndim = _IDX_TYPES[raw[2]], raw[3]
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    offset = 4 + 4 * ndim
    if len(raw) - offset != int(np.prod(shape)) * dtype.itemsize:
        raise DatasetError(f"IDX file truncated: header says {shape}, got {len(raw) - offset} data bytes")
    return np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)


def read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return parse_idx(f.read())


@cache
def fashion_labels(directory: Path) -> tuple[np.ndarray, int]:
    """The 70,000 class labels, training images first, and the number of training images."""
    train = read_idx(directory / "train-labels-idx1-ubyte.gz")
    labels = np.concatenate([train, read_idx(directory / "t10k-labels-idx1-ubyte.gz")])
    read_only(labels)
    return labels, len(train)


@cache
def fashion_images(directory: Path) -> np.ndarray:
    """All 70,000 images as uint8 (70000, 784), training images first."""
    sources = [directory / f"{part}-images-idx3-ubyte.gz" for part in ("train", "t10k")]

    def parse() -> dict[str, np.ndarray]:
        parts = [read_idx(source) for source in sources]
        return {"images": np.concatenate([part.reshape(len(part), -1) for part in parts])}

    images = cached_arrays("fashion", f"Fashion-MNIST's 70,000 images ({directory})", CACHE_VERSION, sources,
                           parse)["images"]
    read_only(images)
    return images


class FashionPairs(PairFamily):
    prefix = "fashion"
    pattern = "fashion-AvB"
    example = "fashion-0v6"
    collection = "Fashion-MNIST"
    source = "Debian package dataset-fashion-mnist (IDX files)"
    class_names = CLASS_NAMES
    d = 784
    scale = 1.0 / 255.0

    def install_hint(self) -> str:
        return (f"looked in {fashion_dir()}; install Debian's package (sudo apt-get install dataset-fashion-mnist) "
                f"or set BUDGETLAB_FASHION_DIR to a folder with its {', '.join(f'{p}-ubyte.gz' for p in FILES)}")

    def available(self) -> bool:
        directory = fashion_dir()
        return all((directory / f"{part}-ubyte.gz").is_file() for part in FILES)

    def collection_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return fashion_images(fashion_dir()), fashion_labels(fashion_dir())[0]

    def pair_rows(self, args: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
        labels, n_train = fashion_labels(fashion_dir())
        rows = pair_positions(labels, *args)
        return rows[rows < n_train], rows[rows >= n_train]


FAMILY = FashionPairs()
