"""What ``budgetlab sense`` concludes from its sessions: each policy's curve over the seeds (the mean score at each
number of attributes, with its 95 % t-interval, and the mean cost paid), and the comparisons of a reference policy
with the others at each number of attributes, decided by the comparisons' rules (``client.comparison.verdicts``): a
one-sided paired t-test over the seeds, Holm's correction over every test of the report in each direction, at least
``MIN_SEEDS`` seeds and no ``--quick``; an ordering of means alone is never a verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from client.comparison.verdicts import ALPHA, MIN_SEEDS, TEST_NAME, PairedTest, holm, paired_test, t_interval
from learner.sensing.evaluation import Point

REFERENCE = "greedy"


@dataclass(frozen=True)
class Row:
    """One policy at one number of attributes on one dataset, over its seeds."""

    dataset: str
    task: str
    policy: str
    budget: int
    seeds: tuple[int, ...]
    scores: tuple[float, ...]
    reads: float
    cost: float

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))

    @property
    def interval(self) -> tuple[float, float] | None:
        return t_interval(self.scores)

    @property
    def metric(self) -> str:
        return "accuracy" if self.task == "classification" else "normalised MSE"


def rows(points: Sequence[Point]) -> list[Row]:
    """The curves' points: datasets and policies in the order their sessions ran, budgets increasing."""
    datasets = list(dict.fromkeys(p.dataset for p in points))
    policies = list(dict.fromkeys(p.policy for p in points))
    groups: dict[tuple[str, str, int], list[Point]] = {}
    for p in points:
        groups.setdefault((p.dataset, p.policy, p.budget), []).append(p)
    found = []
    for key in sorted(groups, key=lambda k: (datasets.index(k[0]), policies.index(k[1]), k[2])):
        mine = sorted(groups[key], key=lambda p: p.seed)
        found.append(Row(key[0], mine[0].task, key[1], key[2], tuple(p.seed for p in mine),
                         tuple(p.score for p in mine), float(np.mean([p.mean_reads for p in mine])),
                         float(np.mean([p.mean_cost for p in mine]))))
    return found


@dataclass(frozen=True)
class Comparison:
    """The reference policy against another at one number of attributes: the paired test of their difference over
    the seeds, oriented so that a positive mean favours the reference (higher accuracy, lower normalised MSE)."""

    dataset: str
    budget: int
    reference: str
    other: str
    test: PairedTest | None
    better: float = 1.0
    """Holm-adjusted p-value of the reference being better."""
    worse: float = 1.0
    """Holm-adjusted p-value of the reference being worse."""
    decided: bool = False

    @property
    def verdict(self) -> str:
        if self.test is None or not self.decided:
            n = 0 if self.test is None else self.test.n
            return f"indicative only ({n} seeds paired; --quick or fewer than {MIN_SEEDS} decide nothing)"
        if self.better < ALPHA:
            return f"{self.reference} better"
        if self.worse < ALPHA:
            return f"{self.reference} worse"
        return "no difference shown"


def comparisons(found: Sequence[Row], *, quick: bool, reference: str = REFERENCE) -> list[Comparison]:
    """The reference against every other policy at every number of attributes of every dataset, Holm-corrected
    over all of them in each direction."""
    index = {(r.dataset, r.policy, r.budget): r for r in found}
    tests: list[Comparison] = []
    for row in found:
        mine = index.get((row.dataset, reference, row.budget))
        if row.policy == reference or mine is None:
            continue
        theirs = dict(zip(row.seeds, row.scores, strict=True))
        sign = 1.0 if row.task == "classification" else -1.0
        differences = [sign * (score - theirs[seed]) for seed, score in zip(mine.seeds, mine.scores, strict=True)
                       if seed in theirs]
        tests.append(Comparison(row.dataset, row.budget, reference, row.policy, paired_test(differences)))
    decided = [c for c in tests if c.test is not None and c.test.n >= MIN_SEEDS and not quick]
    better = holm([c.test.p_greater for c in decided if c.test is not None])
    worse = holm([c.test.p_less for c in decided if c.test is not None])
    adjusted = {id(c): (b, w) for c, b, w in zip(decided, better, worse, strict=True)}
    return [Comparison(c.dataset, c.budget, c.reference, c.other, c.test, *adjusted[id(c)], decided=True)
            if id(c) in adjusted else c for c in tests]


TEST = f"{TEST_NAME}, Holm-corrected over the report's tests in each direction, at the {ALPHA:.0%} level"
