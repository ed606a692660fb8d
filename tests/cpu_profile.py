"""CPU seconds per test, where wall time misleads (the cores are shared): ``pytest -p tests.cpu_profile``.

Each test's setup, call and teardown are charged the CPU time of the xdist worker (all its threads: the services a
test serves in a thread) and of the child processes it waited for (the ``budgetlab`` processes it started). At the
end the slowest tests are printed, by CPU and by wall time; ``BUDGETLAB_CPU_PROFILE=path`` also appends every test's
figures there as JSON lines as it ends (a run stopped half way keeps what it measured). Not a test: a measuring
tool, never loaded by ``make test``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

import pytest

_RECORDS: list[dict[str, Any]] = []


def _keep(record: dict[str, Any]) -> None:
    _RECORDS.append(record)
    path = os.environ.get("BUDGETLAB_CPU_PROFILE")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def _cpu() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


_STARTED: dict[str, tuple[float, float]] = {}


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _STARTED[nodeid] = (_cpu(), time.perf_counter())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if call.when != "teardown" or item.nodeid not in _STARTED:
        return
    cpu, wall = _STARTED.pop(item.nodeid)
    record = {"test": item.nodeid, "cpu": round(_cpu() - cpu, 3), "wall": round(time.perf_counter() - wall, 3),
              "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    outcome.get_result().user_properties.append(("cpu_profile", record))
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        _keep(record)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under xdist the controller sees the workers' records through their reports.
    if report.when == "teardown" and os.environ.get("PYTEST_XDIST_WORKER") is None and hasattr(report, "node"):
        for name, record in report.user_properties:
            if name == "cpu_profile":
                _keep(record)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is not None or not _RECORDS:
        return
    write = terminalreporter.write_line
    total_cpu = sum(r["cpu"] for r in _RECORDS)
    total_wall = sum(r["wall"] for r in _RECORDS)
    write(f"cpu profile: {len(_RECORDS)} tests, {total_cpu:.1f} CPU s, {total_wall:.1f} wall s summed over tests")
    by_file: dict[str, list[float]] = {}
    for r in _RECORDS:
        figures = by_file.setdefault(r["test"].split("::")[0], [0.0, 0.0])
        figures[0] += r["cpu"]
        figures[1] += r["wall"]
    write("files by CPU s (wall s):")
    for name, (cpu, wall) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:25]:
        write(f"  {cpu:7.1f} ({wall:7.1f})  {name}")
    write("tests by CPU s (wall s):")
    for r in sorted(_RECORDS, key=lambda r: -r["cpu"])[:30]:
        write(f"  {r['cpu']:7.1f} ({r['wall']:7.1f})  {r['test']}")
