"""What every dataset of the oracle is: two splits of a matrix and a target, addressed by row.

The arrays may be memory-mapped; nothing here copies a whole split. Values leave a ``Dataset`` only
through ``values`` (a gather of paid-for cells) and, for evaluation, through ``iter_split`` in chunks.

A memory-mapped matrix is read through the page cache, and every page a read faults in stays counted in
the process's resident set until it is unmapped. Random single-cell reads of a 4 GB matrix would thus
grow the RSS without bound (by up to 64 KB per read with the kernel's fault-around), so both readers
hand the touched pages back every so often with ``madvise(MADV_DONTNEED)``: the data stays in the page
cache, shared by every worker, and the next read faults it back in for free.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.datasets import DatasetInfo, DatasetParam, Task
from budgetlab.contract.sessions import Split

EVAL_CHUNK_ROWS = 65_536
# A chunk of a wide matrix is bounded in cells too (2^22 float64 = 32 MB), whatever d is.
EVAL_CHUNK_CELLS = 1 << 22
# Cells gathered from a memory-mapped X between two releases of its touched pages. Each scattered read
# faults in a read-ahead window (~240 KB on average, up to ~850 KB measured on ext4), so 64 cells keep
# well under 100 MB resident; releasing costs microseconds next to a request's milliseconds.
RELEASE_EVERY_CELLS = 64
# A mapping no larger than this stays resident: its pages bound what it can hold, and releasing them every 64 cells
# would fault them in again at every step of an in-process run (mnist-3v5's 3.9 MB: 35 us of a 57-cell step).
KEEP_MAPPED_BYTES = 64 << 20
# A test split of at most this many cells is kept as the float64 chunk evaluations read (8 MB): a run evaluates its
# weights 20 times, and converting the split again each time cost more than the product (mnist-3v5: 20 us an example).
RESIDENT_TEST_CELLS = 1 << 20
# A split of at most this many cells whose stored values are not those served (8-bit pixels and their scale) is kept as
# its float64 served values (8 MB, as the test split's chunk above; outside the dataset cache's count of bytes, as that
# chunk) for the steps of a session: a step's cells are then one row's take, without a conversion and a product a step
# (mnist-3v5's 705,600 training cells, 57 a step: 4.4 us down to 3).
RESIDENT_STEP_CELLS = 1 << 20


class StepCells(NamedTuple):
    """Where a step's cells of one split are read: a row of ``matrix``, its example's row in ``rows`` (None: the
    example's own position, a split kept as its served values); ``served``: the matrix holds the values served, else
    they are its ``_scaled``; ``mapped``: a memory-mapped X, whose touched pages are released as ``values``
    releases them."""

    matrix: np.ndarray
    rows: np.ndarray | None
    served: bool
    mapped: bool


@dataclass(frozen=True)
class ScaleBounds:
    """What the papers' theorems assume about the data, measured on the training split (free prior knowledge).

    ``max_norm2`` = max ||x||_2, ``max_abs`` = max |x_i| (= max ||x||_inf), ``max_label`` = max |y|,
    ``mean_sq_norm`` = E||x||^2 and ``max_second_moment`` = max_i E[x_i^2]. ``weight_norm2`` and ``weight_norm1``
    bound ||w*||_2 and ||w*||_1: the norms of the generating w* of a synthetic design, or for real data the
    stand-in ``max_label / sqrt(mean_i E[x_i^2])`` for both (``weight_source`` says which). The stand-in is the
    norm at which a predictor's RMS output reaches the label bound were the attributes uncorrelated with the
    data's average scale: it scales as 1/x like any w*, and on MNIST 3 vs 5 (2.95) it holds the cross-validated
    ridge solution (||w||_2 = 0.76), where the label-range bound max|y| / max||x||_2 (0.07) would cap the best
    predictor in the ball at a normalised test MSE of 0.80.
    """

    max_norm2: float
    max_abs: float
    max_label: float
    mean_sq_norm: float
    max_second_moment: float
    weight_norm2: float
    weight_norm1: float
    weight_source: str

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


class DatasetError(ValueError):
    """A dataset name or parameter the registry cannot serve (a 4xx for the API)."""


class UnknownDataset(DatasetError):
    """No dataset of that name is served here (a 404, where a bad parameter is a 422)."""


@dataclass
class Dataset:
    """Train and test splits as row-index arrays into one feature matrix ``X`` and target ``y``.

    ``train_rows``/``test_rows`` are fixed per (name, params, seed); ``X`` may be an ``np.memmap``.
    Served values are ``X * scale``, so 8-bit pixels stay 8-bit in memory and leave as floats in [0, 1].
    ``true_weights`` is the generating w* of a synthetic design (None for real data); it never leaves
    the server through the API.
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
    scale: float = 1.0
    true_weights: np.ndarray | None = field(default=None, repr=False)
    _moments: np.ndarray | None = field(default=None, repr=False)
    _bounds: ScaleBounds | None = field(default=None, repr=False)
    _gathered: int = field(default=0, repr=False)
    _test: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _step_cells: dict[str, StepCells] = field(default_factory=dict, init=False, repr=False)

    def _cells_of(self, split: Split) -> StepCells:
        """Where ``example_values`` reads a split's cells (``StepCells``), made at its first read."""
        rows = self.rows(split)
        if self.scale == 1.0 and self.X.dtype in (np.float32, np.float64):
            # Served as stored: a float32's tolist() is the float its float64 would give. A plain ndarray, the same
            # memory: a memmap's row is a memmap, each made by numpy's Python code (3 us of an in-process step).
            cells = StepCells(self.X.view(np.ndarray), rows, True, isinstance(self.X, np.memmap))
        elif len(rows) * self.d <= RESIDENT_STEP_CELLS:
            values = self._scaled(self.X[rows])  # the values ``values`` serves, each computed as it computes it
            release_pages(self.X)
            values.flags.writeable = False
            cells = StepCells(values, None, True, False)
        else:
            cells = StepCells(self.X.view(np.ndarray), rows, False, isinstance(self.X, np.memmap))
        self._step_cells[split] = cells
        return cells

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
            n_attributes=self.d,
            costs=None if self.costs is None else [float(c) for c in self.costs],
            params=dict(self.params),
            accepted_params=list(self.accepted_params),
            source=self.source,
        )

    def values(self, split: Split, examples: np.ndarray, attributes: np.ndarray) -> np.ndarray:
        """x[example, attribute] for paired index arrays (examples are positions within the split)."""
        rows = self.rows(split)[np.asarray(examples, dtype=np.int64)]
        cells = self._scaled(self.X[rows, np.asarray(attributes, dtype=np.int64)])
        self._gathered += cells.size
        if self._gathered >= RELEASE_EVERY_CELLS:
            self._gathered = 0
            release_pages(self.X)
        return cells

    def example_values(self, split: Split, example: int, attributes: Sequence[int]) -> list[float]:
        """``values`` of one example's attributes, as floats: a per-example step's read, without its index arrays."""
        cells = self._step_cells.get(split) or self._cells_of(split)
        line = cells.matrix[example] if cells.rows is None else cells.matrix[cells.rows[example]]
        read = line.take(attributes)  # take: no fancy-index set-up
        if cells.mapped:
            self._gathered += read.size
            if self._gathered >= RELEASE_EVERY_CELLS:
                self._gathered = 0
                release_pages(self.X)
        values: list[float] = (read if cells.served else self._scaled(read)).tolist()
        return values

    def label(self, split: Split, example: int) -> float:
        """``labels`` of one example (a position within the split), as a float."""
        return float(self.y.item(self.rows(split).item(example)))  # item(): no NumPy scalar made

    def labels(self, split: Split, examples: np.ndarray) -> np.ndarray:
        rows = self.rows(split)[np.asarray(examples, dtype=np.int64)]
        return np.asarray(self.y[rows], dtype=np.float64)

    def iter_split(self, split: Split, chunk: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(X, y) of a split in row chunks, so a memory-mapped set is never loaded whole.

        The default chunk holds at most ``EVAL_CHUNK_ROWS`` rows and ``EVAL_CHUNK_CELLS`` cells.
        """
        rows = self.rows(split)
        resident = split == "test" and chunk is None and len(rows) * self.d <= RESIDENT_TEST_CELLS
        if resident and self._test is not None:
            yield self._test
            return
        if chunk is None:
            chunk = max(1, min(EVAL_CHUNK_ROWS, EVAL_CHUNK_CELLS // max(self.d, 1)))
        for start in range(0, len(rows), chunk):
            idx = np.sort(rows[start : start + chunk])
            X = self._scaled(self.X[idx])
            release_pages(self.X)
            y = np.asarray(self.y[idx], dtype=np.float64)
            if resident:  # one chunk: kept, read-only, for the next evaluation
                X.flags.writeable = y.flags.writeable = False
                self._test = (X, y)
            yield X, y

    def _scaled(self, raw: np.ndarray) -> np.ndarray:
        values = np.asarray(raw, dtype=np.float64)
        return values * self.scale if self.scale != 1.0 else values

    def second_moments(self) -> np.ndarray:
        """E[x_i^2] over the training split: the prior knowledge DDAERR/DDAELR may declare."""
        if self._moments is None:
            acc = np.zeros(self.d)
            for X, _ in self.iter_split("train"):
                acc += np.einsum("ij,ij->j", X, X)
            self._moments = acc / max(self.n("train"), 1)
        return self._moments

    def scale_bounds(self) -> ScaleBounds:
        """The data's scale as the theorems' default parameters need it (``ScaleBounds``), over the training split."""
        if self._bounds is None:
            norm2 = max_abs = 0.0
            for X, _ in self.iter_split("train"):
                if len(X):
                    norm2 = max(norm2, float(np.sqrt(np.einsum("ij,ij->i", X, X).max())))
                    max_abs = max(max_abs, float(np.abs(X).max()))
            labels = self.labels("train", np.arange(self.n("train")))
            max_label = float(np.abs(labels).max()) if len(labels) else 0.0
            moments = self.second_moments()
            mean_sq_norm = float(moments.sum())
            if self.true_weights is not None:
                w2, w1 = float(np.linalg.norm(self.true_weights)), float(np.abs(self.true_weights).sum())
                source = "generating w*"
            else:
                mean_moment = mean_sq_norm / max(self.d, 1)
                w2 = w1 = max_label / np.sqrt(mean_moment) if mean_moment > 0 else max_label
                source = "stand-in max|y| / sqrt(mean_i E[x_i^2])"
            self._bounds = ScaleBounds(max_norm2=norm2, max_abs=max_abs, max_label=max_label,
                                       mean_sq_norm=mean_sq_norm, max_second_moment=float(moments.max(initial=0.0)),
                                       weight_norm2=float(w2), weight_norm1=float(w1), weight_source=source)
        return self._bounds


def release_pages(X: np.ndarray) -> None:
    """Unmap the pages a read of a memory-mapped ``X`` faulted in (a no-op for an in-memory array and for a mapping of
    at most ``KEEP_MAPPED_BYTES``)."""
    base: object = X
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    if base is not None and hasattr(mmap, "MADV_DONTNEED") and len(base) > KEEP_MAPPED_BYTES:
        base.madvise(mmap.MADV_DONTNEED)


def split_sizes(n: int, n_test: int | float) -> tuple[int, int]:
    """(n_train, n_test) of ``split_rows(n, n_test, seed)``, without drawing the split."""
    count = int(round(n * n_test)) if isinstance(n_test, float) and n_test < 1 else int(n_test)
    return n - count, count


def split_rows(n: int, n_test: int | float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random train/test split of ``n`` rows for ``seed`` (``n_test`` a count or a fraction)."""
    count = split_sizes(n, n_test)[1]
    perm = np.random.default_rng([seed, 0x5B11]).permutation(n)
    return np.sort(perm[count:]), np.sort(perm[:count])


def stream_order(n: int, seed: int) -> np.ndarray:
    """The order in which a stream session issues the ``n`` examples of its split.

    Shared by the oracle and the in-process ``LocalOracle`` so that one seed means one example order.
    """
    return np.random.default_rng([seed, 0x57EA]).permutation(n)
