"""``make check`` leaves out the tests that start a process or a server, and fails one that does so unmarked
(tests/process_guard.py): run here on a small suite of its own, as make check runs the real one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.process  # it runs pytest as a process of its own

SUITE = '''
import socket
import subprocess

import pytest


@pytest.fixture
def oracle_url():
    return "http://127.0.0.1:1"  # by its name, one of the fixtures that start a service


def test_pure():
    assert sum([1, 2]) == 3


def test_starts_a_process_unmarked():
    subprocess.run(["true"], check=True)


def test_serves_unmarked():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()


@pytest.mark.process
def test_starts_a_process_marked():
    subprocess.run(["true"], check=True)


def test_uses_a_service(oracle_url):
    subprocess.run(["true"], check=True)
'''


def check_run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_small.py").write_text(SUITE)
    env = {**os.environ, "BUDGETLAB_CHECK": mode, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.process_guard", "-m", "not process", "-q",
                           "-p", "no:cacheprovider", "-rA", str(tmp_path / "test_small.py")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)


def test_make_check_fails_an_unmarked_test_that_starts_a_process_or_serves(tmp_path: Path) -> None:
    done = check_run(tmp_path, "1")
    out = done.stdout
    assert done.returncode == 1, out
    assert "PASSED test_small.py::test_pure" in out
    for name, what in (("test_starts_a_process_unmarked", "starts a process"),
                       ("test_serves_unmarked", "listens on a socket")):
        assert f"FAILED test_small.py::{name}" in out
        assert re.search(rf"{name}: it {what}.*mark the test @pytest.mark.process", out), out
    # the marked test and the one using a service's fixture are left out, not failed
    assert "2 failed, 1 passed, 2 deselected" in out, out


def test_without_the_guard_the_same_tests_just_run(tmp_path: Path) -> None:
    done = check_run(tmp_path, "")
    assert done.returncode == 0 and "3 passed, 2 deselected" in done.stdout, done.stdout


def test_make_check_is_lint_types_and_the_unmarked_tests_under_the_guard() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\ncheck:"):].split("\n\n")[0]
    assert "ruff check" in target and "mypy" in target
    assert 'BUDGETLAB_CHECK=1 $(BIN)/python -m pytest -n 2 --dist loadgroup -q -m "not process"' in target
