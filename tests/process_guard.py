"""``make check``'s promise, kept: the tests it runs start no process and no server.

Tests that start one carry the ``process`` mark, which ``make check`` leaves out (``-m "not process"``). Most get it
from what they use: a fixture of ``PROCESS_FIXTURES`` (an oracle or a learner served on a port, a PostgreSQL
database, the test run's Dask cluster) anywhere in their fixtures' closure. The others are marked in their module
(``pytestmark``) or on the test.

Under ``BUDGETLAB_CHECK=1`` (``make check``) a test that starts a process (``subprocess``, ``multiprocessing``,
``os.fork``) or listens on a socket anyway fails with a message that says to mark it, so a mark forgotten is found by
the loop itself, not by its time. Under ``BUDGETLAB_CHECK=record`` such tests are appended instead to the file
``BUDGETLAB_CHECK_RECORD`` names (to mark a batch of them). Otherwise this plugin only marks.
"""

from __future__ import annotations

import _posixsubprocess
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# Fixtures that start a service, a database or a cluster (tests/conftest.py, tests/servers.py).
PROCESS_FIXTURES = frozenset({
    "oracle_url", "shared_oracle_url", "learner_url", "postgres_url", "shared_cluster",
    # the test modules' own
    "browser", "cluster", "ext4", "fuzz_target", "learner", "learner_and_reports", "limited_oracle", "oracle", "pool",
    "refusing", "remote", "sandbox", "served", "services", "site", "site_url", "tmpfs", "with_process", "written",
})
MODE = os.environ.get("BUDGETLAB_CHECK", "")
MARK = "process"

_current: list[str] = []  # the test being set up, run or torn down, if any
_fixtures: list[str] = []  # the fixtures being set up, innermost last


def _guarded(what: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def guard(*args: Any, **kwargs: Any) -> Any:
        if _current:
            where = f"its fixture {_fixtures[-1]!r}" if _fixtures else "it"
            if MODE == "record":
                with open(os.environ["BUDGETLAB_CHECK_RECORD"], "a") as out:
                    out.write(f"{_current[0]}\t{_fixtures[-1] if _fixtures else ''}\t{what}\n")
            else:
                raise RuntimeError(f"{_current[0]}: {where} {what}, and make check runs only tests that start no "
                                   f"process and no server: mark the test @pytest.mark.{MARK}, or name the fixture "
                                   "in PROCESS_FIXTURES (tests/process_guard.py)")
        return original(*args, **kwargs)

    return guard


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}: starts a process or a server (make check leaves it out)")
    if MODE not in ("1", "record"):
        return
    # subprocess (which keeps its own reference) and multiprocessing's spawn and forkserver start a child through
    # fork_exec.
    _posixsubprocess.fork_exec = _guarded("starts a process", _posixsubprocess.fork_exec)  # type: ignore[attr-defined]
    subprocess._fork_exec = _guarded("starts a process", subprocess._fork_exec)  # type: ignore[attr-defined]
    os.fork = _guarded("forks", os.fork)
    os.posix_spawn = _guarded("starts a process", os.posix_spawn)
    socket.socket.listen = _guarded("listens on a socket (serves)", socket.socket.listen)  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(MARK)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    _current.append(item.nodeid)
    try:
        yield
    finally:
        _current.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[None]:
    _fixtures.append(fixturedef.argname)
    try:
        yield
    finally:
        _fixtures.pop()
