"""The benchmark's statistics: each cell's mean with a 95 % t-interval over the seeds, and Demšar's (2006) ranking of
the algorithms over the datasets of a budget.

The ranking follows Demšar, "Statistical Comparisons of Classifiers over Multiple Data Sets", JMLR 7 (2006),
sections 3.2.2 and 3.2.3: in each block (a dataset) the algorithms are ranked by their mean over the seeds, the best
(lowest error) 1 and ties sharing the average of their ranks; the Friedman test asks whether the average ranks differ
more than chance would make them (``scipy.stats.friedmanchisquare``, with its correction for ties); the Nemenyi test
then calls two algorithms different where their average ranks are more than the critical difference
CD = q_alpha sqrt(k (k + 1) / (6 N)) apart, q_alpha the studentized range's quantile at infinite degrees of freedom
over sqrt 2 (``scipy.stats.studentized_range``), k algorithms, N blocks. The Friedman test needs 2 blocks or more and 3
algorithms or more; below Demšar's N > 10, k > 5 its p-value is an approximation, and the report says so.

The interval and the level are the comparisons' (``client.comparison.verdicts``): one rule for every interval budgetlab
prints.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from client.comparison.verdicts import ALPHA
from client.comparison.verdicts import t_interval as mean_interval

CONFIDENCE = 1 - ALPHA


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` seeds with its two-sided t-interval (``low`` = ``high`` = the mean when n = 1)."""

    mean: float
    low: float
    high: float
    n: int


def t_interval(values: Sequence[float]) -> Interval:
    """The mean of ``values`` and its 95 % Student t-interval (``client.comparison.verdicts.t_interval``)."""
    x = [float(v) for v in values]
    if not x:
        raise ValueError("no values")
    mean = statistics.fmean(x)
    low, high = mean_interval(x) or (mean, mean)
    return Interval(mean, low, high, len(x))


@dataclass(frozen=True)
class Ranking:
    """Average ranks of ``algorithms`` (best first) over ``blocks``, with the Friedman test and the Nemenyi critical
    difference where they apply (``untested`` says why not)."""

    algorithms: list[str]
    blocks: list[str]
    ranks: dict[str, float]
    statistic: float | None = None
    p_value: float | None = None
    cd: float | None = None
    alpha: float = ALPHA
    untested: str = ""
    cliques: list[list[str]] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < self.alpha


def critical_difference(k: int, n: int, alpha: float = ALPHA) -> float:
    """Nemenyi's critical difference of average ranks for k algorithms over n blocks (Demšar eq. after (2))."""
    q_alpha = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q_alpha * math.sqrt(k * (k + 1) / (6 * n))


def rank(values: Mapping[str, Mapping[str, float]], alpha: float = ALPHA) -> Ranking:
    """Demšar's ranking of ``values[block][algorithm]`` (lower is better) over the algorithms every block has."""
    blocks = list(values)
    algorithms = sorted(set.intersection(*(set(row) for row in values.values()))) if blocks else []
    if not blocks or not algorithms:
        return Ranking(algorithms, blocks, {}, untested="nothing to rank")
    table = np.array([[values[b][a] for a in algorithms] for b in blocks])
    ranks = np.mean([stats.rankdata(row) for row in table], axis=0)
    order = sorted(range(len(algorithms)), key=lambda i: (ranks[i], algorithms[i]))
    names = [algorithms[i] for i in order]
    mean_ranks = {algorithms[i]: float(ranks[i]) for i in order}
    n, k = len(blocks), len(algorithms)
    if n < 2 or k < 3:
        return Ranking(names, blocks, mean_ranks, alpha=alpha,
                       untested=f"the Friedman test needs 2 datasets or more and 3 algorithms or more (here "
                                f"N = {n}, k = {k})")
    if all(len(set(row)) == 1 for row in table):
        # Every block a tie: the statistic is 0/0 in the tie correction; no algorithm differs from another.
        statistic, p_value = 0.0, 1.0
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = stats.friedmanchisquare(*table.T)
        statistic, p_value = float(result.statistic), float(result.pvalue)
    cd = critical_difference(k, n, alpha)
    return Ranking(names, blocks, mean_ranks, statistic, p_value, cd, alpha, cliques=cliques(mean_ranks, cd))


def cliques(ranks: Mapping[str, float], cd: float) -> list[list[str]]:
    """The maximal runs of algorithms (by average rank) that lie within ``cd`` of each other: the bars of the
    critical-difference diagram, each a group no pair of which the Nemenyi test tells apart."""
    ordered = sorted(ranks, key=lambda a: ranks[a])
    spans = []
    for i, first in enumerate(ordered):
        j = i
        while j + 1 < len(ordered) and ranks[ordered[j + 1]] - ranks[first] <= cd:
            j += 1
        spans.append((i, j))
    maximal = [(i, j) for i, j in spans if j > i and not any(a <= i and j <= b and (a, b) != (i, j)
                                                               for a, b in spans)]
    return [ordered[i: j + 1] for i, j in maximal]
