"""docker-compose.yml's services run without Docker: the same commands and environment against a real
PostgreSQL, with the compose hostnames mapped to loopback. Docker itself is validated in test_docker_files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.servers import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
BUDGETLAB = str(Path(sys.executable).with_name("budgetlab"))

pytestmark = pytest.mark.postgres


def localised(command: list[str], hosts: dict[str, str]) -> list[str]:
    out = []
    for word in command:
        for compose_host, local in hosts.items():
            word = word.replace(compose_host, local)
        out.append(word)
    return [BUDGETLAB if out[0] == "budgetlab" else out[0], *out[1:]]


@contextmanager
def service(command: list[str], env: dict[str, str], url: str, cwd: Path) -> Iterator[str]:
    process = subprocess.Popen(command, env={**os.environ, **env}, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, 90, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_compose_services_run_as_written_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    oracle_port, learner_port = free_port(), free_port()
    pg = postgres_url.removeprefix("postgresql://")  # user@host:port/db of a fresh database
    hosts = {
        "budgetlab:budgetlab@postgres:5432/budgetlab": pg,
        "http://oracle:8000": f"http://127.0.0.1:{oracle_port}",
        "http://learner:8001": f"http://127.0.0.1:{learner_port}",
        "0.0.0.0": "127.0.0.1",
        "/reports": str(tmp_path / "reports"),
    }

    def spec(name: str, port: int | None) -> tuple[list[str], dict[str, str]]:
        command = localised(compose[name]["command"], hosts)
        if port is not None:
            command[command.index("--port") + 1] = str(port)
        env = {k: localised(["x", str(v)], hosts)[1] for k, v in (compose[name].get("environment") or {}).items()}
        return command, env

    oracle_cmd, oracle_env = spec("oracle", oracle_port)
    learner_cmd, learner_env = spec("learner", learner_port)
    demo_cmd, demo_env = spec("demo", None)
    assert oracle_env["DATABASE_URL"].startswith("postgresql+psycopg://") and pg in oracle_env["DATABASE_URL"]
    assert learner_env["ORACLE_URL"] == f"http://127.0.0.1:{oracle_port}"

    with ExitStack() as stack:
        stack.enter_context(service(oracle_cmd, oracle_env, f"http://127.0.0.1:{oracle_port}", tmp_path))
        stack.enter_context(service(learner_cmd, learner_env, f"http://127.0.0.1:{learner_port}", tmp_path))
        done = subprocess.run(demo_cmd, env={**os.environ, **demo_env}, cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    reports = tmp_path / "reports"
    results = json.loads((reports / "results.json").read_text())
    assert (reports / "report.md").exists() and list(reports.glob("*.png"))
    assert "compliant" in (reports / "report.md").read_text()
    assert not (tmp_path / "budgetlab-ledger.db").exists(), "the oracle fell back to SQLite"
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("select version_num from alembic_version").fetchone()
        sessions = conn.execute("select count(*) from sessions").fetchone()[0]
        observed = conn.execute("select count(*) from ledger where kind = 'observe'").fetchone()[0]
    assert version is not None, "the oracle did not migrate the database"
    assert sessions >= 1 and observed > 0
    assert "runs" in results or "designs" in results
