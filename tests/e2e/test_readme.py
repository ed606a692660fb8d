"""The README's five minutes as a new user lives them (#34 item 5): ``budgetlab sandbox`` (what ``make sandbox``
runs) on its default ports, 8000 and 8001, then every block of the README in order and as written, from a second
shell in the same folder: the curl flow on ``localhost:8000`` and step 4's comparison with ``--oracle
http://localhost:8000 --learner http://localhost:8001``, the URLs the README gives, not the ``127.0.0.1`` the sandbox
prints. test_docs_snippets runs the same blocks against services on free ports, their addresses put in the README's
place, which is how step 4 as written went unnoticed.

No other test listens on 8000 or 8001 (tests take free ports; test_docs_snippets never uses these two, where a
developer's sandbox may run); where something else holds them, on IPv4 or IPv6 loopback (``localhost`` is both),
this test is skipped and says so.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetlab.service_client import tls_context
from tests.e2e.test_docs_snippets import blocks, script
from tests.helpers import ROOT, bearer
from tests.servers import shared_cluster_env

PORTS = (8000, 8001)
ORACLE, LEARNER = "http://127.0.0.1:8000", "http://127.0.0.1:8001"
# The demo's runs see 20 examples instead of 1,000: the README's blocks are what is tested, and they run whole.
DEMO_EXAMPLES = "20"
STARTUP_SECONDS = 180


def taken(port: int) -> str | None:
    """Why ``port`` cannot be the sandbox's on this machine's loopback, or None when it is free."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} is in use on {host} (a sandbox of yours?)"
            if family == socket.AF_INET:
                return f"cannot listen on {host}:{port}: {exc}"
            # no IPv6 loopback here: localhost is 127.0.0.1 only
    return None


class Sandbox:
    """``budgetlab sandbox`` as a process, its output collected as it comes."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        budgetlab = Path(sys.executable).with_name("budgetlab")
        self.process = subprocess.Popen([str(budgetlab), "sandbox", "--examples", DEMO_EXAMPLES], cwd=cwd, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, words: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while words not in self.text:
            assert self.process.poll() is None, f"the sandbox exited ({self.process.returncode}):\n{self.text}"
            assert time.monotonic() < deadline, f"the sandbox did not print {words!r} in {seconds:.0f} s:\n{self.text}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.reader.join(timeout=5)


@pytest.fixture
def sandbox(tmp_path: Path, _dataset_cache: Path) -> Iterator[tuple[Sandbox, Path, dict[str, str]]]:
    """The sandbox on its default ports in a fresh folder, with the environment of the reader's second shell."""
    busy = [why for why in map(taken, PORTS) if why]
    if busy:
        pytest.skip(f"the README's sandbox listens on ports 8000 and 8001: {'; '.join(busy)}")
    work = tmp_path / "work"
    (work / ".shims").mkdir(parents=True)
    (work / ".venv").symlink_to(sys.prefix)  # the README's `. .venv/bin/activate`: this interpreter's
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("BUDGETLAB_LEARNER_TOKEN", "BUDGETLAB_TOKEN", "BUDGETLAB_ADMIN_TOKEN",
                                  "BUDGETLAB_LEARNER_ADMIN_TOKEN", "ORACLE_URL", "LEARNER_URL", "PYTEST_",
                                  "VIRTUAL_ENV"))}
    env.update(MPLBACKEND="Agg", BUDGETLAB_DATA_DIR=str(work / "data"), BUDGETLAB_CACHE_DIR=str(_dataset_cache),
               COLUMNS="200")
    # The sandbox's learner runs on the test process's Dask cluster rather than starting one of its own.
    started = Sandbox(work, {**env, **shared_cluster_env()})
    try:
        started.wait_for("services keep running", STARTUP_SECONDS)
        yield started, work, env
    finally:
        started.stop()


def test_the_readme_runs_as_written_against_the_sandbox_on_its_default_ports(
        sandbox: tuple[Sandbox, Path, dict[str, str]], tmp_path: Path) -> None:
    started, work, env = sandbox
    page = blocks(ROOT / "README.md")
    assert [b.marker for b in page].count("services") == 1 and page[0].marker == "services"  # make sandbox, make test
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed: the README's step 3 uses it")
    shim = work / ".shims" / "curl"
    shim.write_text(f"#!/bin/sh\nexec '{curl}' --fail-with-body \"$@\"\n")  # a refusal fails, as in test_docs_snippets
    shim.chmod(0o755)
    env = {**env, "PATH": f"{work / '.shims'}:{Path(sys.executable).parent}:{env.get('PATH', '')}"}
    (tmp_path / "readme.sh").write_text(script(page, None, None))  # no address replaced: the README's own
    done = subprocess.run(["bash", str(tmp_path / "readme.sh")], cwd=work, env=env, capture_output=True, text=True,
                          timeout=240, start_new_session=True)
    assert done.returncode == 0, f"--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"
    ran = re.findall(r"^>>> (README\.md:\d+) ", done.stderr, flags=re.M)
    assert ran == [block.where for block in page if block.runs]

    # The sandbox printed step 4's command for its own URLs.
    assert (f"budgetlab compare my-comparison.toml --oracle {ORACLE} --learner {LEARNER} --out my-comparison"
            in started.text), started.text
    # Step 4 wrote its report, its runs went through the sandbox's learner to the oracle as the learner knows it.
    report = (work / "my-comparison" / "report.md").read_text()
    assert "DDAERR below AERR at the end" in report
    # Five seeds decide its claim, as the README says: a paired test with its p-value, not an indicative reading.
    (claim,) = json.loads((work / "my-comparison" / "results.json").read_text())["claims"]
    assert claim["verdict"] in ("holds", "fails", "inconclusive") and claim["seeds"] == 5, claim
    assert claim["p_value"] is not None and "5 seeds, " in claim["ours"]
    token = re.search(r"learner page: +http://127\.0\.0\.1:8001/#token=([\w-]+)", started.text)
    assert token, started.text
    with httpx.Client(base_url=LEARNER, timeout=30, verify=tls_context()) as http:
        runs = http.get("/v1/runs", params={"limit": 100}, headers=bearer(token[1])).json()["runs"]
        # The page lists every run: the demo's five, and the comparison's fifteen (3 algorithms x 5 seeds), made
        # with a caller token of its own.
        ours = [r for r in runs if r["dataset"] == "mnist-3v5"]
        assert len(runs) == 20 and sorted(r["algorithm"] for r in ours) == sorted(["aerr", "ddaerr", "ridge"] * 5), runs
        assert {r["status"] for r in ours} <= {"finished", "budget_exhausted"}
        one = http.get(f"/v1/runs/{ours[0]['id']}", headers=bearer(token[1])).json()
        assert one["request"]["oracle_url"] == ORACLE, "the run uses the oracle as the learner was given it"
        listed = http.get("/v1/dashboard/comparisons").json()["reports"]
        assert {r["name"] for r in listed} == {"sandbox-report", "my-comparison"}
