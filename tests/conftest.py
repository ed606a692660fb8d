from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from threadpoolctl import threadpool_limits

from budgetlab.service_client import tls_context
from learner.cluster import SCHEDULER_ENV
from tests.helpers import DATA, run_wide
from tests.ito_runs import LongRun, shared_long_runs
from tests.servers import close_shared_scheduler, learner_server, oracle_server, shared_scheduler

# make check's mark and guard: the tests that start a process or a server are marked, and it leaves them out.
pytest_plugins = ["tests.process_guard"]

# Each xdist worker, and each service a test starts, is one of several processes sharing the cores: a BLAS that
# spreads one product over every core then spins against the others (a 784 x 784 eigvalsh took 3.7 s instead of
# 0.15 s). One BLAS thread per process, here and in the processes tests start (they inherit the environment).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
threadpool_limits(1)
# Under PYTHONDONTWRITEBYTECODE (Docker images and CI runners set it) every process compiles the project's 23,000
# lines from source again, and each xdist worker rewrites and compiles every test module again: the two workers and
# the hundreds of processes the tests start (``budgetlab`` commands, services, Dask workers), 0.3-1 CPU s each.
# The test run writes bytecode as Python does by default, in the __pycache__ directories (.gitignore), so that it is
# compiled once. Set here, in the controller, before the xdist workers start (they and the processes the tests start
# inherit the environment).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False


# Each file's seconds in a whole run (tests/data/file_seconds.json, from a run's -p tests.cpu_profile figures): the
# xdist workers take tests in collection order, one at a time as they finish, so the longest files go first and the
# run ends on short tests, not on a worker alone with a minute-long one while the other has nothing left. A file's
# tests stay together and in their order (its module fixtures start once per worker); a file not listed keeps its
# place after them.
FILE_SECONDS: dict[str, float] = json.loads((DATA / "file_seconds.json").read_text())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: -FILE_SECONDS.get(item.nodeid.split("::")[0], 0))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup`` (``make test``), a test file is one unit of work, given whole to one xdist worker:
    dealt one test at a time, 59 of 78 files ran on both workers, each starting the file's module fixtures (an
    oracle, a learner and its Dask client, a pair of ``budgetlab serve`` processes) and waiting on the other for a
    comparison ``made_once``. Files go out in collection order, the longest first (``pytest_collection_modifyitems``),
    not reordered by their number of tests. An ``xdist_group`` mark still makes its tests one unit, if pytest ever
    passes it on again (with pytest 9.2 xdist no longer sees it: pytest-xdist issue 1386)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return nodeid.split("::", 1)[0] if scope == nodeid else scope

    config.option.loadscopereorder = False
    return FileScheduling(config, log)


PINNED_FILES = {"tests/learner/algorithms/test_pinned_weights.py": "pinned_weights.json",
                "tests/learner/algorithms/test_defaults_theory.py": "theory_weights.json"}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how the weights pinned on another machine were compared on this one (learner/reproducibility.py): bit for
    bit on the floating-point platform they were recorded on, within 1e-12 of the largest weight elsewhere."""
    reports = [report for kind in ("passed", "failed") for report in terminalreporter.stats.get(kind, [])]
    ran = {report.nodeid.split("::")[0] for report in reports if hasattr(report, "nodeid")}
    files = [name for path, name in PINNED_FILES.items() if path in ran]
    if not files:
        return
    from learner.reproducibility import RELATIVE_TOLERANCE, float_platform

    here = float_platform()
    for name in files:
        recorded = json.loads((DATA / name).read_text())["platform"]
        how = "bit for bit" if recorded == here else f"within {RELATIVE_TOLERANCE:g} of the largest weight"
        terminalreporter.write_line(f"{name}: compared {how} (recorded on {recorded['blas']}, numpy "
                                    f"{recorded['numpy']} {recorded['numpy_simd']}; this machine {here['blas']}, "
                                    f"numpy {here['numpy']} {here['numpy_simd']})")


@pytest.fixture(scope="session", autouse=True)
def _dataset_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # Parsed datasets go to one cache of the test run, never the developer's: both xdist workers and the processes
    # tests start (they inherit it) read what the first of them parsed, as a user's commands share their cache (it is
    # safe when two processes build an entry at once: tests/ground/test_dataset_cache.py).
    cache = run_wide(tmp_path_factory, "dataset-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BUDGETLAB_CACHE_DIR", str(cache))
        yield cache


@pytest.fixture(scope="session", autouse=True)
def _shared_scheduler() -> Iterator[None]:
    # The Dask cluster of the learners this test process started, if any (tests.servers.shared_scheduler).
    yield
    close_shared_scheduler()


@pytest.fixture
def shared_cluster(monkeypatch: pytest.MonkeyPatch) -> str:
    """The comparisons and learners the test starts, in this process or as ``budgetlab`` processes, run on this test
    process's Dask cluster (``BUDGETLAB_SCHEDULER``, the setting a lab points them at its cluster with) instead of
    starting a LocalCluster each: seconds of CPU a cluster, its worker processes importing numpy and budgetlab.
    For a test that starts ``compare --local`` or a learner of its own (``compare --learner URL`` refuses a
    scheduler); a module fixture passes ``tests.servers.shared_cluster_env()`` instead. A test about the
    LocalCluster itself, or whose ``--local`` runs read user datasets or plugins installed as it goes (the workers
    keep the environment they started with), starts its own."""
    address = shared_scheduler()
    monkeypatch.setenv(SCHEDULER_ENV, address)
    return address


@pytest.fixture(autouse=True)
def _data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # User datasets go to a per-test directory, never the developer's working directory.
    monkeypatch.setenv("BUDGETLAB_DATA_DIR", str(tmp_path_factory.mktemp("data")))


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """One HTTP client for a test's requests to the services, polls above all: every new client (``httpx.get`` makes
    one a call) builds its TLS settings again, ~45 ms of CPU, ten times a request on loopback. Built once per
    process, as the SDK's clients take them (``tls_context``): the fixture was made for 73 of 159 tests of 15 server
    and learner files, each paying the 45 ms. Every client the tests make passes them, for the same reason."""
    with httpx.Client(timeout=60, verify=tls_context()) as client:
        yield client


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def oracle_url(sqlite_url: str) -> Iterator[str]:
    with oracle_server(sqlite_url) as url:
        yield url


@pytest.fixture(scope="module")
def shared_oracle_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("shared") / "ledger.db"
    with oracle_server(f"sqlite:///{path}") as url:
        yield url


@pytest.fixture(scope="module")
def learner_url(shared_oracle_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    runs = tmp_path_factory.mktemp("learner") / "runs.db"
    with learner_server(f"sqlite:///{runs}", shared_oracle_url) as url:
        yield url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the real PostgreSQL server that .ci/run starts (skipped where there is none)."""
    base = os.environ.get("BUDGETLAB_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("BUDGETLAB_TEST_POSTGRES_URL is not set (.ci/run starts a PostgreSQL server and sets it)")
    import psycopg

    name = f"budgetlab_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield base.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def ito_long_run(tmp_path_factory: pytest.TempPathFactory) -> LongRun:
    """Ito et al.'s 5,000-round runs, computed once per test session whichever worker needs them first."""
    return shared_long_runs(tmp_path_factory)
