"""Real services for end-to-end tests: uvicorn on loopback, ephemeral ports, talked to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn


def bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def free_port() -> int:
    with bound_socket() as sock:
        return sock.getsockname()[1]


def wait_healthy(url: str, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the service at {url} exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not become healthy")


@contextmanager
def serve_in_thread(app) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Serve an ASGI app with a real uvicorn server on a pre-bound loopback socket (no port race)."""
    sock = bound_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def oracle_server(database_url: str) -> Iterator[str]:
    from server.app import create_app
    from server.config import Settings

    with serve_in_thread(create_app(Settings(database_url=database_url, admin_token="admin-secret"))) as url:
        yield url


@contextmanager
def learner_server() -> Iterator[str]:
    from learner.service import create_app

    with serve_in_thread(create_app()) as url:
        yield url


@contextmanager
def cli_service(args: list[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None,
                timeout: float = 90.0) -> Iterator[str]:
    """Start ``budgetlab <args> --port PORT`` as its own process (the entry point users run)."""
    budgetlab = Path(sys.executable).with_name("budgetlab")
    process = subprocess.Popen([str(budgetlab), *args, "--port", str(port)], env={**os.environ, **(env or {})},
                               cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, timeout, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
