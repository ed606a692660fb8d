"""Real services for end-to-end tests: uvicorn on loopback, ephemeral ports, talked to over HTTP."""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from client.services import listen, service, wait_healthy
from tests.helpers import ADMIN_TOKEN
from web.http_protocol import JsonHttpProtocol


def bound_socket() -> socket.socket:
    """A listening loopback TCP socket on a free port, made as ``budgetlab serve`` makes its own (``IPPROTO_TCP``:
    asyncio sets TCP_NODELAY only on connections accepted from such a socket; without it every small answer
    waits ~40 ms for the client's delayed ACK)."""
    return listen("127.0.0.1", 0)


@contextmanager
def serve_in_thread(app, port: int = 0, **options: Any) -> Iterator[str]:
    """Serve an ASGI app with a real uvicorn server on a pre-bound loopback socket (no port race; ``port`` 0: a free
    one, else this one: a service started again where it was); ``options`` go to ``uvicorn.Config`` (e.g.
    ``ws="none"``: a server that cannot upgrade to WebSocket)."""
    sock = listen("127.0.0.1", port) if port else bound_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", http=JsonHttpProtocol, **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, None, None, time.monotonic() + 60)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def oracle_server(database_url: str, **settings: Any) -> Iterator[str]:
    """The oracle (admin token ``admin-secret``) on ``database_url``, with ``settings``' other settings."""
    from client.dashboards import with_page
    from server.app import create_app
    from server.config import Settings

    settings.setdefault("admin_token", ADMIN_TOKEN)
    app = with_page(create_app(Settings(database_url=database_url, **settings)), "oracle.html")
    with serve_in_thread(app) as url:
        yield url


# The Dask cluster the learners of this test process run on (their BUDGETLAB_SCHEDULER): started at the first
# learner, closed at the end of the test session (conftest). A learner of its own starts a LocalCluster of one
# process per core, seconds of start-up every time; the learners that tests start as processes still do.
_cluster: Any = None
_cluster_lock = threading.Lock()


def shared_scheduler() -> str:
    """The address of this test process's Dask scheduler (two single-threaded worker processes)."""
    global _cluster
    with _cluster_lock:
        if _cluster is None:
            from learner.cluster import RunPool

            _cluster = RunPool(workers=2)
        assert _cluster.cluster is not None
        return str(_cluster.cluster.scheduler_address)


def shared_cluster_env() -> dict[str, str]:
    """The environment that sends a comparison or a learner to ``shared_scheduler`` (conftest's ``shared_cluster``
    for what a module fixture starts)."""
    from learner.cluster import SCHEDULER_ENV

    return {SCHEDULER_ENV: shared_scheduler()}


def close_shared_scheduler() -> None:
    global _cluster
    with _cluster_lock:
        if _cluster is not None:
            _cluster.close()
            _cluster = None


@contextmanager
def learner_app(database_url: str, oracle_url: str, **settings: Any) -> Iterator[tuple[str, Any]]:
    """The learner on its own database, allowed to use ``oracle_url`` (and ``settings``' other oracles), its runs
    on the test process's Dask scheduler unless ``settings`` say otherwise; its URL and app. It is stopped as a
    served learner stops (its runs interrupted, its client of the scheduler closed)."""
    from client.dashboards import with_page
    from learner.service.app import create_app
    from learner.service.settings import LearnerSettings

    if "scheduler" not in settings and "workers" not in settings:
        settings["scheduler"] = shared_scheduler()
    app = with_page(create_app(LearnerSettings(database_url=database_url, oracle_url=oracle_url, **settings)),
                    "learner.html")
    try:
        with serve_in_thread(app) as url:
            # Served once its workers are up, as a learner's first runs would wait for them (tests read their
            # progress under deadlines of their own).
            app.state.runs.start_workers()
            assert app.state.runs.ready.wait(180), "the learner's Dask workers did not start"
            yield url, app
    finally:
        app.state.runs.shutdown()


@contextmanager
def learner_server(database_url: str, oracle_url: str, **settings: Any) -> Iterator[str]:
    """``learner_app``'s URL."""
    with learner_app(database_url, oracle_url, **settings) as (url, _):
        yield url


@contextmanager
def cli_service(args: list[str], port: int | None = None, env: dict[str, str] | None = None, cwd: Path | None = None,
                timeout: float = 90.0) -> Iterator[str]:
    """Start ``budgetlab <args>`` as its own process (the entry point users run), on ``port`` or, by default, on a
    free port it binds itself (``--port 0``) and announces; yields its URL once it answers /healthz."""
    budgetlab = Path(sys.executable).with_name("budgetlab")
    with tempfile.TemporaryDirectory(prefix="budgetlab-service-") as logs:
        with service(args, Path(logs) / "service.log", port=port, env=env, cwd=cwd, program=[str(budgetlab)],
                     timeout=timeout) as url:
            yield url
