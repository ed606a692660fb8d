"""Full-information test error of a linear predictor: the oracle's free (but ledgered) evaluation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

from budgetlab.contract.calls import EvaluateResponse
from budgetlab.datasets.base import Dataset


def evaluate_weights(dataset: Dataset, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse:
    """Test MSE, MSE of the zero predictor, their ratio and the 0-1 sign error, over the test split."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (dataset.d,):
        raise ValueError(f"weights must have d={dataset.d} entries, got {w.size}")
    n = 0
    sq = zero_sq = wrong = 0.0
    for X, y in dataset.iter_split("test"):
        with _one_blas_thread():
            pred = X @ w + bias
        # np.sum's own reduction and x ** 2's squaring (the same floats), without their Python wrappers: an in-process
        # run evaluates 20 times
        residual = pred - y
        sq += float(np.add.reduce(residual * residual))
        zero_sq += float(np.add.reduce(y * y))
        # A zero prediction counts as the positive class, so the zero predictor's 0-1 error is the
        # share of negative labels, as with sign() thresholds in the papers' tables.
        wrong += float(np.count_nonzero((pred >= 0) != (y >= 0)))
        n += len(y)
    if n == 0:
        raise ValueError("the dataset has no test examples")
    mse = sq / n
    zero_mse = zero_sq / n
    return EvaluateResponse(
        n_test=n,
        mse=mse,
        zero_mse=zero_mse,
        # all-zero targets leave the ratio undefined; report the MSE itself rather than a non-JSON inf
        normalized_mse=mse / zero_mse if zero_mse > 0 else mse,
        zero_one=wrong / n,
    )


@cache
def _blas() -> tuple[Any, ...]:
    """threadpoolctl's controllers of the loaded BLAS libraries (none without threadpoolctl, which the SDK alone does
    not install), selected once: a ``limit`` selects them again each time, 20 us of an evaluation's 60."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return ()
    return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS on the calling thread alone for the product X w: OpenBLAS's threads made it cost ten times the CPU on two
    busy cores (a 2,000 x 500 test split: 4.9 ms against 0.54 ms), for the same floats (each output element is still
    one thread's dot product); each library's threads as they were after it, as ``ThreadpoolController.limit``
    restores them."""
    libraries = _blas()
    before = [library.num_threads for library in libraries]
    for library in libraries:
        library.set_num_threads(1)
    try:
        yield
    finally:
        for library, threads in zip(libraries, before, strict=True):
            library.set_num_threads(threads)
