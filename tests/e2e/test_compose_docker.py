"""docker-compose.yml for real: the image built from the Dockerfile, the stack brought up with three Dask workers
(``--scale worker=3``), the demo run to its end, its report read, the learner's runs found on the workers and every
session of the oracle's ledger audited compliant by the oracle.

It takes minutes (the image's install step), so it is not part of ``make test``: ``.ci/run`` runs it after, with
``BUDGETLAB_DOCKER_TEST=1``, once ``.ci/docker-stand-ins.sh`` has started dockerd (and, where Docker Hub is out of
reach, built the base images locally). Without ``BUDGETLAB_DOCKER_TEST=1`` it is skipped, saying why; with it, a
Docker engine that does not answer is a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
from client.services import listen
from tests.helpers import ROOT, bearer

WORKERS = 3
ADMIN = secrets.token_urlsafe(16)


def compose_program() -> list[str] | None:
    """``docker compose`` (the plugin) or ``docker-compose`` (the standalone one), whichever is installed."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    return [found] if found else None


def docker_answers() -> bool:
    return bool(shutil.which("docker")) and subprocess.run(["docker", "info"], capture_output=True).returncode == 0


if os.environ.get("BUDGETLAB_DOCKER_TEST") != "1":
    pytestmark = pytest.mark.skip(reason="the compose test runs with BUDGETLAB_DOCKER_TEST=1 (.ci/run runs it after "
                                         "make test, with dockerd started)"
                                         + ("" if docker_answers() else "; no Docker engine answers here"))


def free_port() -> int:
    with listen("127.0.0.1", 0) as sock:
        return int(sock.getsockname()[1])


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[list[str], Path, str]]:
    """The compose project, up with three workers, in a directory of its own (its ./reports); the compose command,
    the reports directory and the oracle's URL on the host. Taken down with its volume afterwards."""
    program = compose_program()
    assert program is not None and docker_answers(), "BUDGETLAB_DOCKER_TEST=1 but no Docker engine or compose answers"
    # The image the compose file names, built from this checkout (compose builds relative to its project directory,
    # which is the test's own, so that the demo's ./reports lands there and not in the checkout).
    built = subprocess.run(["docker", "build", "-q", "-t", "budgetlab:latest", str(ROOT)], capture_output=True,
                           text=True, timeout=3600)
    assert built.returncode == 0, built.stdout + built.stderr
    oracle_port, learner_port = free_port(), free_port()
    env = {**os.environ, "BUDGETLAB_ORACLE_PORT": str(oracle_port), "BUDGETLAB_LEARNER_PORT": str(learner_port),
           "BUDGETLAB_ADMIN_TOKEN": ADMIN}
    compose = [*program, "-f", str(ROOT / "docker-compose.yml"), "--project-directory", str(tmp_path),
               "-p", f"budgetlab-test-{secrets.token_hex(4)}"]
    try:
        up = subprocess.run([*compose, "up", "-d", "--no-build", "--scale", f"worker={WORKERS}"], env=env,
                            capture_output=True, text=True, timeout=900)
        assert up.returncode == 0, up.stdout + up.stderr
        yield compose, tmp_path / "reports", f"http://127.0.0.1:{oracle_port}"
    finally:
        logs = subprocess.run([*compose, "logs", "--no-color"], env=env, capture_output=True, text=True, timeout=120)
        (tmp_path / "compose.log").write_text(logs.stdout + logs.stderr)
        subprocess.run([*compose, "down", "-v", "--remove-orphans"], env=env, capture_output=True, timeout=300)


def compose_out(compose: list[str], *args: str, timeout: float = 300) -> str:
    done = subprocess.run([*compose, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


RUNS_PER_WORKER = """
import json
from learner.cluster import RunPool
with RunPool(scheduler="tcp://scheduler:8786") as pool:
    print(json.dumps(pool.executed()))
"""


@pytest.mark.timeout(3600)  # the image's build (minutes, more on a first build), the stack's start, the demo
def test_compose_up_with_three_workers_runs_the_demo_on_them(stack: tuple[list[str], Path, str]) -> None:
    compose, reports, oracle = stack
    (demo,) = compose_out(compose, "ps", "-q", "demo").split()
    exited = subprocess.run(["docker", "wait", demo], capture_output=True, text=True, timeout=1800)
    logs = compose_out(compose, "logs", "--no-color", "demo")
    assert exited.stdout.strip() == "0", logs

    # The demo's report: every run completed (the full-information ridges spend their budget) and its session was
    # audited compliant.
    results = json.loads((reports / "sandbox-demo" / "results.json").read_text())
    runs = [r for design in results["designs"] for a in design["algorithms"] for r in a["runs"]]
    assert runs and all(r["result"]["status"] in COMPLETED_RUN_STATUSES for r in runs), [r["result"] for r in runs]
    assert all(r["audit_compliant"] is True for r in runs)
    assert (reports / "sandbox-demo" / "report.md").exists()

    # The learner sent them to the three workers of the scheduler, more than one of them at work.
    executed = json.loads(compose_out(compose, "exec", "-T", "learner", "python", "-c", RUNS_PER_WORKER))
    assert len(executed) == WORKERS, executed
    assert sum(executed.values()) == len(runs) and sum(n > 0 for n in executed.values()) > 1, executed

    # The oracle's own audit of every session in its ledger (the demo's training and test sessions).
    listed = httpx.get(f"{oracle}/v1/dashboard/sessions", params={"limit": 500},
                       headers=bearer(ADMIN), timeout=120).json()
    sessions = listed["sessions"]
    assert listed["admin"] and len(sessions) >= len(runs)
    assert all(s["audit"]["compliant"] is True for s in sessions), [s["audit"] for s in sessions]
