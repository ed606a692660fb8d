"""scikit-learn's bundled sets (no download): ``digits-AvB`` and ``diabetes``.

``digits-AvB``: two classes of ``load_digits`` (1,797 8x8 images, about 180 per digit), pixels 0..16
stored as uint8 and served divided by 16, labels -1 (A) / +1 (B). With so few images a pair keeps 20%
of them for testing (about 72), split at random per seed.

``diabetes``: ``load_diabetes`` (442 patients, 10 attributes, a disease-progression target), 20%
held out at random per seed. With ``standardize`` (the default) every attribute and the target are
centred and scaled to unit variance with the training split's statistics, so that a linear predictor
without a bias term fits and the papers' bounded-attribute step sizes make sense; ``standardize=false``
serves scikit-learn's raw values (ages in years, target 25..346).

Importing scikit-learn's loaders takes seconds (a first ``GET /v1/datasets`` took 4-7 s for it), so the bundled
CSV files are read directly, as ``load_digits`` and ``load_diabetes(scaled=False)`` read them (0.2 s; a test checks
that both give the same arrays), once per machine, and then from the dataset cache, keyed on those files. Where a
release keeps them elsewhere, scikit-learn's loaders read them.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.base import split_rows, split_sizes
from budgetlab.datasets.cache import cached_arrays
from budgetlab.datasets.family import Data, Family, Param, read_only
from budgetlab.datasets.pairs import PairFamily, pair_positions

TEST_FRACTION = 0.2
CACHE_VERSION = 1  # of the conversions below: a new value loads the sets again


def bundled_file(name: str) -> Path:
    """scikit-learn's copy of a bundled data file, found without importing scikit-learn; where a future release
    keeps it elsewhere, its package's ``__init__.py`` (rewritten by every install) stands for it in the cache key."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("scikit-learn is not installed")
    package = Path(spec.origin).parent
    path = package / "datasets" / "data" / name
    return path if path.is_file() else package / "__init__.py"


def load_digits_arrays() -> dict[str, np.ndarray]:
    path = bundled_file("digits.csv.gz")
    if path.name == "digits.csv.gz":  # 64 pixel columns, then the digit
        table = np.loadtxt(path, delimiter=",")
        return {"images": table[:, :-1].astype(np.uint8), "labels": table[:, -1].astype(np.int64)}
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return {"images": bunch.data.astype(np.uint8), "labels": bunch.target.astype(np.int64)}


def load_diabetes_arrays() -> dict[str, np.ndarray]:
    data, target = bundled_file("diabetes_data_raw.csv.gz"), bundled_file("diabetes_target.csv.gz")
    if data.name == "diabetes_data_raw.csv.gz" and target.name == "diabetes_target.csv.gz":
        return {"X": np.loadtxt(data), "y": np.loadtxt(target)}
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    return {"X": X, "y": y}


@cache
def digits() -> tuple[np.ndarray, np.ndarray]:
    arrays = cached_arrays("digits", "scikit-learn's digits", CACHE_VERSION, [bundled_file("digits.csv.gz")],
                           load_digits_arrays)
    images, labels = arrays["images"], arrays["labels"]
    read_only(images, labels)
    return images, labels


@cache
def diabetes() -> tuple[np.ndarray, np.ndarray]:
    sources = [bundled_file("diabetes_data_raw.csv.gz"), bundled_file("diabetes_target.csv.gz")]
    arrays = cached_arrays("diabetes", "scikit-learn's diabetes", CACHE_VERSION, sources, load_diabetes_arrays)
    X, y = arrays["X"], arrays["y"]
    read_only(X, y)
    return X, y


class DigitsPairs(PairFamily):
    prefix = "digits"
    pattern = "digits-AvB"
    example = "digits-3v5"
    collection = "scikit-learn digits (8x8)"
    source = "sklearn.datasets.load_digits (bundled with scikit-learn)"
    package = "sklearn"
    class_names = tuple(f"digit {i}" for i in range(10))
    d = 64
    scale = 1.0 / 16.0

    def collection_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return digits()

    def pair_rows(self, args: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
        rows = pair_positions(digits()[1], *args)
        train, test = split_rows(len(rows), TEST_FRACTION, seed)
        return rows[train], rows[test]


class Diabetes(Family):
    pattern = example = "diabetes"
    task = "regression"
    source = "sklearn.datasets.load_diabetes (bundled with scikit-learn)"
    package = "sklearn"
    params = (
        Param("standardize", bool, True, "centre and scale attributes and target to unit variance "
              "(training-split statistics); false serves the raw values"),
    )

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        scaled = "standardized" if params["standardize"] else "raw"
        return f"Diabetes progression after one year from 10 baseline attributes (scikit-learn, {scaled})"

    def sizes(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> tuple[int, int, int]:
        X, _ = diabetes()
        return *split_sizes(len(X), TEST_FRACTION), X.shape[1]

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        X, y = diabetes()
        train, test = split_rows(len(X), TEST_FRACTION, seed)
        if params["standardize"]:
            X = (X - X[train].mean(axis=0)) / X[train].std(axis=0)
            y = (y - y[train].mean()) / y[train].std()
            read_only(X, y)
        return Data(X, y, train, test)


DIGITS = DigitsPairs()
DIABETES = Diabetes()
