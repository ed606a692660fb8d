"""``powerlaw``: the simulated data of Kukliansky & Shamir (2015), §5.1, with the reading of docs/papers.md.

u_i = i^alpha (i = 1..d); the attribute means E[x] are u projected on the L2 unit ball (scenario
``ridge``: u / max(1, ||u||_2)) or on the L_inf unit ball (``lasso``: clip(u, -1, 1)); each attribute is an
independent 0/1 Bernoulli variable with its mean, so E[x_i^2] = E[x_i]. Targets are <w*, x> with w*
i.i.d. uniform on {-1, +1} (ridge) or on {-1, 0, +1} with P(+-1) = 0.15 each (lasso).

Choices the paper leaves open:
- Noise: the paper adds none (targets are the scalar product), so ``noise`` (the standard deviation of
  Gaussian noise added to y) defaults to 0.
- Sizes: the paper "used a different m" per experiment without giving them; the defaults are
  n_train = 20,000 (100,000 attributes at k + 1 = 5) and an i.i.d. test set of n_test = 2,000.
- alpha defaults to -1 (its Figure 1c/2c); the paper's four settings are 0, -0.5, -1, -2.
- The seed draws w* and the examples from separate streams, so w* does not depend on n_train or
  n_test. Rows are i.i.d., so the split is positional: the first n_train rows train, the rest test.
- Attributes are stored as uint8 (0/1): a default set takes 11 MB.
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.datasets.family import Data, Generated, Param, read_only

_TAG = 0x9017
# Rows drawn at a time: about 4 MB of float64 draws, whatever d (the draws are the same whatever the chunk).
_CHUNK_CELLS = 1 << 19


def attribute_means(alpha: float, d: int, scenario: str) -> np.ndarray:
    """E[x]: u_i = i^alpha projected on the unit L2 ball (ridge) or the unit L_inf ball (lasso)."""
    u = np.arange(1, d + 1, dtype=np.float64) ** alpha
    if scenario == "ridge":
        return u / max(1.0, float(np.linalg.norm(u)))
    return np.clip(u, -1.0, 1.0)


def improvement_ratios(alpha: float, d: int = 500) -> tuple[float, float]:
    """(rho_ridge, rho_lasso) of the paper's eqs. (11) and (12), each for the data of its own scenario.

    rho_ridge = ||E[x^2]||_{1/2} / (d E[||x^2||_1]) and rho_lasso = ||E[x^2]||_1 / (d ||E[x^2]||_inf),
    with E[x_i^2] = E[x_i] for 0/1 attributes and ||v||_{1/2} = (sum_i sqrt(v_i))^2.
    """
    ridge = attribute_means(alpha, d, "ridge")
    lasso = attribute_means(alpha, d, "lasso")
    rho_ridge = float(np.sum(np.sqrt(ridge)) ** 2 / (d * np.sum(ridge)))
    rho_lasso = float(np.sum(lasso) / (d * np.max(lasso)))
    return rho_ridge, rho_lasso


def true_weights(scenario: str, d: int, rng: np.random.Generator) -> np.ndarray:
    if scenario == "ridge":
        return rng.choice(np.array([-1.0, 1.0]), size=d)
    return rng.choice(np.array([-1.0, 0.0, 1.0]), size=d, p=[0.15, 0.7, 0.15])


class PowerLaw(Generated):
    pattern = example = "powerlaw"
    task = "regression"
    source = "synthetic: Kukliansky & Shamir (2015), section 5.1"
    params = (
        Param("alpha", float, -1.0, "power-law exponent: u_i = i^alpha (the paper uses 0, -0.5, -1, -2)"),
        Param("scenario", str, "ridge", "ridge: E[x] on the L2 ball, w* in {-1,1}^d; lasso: E[x] on the "
              "L_inf ball, sparse w* in {-1,0,1}^d", choices=("ridge", "lasso")),
        Param("d", int, 500, "number of attributes", low=1, high=100_000),
        Param("n_train", int, 20_000, "training examples", low=1, high=10_000_000),
        Param("n_test", int, 2_000, "test examples", low=1, high=10_000_000),
        Param("noise", float, 0.0, "standard deviation of Gaussian noise added to y (the paper: none)", low=0.0),
    )

    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str:
        return (f"Power-law Bernoulli attributes (alpha={params['alpha']:g}, {params['scenario']} scenario) with "
                "y = <w*, x> + noise (Kukliansky & Shamir 2015, section 5.1)")

    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data:
        n_train, n_test, d = self.sizes(args, params)
        n = n_train + n_test
        w_stream, x_stream, noise_stream = (
            np.random.default_rng(s) for s in np.random.SeedSequence([seed, _TAG]).spawn(3)
        )
        w = true_weights(str(params["scenario"]), d, w_stream)
        means = attribute_means(float(params["alpha"]), d, str(params["scenario"]))
        X = np.empty((n, d), dtype=np.uint8)
        y = np.empty(n, dtype=np.float64)
        rows = max(1, _CHUNK_CELLS // d)
        for start in range(0, n, rows):
            block = x_stream.random((min(rows, n - start), d)) < means
            X[start : start + len(block)] = block
            y[start : start + len(block)] = block @ w
        y += float(params["noise"]) * noise_stream.standard_normal(n)
        read_only(X, y, w)
        return Data(X, y, np.arange(n_train), np.arange(n_train, n), true_weights=w)


FAMILY = PowerLaw()
