"""``budgetlab compare``: the command's options, handed to ``client.comparison.compare`` as one object."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from client.commands.options import ApiKeyOpt
from client.console import console, err


def compare(
    config: Annotated[Path | None, typer.Argument(help="comparison config (TOML)", exists=True, dir_okay=False)]
    = None,
    out: Annotated[Path | None, typer.Option("--out", help="directory for report.md, results.json and plots")] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="a paper's experiment (see --list)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="a preset's small version (under a minute)")] = False,
    list_presets: Annotated[bool, typer.Option("--list", help="list the presets and their run times")] = False,
    local: Annotated[bool, typer.Option("--local", help="run on LocalOracles in worker processes (no ledger)")]
    = False,
    learner: Annotated[str | None, typer.Option("--learner", help="learner service URL")] = None,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL the runs use")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, help="runs at the same time (default: as many as the workers execute at once)")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="worker processes of the Dask LocalCluster started here, for --local or for the "
                                 "learner started here (default: the machine's cores)")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", envvar="BUDGETLAB_SCHEDULER", show_envvar=True,
        help="a running Dask scheduler (tcp://HOST:8786, or tls://HOST:8786 with the certificates "
             "BUDGETLAB_SCHEDULER_CA, _CERT and _KEY name) whose workers execute the runs, instead of a "
             "LocalCluster")] = None,
    tune: Annotated[list[str] | None, typer.Option(
        "--tune", help="tune ALGORITHM:PARAM=V1,V2,... on held-out training examples (repeatable; ALGORITHM is a "
                       "label or an id); the tuning's sessions are paid for and reported")] = None,
    tune_folds: Annotated[int | None, typer.Option(min=1, max=20, help="k-fold cross-validation for --tune "
                                                                        "(default: one validation part)")] = None,
    learner_token: Annotated[str | None, typer.Option(
        "--learner-token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
        help="with --learner: start the runs as this caller, so that 'budgetlab runs' lists them (default: a new "
             "caller)")] = None,
    # "\\[": help texts are Rich markup, which takes [mlflow] for a style and prints nothing of it
    mlflow: Annotated[bool, typer.Option(
        "--mlflow", help="log the report to MLflow (tracking server: MLFLOW_TRACKING_URI; needs "
                         "pip install 'budgetlab\\[mlflow]')")] = False,
    mlflow_experiment: Annotated[str | None, typer.Option(
        "--mlflow-experiment", help="MLflow experiment name (default: the comparison's title; implies --mlflow)")]
    = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Compare algorithms x seeds on one dataset and budget; write a report with plots (see 'compare --list').

    The config is checked before anything starts. Exit code: 0 every run completed; 1 nothing ran (a problem with
    the config or the services); 3 the report is written but some runs did not complete; 4 the report is written but
    logging it to MLflow failed; 130 interrupted (Ctrl-C or SIGTERM: the runs were cancelled and a partial report
    written).
    """
    from client.comparison.compare import CompareOptions, run_compare

    options = CompareOptions(config=config, out=out, preset=preset, quick=quick, list_presets=list_presets,
                             local=local, learner=learner, oracle=oracle, parallel=parallel, workers=workers,
                             scheduler=scheduler, tune=tuple(tune or ()), tune_folds=tune_folds,
                             learner_token=learner_token, mlflow=mlflow or mlflow_experiment is not None,
                             mlflow_experiment=mlflow_experiment, api_key=api_key)
    raise typer.Exit(run_compare(options, console, err))
