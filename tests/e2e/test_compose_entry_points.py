"""docker-compose.yml's services run without Docker: the same commands and environment against a real
PostgreSQL, with the compose hostnames mapped to loopback and the services (the Dask scheduler and one worker among
them) on free ports they bind themselves.
Docker itself is validated in test_docker_files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
import yaml

from client.services import running
from tests.helpers import BUDGETLAB, ROOT

# Deadlines of the steps, all inside the suite's per-test timeout (pyproject.toml): a service answers /healthz in
# about 2 s; the sandbox's demo ran in about 90 s on 2 cores under a load average of 10.
STARTUP_TIMEOUT = 60.0
DEMO_TIMEOUT = 180.0
DEMO_EXAMPLES_HERE = 50

pytestmark = pytest.mark.postgres


def localised(command: list[str], hosts: dict[str, str]) -> list[str]:
    """The words of a compose command or value, its variables at their defaults (as compose fills them when they
    are unset: ``${NAME:-default}``) and its hosts mapped; its program this environment's."""
    out = []
    for word in command:
        word = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", word)
        for compose_host, local in hosts.items():
            word = word.replace(compose_host, local)
        out.append(word)
    programs = {"budgetlab": BUDGETLAB, "dask": str(Path(BUDGETLAB).with_name("dask"))}
    return [programs.get(out[0], out[0]), *out[1:]]


def tail(log: Path, lines: int = 40) -> str:
    return f"--- {log.name} ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def service(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> Iterator[str]:
    """The service's command as written but on ``--port 0``: it binds a free port itself and announces its URL (no
    free-port-then-bind race). Its output goes to ``log``, never to a pipe nobody reads."""
    command = [*command]
    command[command.index("--port") + 1] = "0"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with log.open("w") as sink:
        process = subprocess.Popen(command, env={**os.environ, **env}, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
        with running(process, command[1:3], log, deadline) as url:
            yield url


@contextmanager
def dask_scheduler(command: list[str], cwd: Path, log: Path) -> Iterator[str]:
    """The scheduler's command as written but on ``--port 0``; yields the address it announces."""
    command = [*command]
    command[command.index("--port") + 1] = "0"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
        try:
            while not (found := re.search(r"Scheduler at:\s+(tcp://\S+)", log.read_text(errors="replace"))):
                assert process.poll() is None and time.monotonic() < deadline, tail(log)
                time.sleep(0.2)
            yield found[1]
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextmanager
def dask_worker(command: list[str], cwd: Path, log: Path) -> Iterator[None]:
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_compose_services_run_as_written_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    pg = postgres_url.removeprefix("postgresql://")  # user@host:port/db of a fresh database
    hosts = {
        "budgetlab:budgetlab@postgres:5432/budgetlab": pg,
        "0.0.0.0": "127.0.0.1",
        "/reports": str(tmp_path / "reports"),
    }

    def spec(name: str) -> tuple[list[str], dict[str, str]]:
        command = localised(compose[name]["command"], hosts)
        env = {k: localised(["x", str(v)], hosts)[1] for k, v in (compose[name].get("environment") or {}).items()}
        return command, env

    logs = [tmp_path / "oracle.log", tmp_path / "learner.log", tmp_path / "scheduler.log", tmp_path / "worker.log"]
    with ExitStack() as stack:
        # In compose's order (each waits for the one before it to be healthy), each told where the others listen.
        hosts["tcp://scheduler:8786"] = stack.enter_context(dask_scheduler(spec("scheduler")[0], tmp_path, logs[2]))
        worker_cmd, _ = spec("worker")
        assert hosts["tcp://scheduler:8786"] in worker_cmd
        stack.enter_context(dask_worker(worker_cmd, tmp_path, logs[3]))
        oracle_cmd, oracle_env = spec("oracle")
        assert oracle_env["DATABASE_URL"].startswith("postgresql+psycopg://") and pg in oracle_env["DATABASE_URL"]
        hosts["http://oracle:8000"] = stack.enter_context(service(oracle_cmd, oracle_env, tmp_path, logs[0]))
        learner_cmd, learner_env = spec("learner")
        assert learner_env["ORACLE_URL"] == hosts["http://oracle:8000"]
        assert learner_env["BUDGETLAB_SCHEDULER"] == hosts["tcp://scheduler:8786"]  # its runs go to the worker
        hosts["http://learner:8001"] = stack.enter_context(service(learner_cmd, learner_env, tmp_path, logs[1]))
        demo_cmd, demo_env = spec("demo")
        assert hosts["http://oracle:8000"] in demo_cmd and hosts["http://learner:8001"] in demo_cmd
        # The demo as written, on DEMO_EXAMPLES_HERE images a run instead of its 1,000: what this test checks is the
        # wiring (hosts, database, scheduler, the shared reports folder), which the size does not touch, and the
        # 1,000-image runs cost ~30 CPU-s more through the services (test_sandbox checks the demo's report itself).
        demo_cmd += ["--examples", str(DEMO_EXAMPLES_HERE)]
        done = subprocess.run(demo_cmd, env={**os.environ, **demo_env, "COLUMNS": "200"}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=DEMO_TIMEOUT)
        assert done.returncode == 0, "\n".join([done.stdout, done.stderr, *map(tail, logs)])
        # The learner lists the report the demo wrote into the folder they share (a volume in compose).
        listed = httpx.get(f"{hosts['http://learner:8001']}/v1/dashboard/comparisons").json()["reports"]
        assert [r["name"] for r in listed] == ["sandbox-demo"]

    reports = tmp_path / "reports" / "sandbox-demo"
    results = json.loads((reports / "results.json").read_text())
    assert (reports / "report.md").exists() and list(reports.glob("*.png"))
    assert "compliant" in (reports / "report.md").read_text()
    # The sandbox's demo, with its headline, on the image's Fashion-MNIST; page links for a browser on the host.
    assert results["config"]["dataset"]["name"] == "fashion-1v9" and results["fallback"] is None
    assert results["headline"][-1].startswith("Claims: ") and results["headline"][-1] in done.stdout
    assert "learner page: http://localhost:8001/#token=" in done.stdout
    assert not (tmp_path / "budgetlab-ledger.db").exists(), "the oracle fell back to SQLite"
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("select version_num from alembic_version").fetchone()
        sessions = conn.execute("select count(*) from sessions").fetchone()[0]
        observed = conn.execute("select count(*) from links where kind = 'observe'").fetchone()[0]
    assert version is not None, "the oracle did not migrate the database"
    assert sessions >= 1 and observed > 0
    assert "runs" in results or "designs" in results
