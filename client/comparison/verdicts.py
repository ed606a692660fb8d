"""The statistics behind a claim's verdict: paired tests over seeds, Holm's correction over a report's tests, and
intervals.

A claim about algorithms is decided by the runs' seeds, never by an ordering of means: each comparison it makes is a
one-sided paired t-test over the seeds both algorithms completed (``paired_test``), with the 95 % t-interval of the
mean difference. A report that decides several claims corrects for the number of tests with Holm's step-down
procedure (``holm``), separately for the tests in each claim's direction and those in the reverse direction: a claim
holds when every one of its tests is significant in its direction after correction, fails when one is significant in
the reverse direction, and is inconclusive otherwise. Fewer than ``MIN_SEEDS`` seeds, or a ``--quick`` run, decide
nothing: their verdicts are indicative.

A property of the data (Kukliansky & Shamir's ρ) is not a comparison of runs: it gets a bootstrap interval over the
training examples (``bootstrap_interval``), compared with the paper's number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

ALPHA = 0.05
"""The level of every test and the complement of every interval's confidence (95 %)."""
MIN_SEEDS = 5
"""A claim about runs needs at least this many seeds paired across its algorithms to be decided."""
TEST_NAME = "one-sided paired t-test over seeds"
BOOTSTRAP_RESAMPLES = 1000


@dataclass(frozen=True)
class PairedTest:
    """A paired t-test of the mean of differences (first − second, or value − bound) against 0."""

    n: int
    mean: float
    se: float
    low: float
    high: float
    """The 95 % t-interval of the mean difference."""
    p_less: float
    """One-sided p-value for a mean below 0."""
    p_greater: float
    """One-sided p-value for a mean above 0."""

    def p(self, direction: str) -> float:
        return self.p_less if direction == "less" else self.p_greater


def paired_test(differences: Sequence[float]) -> PairedTest | None:
    """The t-test of ``differences`` (one per seed) against a mean of 0; None with fewer than 2. Differences that
    are all equal have no spread: their sign decides at once (p = 0 one way, 1 the other; 1 both ways at 0)."""
    d = np.asarray(differences, dtype=np.float64)
    n = int(d.size)
    if n < 2:
        return None
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    if se == 0.0 or not math.isfinite(se):
        below, above = (0.0 if mean < 0 else 1.0), (0.0 if mean > 0 else 1.0)
        return PairedTest(n, mean, 0.0, mean, mean, below, above)
    half = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * se
    less = stats.ttest_1samp(d, 0.0, alternative="less")
    return PairedTest(n, mean, se, mean - half, mean + half, float(less.pvalue), float(1.0 - less.pvalue))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: compared with ``ALPHA`` they control
    the probability of any false rejection among the tests at ``ALPHA``. Not in SciPy; statsmodels'
    ``multipletests(method="holm")`` computes the same numbers."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % t-interval of the mean of ``values`` (None with fewer than 2)."""
    found = paired_test(values)
    return None if found is None else (found.low, found.high)


def bootstrap_interval(n: int, statistic: Callable[[np.ndarray], np.ndarray], estimate: float, seed: int = 0,
                       resamples: int = BOOTSTRAP_RESAMPLES, batch: int = 100) -> tuple[float, float, float]:
    """The 95 % normal bootstrap interval of ``estimate``, a statistic of ``n`` rows: ``estimate`` ± 1.96 times the
    standard deviation of the statistic over resamples of the rows; and the bootstrap's estimate of the statistic's
    bias (the resamples' mean minus ``estimate``). Not the percentile interval, nor the basic one: ρ is a concave
    function of the attributes' means, biased low wherever attributes are rare, and at alpha = -2 (20,000 examples,
    ρ = 0.0445) the percentile interval [0.0402, 0.0435] missed its own estimate below and the basic one
    [0.0456, 0.0488] above; the normal interval states the sampling spread, and the bias is said beside it.

    ``statistic(W)`` takes a batch of resamples as weights (one row of ``W`` per resample: each row's count in it
    over ``n``) and returns one value per resample, so that the rows are never copied and a mean over them is one
    matrix product."""
    rng = np.random.default_rng(seed)
    draws = []
    for start in range(0, resamples, batch):
        counts = [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(min(batch, resamples - start))]
        draws.append(np.asarray(statistic(np.array(counts, dtype=np.float64) / n)))
    found = np.concatenate(draws)
    half = float(stats.norm.ppf(1 - ALPHA / 2) * found.std(ddof=1))
    return estimate - half, estimate + half, float(found.mean() - estimate)
