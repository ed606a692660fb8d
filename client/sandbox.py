"""``budgetlab sandbox``: both services on this machine (SQLite ledger), a demo comparison, then serve until Ctrl-C.

``managed_services`` is also what ``budgetlab compare`` uses when it is given no service URLs: the oracle and the
learner run as their own processes (``budgetlab serve ...``), exactly as a user would start them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from rich.console import Console

from client.compare import CompareConfig

HEALTH_TIMEOUT = 60.0

# Hazan & Koren's comparison in miniature, on a Fashion-MNIST pair easy enough that all three learners visibly
# leave the zero predictor within a minute (the MNIST subset has too few images per pair for that).
DEMO = {
    "title": "Sandbox demo: attribute-efficient ridge and lasso (Hazan & Koren 2012 style)",
    "description": "AERR and AELR (Hazan & Koren 2012) against AER (Cesa-Bianchi et al. 2011) with 5 attributes "
                   "per image, and offline ridge with all 784, on Fashion-MNIST trousers vs ankle boots.",
    "dataset": {"name": "fashion-1v9"},
    "budget": {"per_example": 5},
    "seeds": [0, 1],
    "max_examples": 400,
    "eval_every": 40,
    "log_x": True,
    "algorithms": [
        {"id": "aerr", "label": "AERR"},
        {"id": "aelr", "label": "AELR"},
        {"id": "aer", "label": "AER", "per_example": 4},
        {"id": "ridge", "label": "Offline ridge (full information)", "per_example": 784},
    ],
}
DEMO_FALLBACK_DATASET = "digits-1v7"  # where Debian's Fashion-MNIST is not installed


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


def demo_config(examples: int | None = None) -> CompareConfig:
    from budgetlab.datasets import DatasetError, describe

    config = CompareConfig.model_validate({**DEMO, **({"max_examples": examples, "eval_every": max(1, examples // 10)}
                                                      if examples else {})})
    try:
        describe(DEMO["dataset"]["name"])  # type: ignore[index]
    except DatasetError:
        config = config.model_copy(update={"dataset": config.dataset.model_copy(update={  # type: ignore[union-attr]
            "name": DEMO_FALLBACK_DATASET})})
        config.algorithms[-1].per_example = 64
    return config


def run_sandbox(*, demo_only: bool, oracle_port: int, learner_port: int, out: Path, examples: int | None,
                console: Console, fail: Callable[[str], None]) -> None:
    """``budgetlab sandbox``: start, demo, print where everything is, serve until Ctrl-C (or exit with --demo-only)."""
    from client.compare import run_comparison
    from client.report import write_report

    config = demo_config(examples)
    try:
        with managed_services(out, oracle_port, learner_port) as (oracle, learner, ledger):
            console.print(f"oracle  {oracle}  (API docs {oracle}/docs)\nlearner {learner}  (API docs {learner}/docs)"
                          f"\nledger  {ledger}", soft_wrap=True)
            started = time.perf_counter()
            designs, outcomes = run_comparison(config, local=False, learner_url=learner, oracle_url=oracle,
                                               parallel=2, console=console)
            report = write_report(out, config, designs, outcomes, mode=f"sandbox: learner {learner}, oracle {oracle}",
                                  wall_time=time.perf_counter() - started)
            console.print(f"demo report: {report.resolve()}\nresults:     {(out / 'results.json').resolve()}"
                          f"\nAPI docs:    {oracle}/docs and {learner}/docs\nledger:      {ledger}", soft_wrap=True)
            if demo_only:
                return
            console.print("services keep running; Ctrl-C stops them")
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                console.print("stopping")
    except (ServiceError, httpx.TransportError) as exc:
        fail(str(exc))
