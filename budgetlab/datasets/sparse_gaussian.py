"""``sparse-gaussian``: the synthetic design of Murata & Suzuki (2018), section 6.

x ~ N(0, I_d), theta*_j = +1 for the first s_plus coordinates, -1 for the next s_minus, 0 elsewhere
(the paper: d = 500, theta*|_j = 1 for j in [13], -1 for j in [14, 25]), and y = <theta*, x> + xi with
xi ~ N(0, noise^2), noise = 1 in the paper.

Choices:
- The support is fixed, as in the paper: coordinates 0..s_plus-1 are +1 and the next s_minus are -1.
  The seed draws x and the noise only, so every seed has the same theta*.
- Sizes follow the paper: n = 10^5 samples split 90% / 10% into n_train = 90,000 and n_test = 10,000.
  Rows are i.i.d., so the split is positional (first n_train rows train).
- x is stored as float32 (200 MB at the paper's size instead of 400 MB); y is computed from the stored
  float32 values, so the linear model holds exactly for the served attributes.
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.base import DatasetError
from budgetlab.datasets.family import Data, Generated, Param, read_only

_TAG = 0x5A55
_CHUNK_ROWS = 8_192


def sparse_weights(d: int, s_plus: int, s_minus: int) -> np.ndarray:
    theta = np.zeros(d)
    theta[:s_plus] = 1.0
    theta[s_plus : s_plus + s_minus] = -1.0
    return theta


class SparseGaussian(Generated):
    pattern = example = "sparse-gaussian"
    task = "regression"
    source = "synthetic: Murata & Suzuki (2018), section 6"
    params = (
        Param("d", int, 500, "number of attributes", low=1, high=100_000),
        Param("n_train", int, 90_000, "training examples (the paper: 90% of 10^5)", low=1, high=10_000_000),
        Param("n_test", int, 10_000, "test examples (the paper: 10% of 10^5)", low=1, high=10_000_000),
        Param("s_plus", int, 13, "coordinates of theta* equal to +1 (the first ones)", low=0),
        Param("s_minus", int, 12, "coordinates of theta* equal to -1 (the next ones)", low=0),
        Param("noise", float, 1.0, "standard deviation of the Gaussian noise xi", low=0.0),
    )

    def check(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> None:
        super().check(args, params)
        if int(params["s_plus"]) + int(params["s_minus"]) > int(params["d"]):
            raise DatasetError("s_plus + s_minus (the support of theta*) must not exceed d")

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        return (f"Standard normal attributes, y = <theta*, x> + N(0, {params['noise']:g}^2) with theta* = +1 on "
                f"{params['s_plus']} and -1 on {params['s_minus']} coordinates (Murata & Suzuki 2018, section 6)")

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        n_train, n_test, d = self.sizes(args, params)
        n = n_train + n_test
        theta = sparse_weights(d, int(params["s_plus"]), int(params["s_minus"]))
        x_stream, noise_stream = (np.random.default_rng(s) for s in np.random.SeedSequence([seed, _TAG]).spawn(2))
        X = np.empty((n, d), dtype=np.float32)
        y = np.empty(n, dtype=np.float64)
        for start in range(0, n, _CHUNK_ROWS):
            block = x_stream.standard_normal((min(_CHUNK_ROWS, n - start), d), dtype=np.float32)
            X[start : start + len(block)] = block
            y[start : start + len(block)] = block.astype(np.float64) @ theta
        y += float(params["noise"]) * noise_stream.standard_normal(n)
        read_only(X, y, theta)
        return Data(X, y, np.arange(n_train), np.arange(n_train, n), true_weights=theta)


FAMILY = SparseGaussian()
