"""``budgetlab mlflow-log``: a written comparison logged to MLflow (``client.comparison.tracking``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from client.console import UsageError, console


def mlflow_log(
    out: Annotated[Path, typer.Argument(help="a comparison's output directory (its results.json)", exists=True,
                                        file_okay=False)],
    experiment: Annotated[str | None, typer.Option(
        "--experiment", help="MLflow experiment name (default: the comparison's title)")] = None,
) -> None:
    """Log a comparison already written (compare --out DIR) to MLflow, as compare --mlflow does."""
    from client.comparison.tracking import TrackingError, log_comparison

    try:
        logged = log_comparison(out, experiment)
    except TrackingError as exc:
        raise UsageError(str(exc)) from None
    console.print(escape(str(logged)), soft_wrap=True, highlight=False)
