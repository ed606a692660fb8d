"""The services as processes: how ``budgetlab serve`` listens, and how other commands start it as a subprocess.

``budgetlab serve oracle|learner`` binds its own listening socket (``listen``) before uvicorn starts, so a busy
port is one clear error, ``--port 0`` means any free port, and no other process can take the port between a check
and the bind. Its first line on stderr announces the URL it listens on (``announcement``). ``service`` starts
``budgetlab serve ...`` as a subprocess on port 0 (or the port the user chose), reads that URL from the child's
output and waits for ``/healthz``, each with a deadline. ``managed_services`` is what ``budgetlab sandbox`` and
``budgetlab compare`` (given no service URLs) run on: the oracle and the learner as a user would start them.
"""

from __future__ import annotations

import errno
import inspect
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.importer import import_from_string
from uvicorn.supervisors import Multiprocess

from budgetlab.malloc import tune_malloc
from web.http_protocol import JsonHttpProtocol

HEALTH_TIMEOUT = 60.0
STARTUP_FAILURE = 3  # uvicorn's exit code when the app did not start
# A package's __main__ (client/__main__.py), so that the processes a service spawns do not run the CLI again.
BUDGETLAB = (sys.executable, "-m", "client")
# How often a worker of ``serve --workers N`` looks whether its master is still there, and how long it then has
# to finish the requests in flight before it exits regardless.
MASTER_CHECK_SECONDS = 0.2
ORPHAN_GRACE_SECONDS = 3.0
# "oracle on http://127.0.0.1:8000 (docs at /docs), ledger: ..." -> the URL
ANNOUNCED = re.compile(r"^(?:oracle|learner) on (http://\S+) \(docs at /docs\)")


class ServiceError(RuntimeError):
    """A service could not start: a busy port, a crash, or no answer within the timeout."""


class PortInUse(OSError):
    """The port asked for is taken by another process."""


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port the system picks).

    It is made with ``IPPROTO_TCP``: asyncio sets TCP_NODELAY only on connections accepted from such a socket, and
    without it every small answer waits for the client's delayed ACK (about 40 ms).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} is in use on {host}: stop what listens there or choose another port") \
                from None
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announcement(service: str, sock: socket.socket, more: str = "") -> str:
    """The line a service prints first on stderr, from which ``service`` (below) reads its URL."""
    return f"{service} on {url_of(sock)} (docs at /docs){more}"


@dataclass(frozen=True)
class WorkerApp:
    """The app factory a worker of ``serve --workers N`` runs: it ties the worker's life to its master's first.

    Without that, a master killed with SIGKILL leaves its workers serving as orphans on the shared socket, and
    the service cannot start again on its port.
    """

    factory: str
    master: int

    def __call__(self) -> Any:
        exit_with_master(self.master)
        tune_malloc()
        return import_from_string(self.factory)()


def exit_with_master(master: int) -> None:
    """Once this process's parent is no longer ``master``, stop: SIGTERM (uvicorn's graceful shutdown takes no new
    connection and lets the requests in flight finish), then exit regardless after ``ORPHAN_GRACE_SECONDS``.

    A request cut short by that exit was never answered and its transaction never committed: nothing of it counts.
    """

    def watch() -> None:
        while os.getppid() == master:
            time.sleep(MASTER_CHECK_SECONDS)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(ORPHAN_GRACE_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="master-watch", daemon=True).start()


def serve(app: str, sock: socket.socket, *, workers: int = 1, ws_max_size: int | None = None) -> None:
    """Serve the app factory ``app`` ("module:function") on ``sock`` with uvicorn until it is stopped.

    Several workers share the socket the way ``uvicorn.run`` shares the one it binds (its ``Multiprocess``
    supervisor), each exiting soon after its master if that is killed (``WorkerApp``); one worker serves in this
    process. ``ws_max_size`` bounds a WebSocket message: uvicorn closes the connection (1009) on a larger one
    before reading it.
    """
    tune_malloc()
    host, port = sock.getsockname()[:2]
    factory: str | WorkerApp = WorkerApp(app, os.getpid()) if workers > 1 else app
    more: dict[str, Any] = {} if ws_max_size is None else {"ws_max_size": ws_max_size}
    # No "server: uvicorn" header on every answer (it names the software to any client, and cost 1-2 us a request);
    # the Date header stays (HTTP asks for it).
    config = uvicorn.Config(factory, factory=True, host=host, port=port, workers=workers, log_level="warning",
                            http=JsonHttpProtocol, server_header=False, **more)
    try:
        if workers > 1:
            if "target" in inspect.signature(Multiprocess).parameters:  # uvicorn before the process manager rework
                Multiprocess(config, target=uvicorn.Server(config).run, sockets=[sock]).run()  # type: ignore[call-arg]
            else:
                Multiprocess(config, sockets=[sock]).run()
            return
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        return
    if not server.started:
        sys.exit(STARTUP_FAILURE)


# --- the other side: a service as a subprocess ----------------------------------------------------


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1].removeprefix("error: ") if lines else "no output"


def announced_url(args: Sequence[str], process: subprocess.Popen[bytes], log: Path, deadline: float) -> str:
    what = f"budgetlab {' '.join(args[:2])}"
    while True:
        for line in log.read_text(errors="replace").splitlines():
            found = ANNOUNCED.match(line)
            if found:
                return found.group(1)
        if process.poll() is not None:
            raise ServiceError(f"{what} exited with code {process.returncode}: {_last_line(log)} (log: {log})")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not say where it listens within {HEALTH_TIMEOUT:g} s (log: {log})")
        time.sleep(0.02)


def wait_healthy(url: str, process: subprocess.Popen[bytes] | None, log: Path | None, deadline: float) -> None:
    """Return once ``url`` answers /healthz; raise ``ServiceError`` if ``process`` (None: one served in a thread)
    exits first or ``deadline`` passes."""
    # Here, not at the top: ``budgetlab serve`` imports this module too, and a service process has no use for httpx.
    import httpx

    from budgetlab.service_client import tls_context

    where = "" if log is None else f" (log: {log})"
    # One client for every look (a new one each time builds its TLS settings again: ~45 ms of CPU a look).
    with httpx.Client(timeout=2, verify=tls_context()) as http:
        while True:
            if process is not None and process.poll() is not None:
                said = "" if log is None else f": {_last_line(log)}"
                raise ServiceError(f"{url} exited with code {process.returncode}{said}{where}")
            try:
                if http.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise ServiceError(f"{url} did not answer /healthz in time{where}")
            time.sleep(0.05)


@contextmanager
def service(args: Sequence[str], log: Path, *, port: int | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None, program: Sequence[str] = BUDGETLAB,
            timeout: float = HEALTH_TIMEOUT) -> Iterator[str]:
    """``budgetlab <args> --port PORT`` as a subprocess writing to ``log``; yields its URL once it answers
    ``/healthz``, and stops it after the ``with`` block.

    Without ``port`` the child picks a free port itself (``--port 0``) and says which; ``program`` is how
    ``budgetlab`` is run (default: this interpreter, ``-m client``).
    """
    deadline = time.monotonic() + timeout
    with log.open("w") as sink:
        # A session of its own: Ctrl-C at the terminal reaches only this process, which first cancels its runs on
        # the child (``budgetlab compare``) and then stops it; the child must not die with the keypress.
        process = subprocess.Popen([*program, *args, "--port", str(port or 0)], stdout=sink,
                                   stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=cwd,
                                   start_new_session=True)
        with running(process, args, log, deadline) as url:
            yield url


@contextmanager
def running(process: subprocess.Popen[bytes], args: Sequence[str], log: Path, deadline: float) -> Iterator[str]:
    """A started ``budgetlab serve`` child writing to ``log``: yields the URL it announced once it answers
    ``/healthz`` (before ``deadline``), and stops it after the ``with`` block, killing it if it will not stop."""
    try:
        url = announced_url(args, process, log, deadline)
        wait_healthy(url, process, log, deadline)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM is Ctrl-C: it raises KeyboardInterrupt in the main thread, so a command stopped
    by ``kill`` or a service manager cleans up as on Ctrl-C (its runs cancelled, its child services stopped).
    A second SIGTERM is ignored while that cleanup runs (SIGKILL still ends everything at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def managed_services(out: Path, oracle_port: int | None = None, learner_port: int | None = None, *,
                     announce: Callable[[str], None] | None = None, oracle_env: dict[str, str] | None = None,
                     learner_env: dict[str, str] | None = None) -> Iterator[tuple[str, str, str]]:
    """Oracle (SQLite ledger in ``out``) and learner (its runs in ``out``) as subprocesses, on the given ports or
    on free ones, each with these settings added to its environment; yields (oracle URL, learner URL, ledger URL).
    ``announce`` is told what starts as it starts (each takes a few seconds to answer)."""
    say = announce or (lambda _: None)
    out.mkdir(parents=True, exist_ok=True)
    ledger = f"sqlite:///{(out / 'ledger.db').resolve()}"
    with ExitStack() as stack:
        say(f"starting the oracle (ledger {out / 'ledger.db'}, log {out / 'oracle.log'}) ...")
        oracle = stack.enter_context(service(["serve", "oracle", "--database-url", ledger], out / "oracle.log",
                                             port=oracle_port, env=oracle_env))
        say(f"starting the learner (log {out / 'learner.log'}) ...")
        learner = stack.enter_context(service(["serve", "learner"], out / "learner.log", port=learner_port,
                                              env={**(learner_env or {}), "ORACLE_URL": oracle,
                                                   "LEARNER_DATABASE_URL": f"sqlite:///{(out / 'runs.db').resolve()}"}))
        yield oracle, learner, ledger
