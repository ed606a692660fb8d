"""The written record of ``budgetlab sense``: ``report.md`` for people (per dataset the training read, the figure,
each policy's curve with its intervals, the comparisons and their test; then every session's audit), ``results.json``
with the same numbers and ``audit.csv`` with one row per evaluation session."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from client.comparison.provenance import version_line
from client.sensing.plots import plot_dataset
from client.sensing.summary import TEST, Comparison, Row, comparisons, rows
from learner.sensing.evaluation import Point, Settings, Training


@dataclass(frozen=True)
class Sense:
    """Everything one ``budgetlab sense`` ran: its settings and seeds, what each dataset's training read, and
    every evaluation session."""

    command: str
    settings: Settings
    seeds: tuple[int, ...]
    quick: bool
    training: tuple[Training, ...]
    points: tuple[Point, ...]


def _interval(row: Row) -> str:
    found = row.interval
    digits = ".1%" if row.metric == "accuracy" else ".3f"
    mean = format(row.mean, digits)
    if found is None:
        return mean
    low, high = (max(found[0], 0.0), min(found[1], 1.0)) if row.metric == "accuracy" else found
    return f"{mean} [{low:{digits}}, {high:{digits}}]"


def _curve_table(found: list[Row]) -> list[str]:
    within = ", held to [0, 100 %]" if found[0].metric == "accuracy" else ""
    lines = [f"| policy | k | attributes read | cost paid | {found[0].metric} (95 % t-interval over seeds{within}) |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {r.policy} | {r.budget} | {r.reads:.2f} | {r.cost:.2f} | {_interval(r)} |" for r in found]
    return lines


def _comparison_table(found: list[Comparison]) -> list[str]:
    if not found:
        return []
    lines = [f"Comparisons ({TEST}); a positive difference favours {found[0].reference}:", "",
             "| k | against | mean difference [95 % interval] | seeds | p (Holm): better / worse | verdict |",
             "|---:|---|---|---:|---|---|"]
    for c in found:
        t = c.test
        shown = "" if t is None else f"{t.mean:+.3f} [{t.low:+.3f}, {t.high:+.3f}]"
        p = f"{c.better:.3g} / {c.worse:.3g}" if c.decided else ""
        lines.append(f"| {c.budget} | {c.other} | {shown} | {0 if t is None else t.n} | {p} | {c.verdict} |")
    return [*lines, ""]


def _training_lines(training: Sequence[Training]) -> list[str]:
    lines = []
    for t in training:
        read = t.read
        audit = "" if t.audited is None else f"; its ledger {'passes' if t.audited else 'FAILS'} its audit"
        lines.append(f"- seed {t.seed}: {len(read.y):,} training examples read in full ({read.attributes:,} "
                     f"attributes, cost {read.cost:,.0f}, session `{read.session}`{audit})"
                     + (f"; the Q-learning policy's {t.rl_episodes:,} training episodes on the environment "
                        f"(training split) paid {t.rl_cost:,.0f}" if t.rl_episodes else ""))
    return lines


def _dataset_section(out: Path, sense: Sense, dataset: str, found: list[Row], tests: list[Comparison]) -> list[str]:
    mine = [r for r in found if r.dataset == dataset]
    figure = plot_dataset(out, dataset, found)
    return [f"## {dataset} ({mine[0].task})", "", "What the policies were fitted on:", "",
            *_training_lines([t for t in sense.training if t.dataset == dataset]), "",
            f"![{dataset}]({figure.name})", "", *_curve_table(mine), "",
            *_comparison_table([c for c in tests if c.dataset == dataset])]


def _audit_section(points: Sequence[Point]) -> list[str]:
    sessions = len(points)
    bad = [p for p in points if not p.audit.compliant]
    where = sorted({p.audit.where for p in points})
    lines = ["## Audit of the evaluation sessions", "",
             f"{sessions - len(bad)} of {sessions} sessions pass ({', '.join(where)}). Each session's audit checks, "
             "example by example, that the attributes the policy read are those the session paid for, each value "
             "once, at most k of an example, and that the cost the episodes paid is the cost the session recorded: "
             "through an oracle, by its ledger's rows and audit (the hash chain, every row recomputed); in memory, "
             "by the session's own record of the cells it paid for. `audit.csv` has one row per session.", "",
             "| dataset | policy | sessions | attributes read | attributes paid | most read of an example | pass |",
             "|---|---|---:|---:|---:|---:|---|"]
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        groups.setdefault((p.dataset, p.policy), []).append(p)
    for (dataset, policy), mine in groups.items():
        lines.append(f"| {dataset} | {policy} | {len(mine)} | {sum(p.audit.reads for p in mine):,} | "
                     f"{sum(p.audit.paid for p in mine):,} | {max(p.audit.max_per_example for p in mine)} | "
                     f"{'yes' if all(p.audit.compliant for p in mine) else 'NO'} |")
    for p in bad:
        lines.append(f"- {p.dataset}, {p.policy}, seed {p.seed}, k = {p.budget}, session `{p.audit.session}`: "
                     + "; ".join(p.audit.reasons))
    return [*lines, ""]


def write_report(out: Path, sense: Sense) -> Path:
    """Write ``report.md``, its figures, ``results.json`` and ``audit.csv`` into ``out``; the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    found = rows(sense.points)
    tests = comparisons(found, quick=sense.quick)
    s = sense.settings
    lines = ["# Active feature acquisition: budgetlab sense", "", f"`{sense.command}`", "", f"{version_line()}; "
             + (f"through the oracle at {s.oracle} ({'stream' if s.stream else 'HTTP'})" if s.oracle else "in memory"),
             "", f"Seeds {', '.join(map(str, sense.seeds))}; k = {', '.join(map(str, s.budgets))} attributes an "
             f"example (one test session per policy, seed and k, its first {s.examples:,} examples); the policies "
             f"fitted on the training split's first {s.train_examples:,} examples, read in full."
             + (" A --quick run: its comparisons are indicative only." if sense.quick else ""), ""]
    for dataset in dict.fromkeys(r.dataset for r in found):
        lines += _dataset_section(out, sense, dataset, found, tests)
    lines += _audit_section(sense.points)
    (out / "report.md").write_text("\n".join(lines))
    _write_results(out, sense, found, tests)
    return out / "report.md"


def _write_results(out: Path, sense: Sense, found: list[Row], tests: list[Comparison]) -> None:
    sessions = [{"dataset": p.dataset, "policy": p.policy, "seed": p.seed, "k": p.budget, "score": p.score,
                 **asdict(p.audit)} for p in sense.points]
    results: dict[str, Any] = {
        "command": sense.command,
        "settings": {k: v for k, v in asdict(sense.settings).items() if k != "api_key"}, "seeds": list(sense.seeds),
        "quick": sense.quick, "test": TEST,
        "curves": [{**asdict(r), "mean": r.mean, "interval": r.interval, "metric": r.metric} for r in found],
        "comparisons": [{"dataset": c.dataset, "k": c.budget, "reference": c.reference, "other": c.other,
                         "test": None if c.test is None else asdict(c.test), "p_better_holm": c.better,
                         "p_worse_holm": c.worse, "verdict": c.verdict} for c in tests],
        "training": [{"dataset": t.dataset, "seed": t.seed, "examples": len(t.read.y), "attributes": t.read.attributes,
                      "cost": t.read.cost, "session": t.read.session, "rl_episodes": t.rl_episodes,
                      "rl_cost": t.rl_cost, "audited": t.audited} for t in sense.training],
        "sessions": sessions}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    with (out / "audit.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[k for k in sessions[0] if k != "reasons"] + ["reasons"])
        writer.writeheader()
        writer.writerows({**row, "reasons": "; ".join(row["reasons"])} for row in sessions)
