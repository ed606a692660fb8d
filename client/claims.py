"""The claims table: each result a preset reproduces (an ordering, a ρ value, a table cell), with the paper's figure,
ours, and whether it holds.

A preset declares its claims as ``[[claims]]`` (``client.config.ClaimSpec``); they are checked here against the
comparison's summaries. A claim is never dropped: one whose design did not run (``--quick`` runs fewer) says
"not run", one whose algorithms produced no result says so, and one that fails shows the numbers that fail it and
the cause its preset names (or says that it was expected to hold). Each claim carries the paper's sentence or table
cell it stands for (``quote``), listed under the table.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from rich.table import Table

from budgetlab.contract.runs import CurvePoint
from budgetlab.datasets import DatasetError, load_dataset
from client.config import ClaimSpec, CompareConfig, Design
from client.summary import AlgorithmSummary

Verdict = Literal["holds", "fails", "not run", "no result"]
VERDICT_STYLE = {"holds": "green", "fails": "bold red", "not run": "yellow", "no result": "bold red"}


@dataclass
class ClaimResult:
    claim: str
    source: str
    design: str
    paper: str
    ours: str
    verdict: Verdict
    values: dict[str, float]
    quote: str = ""
    cause: str = ""  # why it fails here, as the preset states it; empty: expected to hold

    @property
    def expected(self) -> Literal["holds", "fails"]:
        return "fails" if self.cause else "holds"

    def json(self) -> dict[str, object]:
        return {**asdict(self), "expected": self.expected}


def _result(claim: ClaimSpec, design: str, ours: str, verdict: Verdict, values: dict[str, float]) -> ClaimResult:
    return ClaimResult(claim.claim, claim.source, design, claim.paper, ours, verdict, values, claim.quote,
                       claim.cause)


def improvement_ratio(second_moments: np.ndarray, scenario: str) -> float:
    """Kukliansky & Shamir's ρ: eq. (11) ||E x²||_{1/2} / (d E||x²||_1) for ridge, eq. (12)
    ||E x²||_1 / (d ||E x²||_∞) for lasso; a property of the data alone."""
    m = np.asarray(second_moments, dtype=np.float64)
    d = m.size
    if scenario == "ridge":
        return float(np.sqrt(m).sum() ** 2 / (d * m.sum()))
    return float(m.sum() / (d * m.max()))


def _zero_predictor(point: CurvePoint, metric: str) -> float:
    """The metric of w = 0, where every learner starts, on the test set of ``point``."""
    if metric == "normalized_mse":
        return 1.0
    if metric == "test_mse":
        return point.test_mse / point.normalized_mse if point.normalized_mse else point.test_mse
    return float(getattr(point, metric))


def _at_attributes(summary: AlgorithmSummary, metric: str, attributes: float) -> tuple[float | None, bool]:
    """The mean over seeds of each run's curve read at ``attributes`` paid, linearly between its evaluations and
    from the zero predictor at 0 attributes; and whether that reading fell before a run's first evaluation."""
    values = []
    early = False
    for run in summary.completed:
        curve = run.result.curve
        if curve:
            xs = [0.0, *(float(p.attributes) for p in curve)]
            ys = [_zero_predictor(curve[0], metric), *(float(getattr(p, metric)) for p in curve)]
            early |= attributes < curve[0].attributes
            values.append(float(np.interp(attributes, xs, ys)))
    return (statistics.fmean(values) if values else None), early


def _final(summary: AlgorithmSummary, metric: str) -> float | None:
    if metric == "regret":
        regret = summary.regret()  # R_T itself; Ito et al.'s tables print R_T / 10^2, the presets quote R_T
        return regret.mean if regret else None
    found = summary.of("attributes") if metric == "attributes" else summary.final(metric)
    return found.mean if found else None


def _design_values(summaries: list[AlgorithmSummary], labels: list[str], metric: str,
                   at: str) -> tuple[dict[str, float | None], set[str]]:
    """Per label its value in one design, and the labels read before their first evaluation."""
    by_label = {s.label: s for s in summaries}
    if at == "end" or metric in ("regret", "attributes"):
        return {label: _final(by_label[label], metric) for label in labels}, set()
    paid = [by_label[label].of("attributes") for label in labels]
    if any(p is None for p in paid):
        return {label: None for label in labels}, set()
    frugal = min(p.mean for p in paid if p is not None)
    read = {label: _at_attributes(by_label[label], metric, frugal) for label in labels}
    return {label: v for label, (v, _) in read.items()}, {label for label, (_, early) in read.items() if early}


def _values(claim: ClaimSpec, members: list[list[AlgorithmSummary]]) -> tuple[dict[str, float | None], set[str]]:
    """Per label: its value in the one design, or the median over a group's designs (the paper's table)."""
    per_design = [_design_values(m, claim.labels, claim.metric, claim.at) for m in members]
    out: dict[str, float | None] = {}
    for label in claim.labels:
        found = [value for v, _ in per_design if (value := v[label]) is not None]
        out[label] = statistics.median(found) if found else None
    return out, set().union(*(early for _, early in per_design))


def _number(x: float) -> str:
    return f"{x:.4g}"


def _per_seed(summary: AlgorithmSummary, metric: str) -> dict[int, float]:
    """Each completed run's final ``metric`` by its seed."""
    out = {}
    for run in summary.completed:
        value = (run.regret if metric == "regret" else float(run.result.attributes) if metric == "attributes"
                 else getattr(run.result.final, metric))
        if value is not None:
            out[run.seed] = float(value)
    return out


@dataclass(frozen=True)
class Difference:
    """first − second paired by seed: its mean, the standard error of that mean, and the number of seeds."""

    first: str
    second: str
    mean: float
    se: float
    n: int

    def text(self) -> str:
        return f"{self.first} − {self.second} = {_number(self.mean)} ± {_number(self.se)} (paired over {self.n} " \
               "seeds, ± one standard error)"


Paired = Callable[[str, str], Difference | None]


def _paired(claim: ClaimSpec, summaries: list[AlgorithmSummary]) -> Paired:
    """The difference of two labels' final values paired by seed: what says whether an ordering that fails is a
    reversal or a tie within the spread over seeds."""
    by_label = {s.label: _per_seed(s, claim.metric) for s in summaries if s.label in claim.labels}

    def paired(first: str, second: str) -> Difference | None:
        seeds = sorted(by_label[first].keys() & by_label[second].keys())
        if len(seeds) < 2:
            return None
        diffs = [by_label[first][seed] - by_label[second][seed] for seed in seeds]
        return Difference(first, second, statistics.fmean(diffs), statistics.stdev(diffs) / len(diffs) ** 0.5,
                          len(seeds))

    return paired


def _tier(labels: list[str], values: dict[str, float]) -> str:
    text = ", ".join(f"{label} {_number(values[label])}" for label in labels)
    return text if len(labels) == 1 else f"{{{text}}}"


def _ordering(claim: ClaimSpec, values: dict[str, float], paired: Paired | None) -> tuple[str, bool]:
    """The tiers with their values, ``<`` where every pair is in order (``≥``, or ``≮`` between tiers, where one
    is not); then the paired difference of every pair out of order, or within ``margin_se`` of a tie."""
    tiers = claim.tiers
    text = _tier(tiers[0], values)
    failing: list[tuple[str, str]] = []
    in_order: list[tuple[str, str]] = []
    for before, after in zip(tiers, tiers[1:], strict=False):
        wrong = [(b, a) for b in before for a in after if not values[b] < values[a]]
        failing += wrong
        in_order += [(b, a) for b in before for a in after if (b, a) not in wrong]
        sign = "<" if not wrong else "≥" if len(before) == len(after) == 1 else "≮"
        text += f" {sign} {_tier(after, values)}"
    shown = [d.text() for d in (paired(b, a) for b, a in failing) if d] if paired else []
    ties = False
    if claim.margin_se and paired:
        margins = [paired(b, a) for b, a in in_order]
        close = [d for d in margins if d is not None and -d.mean <= claim.margin_se * d.se]
        shown += [d.text() for d in close]
        ties = bool(close) or None in margins
        if ties:
            shown.append(f"each pair must be apart by more than {claim.margin_se:g} standard error(s)"
                         + (" (one seed: no standard error)" if None in margins else ""))
    if shown:
        text += "; " + "; ".join(shown)
    return text, not failing and not ties


def _bounded(value: float, claim: ClaimSpec) -> bool:
    return (claim.below is None or value < claim.below) and (claim.above is None or value > claim.above)


def _bounds(claim: ClaimSpec) -> str:
    parts = [f"> {claim.above:g}" if claim.above is not None else "", f"< {claim.below:g}"
             if claim.below is not None else ""]
    return " and ".join(p for p in parts if p)


def _rho(claim: ClaimSpec, design: Design, seed: int) -> ClaimResult:
    try:
        dataset = load_dataset(design.dataset.name, design.dataset.params, seed)
    except DatasetError as exc:
        return _result(claim, design.name, f"dataset unavailable: {exc}", "no result", {})
    assert claim.rho is not None and claim.target is not None and claim.tolerance is not None
    rho = improvement_ratio(dataset.second_moments(), claim.rho)
    holds = abs(rho - claim.target) <= claim.tolerance
    return _result(claim, design.name, f"ρ_{claim.rho} = {rho:.3g} from E x_i² over the {dataset.n('train'):,} "
                   f"training examples (needs {claim.target:g} ± {claim.tolerance:g})", "holds" if holds else "fails",
                   {"rho": rho})


def evaluate_claim(claim: ClaimSpec, config: CompareConfig, designs: list[Design],
                   summaries: list[list[AlgorithmSummary]]) -> ClaimResult:
    where = claim.design or ""
    chosen = [i for i, d in enumerate(designs) if claim.design is None or claim.design in (d.name, d.group)]
    if not chosen:
        return _result(claim, where, "—", "not run", {})
    if claim.kind == "rho":
        return _rho(claim, designs[chosen[0]], config.seeds[0])
    values, early = _values(claim, [summaries[i] for i in chosen])
    if len(chosen) > 1:
        where = f"{where} (median over {len(chosen)} datasets)".strip()
    missing = [label for label, v in values.items() if v is None]
    if missing:
        return _result(claim, where, f"no completed run of {', '.join(missing)}", "no result", {})
    got = {label: float(v) for label, v in values.items() if v is not None}
    if claim.kind == "ordering":
        one_run_each = len(chosen) == 1 and (claim.at == "end" or claim.metric in ("regret", "attributes"))
        text, holds = _ordering(claim, got, _paired(claim, summaries[chosen[0]]) if one_run_each else None)
    else:
        assert claim.algorithm is not None
        value = got[claim.algorithm]
        text = f"{claim.algorithm} {_number(value)}"
        if claim.kind == "ratio":
            assert claim.over is not None
            value = value / got[claim.over] if got[claim.over] else float("inf")
            text = f"{claim.algorithm} / {claim.over} = {_number(got[claim.algorithm])} / " \
                   f"{_number(got[claim.over])} = {_number(value)}"
            got["ratio"] = value
        elif claim.kind == "difference":
            assert claim.over is not None
            value = got[claim.algorithm] - got[claim.over]
            text = f"{claim.algorithm} − {claim.over} = {_number(got[claim.algorithm])} − " \
                   f"{_number(got[claim.over])} = {_number(value)}"
            got["difference"] = value
        holds = _bounded(value, claim)
        text += f" (needs {_bounds(claim)})"
    if early:
        text += (f"; {', '.join(sorted(early))} read before the first evaluation, between the zero predictor at 0 "
                 "attributes and that evaluation")
    return _result(claim, where, text, "holds" if holds else "fails", got)


def evaluate_claims(config: CompareConfig, designs: list[Design],
                    summaries: list[list[AlgorithmSummary]]) -> list[ClaimResult]:
    return [evaluate_claim(c, config, designs, summaries) for c in config.claims]


def metric_words(claim: ClaimSpec) -> str:
    if claim.kind == "rho":
        return ""  # a property of the data, not of a run
    words = {"test_mse": "test MSE", "normalized_mse": "normalized MSE", "zero_one": "0-1 error",
             "regret": "regret R_T", "attributes": "attributes paid"}[claim.metric]
    return words + (", at equal attributes" if claim.at == "equal_attributes" else "")


def _failure_line(r: ClaimResult) -> str:
    where = ", ".join(x for x in (r.source, r.design) if x)
    line = f"- {r.claim} ({where}): the paper has {r.paper}; we get {r.ours}."
    if r.verdict == "no result":
        return line
    if r.cause:
        return f"{line} Cause: {r.cause}"
    return f"{line} Cause not established: the preset expected this claim to hold."


def claims_markdown(config: CompareConfig, results: list[ClaimResult]) -> list[str]:
    """The table that opens the report; under it a line for every claim that does not hold, with its cause, and
    the paper's words each claim stands for."""
    if not results:
        return []
    held = sum(r.verdict == "holds" for r in results)
    lines = [f"## Claims: {held} of {len(results)} hold", "",
             "| # | claim | paper | ours | verdict |", "|---|---|---|---|---|"]
    for number, (spec, r) in enumerate(zip(config.claims, results, strict=True), 1):
        context = "; ".join(x for x in (r.source, r.design, metric_words(spec)) if x)
        lines.append(f"| {number} | {r.claim} ({context}) | {r.paper} | {r.ours} | **{r.verdict}** |")
    failing = [r for r in results if r.verdict in ("fails", "no result")]
    if failing:
        lines += ["", "Not reproduced here:", "", *(_failure_line(r) for r in failing)]
    surprises = [r for r in results if r.verdict == "holds" and r.cause]
    if surprises:
        lines += ["", "Expected to fail, but holding in this run:", ""]
        lines += [f"- {r.claim} ({r.source}): the preset's expected cause was: {r.cause}" for r in surprises]
    not_run = sum(r.verdict == "not run" for r in results)
    if not_run:
        lines += ["", f"{not_run} claim(s) concern designs this run left out (--quick runs fewer); the full "
                  "comparison checks them."]
    quoted = [(number, r) for number, r in enumerate(results, 1) if r.quote]
    if quoted:
        lines += ["", "What each claim stands for, in the paper's words:", ""]
        lines += [f"{number}. {r.source}: \"{r.quote}\"" for number, r in quoted]
    return lines + [""]


def claims_table(results: list[ClaimResult]) -> Table:
    """The claims for the terminal: four columns that wrap within 80."""
    table = Table(title="Claims", show_lines=True, expand=False)
    table.add_column("claim", ratio=3, overflow="fold")
    table.add_column("paper", ratio=2, overflow="fold")
    table.add_column("ours", ratio=3, overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for r in results:
        ours = f"{r.ours} Cause: {r.cause}" if r.verdict == "fails" and r.cause else r.ours
        table.add_row(f"{r.claim} ({r.source})", r.paper, ours, f"[{VERDICT_STYLE[r.verdict]}]{r.verdict}[/]")
    return table
