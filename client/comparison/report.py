"""The written record of a comparison: ``report.md`` for people and ``results.json`` with every curve.

Per design and algorithm: the final errors that fit the task as the mean over the seeds that produced a curve with
its 95 % t-interval (test MSE; normalized MSE unless the labels are ±1, where it is the same number; 0-1 error
unless it is a regression), what was paid, wall time, the audit of every session and every failure, then the same per
seed; online runs add their cumulative loss and regret R_T (eq. (1) of Ito et al.; their Tables 2-3 print R_T / 10^2,
which the presets quote converted to R_T). Designs that
share a group (the digit pairs of Cesa-Bianchi et al.'s table) are also summarised by the median over the group.
The claims table (``client.comparison.claims``) opens the report; a tuned algorithm's section says what tuning chose and
what it paid. ``results.json`` keeps everything with the software and host that produced it
(``client.comparison.provenance``); ``curves.csv`` has one row per algorithm, seed and curve point, for pandas.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from budgetlab.contract.datasets import Task
from budgetlab.contract.results import (
    AlgorithmRecord,
    ClaimRecord,
    ComparisonResults,
    DatasetRecord,
    DesignRecord,
    Provenance,
    RecordedConfig,
    RunRecord,
    Stat,
    Summary,
    TuningRecord,
)
from budgetlab.datasets import DatasetError, load_dataset
from budgetlab.evaluation import evaluate_weights
from client.comparison.claims import ClaimResult, claims_markdown, evaluate_claims
from client.comparison.config import CompareConfig, Design
from client.comparison.grid import RunOutcome
from client.comparison.provenance import plugin_origins, provenance
from client.comparison.summary import AlgorithmSummary, cell, stat, summarize
from client.comparison.summary import Stat as SummaryStat
from client.comparison.tasks import dataset_task
from client.comparison.tune import Tuning


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower())[:48].strip("-") or "design"


@dataclass(frozen=True)
class Column:
    """A final score of the tables: the ``CurvePoint`` field, its header and significant digits."""

    key: str
    header: str
    digits: int = 4


TEST_MSE, NORMALIZED_MSE, ZERO_ONE = (Column("test_mse", "test MSE"), Column("normalized_mse", "normalized MSE"),
                                      Column("zero_one", "0-1 error", 3))


def design_task(design: Design, oracle: str | None = None) -> Task | None:
    """The design's task, from this machine or the ``oracle`` the runs used (None where neither can say)."""
    return dataset_task(design.dataset.name, design.dataset.params, oracle)


def zero_predictor(design: Design, seeds: list[int]) -> dict[str, float] | None:
    """The scores of w = 0 on the design's test sets (means over ``seeds``) by the tables' keys, scored as the oracle
    scores every predictor; None where this machine does not have the dataset."""
    try:
        datasets = [load_dataset(design.dataset.name, design.dataset.params, seed) for seed in seeds]
    except DatasetError:
        return None
    scores = [evaluate_weights(d, np.zeros(d.d)) for d in datasets]
    return {"test_mse": float(np.mean([s.mse for s in scores])), "normalized_mse": 1.0,
            "zero_one": float(np.mean([s.zero_one for s in scores]))}


def metric_columns(task: Task | None, summaries: list[AlgorithmSummary]) -> list[Column]:
    """The scores that mean something here: no 0-1 error for a regression, and no normalized MSE where it equals
    the test MSE (±1 labels: the zero predictor's MSE is 1)."""
    finals = [r.result.final for s in summaries for r in s.completed if r.result.final is not None]
    same = bool(finals) and all(math.isclose(f.normalized_mse, f.test_mse, rel_tol=1e-9, abs_tol=1e-12)
                                for f in finals)
    return [TEST_MSE, *([] if same else [NORMALIZED_MSE]), *([] if task == "regression" else [ZERO_ONE])]


def per_seed_table(summaries: list[AlgorithmSummary], columns: list[Column]) -> list[str]:
    """One row per run: its status, final scores (a run that did not complete shows its curve's last point),
    what it paid and its audit."""
    regret = any(r.regret is not None for s in summaries for r in s.runs)
    lines = ["", "Per seed:", "", "| algorithm | seed | status | " + " | ".join(c.header for c in columns)
             + (" | R_T" if regret else "") + " | attributes paid | examples | wall time (s) | audit |",
             "|---|---|---|" + "---|" * (len(columns) + regret + 4)]
    for s in summaries:
        for r in s.runs:
            final = r.result.final or (r.result.curve[-1] if r.result.curve else None)
            scores = [f"{getattr(final, c.key):.{c.digits}g}" if final is not None else "—" for c in columns]
            if regret:
                scores.append(f"{r.regret:.4g}" if r.regret is not None else "—")
            lines.append(f"| {s.label} | {r.seed} | {r.result.status} | " + " | ".join(scores)
                         + f" | {r.result.attributes:,} | {r.result.examples:,} | {r.result.wall_time:.3g} "
                           f"| {r.audit or '—'} |")
    return lines


def design_section(design: Design, summaries: list[AlgorithmSummary], plots: list[str],
                   task: Task | None = None) -> list[str]:
    budget = design.budget
    lines = [f"## {design.name}", ""]
    if design.description:
        lines += [design.description, ""]
    params = ", ".join(f"{k}={v}" for k, v in design.dataset.params.items())
    per = "k′ = {} attributes observed per round" if design.regret_k is not None else "{} attributes per example"
    lines += [f"Dataset `{design.dataset.name}`" + (f" ({params})" if params else "")
              + f"; budget: {per.format(budget.per_example or 'all')}"
              + (f", {budget.total:g} in total" if budget.total is not None else "") + ".", ""]
    columns = metric_columns(task, summaries)
    lines += ["Mean over the seeds whose run completed, with its 95 % t-interval in brackets (none for a single "
              "seed); the plots' bands are the same interval.", ""]
    lines += ["| algorithm | per example | " + " | ".join(c.header for c in columns)
              + " | attributes paid | examples | wall time (s) | runs ok | audit |",
              "|---|---|" + "---|" * len(columns) + "---|---|---|---|---|"]
    for s in summaries:
        scores = " | ".join(cell(s.final(c.key), c.digits) for c in columns)
        theory = ", theorems' constants" if s.defaults == "theory" else ""
        lines.append(f"| {s.label} (`{s.id}`{theory}) | {s.per_example or 'all'} | {scores} "
                     f"| {cell(s.of('attributes'), 6)} | {cell(s.of('examples'), 6)} | {cell(s.of('wall_time'), 3)} "
                     f"| {len(s.completed)}/{len(s.runs)} | {s.audits()} |")
    diagnoses = [(s.label, line) for s in summaries if (line := s.diagnosis())]
    if diagnoses:
        lines += ["", "Near the zero predictor:", ""] + [f"- **{label}**: {line}" for label, line in diagnoses]
    online = [s for s in summaries if s.cumulative_loss() is not None]
    if online:
        lines += ["", "Online protocol (Ito et al. 2017): cumulative squared loss of the predictions made before "
                  "each label, and the regret R_T against the best "
                  f"{design.regret_k}-sparse w with ||w|| <= 1 (eq. (1)); Tables 2-3 print R_T / 10^2.", "",
                  "| algorithm | rounds T | cumulative loss | R_T |", "|---|---|---|---|"]
        for s in online:
            lines.append(f"| {s.label} | {cell(s.of('examples'), 6)} | {cell(s.cumulative_loss())} "
                         f"| {cell(s.regret(), 4)} |")
        missing = dict.fromkeys(r.regret_missing for s in online for r in s.completed if r.regret_missing)
        if missing:
            lines += ["", *(f"**{text}.**" for text in missing)]
    with_test = [(s, r) for s in summaries for r in s.completed if r.result.test_budget is not None]
    if with_test:
        zero_one = task != "regression"
        lines += ["", "Prediction on a budget (test sessions that observe only the K largest weights):", "",
                  "| algorithm | K | test MSE |" + (" 0-1 error |" if zero_one else ""),
                  "|---|---|---|" + ("---|" if zero_one else "")]
        for s in summaries:
            tests = [r.result.test_budget for r in s.completed if r.result.test_budget is not None]
            if tests:
                lines.append(f"| {s.label} | {tests[0].per_example} | {cell(stat([t.mse for t in tests]))} |"
                             + (f" {cell(stat([t.zero_one for t in tests]), 3)} |" if zero_one else ""))
    failures = [r for s in summaries for r in s.failures]
    if failures:
        lines += ["", "Runs that did not complete:", ""]
        lines += [f"- {r.entry.label}, seed {r.seed}: **{r.result.status}** — {r.result.message or 'no message'}"
                  for r in failures]
    if any(s.runs for s in summaries):
        lines += per_seed_table(summaries, columns)
    if plots:
        lines += [""] + [f"![{Path(p).stem}]({p})" for p in plots]
    return lines + [""]


def median_tables(designs: list[Design], summaries: list[list[AlgorithmSummary]],
                  tasks: list[Task | None] | None = None) -> list[str]:
    """Median over the designs of each group of the per-design mean final test MSE (and 0-1 error, unless the
    group is regression)."""
    lines: list[str] = []
    tasks = tasks or [None] * len(designs)
    groups = sorted({d.group for d in designs if d.group})
    for group in groups:
        members = [s for d, s in zip(designs, summaries, strict=True) if d.group == group]
        columns = [TEST_MSE] + ([] if all(t == "regression" for d, t in zip(designs, tasks, strict=True)
                                          if d.group == group) else [ZERO_ONE])
        lines += [f"## {group}: median over {len(members)} datasets", "",
                  "| algorithm | " + " | ".join(f"median {c.header}" for c in columns) + " |",
                  "|---|" + "---|" * len(columns)]
        for label in [s.label for s in members[0]]:
            cells = []
            for c in columns:
                means = [f.mean for m in members for s in m if s.label == label and (f := s.final(c.key))]
                cells.append(f"{statistics.median(means):.{c.digits}g}" if means else "—")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def tuning_section(config: CompareConfig, summaries: list[AlgorithmSummary], tunings: list[Tuning]) -> list[str]:
    """What tuning chose for each tuned algorithm of a design, what it paid, and the result with and without it."""
    if not tunings or config.tune is None:
        return []
    tune = config.tune
    folds = (f"one validation part (the last {tune.validation:.0%} of the examples the run sees)" if tune.folds == 1
             else f"{tune.folds}-fold cross-validation over the examples the run sees")
    scoring = (f"from each candidate's {tune.validation_attributes} largest weights" if tune.validation_attributes
               else "from every attribute the candidate's weights use")
    audits = [a for t in tunings for a in t.audits()]
    audit = ("every tuning session audited compliant" if audits and all(a is True for a in audits)
             else "tuning in-process (no ledger)" if all(a is None for a in audits)
             else f"{sum(a is False for a in audits)} tuning session(s) NOT compliant or not audited")
    lines = ["### Tuning", "", f"Grid search per seed with {folds}; validation examples are scored by squared error "
             f"{scoring}, and their attributes are paid for. Every fit and validation is a budgeted session of its "
             f"own ({sum(t.sessions for t in tunings)} sessions; {audit}).", "",
             "| algorithm | chosen (seed: parameters) | tuning sessions | attributes paid by tuning | test MSE "
             "| attributes paid: run alone | run + tuning |", "|---|---|---|---|---|---|---|"]
    by_label = {s.label: s for s in summaries}
    notes = []
    for label in dict.fromkeys(t.entry.label for t in tunings):
        cells = [t for t in tunings if t.entry.label == label]
        summary = by_label[label]
        run = summary.of("attributes")
        tuning = stat([float(t.attributes) for t in cells])
        chosen = "; ".join(f"{t.seed}: {_params(t.chosen) if t.chosen else 'none scored'}" for t in cells)
        paid = {t.seed: t.attributes for t in cells}
        with_tuning = stat([r.result.attributes + paid.get(r.seed, 0) for r in summary.completed])
        lines.append(f"| {label} | {chosen} | {sum(t.sessions for t in cells)} | {cell(tuning, 6)} "
                     f"| {cell(summary.final('test_mse'))} | {cell(run, 6)} | {cell(with_tuning, 6)} |")
        final = summary.final("test_mse")
        if final and run and tuning and run.mean > 0:
            notes.append(f"- {label}: test MSE {final.mean:.4g} after {run.mean:,.0f} attributes without the tuning "
                         f"cost; counting it, the same result cost {run.mean + tuning.mean:,.0f} attributes "
                         f"({(run.mean + tuning.mean) / run.mean:.1f}x).")
        notes += [f"- {label}, seed {t.seed}: {t.message}" for t in cells if t.message]
    lines += ["", *notes, "", "| algorithm | candidate | validation MSE (mean over seeds) | chosen in |",
              "|---|---|---|---|"]
    for label in dict.fromkeys(t.entry.label for t in tunings):
        cells = [t for t in tunings if t.entry.label == label]
        for c, candidate in enumerate(cells[0].candidates):
            scores = stat([s for t in cells if (s := t.scores()[c]) is not None])
            picked = sum(t.chosen == candidate for t in cells)
            lines.append(f"| {label} | {_params(candidate)} | {cell(scores)} | {picked} of {len(cells)} seeds |")
    return lines + [""]


@dataclass
class Written:
    """Where the report went, and its claims (``compare`` prints them)."""

    path: Path
    claims: list[ClaimResult]
    # "design · label: line" for each algorithm that stayed near the zero predictor (``AlgorithmSummary.diagnosis``)
    diagnoses: list[str] = field(default_factory=list)


def write_report(out: Path, config: CompareConfig, designs: list[Design], outcomes: list[RunOutcome], *,
                 mode: str, preset: str | None = None, quick: bool = False, wall_time: float = 0.0,
                 tunings: list[Tuning] | None = None, interrupted: str | None = None,
                 fallback: str | None = None, headline: list[str] | None = None, oracle: str | None = None,
                 served: Mapping[str, tuple[str, str | None]] | None = None) -> Written:
    """Write report.md, results.json, curves.csv and the plots into ``out``; the claims table opens the report.
    ``interrupted`` says why the report is partial (the outcomes are what the runs came to before the stop);
    ``fallback`` what was used instead of what was asked, and why; ``headline`` the lines that say what the
    comparison found (above the claims table), both also in results.json; ``oracle`` the oracle the runs used, asked
    for the task of a dataset this machine does not have; ``served`` the package and version of each algorithm the
    learner the runs used lists (one may be installed there only)."""
    # Here, not at the top: matplotlib takes 0.75 CPU-s to import, and a comparison draws only at its end (one whose
    # checks fail, or that is stopped before its report, never does).
    from client.comparison.plots import plot_design

    out.mkdir(parents=True, exist_ok=True)
    tunings = tunings or []
    per_design = [summarize(i, d, outcomes) for i, d in enumerate(designs)]
    tasks = [design_task(d, oracle) for d in designs]
    claims = evaluate_claims(config, designs, per_design, quick=quick)
    origin = {**provenance(), "algorithms": plugin_origins((e.id for d in designs for e in d.algorithms), served)}
    lines = [f"# {config.title}", ""]
    if interrupted:
        lines += [f"**Partial report: {interrupted}.**", ""]
    if fallback:
        lines += [f"**Fallback: {fallback}.**", ""]
    if headline:
        lines += [" ".join(headline), ""]
    lines += claims_markdown(config, claims)
    if quick:
        lines += [f"**A quick run** (--quick): seeds {', '.join(map(str, config.seeds))}, at most "
                  f"{config.max_examples or 'all'} examples per run; every verdict is indicative, and the description "
                  "below is the full comparison's.", ""]
    if config.description:
        lines += [config.description, ""]
    lines += how_it_ran(config, mode, preset, quick, wall_time, origin)
    lines += median_tables(designs, per_design, tasks)
    recorded = []
    for i, (design, summaries) in enumerate(zip(designs, per_design, strict=True)):
        zero = zero_predictor(design, config.seeds) if tasks[i] == "classification" else None
        plots = plot_design(out, f"{i:02d}-{slug(design.name)}", design, summaries, metric=config.metric,
                            log_x_axis=config.log_x, task=tasks[i],
                            zero_one_of_zero=None if zero is None else zero["zero_one"])
        lines += design_section(design, summaries, [p.name for p in plots], tasks[i])
        lines += tuning_section(config, summaries, [t for t in tunings if t.design == i])
        # The scores the tables show, so that a reader of results.json (the learner's dashboard) shows the same.
        metrics = [c.key for c in metric_columns(tasks[i], summaries)]
        recorded.append(design_record(design, summaries, [p.name for p in plots], tasks[i], metrics))
    (out / "report.md").write_text("\n".join(lines))
    ComparisonResults(
        title=config.title, mode=mode, preset=preset, quick=quick, wall_time=wall_time, interrupted=interrupted,
        fallback=fallback, headline=headline or [], provenance=Provenance.model_validate(origin),
        claims=[ClaimRecord.model_validate(c.json()) for c in claims],
        config=RecordedConfig.model_validate(config.model_dump(mode="json")), designs=recorded,
        tuning=[TuningRecord.model_validate(t.json()) for t in tunings]).write(out / "results.json")
    write_curves(out / "curves.csv", designs, per_design)
    diagnoses = [f"{design.name} · {s.label}: {line}" for design, summaries in zip(designs, per_design, strict=True)
                 for s in summaries if (line := s.diagnosis())]
    return Written(out / "report.md", claims, diagnoses)


def how_it_ran(config: CompareConfig, mode: str, preset: str | None, quick: bool, wall_time: float,
               origin: dict[str, Any]) -> list[str]:
    """The report's list of how the comparison ran: where, with which seeds and examples, when, for how long, on
    which software."""
    lines = [f"- mode: {mode}" + (f"; preset `{preset}`" + (" with --quick" if quick else "") if preset else ""),
             f"- seeds: {', '.join(map(str, config.seeds))}; max examples: {config.max_examples or 'all'}; "
             f"eval every: {config.eval_every or 'default'}",
             f"- generated {datetime.now(UTC).isoformat(timespec='seconds')}, wall time {wall_time:.1f} s",
             f"- {software(origin)}"]
    if config.expected_time:
        lines.append(f"- expected run time of the full comparison: {config.expected_time}")
    if config.measured:
        lines.append(f"- run time of the full comparison, {config.measured.text()}")
    return [*lines, ""]


def software(origin: dict[str, Any]) -> str:
    """One line of the report: what produced it."""
    git = (f" (git {origin['git_commit'][:12]}" + (", with uncommitted changes" if origin["git_modified"] else "")
           + ")") if origin["git_commit"] else ""
    plugins = "".join(f"; {name} from {where['package'] or 'the learner'}"
                      + (f" {where['version']}" if where["version"] else "")
                      for name, where in origin.get("algorithms", {}).items())
    return (f"budgetlab {origin['budgetlab']}{git}; Python {origin['python']}, numpy {origin['numpy']}, "
            f"scikit-learn {origin['scikit-learn']}; host {origin['host']}{plugins}")


CURVE_COLUMNS = ("design", "group", "dataset", "algorithm", "algorithm_id", "seed", "status", "examples",
                 "attributes", "cost", "test_mse", "normalized_mse", "zero_one", "cumulative_loss", "regret")


def write_curves(path: Path, designs: list[Design], per_design: list[list[AlgorithmSummary]]) -> None:
    """curves.csv: one row per (design, algorithm, seed, curve point), every run, completed or not (its status
    says); ``regret`` is R_T at the point for online runs, else empty."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CURVE_COLUMNS)
        for design, summaries in zip(designs, per_design, strict=True):
            for s in summaries:
                for r in s.runs:
                    regrets = iter(r.regret_curve)
                    for p in r.result.curve:
                        regret = next(regrets, None) if p.cumulative_loss is not None and r.regret_curve else None
                        writer.writerow([design.name, design.group, design.dataset.name, s.label, s.id, r.seed,
                                         r.result.status, p.examples, p.attributes, p.cost, p.test_mse,
                                         p.normalized_mse, p.zero_one, _blank(p.cumulative_loss), _blank(regret)])


def _blank(value: float | None) -> float | str:
    return "" if value is None else value


def _stat(value: SummaryStat | None) -> Stat | None:
    return None if value is None else Stat(mean=value.mean, std=value.std, n=value.n, low=value.low, high=value.high)


def design_record(design: Design, summaries: list[AlgorithmSummary], plots: list[str], task: Task | None,
                  metrics: list[str]) -> DesignRecord:
    """The design as results.json keeps it: every algorithm with its summary and every run."""
    algorithms = [AlgorithmRecord(
        label=s.label, id=s.id, params=s.params, defaults=s.defaults, per_example=s.per_example,
        diagnosis=s.diagnosis(),
        summary=Summary(test_mse=_stat(s.final("test_mse")), normalized_mse=_stat(s.final("normalized_mse")),
                        zero_one=_stat(s.final("zero_one")), attributes=_stat(s.of("attributes")),
                        examples=_stat(s.of("examples")), wall_time=_stat(s.of("wall_time")),
                        cumulative_loss=_stat(s.cumulative_loss()), regret=_stat(s.regret())),
        runs=[RunRecord(seed=r.seed, run_id=r.run_id, audit=r.audit, audit_compliant=r.audit_compliant,
                        regret=r.regret, regret_curve=r.regret_curve, regret_missing=r.regret_missing or None,
                        result=r.result) for r in s.runs]) for s in summaries]
    return DesignRecord(name=design.name, group=design.group, description=design.description,
                        dataset=DatasetRecord(name=design.dataset.name, params=design.dataset.params),
                        budget=design.budget, regret_k=design.regret_k, task=task, metrics=metrics, plots=plots,
                        algorithms=algorithms)
