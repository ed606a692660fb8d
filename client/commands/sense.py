"""``budgetlab sense``: the AFA evaluation, its options handed to ``client.sensing.command`` as one object."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from client.commands.options import ApiKeyOpt

SENSE_HELP = ("Evaluate acquisition policies at prediction time (active feature acquisition): accuracy or "
              "normalised MSE against the attributes read and the cost paid, with intervals over seeds, and every "
              "session's audit.")


def sense(
    out: Annotated[Path, typer.Option("--out", help="directory for report.md, results.json, audit.csv and plots")],
    dataset: Annotated[list[str] | None, typer.Option(
        "--dataset", help="a dataset (name or name:key=value,...; a user's own by its name); repeat it "
                          "(default: cube, digits-3v5, diabetes)")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", help="random, static, greedy, budget or q-learning; repeat it (default: all)")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", help="seeds: 0-4 or 0,1,2 (default 0-4; --quick 0-1)")] = None,
    budgets: Annotated[str | None, typer.Option(
        "--budgets", help="numbers of attributes k per example, e.g. 1,2,3,4,6,8 (the default; --quick 1,2,4)")]
    = None,
    examples: Annotated[int | None, typer.Option(
        min=1, help="test examples per session (default 500; --quick 30)")] = None,
    train_examples: Annotated[int | None, typer.Option(
        min=2, help="training examples read in full to fit the policies (default 2000; --quick 300)")] = None,
    rl_episodes: Annotated[int | None, typer.Option(
        min=0, help="training episodes of the q-learning policy (default 3000; --quick 100)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="a small version for CI (seconds); decides nothing")]
    = False,
    oracle: Annotated[str | None, typer.Option(
        "--oracle", help="run every session on this oracle (audited by its ledger); default in memory")] = None,
    stream: Annotated[bool, typer.Option("--stream", help="with --oracle: over the session stream, not HTTP")]
    = False,
    api_key: ApiKeyOpt = None,
) -> None:
    """Evaluate acquisition policies at prediction time; write a report with plots and the sessions' audit.

    Exit code: 0 every session passed its audit; 1 nothing ran (a usage error, or the oracle refused); 3 the report
    is written but some session failed its audit.
    """
    from client.sensing.command import SenseOptions, run_sense

    options = SenseOptions(out=out, datasets=tuple(dataset or ()), policies=tuple(policy or ()), seeds=seeds,
                           budgets=budgets, examples=examples, train_examples=train_examples,
                           rl_episodes=rl_episodes, quick=quick, oracle=oracle, stream=stream, api_key=api_key)
    raise typer.Exit(run_sense(options))
