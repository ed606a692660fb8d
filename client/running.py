"""One run as ``budgetlab run`` executes it: in-process on a LocalOracle or over HTTP on an oracle, with a
progress bar.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from budgetlab.datasets import DatasetError
from budgetlab.errors import OracleError, OracleUnavailable
from budgetlab.models import RunCreate, RunResult
from learner.algorithms import ParamError, get_algorithm
from learner.scoring import run_and_score, session_opener


def execute_run(request: RunCreate, *, show_progress: bool, console: Console,
                fail: Callable[[str], None]) -> RunResult:
    """Run ``request`` over HTTP on its ``oracle_url``, or in-process when it has none; user errors (unknown
    algorithm, bad params, dataset, unreachable oracle) go to ``fail``."""
    open_oracle = session_opener(request, request.oracle_url)
    try:
        oracle = open_oracle(split="train", protocol=get_algorithm(request.algorithm).protocol,
                             budget=request.budget)
    except (ParamError, DatasetError, OracleError, OracleUnavailable) as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    horizon = min(request.max_examples or oracle.n_examples, oracle.n_examples)
    bar = Progress(TextColumn(f"{request.algorithm} on {request.dataset}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console,
                   disable=not show_progress, transient=False)
    with bar:
        task = bar.add_task("run", total=horizon, info="")

        def progress(p) -> None:  # type: ignore[no-untyped-def]
            info = f"attrs {p.attributes}" + (f"  mse {p.point.test_mse:.4g}" if p.point else "")
            bar.update(task, completed=p.examples, info=info)

        try:
            return run_and_score(request, oracle, open_oracle, progress=progress)
        except (ParamError, ValueError) as exc:
            fail(str(exc))
            raise AssertionError("unreachable") from None
        finally:
            oracle.close()
