"""What many tests share and no test should restate: where the checkout and the installed CLI are, the bearer
headers of the services the fixtures start, a new learner caller, and the small datasets most end-to-end tests use.
Fixtures live in tests/conftest.py, the services they start in tests/servers.py."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from budgetlab.service_client import tls_context

ROOT = Path(__file__).resolve().parents[1]
"""The checkout: the project's files (docs, presets, pyproject.toml) as a user's clone has them."""
DATA = Path(__file__).resolve().parent / "data"
"""Files the tests pin (expected weights, ...)."""
BUDGETLAB = str(Path(sys.executable).with_name("budgetlab"))
"""The ``budgetlab`` entry point of this environment, run as its own process where the process is what is tested."""
RUNNER = CliRunner()
"""The ``budgetlab`` command in this process (typer's runner), where the test is not about the process."""

ADMIN_TOKEN = "admin-secret"
"""The admin token of the oracle that tests.servers.oracle_server starts."""

# Small sparse-gaussian sets (the oracle's default dataset): a run on TINY ends within a second; on LONG it runs long
# enough (50,000 examples) to be seen running, cancelled or interrupted.
TINY = {"d": 20, "n_train": 60, "n_test": 30, "s_plus": 3, "s_minus": 2}
LONG = {"d": 20, "n_train": 50_000, "n_test": 30, "s_plus": 3, "s_minus": 2}


def bearer(token: str) -> dict[str, str]:
    """The headers that send ``token`` (a session's, a caller's or the admin's)."""
    return {"Authorization": f"Bearer {token}"}


ADMIN = bearer(ADMIN_TOKEN)


def session_auth(created: dict[str, Any]) -> dict[str, str]:
    """The headers of a session the oracle just created (its POST /v1/sessions answer)."""
    return bearer(created["token"])


def new_caller(learner_url: str) -> tuple[str, dict[str, str]]:
    """A new caller of the learner, its token and headers: its runs are visible to it alone."""
    r = httpx.post(f"{learner_url}/v1/callers", verify=tls_context())
    assert r.status_code == 201, r.text
    token = r.json()["token"]
    return token, bearer(token)


def caller(learner_url: str) -> dict[str, str]:
    """The headers of a new caller of the learner."""
    return new_caller(learner_url)[1]


def run_wide(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory of this test run that every xdist worker shares (their temporary directories' parent)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    shared.mkdir(exist_ok=True)
    return shared


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The directory ``name`` of this test run, filled by ``make`` once whichever xdist worker asks first (under a
    file lock; the others wait, then read it): a comparison that several tests read, on either worker, runs once."""
    shared = run_wide(tmp_path_factory, "made-once")
    made = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (shared / f"{name}.done").exists():
            shutil.rmtree(made, ignore_errors=True)  # what a failed attempt left
            made.mkdir()
            make(made)
            (shared / f"{name}.done").touch()
    return made


def in_process(app: Any, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request to an ASGI ``app`` in this process (httpx's ASGI transport: no server, no socket; the client's
    address is 127.0.0.1), a bug's 500 included. For what a server adds (streams, slow clients), serve it
    (tests.servers.serve_in_thread)."""

    async def one() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(one())
