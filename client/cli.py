"""The ``budgetlab`` command line: the commands of ``client.commands`` assembled into one typer app, with the options
every command shares (``--version``) and the datasets' announcements on stderr.

Everything beyond typer and rich (pydantic's models, numpy, the datasets, the learner, the services) is imported
inside the commands that need it, so that any command can say something within a fraction of a second and a
client-only use never loads the server (``benchmarks/first_contact.py`` measures it).
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.markup import escape

from client.commands import (
    accounts,
    algorithms,
    audit,
    bench,
    claims,
    compare,
    datasets,
    mlflow_log,
    run,
    runs,
    sandbox,
    sense,
    serve,
    session,
)
from client.console import App, console, err

app = App(help="budgetlab: budgeted learning against a charging, auditable feature oracle.",
          no_args_is_help=True, pretty_exceptions_enable=False)
# `budgetlab --help` lists the commands in this order, then the groups in theirs.
app.command("audit")(audit.audit)
app.command("run")(run.run)
app.command("compare")(compare.compare)
app.command("bench", help=bench.BENCH_HELP)(bench.bench)
app.command("claims")(claims.claims)
app.command("sense", help=sense.SENSE_HELP)(sense.sense)
app.command("mlflow-log")(mlflow_log.mlflow_log)
app.command("sandbox")(sandbox.sandbox)
app.add_typer(serve.serve_app, name="serve")
app.add_typer(datasets.datasets_app, name="datasets")
app.add_typer(session.session_app, name="session")
app.add_typer(runs.runs_app, name="runs")
app.add_typer(algorithms.algorithms_app, name="algorithms")
app.add_typer(accounts.accounts_app, name="accounts")


class _ToStderr(logging.Handler):
    """The ground floor's announcements (a dataset parsed for the first time, a cache that cannot be written) as
    lines on stderr, above any progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno < logging.WARNING else "[yellow]warning:[/] "
        err.print(prefix + escape(record.getMessage()), soft_wrap=True, highlight=False)


def _announce_datasets() -> None:
    logger = logging.getLogger("budgetlab.datasets")
    if not any(isinstance(h, _ToStderr) for h in logger.handlers):
        logger.addHandler(_ToStderr())
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _version(value: bool) -> None:
    if value:
        from client.comparison.provenance import version_line

        console.print(version_line(), soft_wrap=True, highlight=False)
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                   help="print the version (and git commit) and exit")] = False,
             ) -> None:
    """budgetlab: budgeted learning against a charging, auditable feature oracle."""
    _announce_datasets()
