"""The claims table: each result a preset reproduces (an ordering, a ρ value, a table cell), with the paper's figure,
ours with its statistics, and the verdict they support.

A preset declares its claims as ``[[claims]]`` (``client.comparison.config.ClaimSpec``); they are checked here against
the comparison's runs, seed by seed. A claim about runs is decided by one-sided paired t-tests over the seeds
(``client.comparison.verdicts``), corrected with Holm's procedure over every test of the report: it **holds** when each
of its tests is significant in its direction, **fails** when one is significant in the reverse direction, and is
**inconclusive** when the tests decide neither. With fewer than ``MIN_SEEDS`` seeds, or a ``--quick`` run, nothing is
decided: the claim is **indicative**, its numbers shown. A ρ claim (a property of the data) compares a bootstrap
interval with the paper's band. A claim is never dropped: one whose design did not run says "not run", one whose
algorithms produced no result says so, and one that fails shows the numbers that fail it and the cause its preset names
(or says that it was expected to hold). Each claim carries the paper's sentence or table cell it stands for (``quote``),
listed under the table.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
from rich.table import Table

from budgetlab.contract.runs import CurvePoint
from budgetlab.datasets import DatasetError, load_dataset
from client.comparison.config import ClaimSpec, CompareConfig, Design
from client.comparison.grid import RunOutcome
from client.comparison.summary import AlgorithmSummary
from client.comparison.verdicts import ALPHA, MIN_SEEDS, TEST_NAME, PairedTest, bootstrap_interval, holm, paired_test

Verdict = Literal["holds", "fails", "inconclusive", "indicative", "not run", "no result"]
VERDICT_STYLE = {"holds": "green", "fails": "bold red", "inconclusive": "yellow", "indicative": "cyan",
                 "not run": "yellow", "no result": "bold red"}
Direction = Literal["less", "greater"]
METRIC_WORDS = {"test_mse": "test MSE", "normalized_mse": "normalized MSE", "zero_one": "0-1 error",
                "regret": "regret R_T", "attributes": "attributes paid"}


@dataclass
class Check:
    """One test of a claim: the mean over seeds of ``text`` (a paired difference, or a value minus its bound) is
    below 0 (``less``) or above it (``greater``)."""

    text: str
    direction: Direction
    n: int
    """Seeds paired (fewer than 2: no test)."""
    test: PairedTest | None
    p_holm: float = 1.0
    """Holm-adjusted p-value of the claim's direction, among the report's tests of that direction."""
    p_reverse_holm: float = 1.0
    """The same for the reverse direction, among the report's tests of theirs."""

    def json(self) -> dict[str, object]:
        found = self.test
        return {"text": self.text, "direction": self.direction, "n": self.n,
                "mean": found.mean if found else None, "low": found.low if found else None,
                "high": found.high if found else None, "p": found.p(self.direction) if found else None,
                "p_holm": self.p_holm if found else None}


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
    test: str = ""  # how the verdict was reached: the test and its correction, or the interval
    seeds: int = 0  # the seeds paired in its tests (the fewest, where its tests differ)
    p_value: float | None = None  # the largest Holm-adjusted p-value of its direction (None: nothing tested)
    attributes: list[float] = field(default_factory=list)  # where it was read at equal attributes, per design
    checks: list[Check] = field(default_factory=list)

    @property
    def expected(self) -> Literal["holds", "fails"]:
        return "fails" if self.cause else "holds"

    def json(self) -> dict[str, object]:
        found = asdict(self)
        found["checks"] = [c.json() for c in self.checks]
        return {**found, "expected": self.expected}


def _result(claim: ClaimSpec, design: str, ours: str, verdict: Verdict, values: dict[str, float], test: str = "",
            seeds: int = 0, p_value: float | None = None, attributes: list[float] | None = None,
            checks: list[Check] | None = None) -> ClaimResult:
    return ClaimResult(claim.claim, claim.source, design, claim.paper, ours, verdict, values, claim.quote,
                       claim.cause, test, seeds, p_value, attributes or [], checks or [])


def improvement_ratio(second_moments: np.ndarray, scenario: str) -> float:
    """Kukliansky & Shamir's ρ: eq. (11) ||E x²||_{1/2} / (d E||x²||_1) for ridge, eq. (12)
    ||E x²||_1 / (d ||E x²||_∞) for lasso; a property of the data alone."""
    return float(improvement_ratios(np.asarray(second_moments, dtype=np.float64)[None, :], scenario)[0])


def improvement_ratios(moments: np.ndarray, scenario: str) -> np.ndarray:
    """``improvement_ratio`` of each row of ``moments`` (one E[x²] per row)."""
    d = moments.shape[1]
    ratios: np.ndarray
    if scenario == "ridge":
        ratios = np.sqrt(moments).sum(axis=1) ** 2 / (d * moments.sum(axis=1))
    else:
        ratios = moments.sum(axis=1) / (d * moments.max(axis=1))
    return ratios


def _zero_predictor(point: CurvePoint, metric: str) -> float:
    """The metric of w = 0, where every learner starts, on the test set of ``point``."""
    if metric == "normalized_mse":
        return 1.0
    if metric == "test_mse":
        return point.test_mse / point.normalized_mse if point.normalized_mse else point.test_mse
    return float(getattr(point, metric))


def _read_at(curve: list[CurvePoint], metric: str, attributes: float) -> tuple[float, bool]:
    """A run's curve read at ``attributes`` paid, linearly between its evaluations and from the zero predictor at 0
    attributes; and whether that reading fell before its first evaluation."""
    xs = [0.0, *(float(p.attributes) for p in curve)]
    ys = [_zero_predictor(curve[0], metric), *(float(getattr(p, metric)) for p in curve)]
    return float(np.interp(attributes, xs, ys)), attributes < curve[0].attributes


def _final_value(run: RunOutcome, metric: str) -> float | None:
    if metric == "regret":
        value = run.regret  # R_T itself; Ito et al.'s tables print R_T / 10^2, the presets quote R_T
    elif metric == "attributes":
        value = float(run.result.attributes)
    else:
        value = getattr(run.result.final, metric)
    return None if value is None else float(value)


@dataclass
class Readings:
    """Per label, its value at each seed in one design (or the median over a group's designs at that seed)."""

    per_seed: dict[str, dict[int, float]]
    attributes: list[float]  # where each design was read at equal attributes (empty: final values)
    early: set[str]  # labels read before their first evaluation

    def mean(self, label: str) -> float | None:
        found = self.per_seed[label]
        return statistics.fmean(found.values()) if found else None


def _design_readings(summaries: list[AlgorithmSummary], claim: ClaimSpec) -> Readings:
    by_label = {s.label: s for s in summaries}
    labels = claim.labels
    if claim.at == "end" or claim.metric in ("regret", "attributes"):
        return Readings({label: {r.seed: v for r in by_label[label].completed
                                 if (v := _final_value(r, claim.metric)) is not None} for label in labels}, [], set())
    paid = [by_label[label].of("attributes") for label in labels]
    if any(p is None for p in paid):
        return Readings({label: {} for label in labels}, [], set())
    frugal = min(p.mean for p in paid if p is not None)
    per_seed: dict[str, dict[int, float]] = {}
    early: set[str] = set()
    for label in labels:
        per_seed[label] = {}
        for run in by_label[label].completed:
            if run.result.curve:
                value, before = _read_at(run.result.curve, claim.metric, frugal)
                per_seed[label][run.seed] = value
                if before:
                    early.add(label)
    return Readings(per_seed, [frugal], early)


def _readings(claim: ClaimSpec, members: list[list[AlgorithmSummary]]) -> Readings:
    """One design's readings, or for a group (the paper's table over datasets) each seed's median over its designs."""
    found = [_design_readings(m, claim) for m in members]
    if len(found) == 1:
        return found[0]
    per_seed: dict[str, dict[int, float]] = {}
    for label in claim.labels:
        seeds = sorted(set().union(*(f.per_seed[label].keys() for f in found)))
        per_seed[label] = {seed: statistics.median(v) for seed in seeds
                           if (v := [f.per_seed[label][seed] for f in found if seed in f.per_seed[label]])}
    return Readings(per_seed, [a for f in found for a in f.attributes], set().union(*(f.early for f in found)))


def _number(x: float) -> str:
    return f"{x:.4g}"


def _pair(readings: Readings, first: str, second: str, scale: float = 1.0) -> list[float]:
    """first − scale × second at each seed both have."""
    a, b = readings.per_seed[first], readings.per_seed[second]
    return [a[seed] - scale * b[seed] for seed in sorted(a.keys() & b.keys())]


def _check(text: str, direction: Direction, differences: list[float]) -> Check:
    return Check(text, direction, len(differences), paired_test(differences))


def _tier(labels: list[str], values: dict[str, float]) -> str:
    text = ", ".join(f"{label} {_number(values[label])}" for label in labels)
    return text if len(labels) == 1 else f"{{{text}}}"


def _ordering(claim: ClaimSpec, readings: Readings, values: dict[str, float]) -> tuple[str, list[Check]]:
    """The tiers with their means, ``<`` where the means are in order (``≥``, or ``≮`` between tiers, where one is
    not); and a check of every pair of adjacent tiers: the better lies below (1 − margin) × the worse."""
    tiers = claim.tiers
    text = _tier(tiers[0], values)
    checks = []
    scale = 1.0 - claim.margin
    for before, after in zip(tiers, tiers[1:], strict=False):
        wrong = [(b, a) for b in before for a in after if not values[b] < scale * values[a]]
        sign = "<" if not wrong else "≥" if len(before) == len(after) == 1 else "≮"
        text += f" {sign} {_tier(after, values)}"
        for b in before:
            for a in after:
                name = f"{b} − {a}" if not claim.margin else f"{b} − {scale:g} × {a}"
                checks.append(_check(name, "less", _pair(readings, b, a, scale)))
    return text, checks


def _bounds(claim: ClaimSpec) -> str:
    parts = [f"> {claim.above:.12g}" if claim.above is not None else "", f"< {claim.below:.12g}"
             if claim.below is not None else ""]
    return " and ".join(p for p in parts if p)


@dataclass(frozen=True)
class Statistic:
    """What a value, ratio or difference claim bounds: its name, its text with the means, its value at each seed
    and its value of the means."""

    name: str
    text: str
    per_seed: list[float]
    value: float


def _statistic(claim: ClaimSpec, readings: Readings, values: dict[str, float]) -> Statistic:
    assert claim.algorithm is not None
    name, mine = claim.algorithm, readings.per_seed[claim.algorithm]
    if claim.kind == "value":
        return Statistic(name, f"{name} {_number(values[name])}", list(mine.values()), values[name])
    assert claim.over is not None
    theirs = readings.per_seed[claim.over]
    seeds = sorted(mine.keys() & theirs.keys())
    a, b = values[name], values[claim.over]
    if claim.kind == "ratio":
        ratio = a / b if b else float("inf")
        return Statistic(f"{name} / {claim.over}", f"{name} / {claim.over} = {_number(a)} / {_number(b)} = "
                         f"{_number(ratio)}", [mine[s] / theirs[s] for s in seeds if theirs[s]], ratio)
    return Statistic(f"{name} − {claim.over}", f"{name} − {claim.over} = {_number(a)} − {_number(b)} = "
                     f"{_number(a - b)}", [mine[s] - theirs[s] for s in seeds], a - b)


def _bound_checks(claim: ClaimSpec, name: str, per_seed: list[float]) -> list[Check]:
    checks = []
    if claim.below is not None:
        checks.append(_check(f"{name} − {claim.below:.12g}", "less", [v - claim.below for v in per_seed]))
    if claim.above is not None:
        checks.append(_check(f"{name} − {claim.above:.12g}", "greater", [v - claim.above for v in per_seed]))
    return checks


def _rho(claim: ClaimSpec, design: Design, seed: int, decidable: str) -> ClaimResult:
    """ρ of the design's training data, with the 95 % bootstrap interval over its training examples: holds when the
    interval lies within the paper's ``target`` ± ``tolerance``, fails when it lies outside."""
    try:
        dataset = load_dataset(design.dataset.name, design.dataset.params, seed)
    except DatasetError as exc:
        return _result(claim, design.name, f"dataset unavailable: {exc}", "no result", {})
    assert claim.rho is not None and claim.target is not None and claim.tolerance is not None
    scenario = claim.rho
    squares = np.concatenate([X * X for X, _ in dataset.iter_split("train")])
    rho = improvement_ratio(dataset.second_moments(), scenario)
    low, high, bias = bootstrap_interval(len(squares), lambda w: improvement_ratios(w @ squares, scenario), rho,
                                         seed=seed)
    band = (claim.target - claim.tolerance, claim.target + claim.tolerance)
    verdict: Verdict = ("indicative" if decidable else "holds" if band[0] <= low and high <= band[1]
                        else "fails" if high < band[0] or low > band[1] else "inconclusive")
    text = (f"ρ_{scenario} = {rho:.3g}, 95 % bootstrap interval [{low:.3g}, {high:.3g}] over the "
            f"{dataset.n('train'):,} training examples, bootstrap bias {bias:+.2g} (needs {claim.target:g} ± "
            f"{claim.tolerance:g})")
    if decidable:
        text += f"; {decidable}"
    return _result(claim, design.name, text, verdict, {"rho": rho, "low": low, "high": high, "bias": bias},
                   test="95 % normal bootstrap interval over the training examples")


@dataclass
class Draft:
    """A claim about runs before the report's tests are corrected together."""

    claim: ClaimSpec
    where: str
    text: str
    values: dict[str, float]
    checks: list[Check]
    readings: Readings
    indicative: str  # why nothing is decided ("" when the tests decide)


def _draft(claim: ClaimSpec, where: str, members: list[list[AlgorithmSummary]], quick: bool) -> Draft | ClaimResult:
    readings = _readings(claim, members)
    means = {label: readings.mean(label) for label in claim.labels}
    missing = [label for label, v in means.items() if v is None]
    if missing:
        return _result(claim, where, f"no completed run of {', '.join(missing)}", "no result", {})
    values = {label: float(v) for label, v in means.items() if v is not None}
    if claim.kind == "ordering":
        text, checks = _ordering(claim, readings, values)
    else:
        statistic = _statistic(claim, readings, values)
        if claim.kind in ("ratio", "difference"):
            values[claim.kind] = statistic.value
        checks = _bound_checks(claim, statistic.name, statistic.per_seed)
        text = f"{statistic.text} (needs {_bounds(claim)})"
    seeds = min(c.n for c in checks)
    indicative = ("--quick: fewer seeds and examples than the full comparison" if quick
                  else f"{seeds} seed{'s' if seeds != 1 else ''} paired, fewer than the {MIN_SEEDS} a verdict needs"
                  if seeds < MIN_SEEDS else "")
    return Draft(claim, where, text, values, checks, readings, indicative)


def _check_text(check: Check, decided: bool) -> str:
    """``A − B = -0.054 [-0.07, -0.04], 5 seeds, p = 0.002 (Holm 0.01)``: the mean difference with its 95 %
    interval, and the one-sided p-value of the claimed direction, or of the reverse one where that one decided."""
    found = check.test
    if found is None:
        return f"{check.text}: {check.n} seed{'s' if check.n != 1 else ''} paired, no spread to test"
    text = f"{check.text} = {_number(found.mean)} [{_number(found.low)}, {_number(found.high)}], {found.n} seeds, "
    if decided and check.p_reverse_holm < ALPHA:
        reverse = "greater" if check.direction == "less" else "less"
        return text + f"the reverse: p = {found.p(reverse):.2g} (Holm {check.p_reverse_holm:.2g})"
    return text + f"p = {found.p(check.direction):.2g}" + (f" (Holm {check.p_holm:.2g})" if decided else "")


def _finish(draft: Draft, total_tests: int) -> ClaimResult:
    claim, checks = draft.claim, draft.checks
    decided = not draft.indicative
    if not decided:
        verdict: Verdict = "indicative"
    elif any(c.p_reverse_holm < ALPHA for c in checks):
        verdict = "fails"
    elif all(c.p_holm < ALPHA and c.test is not None
             and (c.test.mean + claim.margin_se * c.test.se < 0 if c.direction == "less"
                  else c.test.mean - claim.margin_se * c.test.se > 0) for c in checks):
        verdict = "holds"
    else:
        verdict = "inconclusive"
    readings = draft.readings
    text = draft.text
    if readings.attributes:
        at = sorted(set(readings.attributes))
        text += (f"; {METRIC_WORDS[claim.metric]} read at {at[0]:,.0f} attributes paid (the most frugal's)"
                 if len(at) == 1 else f"; read at each design's most frugal attributes paid ({at[0]:,.0f} to "
                 f"{at[-1]:,.0f})")
    text += "; " + "; ".join(_check_text(c, decided) for c in checks)
    if claim.margin_se and decided:
        text += f"; each mean difference must also exceed {claim.margin_se:g} standard error(s)"
    if draft.indicative:
        text += f"; indicative: {draft.indicative}"
    if readings.early:
        text += (f"; {', '.join(sorted(readings.early))} read before the first evaluation, between the zero "
                 "predictor at 0 attributes and that evaluation")
    tested = [c.p_holm for c in checks if c.test is not None]
    return _result(claim, draft.where, text, verdict, draft.values,
                   test=f"{TEST_NAME}, Holm's correction over the report's {total_tests} tests" if decided else "",
                   seeds=min(c.n for c in checks),
                   p_value=max(tested) if decided and tested else None, attributes=readings.attributes,
                   checks=checks)


def _correct(drafts: list[Draft]) -> int:
    """Holm's correction over every test of the decided claims, in their directions and in the reverse ones; the
    number of tests in each family."""
    checks = [c for d in drafts if not d.indicative for c in d.checks if c.test is not None]
    ps = [c.test.p(c.direction) for c in checks if c.test is not None]
    reverse = [c.test.p("greater" if c.direction == "less" else "less") for c in checks if c.test is not None]
    for check, p, q in zip(checks, holm(ps), holm(reverse), strict=True):
        check.p_holm, check.p_reverse_holm = p, q
    return len(checks)


def evaluate_claims(config: CompareConfig, designs: list[Design], summaries: list[list[AlgorithmSummary]],
                    quick: bool = False) -> list[ClaimResult]:
    """Every claim of ``config`` checked against the runs of ``designs``: the tests of the claims about runs are
    corrected together (Holm), so a verdict depends on how many the report decides."""
    out: list[ClaimResult | Draft] = []
    seeds = len(config.seeds)
    for claim in config.claims:
        where = claim.design or ""
        chosen = [i for i, d in enumerate(designs) if claim.design is None or claim.design in (d.name, d.group)]
        if not chosen:
            out.append(_result(claim, where, "—", "not run", {}))
        elif claim.kind == "rho":
            why = ("--quick: fewer seeds and examples than the full comparison" if quick
                   else f"{seeds} seed(s), fewer than the {MIN_SEEDS} a verdict needs" if seeds < MIN_SEEDS else "")
            out.append(_rho(claim, designs[chosen[0]], config.seeds[0], why))
        else:
            if len(chosen) > 1:
                where = f"{where} (median over {len(chosen)} datasets at each seed)".strip()
            out.append(_draft(claim, where, [summaries[i] for i in chosen], quick))
    drafts = [d for d in out if isinstance(d, Draft)]
    total = _correct(drafts)
    return [_finish(d, total) if isinstance(d, Draft) else d for d in out]


def metric_words(claim: ClaimSpec) -> str:
    if claim.kind == "rho":
        return ""  # a property of the data, not of a run
    words = METRIC_WORDS[claim.metric]
    return words + (", at equal attributes" if claim.at == "equal_attributes" else "")


def _failure_line(r: ClaimResult) -> str:
    where = ", ".join(x for x in (r.source, r.design) if x)
    line = f"- {r.claim} ({where}): the paper has {r.paper}; we get {r.ours}."
    if r.verdict == "no result":
        return line
    if r.cause:
        return f"{line} Cause: {r.cause}"
    return f"{line} Cause not established: the preset expected this claim to hold."


def count_line(results: list[ClaimResult]) -> str:
    """"3 of 7 hold; 2 inconclusive, 2 indicative": how many hold, then every other verdict with its count."""
    held = sum(r.verdict == "holds" for r in results)
    others = [(verdict, sum(r.verdict == verdict for r in results)) for verdict in VERDICT_STYLE
              if verdict != "holds"]
    rest = ", ".join(f"{n} {verdict}" for verdict, n in others if n)
    return f"{held} of {len(results)} hold" + (f"; {rest}" if rest else "")


def how_decided(results: list[ClaimResult]) -> str:
    """The paragraph under the claims table that says how its verdicts were reached."""
    tests = max((int(t.split("over the report's ")[1].split()[0]) for r in results if (t := r.test)
                 and "over the report's" in t), default=0)
    text = (f"How the verdicts are reached: each claim about runs is a {TEST_NAME} (the paired difference of the two "
            f"algorithms' results at each seed, or of a value and its bound) at {ALPHA:.0%}, with Holm's correction "
            f"over the report's tests ({tests} here) in each direction; it holds when all its tests are significant "
            f"in the claimed direction, fails when one is significant in the reverse direction, and is inconclusive "
            f"otherwise. With fewer than {MIN_SEEDS} seeds, or with --quick, nothing is decided and the claim is "
            "indicative. A claim read at equal attributes compares the curves at what the most frugal of its "
            "algorithms paid. A ρ claim compares a 95 % bootstrap interval over the training examples with the "
            "paper's number and tolerance.")
    return text


def claims_markdown(config: CompareConfig, results: list[ClaimResult]) -> list[str]:
    """The table that opens the report; under it how the verdicts are reached, a line for every claim that does not
    hold, with its cause, and the paper's words each claim stands for."""
    if not results:
        return []
    lines = [f"## Claims: {count_line(results)}", "",
             "| # | claim | paper | ours | seeds | p (Holm) | verdict |", "|---|---|---|---|---|---|---|"]
    for number, (spec, r) in enumerate(zip(config.claims, results, strict=True), 1):
        context = "; ".join(x for x in (r.source, r.design, metric_words(spec)) if x)
        p = f"{r.p_value:.2g}" if r.p_value is not None else "—"
        lines.append(f"| {number} | {r.claim} ({context}) | {r.paper} | {r.ours} | {r.seeds or '—'} | {p} "
                     f"| **{r.verdict}** |")
    lines += ["", how_decided(results)]
    failing = [r for r in results if r.verdict in ("fails", "no result")]
    if failing:
        lines += ["", "Not reproduced here:", "", *(_failure_line(r) for r in failing)]
    undecided = [r for r in results if r.verdict == "inconclusive"]
    if undecided:
        lines += ["", "Not decided by the tests here (more seeds may decide them):", ""]
        lines += [f"- {r.claim} ({r.source}): the paper has {r.paper}; we get {r.ours}." for r in undecided]
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
    table = Table(title=f"Claims: {count_line(results)}", show_lines=True, expand=False,
                  caption=f"each a {TEST_NAME} at {ALPHA:.0%}, Holm-corrected: mean difference [95 % interval], "
                          f"seeds, p; fewer than {MIN_SEEDS} seeds or --quick: indicative")
    table.add_column("claim", ratio=3, overflow="fold")
    table.add_column("paper", ratio=2, overflow="fold")
    table.add_column("ours", ratio=3, overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for r in results:
        ours = f"{r.ours} Cause: {r.cause}" if r.verdict == "fails" and r.cause else r.ours
        table.add_row(f"{r.claim} ({r.source})", r.paper, ours, f"[{VERDICT_STYLE[r.verdict]}]{r.verdict}[/]")
    return table

