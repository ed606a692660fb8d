"""``budgetlab serve oracle|learner``: a service on a socket bound here (``client.services``), under uvicorn."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from client.console import App, UsageError

if TYPE_CHECKING:
    import socket

serve_app = App(help="Start a service.", no_args_is_help=True)

PortOpt = Annotated[int, typer.Option(help="port; 0 for any free port (the first line on stderr says which)")]


def _listen(host: str, port: int) -> socket.socket:
    from client.services import listen

    try:
        return listen(host, port)
    except OSError as exc:
        raise UsageError(str(exc)) from None


@serve_app.command("oracle")
def serve_oracle(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: PortOpt = 8000,
    workers: Annotated[int, typer.Option(help="worker processes on one database")] = 1,
    database_url: Annotated[str | None, typer.Option(envvar="DATABASE_URL",
                                                     help="SQLAlchemy URL; default SQLite in the working directory")]
    = None,
) -> None:
    """Start the feature oracle (uvicorn). Migrations are applied once before the workers start."""
    from client.services import announcement, serve
    from server.config import Settings, default_database_url
    from server.deployed import prepare, stream_message_limit

    sock = _listen(host, port)
    url = database_url or default_database_url()
    try:
        prepare(url)
    except Exception as exc:  # a bad URL or an unreachable database: say so instead of a traceback
        sock.close()
        raise UsageError(f"cannot prepare the ledger database at {url}: {exc}") from None
    from budgetlab.datasets.user import data_dir

    anonymous = ("anonymous sessions: on (BUDGETLAB_ANONYMOUS=0 for accounts only)" if Settings().anonymous
                 else "anonymous sessions: off (accounts only)")
    print(announcement("oracle", sock, f", ledger: {url}, user datasets: {data_dir()}, {anonymous}"), file=sys.stderr,
          flush=True)
    serve("client.dashboards:oracle_app_from_env", sock, workers=workers,
          ws_max_size=stream_message_limit(Settings()))


@serve_app.command("learner")
def serve_learner(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: PortOpt = 8001,
    database_url: Annotated[str | None, typer.Option(
        envvar="LEARNER_DATABASE_URL", help="SQLAlchemy URL of the runs; default SQLite in the working directory. Not "
        "DATABASE_URL: started from one shell, the learner would share the oracle's SQLite file and its write lock")]
    = None,
) -> None:
    """Start the learner service (runs algorithms against an oracle over HTTP)."""
    from client.services import announcement, serve

    if database_url:
        os.environ["LEARNER_DATABASE_URL"] = database_url
    sock = _listen(host, port)
    print(announcement("learner", sock, f", runs: {database_url or 'budgetlab-runs.db'}"), file=sys.stderr,
          flush=True)
    serve("client.dashboards:learner_app_from_env", sock)
