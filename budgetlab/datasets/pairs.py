"""Binary tasks "class A vs class B" cut from a labelled image collection (``mnist-3v5`` and the like).

Label -1 for A and +1 for B, as the papers regress on them. The images of a collection are decoded
once per process and shared by every pair: a pair's ``X`` is the whole collection and its train/test
row indices select the pair, so no pair copies pixels.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from typing import ClassVar

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.base import DatasetError
from budgetlab.datasets.family import Data, Family


class PairFamily(Family):
    """``<prefix>-AvB`` for two distinct classes A, B in 0..9."""

    prefix: ClassVar[str]
    collection: ClassVar[str]
    class_names: ClassVar[tuple[str, ...]]
    d: ClassVar[int]
    scale: ClassVar[float]  # served value per stored unit (1/255 for 8-bit pixels)
    task = "classification"

    def match(self, name: str) -> tuple[int, ...] | None:
        if name == self.pattern:
            raise DatasetError(f"{self.pattern} is a family: name two distinct classes 0-9, e.g. {self.example}")
        found = re.fullmatch(rf"{re.escape(self.prefix)}-(\d)v(\d)", name)
        if found is None:
            return None
        a, b = int(found[1]), int(found[2])
        if a == b:
            raise DatasetError(f"{name}: the two classes of a pair must differ")
        return a, b

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        a, b = args
        return (f"{self.collection}: {self.class_names[a]} (label -1) vs {self.class_names[b]} (label +1), "
                "pixels scaled to [0, 1]")

    def sizes(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> tuple[int, int, int]:
        train, test = self.pair_rows(args, 0)
        return len(train), len(test), self.d

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        a, b = args
        images, labels = self.collection_arrays()
        y = np.full(len(labels), np.nan)
        y[labels == a] = -1.0
        y[labels == b] = 1.0
        y.flags.writeable = False
        train, test = self.pair_rows(args, seed)
        return Data(images, y, train, test, scale=self.scale)

    @abstractmethod
    def collection_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(images as an (n, d) array, class labels 0-9), cached per process and read-only."""

    @abstractmethod
    def pair_rows(self, args: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Train and test rows of the pair, sorted; cheap (no images decoded) where it can be."""


def pair_positions(labels: np.ndarray, a: int, b: int) -> np.ndarray:
    """Rows of class a or b, in collection order."""
    return np.flatnonzero((labels == a) | (labels == b))
