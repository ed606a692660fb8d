"""Per design and algorithm, what its runs add up to: the mean over the seeds of the final scores with its 95 %
t-interval, what was paid, the regret of online runs, the audits and the failures. The report's tables and the plots
read these."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
from client.comparison.config import Design
from client.comparison.grid import RunOutcome
from client.comparison.verdicts import t_interval


@dataclass
class Stat:
    """A metric over seeds: its mean, standard deviation (ddof = 1), count and the 95 % t-interval of the mean."""

    mean: float
    std: float
    n: int
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 4) -> str:
        """``0.6387 [0.612, 0.666]``: the mean and its 95 % interval (a single seed: the value alone)."""
        if self.low is None or self.high is None:
            return f"{self.mean:.{digits}g}"
        return f"{self.mean:.{digits}g} [{self.low:.3g}, {self.high:.3g}]"


def cell(value: Stat | None, digits: int = 4) -> str:
    """A statistic as a table cell shows it: "—" where there is none."""
    return value.text(digits) if value is not None else "—"


def stat(values: list[float]) -> Stat | None:
    if not values:
        return None
    interval = t_interval(values)
    return Stat(statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0, len(values),
                *(interval or (None, None)))


@dataclass
class AlgorithmSummary:
    label: str
    id: str
    params: dict[str, Any]
    per_example: int | None
    defaults: str = "practical"
    runs: list[RunOutcome] = field(default_factory=list)

    @property
    def completed(self) -> list[RunOutcome]:
        return [r for r in self.runs if r.result.status in COMPLETED_RUN_STATUSES and r.result.final is not None]

    def final(self, metric: str) -> Stat | None:
        return stat([getattr(r.result.final, metric) for r in self.completed])

    def of(self, attribute: str) -> Stat | None:
        return stat([float(getattr(r.result, attribute)) for r in self.completed])

    def regret(self) -> Stat | None:
        return stat([r.regret for r in self.completed if r.regret is not None])

    def cumulative_loss(self) -> Stat | None:
        return stat([r.result.cumulative_loss for r in self.completed if r.result.cumulative_loss is not None])

    def diagnosis(self) -> str | None:
        """The line of ``learner.diagnosis`` for the runs that stayed near the zero predictor: the first seed's, with
        how many of the completed seeds did (None when every run learned)."""
        lines = [r.result.diagnosis for r in self.completed if r.result.diagnosis]
        if not lines:
            return None
        return lines[0] + (f" ({len(lines)} of {len(self.completed)} seeds)" if len(self.completed) > 1 else "")

    @property
    def failures(self) -> list[RunOutcome]:
        return [r for r in self.runs if r not in self.completed]

    def audits(self) -> str:
        texts = [r.audit for r in self.runs]
        if texts and all(t == texts[0] for t in texts):
            count = f"{len(texts)} session" + ("s" if len(texts) > 1 else "")
            return f"{texts[0]} ({count})" if texts[0] == "compliant" else texts[0]
        return "; ".join(f"seed {r.seed}: {r.audit}" for r in self.runs)


def summarize(design_index: int, design: Design, outcomes: list[RunOutcome]) -> list[AlgorithmSummary]:
    summaries = {e.label: AlgorithmSummary(e.label, e.id, e.params, e.per_example or design.budget.per_example,
                                           e.defaults or "practical") for e in design.algorithms}
    for outcome in outcomes:
        if outcome.design == design_index:
            summaries[outcome.entry.label].runs.append(outcome)
    return list(summaries.values())
