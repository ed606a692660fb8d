"""``budgetlab bench``: the standard grid, resumable (``client.bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from client.bench.times import FULL_TIME, QUICK_TIME
from client.console import UsageError, console, err

BENCH_HELP = ("Run every algorithm that applies on the standard grid (datasets x local budgets x seeds), resuming "
              "from the results store; write the ranks per budget (Friedman test, critical-difference diagram) and "
              f"each dataset's table and plot. Full grid: {FULL_TIME}; --quick: {QUICK_TIME}. Exit code: 0 every "
              "run completed; 1 nothing ran; 3 some runs did not complete (they run again next time); 130 "
              "interrupted (the finished runs are kept).")


def bench(
    out: Annotated[Path, typer.Option("--out", help="directory of the report and of the results store (runs.sqlite), "
                                                    "which a second invocation resumes from")] = Path("bench-report"),
    quick: Annotated[bool, typer.Option("--quick", help="the small grid (81 runs, seconds)")] = False,
    list_grids: Annotated[bool, typer.Option("--list", help="list both grids, their runs and measured times")]
    = False,
    local: Annotated[bool, typer.Option("--local", help="run on LocalOracles in Dask worker processes (the default "
                                                        "without --oracle/--learner)")] = False,
    learner: Annotated[str | None, typer.Option("--learner", help="learner service URL (with --oracle)")] = None,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL the runs use (with --learner)")] = None,
    learner_token: Annotated[str | None, typer.Option(
        "--learner-token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
        help="with --learner: start the runs as this caller (default: a new caller)")] = None,
    algorithm: Annotated[list[str] | None, typer.Option(
        "--algorithm", help="an installed plugin's algorithm id to add to the grid (repeatable)")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, help="runs at the same time (default: as many as the workers execute at once)")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="worker processes of the Dask LocalCluster started here (default: the machine's "
                                 "cores)")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", envvar="BUDGETLAB_SCHEDULER", show_envvar=True,
        help="a running Dask scheduler (tcp://HOST:8786) whose workers execute the runs")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="the results store (default: OUT/runs.sqlite): a report written elsewhere from the same runs")]
    = None,
) -> None:
    from client.bench.grid import FULL, QUICK
    from client.bench.run import Where, run_bench, show_grids

    if list_grids:
        raise typer.Exit(show_grids(console, err))
    if local and (learner or oracle):
        raise UsageError("--local runs in-process: drop --learner/--oracle")
    where = Where(oracle=oracle, learner=learner, learner_token=learner_token, workers=workers, scheduler=scheduler,
                  parallel=parallel)
    raise typer.Exit(run_bench(grid=QUICK if quick else FULL, out=out, where=where, console=console, err=err,
                               extra=algorithm, store=store))
