"""One run as ``budgetlab run`` executes it: in-process on a LocalOracle or over HTTP on an oracle, after tuning
its parameters when it is given a grid (``learner.tuning``, as ``compare`` tunes); its progress on the console given
(stderr): a live bar on a terminal; elsewhere (a pipe, a log file, ``--json`` read by a script) a line per step and
per evaluation point, at most one every ``LINE_SECONDS``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from budgetlab.contract.base import ParamValue
from budgetlab.contract.runs import RunCreate, RunResult
from budgetlab.datasets import DatasetError, UnknownDataset, describe, list_datasets
from budgetlab.errors import OracleError, OracleUnavailable
from client.comparison.config_errors import did_you_mean
from client.console import UsageError
from learner.algorithms import ParamError, get_algorithm
from learner.runner import Progress as RunnerProgress
from learner.runner import run_horizon
from learner.scoring import run_and_score, session_opener
from learner.tuning import TuningError, tune_run

LINE_SECONDS = 2.0


def where(request: RunCreate) -> str:
    return f"on the oracle {request.oracle_url}" if request.oracle_url else "in-process"


class RunProgress:
    """What a run is doing, said as it does it, on ``console``."""

    def __init__(self, console: Console, label: str) -> None:
        self.console = console
        self.label = label
        self._last_line = 0.0

    def step(self, text: str) -> None:
        self.console.print(f"{escape(self.label)}: {escape(text)}", soft_wrap=True, highlight=False)

    @contextmanager
    def examples(self, horizon: int) -> Iterator[Callable[[RunnerProgress], None]]:
        """A callback for the runner's progress over ``horizon`` examples, shown while the block runs."""
        if not self.console.is_terminal:
            yield self._line
            return
        bar = Progress(TextColumn(escape(self.label)), BarColumn(), MofNCompleteColumn(),
                       TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=self.console)
        with bar:
            task = bar.add_task("run", total=horizon, info="")
            yield lambda p: bar.update(task, completed=p.examples, info=_info(p))

    def _line(self, p: RunnerProgress) -> None:
        now = time.monotonic()
        last = p.examples >= p.max_examples
        if p.point is not None and (last or now - self._last_line >= LINE_SECONDS):
            self._last_line = now
            mse = f", test MSE {p.point.test_mse:.4g}" if p.point is not None else ""
            self.step(f"{p.examples:,}/{p.max_examples:,} examples, {p.attributes:,} attributes paid{mse}")


def _info(p: RunnerProgress) -> str:
    return f"attrs {p.attributes}" + (f"  mse {p.point.test_mse:.4g}" if p.point else "")


def described_here(name: str, params: dict[str, ParamValue]) -> None:
    """In-process, a dataset this machine does not serve is a usage error naming the closest it does: the engine would
    refuse it as an oracle refuses a session (422 invalid_session), though no oracle is involved."""
    try:
        describe(name, params)
    except UnknownDataset as exc:
        raise UsageError(f"{exc}{did_you_mean(name, [d.name for d in list_datasets().datasets])}") from None
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


def execute_run(request: RunCreate, *, console: Console, tune: dict[str, list[ParamValue]] | None = None,
                tune_folds: int = 1) -> RunResult:
    """Run ``request`` over HTTP on its ``oracle_url``, or in-process when it has none, saying what it does on
    ``console``; user errors (unknown algorithm, bad params, dataset, unreachable oracle, a grid that cannot be
    tuned) are a ``UsageError``.

    With a ``tune`` grid the parameters are first chosen on held-out training examples (``tune_folds`` folds), in
    sessions of their own that are paid for; the result's ``tuning`` says what was chosen and what it paid."""
    shown = RunProgress(console, f"{request.algorithm} on {request.dataset}")
    if request.oracle_url is None:
        described_here(request.dataset, request.dataset_params)
    open_oracle = session_opener(request, request.oracle_url)
    shown.step(f"opening a training session on the oracle {request.oracle_url} ..." if request.oracle_url
               else "loading the dataset ...")
    try:
        oracle = open_oracle(split="train", protocol=get_algorithm(request.algorithm).protocol,
                             budget=request.budget)
    except (ParamError, DatasetError, OracleError, OracleUnavailable) as exc:
        raise UsageError(str(exc)) from None
    horizon = run_horizon(request.max_examples, oracle.n_examples)
    tuning = None
    try:
        if tune:
            tuning = tune_run(request, tune, open_oracle, oracle.n_examples, folds=tune_folds, progress=shown.step)
            request = request.model_copy(update={"params": tuning.params()})
    except (TuningError, ParamError, ValueError, OracleError, OracleUnavailable) as exc:
        oracle.close()
        raise UsageError(str(exc)) from None
    try:
        with shown.examples(horizon) as progress:
            result = run_and_score(request, oracle, open_oracle, progress=progress, announce=shown.step)
    except (ParamError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        oracle.close()
    if tuning is not None:
        result.tuning = tuning.report()
    return result
