"""The oracle and the learner as subprocesses of this machine (``budgetlab serve ...``), exactly as a user starts
them: ``managed_services`` is what ``budgetlab sandbox`` and ``budgetlab compare`` (given no service URLs) run on.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

HEALTH_TIMEOUT = 60.0


class ServiceError(RuntimeError):
    """A service could not start: a busy port, a crash, or no health within the timeout."""


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def service(args: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """``budgetlab <args> --port PORT`` as a subprocess, healthy on exit from the ``with`` line, stopped after."""
    if not port_free(port):
        raise ServiceError(f"port {port} is in use: stop what listens there or choose another port")
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as sink:
        process = subprocess.Popen([sys.executable, "-m", "client.cli", *args, "--port", str(port)],
                                   stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        try:
            wait_healthy(url, process, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            lines = log.read_text().strip().splitlines()
            raise ServiceError(f"{' '.join(process.args[3:5])} exited with code {process.returncode}: "  # type: ignore[index]
                               + (lines[-1] if lines else "no output") + f" (log: {log})")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise ServiceError(f"{url} did not answer /healthz within {HEALTH_TIMEOUT:g} s (log: {log})")


@contextmanager
def managed_services(out: Path, oracle_port: int | None = None,
                     learner_port: int | None = None) -> Iterator[tuple[str, str, str]]:
    """Oracle (SQLite ledger in ``out``) and learner as subprocesses; yields (oracle URL, learner URL, ledger URL)."""
    out.mkdir(parents=True, exist_ok=True)
    ledger = f"sqlite:///{(out / 'ledger.db').resolve()}"
    with ExitStack() as stack:
        oracle = stack.enter_context(service(["serve", "oracle", "--database-url", ledger],
                                             oracle_port or free_port(), out / "oracle.log"))
        learner = stack.enter_context(service(["serve", "learner"], learner_port or free_port(), out / "learner.log",
                                              env={"ORACLE_URL": oracle}))
        yield oracle, learner, ledger
