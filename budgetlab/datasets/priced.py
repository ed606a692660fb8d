"""``priced``: a synthetic regression whose attributes have different prices. Beyond the five papers.

None of the papers prices attributes differently; this family is for the cost-aware samplers (``ddaerr-cost`` and
kin), whose gain over the cost-blind ones at an equal total cost depends on how the prices spread. Think of a
questionnaire beside a few lab tests: most attributes are cheap, a share of them costs ``price`` times more.

x_i ~ N(0, i^alpha) independently (i = 1..d; alpha = 0: every attribute has E[x_i²] = 1), y = <w*, x> + noise with
w* i.i.d. uniform on {-1, +1} on ``support`` random coordinates (0: all d) and 0 elsewhere, and Gaussian noise of
standard deviation ``noise``. The dataset declares its prices
(``DatasetInfo.costs``), which an oracle charges unless a session declares its own: 1 for most attributes and
``price`` for ``round(expensive · d)`` of them.

Choices:
- Which attributes are expensive is part of the dataset, not of the seed (a fixed random choice per (d, expensive)),
  so every seed prices the same attributes; it is drawn, not the first or last ones, so that the prices do not line
  up with the moments' decay when alpha < 0.
- ``price = 1`` gives equal prices: the cost-aware samplers are then the papers' ones exactly.
- The seed draws w*, the examples and the noise from separate streams; rows are i.i.d., so the split is positional.
- x is stored as float32, and y computed from the stored values.
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.family import Data, Generated, Param, read_only

_TAG = 0x9A1CE
_CHUNK_ROWS = 8_192


def expensive_attributes(d: int, expensive: float) -> np.ndarray:
    """The attributes that cost ``price``: round(expensive · d) of them, the same for every seed."""
    count = int(round(expensive * d))
    return np.sort(np.random.default_rng([_TAG, d]).permutation(d)[:count])


class Priced(Generated):
    pattern = example = "priced"
    task = "regression"
    source = "synthetic: budgetlab's own, for cost-aware sampling (beyond the papers)"
    params = (
        Param("d", int, 50, "number of attributes", low=1, high=100_000),
        Param("n_train", int, 20_000, "training examples", low=1, high=10_000_000),
        Param("n_test", int, 2_000, "test examples", low=1, high=10_000_000),
        Param("expensive", float, 0.2, "share of the attributes that cost `price` (the others cost 1)", low=0.0,
              high=1.0),
        Param("price", float, 100.0, "the price of an expensive attribute (1: every attribute costs the same)",
              low=0.0, high=1e9),
        Param("alpha", float, 0.0, "second moments E[x_i²] = i^alpha (0: all equal)", low=-10.0, high=10.0),
        Param("noise", float, 0.5, "standard deviation of the Gaussian noise added to y", low=0.0),
        Param("support", int, 0, "non-zero coordinates of w* (0: all d)", low=0),
    )

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        count = len(expensive_attributes(int(params["d"]), float(params["expensive"])))
        return (f"Gaussian attributes with E[x_i²] = i^{params['alpha']:g}, y = <w*, x> + N(0, {params['noise']:g}²); "
                f"{count} of the {params['d']} attributes cost {params['price']:g}, the others 1 (budgetlab's own, "
                "beyond the papers)")

    def costs(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> np.ndarray:
        d = int(params["d"])
        prices = np.ones(d)
        prices[expensive_attributes(d, float(params["expensive"]))] = float(params["price"])
        return prices

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        n_train, n_test, d = self.sizes(args, params)
        n = n_train + n_test
        w_stream, x_stream, noise_stream = (
            np.random.default_rng(s) for s in np.random.SeedSequence([seed, _TAG]).spawn(3)
        )
        w = w_stream.choice(np.array([-1.0, 1.0]), size=d)
        support = int(params["support"])
        if 0 < support < d:
            w[w_stream.permutation(d)[support:]] = 0.0
        scales = (np.arange(1, d + 1, dtype=np.float64) ** (float(params["alpha"]) / 2)).astype(np.float32)
        X = np.empty((n, d), dtype=np.float32)
        y = np.empty(n, dtype=np.float64)
        for start in range(0, n, _CHUNK_ROWS):
            block = x_stream.standard_normal((min(_CHUNK_ROWS, n - start), d), dtype=np.float32) * scales
            X[start : start + len(block)] = block
            y[start : start + len(block)] = block.astype(np.float64) @ w
        y += float(params["noise"]) * noise_stream.standard_normal(n)
        read_only(X, y, w)
        return Data(X, y, np.arange(n_train), np.arange(n_train, n), true_weights=w)


FAMILY = Priced()
