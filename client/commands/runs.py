"""``budgetlab runs``: list, show, cancel and wait for the runs of a learner service, as their caller sees them.

A caller is known by its token (``--token`` or ``BUDGETLAB_LEARNER_TOKEN``); ``budgetlab runs token`` asks the
learner for a new one. The learner's admin token sees every caller's runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from client.console import App, UsageError, call, console, err

if TYPE_CHECKING:
    from budgetlab.contract.runs import RunInfo, RunSummary
    from budgetlab.learner_client import LearnerClient

runs_app = App(help="The runs of a learner service: list, show, cancel, wait.", no_args_is_help=True)

LearnerOpt = Annotated[str, typer.Option("--learner", envvar="LEARNER_URL", help="learner service URL")]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
                                              help="your caller token (or the learner's admin token)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]
DEFAULT_LEARNER = "http://127.0.0.1:8001"
STATUS_STYLE = {"finished": "green", "budget_exhausted": "green", "running": "cyan", "queued": "blue",
                "cancelled": "yellow", "interrupted": "yellow", "failed": "red", "oracle_unavailable": "red"}


def client(learner: str, token: str | None) -> LearnerClient:
    from budgetlab.learner_client import LearnerClient

    if not token:
        raise UsageError("give --token or set BUDGETLAB_LEARNER_TOKEN ('budgetlab runs token' issues one)")
    return LearnerClient(learner, token=token)


def status_text(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def progress_text(done: int, total: int | None) -> str:
    return f"{done}/{total}" if total else str(done)


def mse_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def runs_table(runs: list[RunSummary]) -> Table:
    """One line per run where it fits: ids and algorithms are never cut, datasets and statuses fold."""
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False, show_edge=False)
    table.add_column("run", no_wrap=True)
    table.add_column("status", overflow="fold")
    table.add_column("algorithm", no_wrap=True, min_width=max((len(r.algorithm) for r in runs), default=9))
    table.add_column("dataset", overflow="fold")
    table.add_column("seed", justify="right")
    table.add_column("examples", justify="right", no_wrap=True)
    table.add_column("MSE", justify="right", no_wrap=True)
    for run in runs:
        table.add_row(run.id, status_text(run.status), run.algorithm, run.dataset, str(run.seed),
                      progress_text(run.progress_examples, run.max_examples),
                      mse_text(run.last_point.test_mse if run.last_point else None))
    return table


def pairs(values: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def show_run(info: RunInfo) -> None:
    request = info.request
    budget = pairs({k: v for k, v in request.budget.model_dump(exclude_none=True).items()
                    if k in ("per_example", "total")})
    console.print(f"[bold]{info.id}[/]  {status_text(info.status)}", soft_wrap=True)
    details = Table.grid(padding=(0, 2))
    details.add_column(style="bold", no_wrap=True)
    details.add_column(overflow="fold")
    rows = [("algorithm", f"{request.algorithm} ({pairs(request.params) or 'defaults'}), seed {request.seed}"),
            ("dataset", request.dataset + (f" ({pairs(request.dataset_params)})" if request.dataset_params else "")),
            ("budget", budget or "none"), ("oracle", request.oracle_url or "-"), ("session", info.session or "-"),
            ("progress", f"{progress_text(info.progress_examples, info.max_examples)} examples, "
                         f"{info.progress_attributes} attributes paid")]
    if info.message:
        rows.append(("message", info.message))
    for key, value in rows:
        details.add_row(key, escape(value))
    console.print(details)
    if info.curve:
        table = Table("examples", "attributes", "cost", "test MSE", "normalized", box=box.SIMPLE_HEAD)
        for p in info.curve:
            table.add_row(str(p.examples), str(p.attributes), f"{p.cost:g}", mse_text(p.test_mse),
                          f"{p.normalized_mse:.4f}")
        console.print(table)


def print_json(text: str) -> None:
    typer.echo(text)


@runs_app.command("token")
def token(learner: LearnerOpt = DEFAULT_LEARNER) -> None:
    """Ask the learner for a new caller token (shown once); export it as BUDGETLAB_LEARNER_TOKEN."""
    from budgetlab.learner_client import LearnerClient

    with LearnerClient(learner) as c:
        typer.echo(call(c.new_caller).token)
    err.print("export BUDGETLAB_LEARNER_TOKEN=<the token above> for 'budgetlab runs'")


@runs_app.command("list")
def list_runs(
    learner: LearnerOpt = DEFAULT_LEARNER,
    token: TokenOpt = None,
    status: Annotated[str | None, typer.Option(help="only runs with this status")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="at most this many, newest first")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Your runs (every run with the admin token), newest first."""
    with client(learner, token) as c:
        page = call(lambda: c.page(limit, None, status))
    if as_json:
        print_json(page.model_dump_json(indent=2))
        return
    if not page.runs:
        console.print("no runs")
        return
    console.print(runs_table(page.runs))
    if page.next:
        console.print(f"(more: --limit {limit * 2})")


@runs_app.command("show")
def show(run_id: str, learner: LearnerOpt = DEFAULT_LEARNER, token: TokenOpt = None,
         as_json: JsonOpt = False) -> None:
    """One run: request, status, progress and learning curve."""
    with client(learner, token) as c:
        info = call(lambda: c.get(run_id))
    if as_json:
        print_json(info.model_dump_json(indent=2))
    else:
        show_run(info)


@runs_app.command("cancel")
def cancel(run_id: str, learner: LearnerOpt = DEFAULT_LEARNER, token: TokenOpt = None) -> None:
    """Stop a run: a queued one at once, a running one at its next example."""
    with client(learner, token) as c:
        info = call(lambda: c.cancel(run_id))
    console.print(f"{info.id}: {status_text(info.status)} after {info.progress_examples} examples")


@runs_app.command("wait")
def wait(
    run_id: str,
    learner: LearnerOpt = DEFAULT_LEARNER,
    token: TokenOpt = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="give up after this many seconds (exit 2)")] = 3600.0,
    as_json: JsonOpt = False,
) -> None:
    """Follow a run until it ends; exit 0 if it completed (finished or budget exhausted), 1 if not."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
    from budgetlab.errors import RunTimeout

    bar = Progress(TextColumn(run_id), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                   TimeElapsedColumn(), console=err, disable=as_json, transient=True)
    with client(learner, token) as c, bar:
        task = bar.add_task("run", total=None, status="")

        def show_progress(info: RunInfo) -> None:
            bar.update(task, completed=info.progress_examples, total=info.max_examples, status=info.status)

        try:
            info = call(lambda: c.wait(run_id, timeout=timeout, progress=show_progress))
        except RunTimeout as exc:
            raise UsageError(str(exc), code=2) from None
    if as_json:
        print_json(info.model_dump_json(indent=2))
    else:
        show_run(info)
    raise typer.Exit(0 if info.status in COMPLETED_RUN_STATUSES else 1)
