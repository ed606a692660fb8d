"""What every dataset of the oracle is: two splits of a matrix and a target, addressed by row.

The arrays may be memory-mapped; nothing here copies a whole split. Values leave a ``Dataset`` only
through ``values`` (a gather of paid-for cells) and, for evaluation, through ``iter_test`` in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from client.models import DatasetInfo, DatasetParam, ParamValue, Split, Task

EVAL_CHUNK_ROWS = 65_536


class DatasetError(ValueError):
    """A dataset name or parameter the registry cannot serve (a 4xx for the API)."""


@dataclass
class Dataset:
    """Train and test splits as row-index arrays into one feature matrix ``X`` and target ``y``.

    ``train_rows``/``test_rows`` are fixed per (name, params, seed); ``X`` may be an ``np.memmap``.
    """

    name: str
    description: str
    task: Task
    X: np.ndarray
    y: np.ndarray
    train_rows: np.ndarray
    test_rows: np.ndarray
    costs: np.ndarray | None = None
    params: dict[str, ParamValue] = field(default_factory=dict)
    accepted_params: list[DatasetParam] = field(default_factory=list)
    source: str = ""
    _moments: np.ndarray | None = field(default=None, repr=False)

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def rows(self, split: Split) -> np.ndarray:
        return self.train_rows if split == "train" else self.test_rows

    def n(self, split: Split) -> int:
        return int(len(self.rows(split)))

    def info(self) -> DatasetInfo:
        return DatasetInfo(
            name=self.name,
            description=self.description,
            task=self.task,
            n_train=self.n("train"),
            n_test=self.n("test"),
            d=self.d,
            costs=None if self.costs is None else [float(c) for c in self.costs],
            params=dict(self.params),
            accepted_params=list(self.accepted_params),
            source=self.source,
        )

    def values(self, split: Split, examples: np.ndarray, attributes: np.ndarray) -> np.ndarray:
        """x[example, attribute] for paired index arrays (examples are positions within the split)."""
        rows = self.rows(split)[np.asarray(examples, dtype=np.int64)]
        return np.asarray(self.X[rows, np.asarray(attributes, dtype=np.int64)], dtype=np.float64)

    def labels(self, split: Split, examples: np.ndarray) -> np.ndarray:
        rows = self.rows(split)[np.asarray(examples, dtype=np.int64)]
        return np.asarray(self.y[rows], dtype=np.float64)

    def iter_split(self, split: Split, chunk: int = EVAL_CHUNK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(X, y) of a split in row chunks, so a memory-mapped set is never loaded whole."""
        rows = self.rows(split)
        for start in range(0, len(rows), chunk):
            idx = np.sort(rows[start : start + chunk])
            yield np.asarray(self.X[idx], dtype=np.float64), np.asarray(self.y[idx], dtype=np.float64)

    def second_moments(self) -> np.ndarray:
        """E[x_i^2] over the training split: the prior knowledge DDAERR/DDAELR may declare."""
        if self._moments is None:
            acc = np.zeros(self.d)
            for X, _ in self.iter_split("train"):
                acc += np.einsum("ij,ij->j", X, X)
            self._moments = acc / max(self.n("train"), 1)
        return self._moments


def split_rows(n: int, n_test: int | float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random train/test split of ``n`` rows for ``seed`` (``n_test`` a count or a fraction)."""
    count = int(round(n * n_test)) if isinstance(n_test, float) and n_test < 1 else int(n_test)
    perm = np.random.default_rng([seed, 0x5B11]).permutation(n)
    return np.sort(perm[count:]), np.sort(perm[:count])


def stream_order(n: int, seed: int) -> np.ndarray:
    """The order in which a stream session issues the ``n`` examples of its split.

    Shared by the oracle and the in-process ``LocalOracle`` so that one seed means one example order.
    """
    return np.random.default_rng([seed, 0x57EA]).permutation(n)
