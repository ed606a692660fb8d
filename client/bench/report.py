"""The benchmark's report: ``report.md`` (ranks per budget with their tests and diagrams, then each dataset's table
and plot), ``results.json`` (every cell and ranking) and ``runs.csv`` (one row per run).

Each run is scored by the final metric its problem calls for: the 0-1 error of the final predictor on a
classification dataset, its normalised test MSE on a regression, the regret R_T against the best sparse predictor in
hindsight on an online problem (``client.comparison.grid.attach_regret``, Ito et al. eq. (1)). A cell (problem,
algorithm, budget) is the mean over its seeds with a 95 % t-interval (``client.bench.stats``). Each budget's ranking,
one per protocol, takes the datasets that have that budget as its blocks and ranks the budgeted algorithms that
completed a run there on every one of them; a full-information reference, which sees all d attributes, is shown beside
them and never ranked.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunResult
from budgetlab.contract.sessions import Protocol
from client.bench.grid import BenchGrid, Expanded
from client.bench.stats import CONFIDENCE, Interval, Ranking, rank, t_interval
from client.comparison.config import AlgorithmEntry, DatasetSpec, Design
from client.comparison.grid import RunOutcome, attach_regret
from client.comparison.provenance import provenance
from client.comparison.report import slug
from client.comparison.verdicts import ALPHA

METRICS = {"classification": "0-1 error", "regression": "normalized MSE", "online": "regret R_T"}


@dataclass
class Scores:
    """What the report is made of: each cell's values by seed, its interval, and the rankings."""

    metric: dict[int, str]  # problem -> its metric's name
    values: dict[tuple[int, str, int], dict[int, float]] = field(default_factory=dict)
    references: set[str] = field(default_factory=set)
    runs: list[tuple[int, str, int, int, RunResult, float | None]] = field(default_factory=list)

    def interval(self, key: tuple[int, str, int]) -> Interval:
        # In seed order, whatever order the runs ended in: a mean summed in another order can differ in its last bit
        # and break a tie between two algorithms that learned the same.
        return t_interval([v for _, v in sorted(self.values[key].items())])


@dataclass
class BudgetRanking:
    protocol: Protocol
    k: int
    ranking: Ranking
    unranked: dict[str, int]  # algorithm -> on how many of the blocks it ran
    figure: str = ""


def designs_of(grid: BenchGrid) -> list[Design]:
    """One design per problem (``attach_regret`` finds an online problem's comparator through it)."""
    return [Design(name=p.name, description="", dataset=DatasetSpec(name=p.dataset, params=dict(p.params)),
                   budget=Budget(), algorithms=[], regret_k=p.regret_k) for p in grid.problems]


def score(grid: BenchGrid, expanded: Expanded, results: dict[int, RunResult]) -> Scores:
    """Each completed run's final metric (``results`` by cell index), grouped by cell."""
    metric = {p: METRICS["online" if grid.problems[p].protocol == "online" else info.task]
              for p, info in enumerate(expanded.infos) if info is not None}
    scores = Scores(metric)
    outcomes: list[tuple[int, RunOutcome]] = []
    for i, result in results.items():
        cell = expanded.cells[i]
        if result.status in COMPLETED_RUN_STATUSES and result.final is not None:
            outcomes.append((i, RunOutcome(cell.problem, AlgorithmEntry(id=cell.algorithm), cell.seed, result)))
    attach_regret([o for _, o in outcomes], designs_of(grid))
    for i, outcome in outcomes:
        cell = expanded.cells[i]
        final = outcome.result.final
        assert final is not None
        name = metric[cell.problem]
        value = (outcome.regret if name == METRICS["online"] else
                 final.zero_one if name == METRICS["classification"] else final.normalized_mse)
        scores.runs.append((cell.problem, cell.algorithm, cell.k, cell.seed, outcome.result, outcome.regret))
        if value is None:
            continue
        scores.values.setdefault((cell.problem, cell.algorithm, cell.k), {})[cell.seed] = float(value)
        if cell.reference:
            scores.references.add(cell.algorithm)
    return scores


def rankings(grid: BenchGrid, expanded: Expanded, scores: Scores, alpha: float = ALPHA) -> list[BudgetRanking]:
    """Per protocol and budget k: the datasets with that budget as blocks, the budgeted algorithms as treatments."""
    out = []
    for protocol in ("batch", "online"):
        problems = [p for p in expanded.budgets if grid.problems[p].protocol == protocol]
        for k in sorted({k for p in problems for k in expanded.budgets[p]}):
            blocks = [p for p in problems if k in expanded.budgets[p]]
            table: dict[str, dict[str, float]] = {grid.problems[p].name: {} for p in blocks}
            seen: dict[str, int] = defaultdict(int)
            for (p, algorithm, cell_k), _ in scores.values.items():
                if cell_k == k and p in blocks and algorithm not in scores.references:
                    table[grid.problems[p].name][algorithm] = scores.interval((p, algorithm, k)).mean
                    seen[algorithm] += 1
            ranking = rank(table, alpha)
            unranked = {a: n for a, n in sorted(seen.items()) if a not in ranking.ranks}
            out.append(BudgetRanking(protocol, k, ranking, unranked))
    return out


def _number(x: float) -> str:
    return f"{x:.4g}"


def _cell(v: Interval) -> str:
    if v.n == 1:
        return f"{_number(v.mean)} (1 seed)"
    return f"{_number(v.mean)} [{_number(v.low)}, {_number(v.high)}]"


def ranking_section(r: BudgetRanking) -> list[str]:
    n = len(r.ranking.blocks)
    what = ("online problem" if r.protocol == "online" else "dataset") + ("s" if n != 1 else "")
    lines = [f"### k = {r.k}, {r.protocol} ({n} {what})", ""]
    if r.ranking.ranks:
        lines += ["| algorithm | average rank |", "|---|---|"]
        lines += [f"| {a} | {rank_:.2f} |" for a, rank_ in r.ranking.ranks.items()]
        lines.append("")
    ranking = r.ranking
    if ranking.untested:
        lines += [f"Not tested: {ranking.untested}.", ""]
    else:
        assert ranking.p_value is not None and ranking.statistic is not None and ranking.cd is not None
        verdict = ("the average ranks differ (p < alpha): algorithms whose ranks lie more than the CD apart differ by "
                   "the Nemenyi test" if ranking.significant else
                   "no difference is shown (p ≥ alpha): the diagram's CD is drawn for reference only")
        lines += [f"Friedman test (tie-corrected χ², {len(ranking.algorithms) - 1} degrees of freedom): "
                  f"χ² = {ranking.statistic:.3f}, p = {ranking.p_value:.3g}; N = {len(ranking.blocks)} blocks "
                  f"({', '.join(ranking.blocks)}), k = {len(ranking.algorithms)} algorithms; Nemenyi critical "
                  f"difference CD = {ranking.cd:.3f} at alpha = {ranking.alpha:g}: {verdict}.", ""]
    if r.unranked:
        lines += ["Not ranked here (a completed run on only some of the blocks): "
                  + ", ".join(f"{a} ({n} of {len(ranking.blocks)})" for a, n in r.unranked.items()) + ".", ""]
    if r.figure:
        lines += [f"![Critical-difference diagram, k = {r.k}, {r.protocol}]({r.figure})", ""]
    return lines


def problem_section(grid: BenchGrid, expanded: Expanded, scores: Scores, p: int, figure: str) -> list[str]:
    problem, info = grid.problems[p], expanded.infos[p]
    assert info is not None
    d = info.n_attributes
    algorithms = list(dict.fromkeys(a for (q, a, _) in sorted(scores.values) if q == p))
    # The references' column, k = d, where d is above every budget of the grid.
    columns = expanded.budgets[p] + ([d] if d not in expanded.budgets[p] and scores.references & set(algorithms)
                                     else [])
    kind = "online protocol" if problem.protocol == "online" else info.task
    lines = [f"### {problem.name}", "",
             f"{kind}, d = {d}, {info.n_train:,} training examples; {scores.metric[p]}, mean "
             f"[{CONFIDENCE:.0%} t-interval] over the seeds (lower is better).", ""]
    lines += ["| algorithm | " + " | ".join(f"k = {k}" + (" (all)" if k == d else "") for k in columns) + " |",
              "|---|" + "---|" * len(columns)]
    for a in algorithms:
        row = [_cell(scores.interval((p, a, k))) if (p, a, k) in scores.values else "—" for k in columns]
        lines.append(f"| {a}{' (reference)' if a in scores.references else ''} | " + " | ".join(row) + " |")
    lines += ["", f"![{scores.metric[p]} against the budget, {problem.name}]({figure})", ""]
    return lines


@dataclass
class Written:
    path: Path
    rankings: list[BudgetRanking]
    diagrams: list[Path]


def write_report(out: Path, grid: BenchGrid, expanded: Expanded, results: dict[int, RunResult], *, mode: str,
                 stored: int, ran: int, failed: int, wall_time: float) -> Written:
    """Write the report of ``results`` (by cell index) under ``out``."""
    from client.bench.plots import Series, budget_plot, cd_diagram

    out.mkdir(parents=True, exist_ok=True)
    scores = score(grid, expanded, results)
    ranked = rankings(grid, expanded, scores)
    diagrams = []
    for r in ranked:
        if len(r.ranking.algorithms) >= 2:
            r.figure = f"cd-{r.protocol}-k{r.k}.png"
            cd_diagram(r.ranking, out / r.figure, f"Average ranks, k = {r.k} ({r.protocol}, "
                                                  f"N = {len(r.ranking.blocks)})")
            diagrams.append(out / r.figure)
    sections = []
    for p in expanded.budgets:
        info = expanded.infos[p]
        assert info is not None
        figure = f"budget-{slug(grid.problems[p].name)}.png"
        series = []
        for a in dict.fromkeys(a for (q, a, _) in sorted(scores.values) if q == p):
            ks = sorted(k for (q, b, k) in scores.values if q == p and b == a)
            series.append(Series(a, ks, [scores.interval((p, a, k)) for k in ks], a in scores.references))
        if not series:
            sections += [f"### {grid.problems[p].name}", "", "No run completed.", ""]
            continue
        budget_plot(series, out / figure, metric=scores.metric[p], d=info.n_attributes,
                    title=f"{grid.problems[p].name}: {scores.metric[p]}, mean and {CONFIDENCE:.0%} t-interval over "
                          f"{len(grid.seeds)} seeds")
        sections += problem_section(grid, expanded, scores, p, figure)
    prov = provenance()
    runs = len(expanded.cells)
    head = [f"# budgetlab bench: the {grid.name} grid", "",
            f"{runs:,} runs: {len({c.algorithm for c in expanded.cells})} algorithms at their practical defaults "
            f"(untuned) on {len(expanded.budgets)} problems, local budgets k in {list(grid.budgets)} capped at each "
            f"dataset's d, seeds {list(grid.seeds)}, at most {grid.max_examples:,} training examples a run. "
            f"{stored:,} were read from the results store, {ran:,} ran now ({mode}), {failed:,} did not complete; "
            f"{wall_time:.0f} s of wall time this invocation; the whole grid, as measured: {grid.measured}. "
            f"budgetlab {prov['budgetlab']}"
            + (f", git {prov['git_commit'][:12]}" if prov["git_commit"] else "") + ".", ""]
    for p, why in expanded.skipped.items():
        head += [f"- Not run: {grid.problems[p].name}: {why}", ""]
    head += ["## Ranks per budget", "",
             "Demšar (2006): in each block (a dataset at that budget) the algorithms are ranked by their mean over "
             "the seeds, 1 the best, ties sharing their average rank; the Friedman test asks whether the average "
             "ranks differ by more than chance; the Nemenyi critical difference (CD) says which pairs do. Blocks are "
             "few here (Demšar asks N > 10 and k > 5 for the χ² approximation to hold well): read the p-values as "
             "indicative" + (", the more so on the quick grid." if grid.name == "quick" else "."), ""]
    for r in ranked:
        head += ranking_section(r)
    body = ["## Results per dataset", ""] + sections
    path = out / "report.md"
    path.write_text("\n".join(head + body) + "\n")
    _write_json(out, grid, expanded, scores, ranked, prov)
    _write_csv(out, grid, scores)
    return Written(path, ranked, diagrams)


def _write_json(out: Path, grid: BenchGrid, expanded: Expanded, scores: Scores, ranked: list[BudgetRanking],
                prov: dict[str, Any]) -> None:
    cells = []
    for (p, a, k), by_seed in sorted(scores.values.items()):
        v = scores.interval((p, a, k))
        problem = grid.problems[p]
        cells.append({"problem": problem.name, "dataset": problem.dataset, "dataset_params": problem.params,
                      "protocol": problem.protocol, "algorithm": a, "k": k, "reference": a in scores.references,
                      "metric": scores.metric[p], "values": {str(s): x for s, x in sorted(by_seed.items())},
                      "mean": v.mean, "low": v.low, "high": v.high, "n": v.n})
    document = {"grid": grid.name, "budgets": list(grid.budgets), "seeds": list(grid.seeds),
                "max_examples": grid.max_examples, "confidence": CONFIDENCE,
                "skipped": {grid.problems[p].name: why for p, why in expanded.skipped.items()},
                "cells": cells,
                "rankings": [{"protocol": r.protocol, "k": r.k, **asdict(r.ranking), "unranked": r.unranked,
                              "figure": r.figure} for r in ranked],
                "provenance": prov}
    (out / "results.json").write_text(json.dumps(document, indent=1, default=str) + "\n")


def _write_csv(out: Path, grid: BenchGrid, scores: Scores) -> None:
    with (out / "runs.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["problem", "algorithm", "k", "seed", "status", "normalized_mse", "test_mse", "zero_one",
                         "regret", "attributes", "examples", "wall_time"])
        for p, a, k, seed, result, regret in sorted(scores.runs, key=lambda r: r[:4]):
            final = result.final
            assert final is not None
            writer.writerow([grid.problems[p].name, a, k, seed, result.status, final.normalized_mse, final.test_mse,
                             final.zero_one, "" if regret is None else regret, result.attributes, result.examples,
                             f"{result.wall_time:.3f}"])
