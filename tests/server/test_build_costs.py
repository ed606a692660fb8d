"""Admission by cost (``server.build_costs``): the CPU seconds the oracle spends building datasets are charged to the
client that asked, by address and by key, so that a flood of new seeds is refused 429 with Retry-After once its
share is spent, before anything is built or recorded (the SDK waits it out), while what costs nothing (a dataset
already built, a step of an open session) goes on. The registry's side: a build is admitted before it waits its
turn, charged its CPU seconds once, and a request for a dataset being built waits for it without paying. The flood's
effect on another client's latency and on memory is measured by ``benchmarks/health_bench.py``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest

from budgetlab.datasets import registry
from budgetlab.datasets.base import Dataset
from budgetlab.errors import OracleError
from budgetlab.oracle_client import OracleClient
from server.app import create_app
from server.config import Settings
from tests.helpers import session_auth
from tests.servers import serve_in_thread

# Big enough that building one costs some CPU time, small enough to build in a few milliseconds.
PARAMS = {"d": 50, "n_train": 20_000, "n_test": 10, "s_plus": 2, "s_minus": 2}


def _open(http: httpx.Client, url: str, seed: int, **extra: Any) -> httpx.Response:
    return http.post(f"{url}/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": PARAMS, "seed": seed,
                                                  "budget": {"per_example": 5}, **extra})


def _sessions(http: httpx.Client, url: str) -> int:
    counts = http.get(f"{url}/v1/dashboard/sessions").json()["counts"]
    return counts["open"] + counts["closed"]


@pytest.mark.process
def test_new_seeds_past_the_clients_share_are_refused_before_anything_is_built(sqlite_url: str,
                                                                                http: httpx.Client) -> None:
    # A share so small that one build spends it for minutes: the next new seed is refused, whatever the machine.
    settings = Settings(database_url=sqlite_url, batch_process=False, build_seconds_per_second=1e-4,
                        build_seconds_burst=1e-3)
    seeds = iter(range(10_000, 20_000))  # seeds no other test of this process has built
    with serve_in_thread(create_app(settings)) as url:
        first = _open(http, url, next(seeds))
        assert first.status_code == 201, first.text
        opened = _sessions(http, url)
        refused = _open(http, url, next(seeds))
        assert (refused.status_code, refused.json()["error"]) == (429, "rate_limited"), refused.text
        assert "BUDGETLAB_BUILD_SECONDS_PER_SECOND" in refused.json()["detail"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert _sessions(http, url) == opened, "a refused session was not created"
        # What costs nothing goes on: the same seed again (built), and the first session's steps.
        again = _open(http, url, first.json()["session"]["seed"])
        assert again.status_code == 201, again.text
        created = first.json()
        step = http.post(f"{url}/v1/sessions/{created['id']}/step", headers=session_auth(created),
                         json={"attributes": [0, 1]})
        assert step.status_code == 200, step.text


@pytest.mark.process
def test_the_sdk_waits_a_refused_build_out(sqlite_url: str, http: httpx.Client) -> None:
    """A session refused for its build's cost was not created: the SDK asks again after the Retry-After."""
    settings = Settings(database_url=sqlite_url, batch_process=False, build_seconds_per_second=0.05,
                        build_seconds_burst=1e-3)
    with serve_in_thread(create_app(settings)) as url, OracleClient(url) as sdk:
        sdk.open_session("sparse-gaussian", dataset_params=PARAMS, seed=50_001)
        assert _open(http, url, 50_002).status_code == 429
        session = sdk.open_session("sparse-gaussian", dataset_params=PARAMS, seed=50_002)
        assert session.get().seed == 50_002


@pytest.mark.process
def test_without_a_rate_new_seeds_are_not_charged(sqlite_url: str, http: httpx.Client) -> None:
    settings = Settings(database_url=sqlite_url, batch_process=False, build_seconds_per_second=0)
    with serve_in_thread(create_app(settings)) as url:
        assert [_open(http, url, seed).status_code for seed in range(20_000, 20_004)] == [201] * 4


class Tally:
    """A payer that counts: admissions, and the seconds charged (refusing once ``refuse`` is set)."""

    def __init__(self) -> None:
        self.admitted: list[None] = []
        self.charged: list[float] = []
        self.refuse = False

    def admit(self) -> None:
        if self.refuse:
            raise OracleError(429, "rate_limited", "no more")
        self.admitted.append(None)

    def run(self, call: Callable[[], Dataset]) -> Dataset:
        return call()

    def charge(self, cpu_seconds: float) -> None:
        self.charged.append(cpu_seconds)


def test_the_registry_admits_a_build_before_it_waits_and_charges_its_cpu_seconds_once() -> None:
    tally = Tally()
    reset = registry.BUILD_PAYER.set(tally)
    try:
        registry.load_dataset("sparse-gaussian", PARAMS, seed=30_001)
        registry.load_dataset("sparse-gaussian", PARAMS, seed=30_001)  # cached: nothing asked, nothing charged
        assert len(tally.admitted) == len(tally.charged) == 1
        assert tally.charged[0] > 0
        tally.refuse = True
        with pytest.raises(OracleError, match="no more"):
            registry.load_dataset("sparse-gaussian", PARAMS, seed=30_002)
        assert len(tally.charged) == 1, "a refused build is not charged"
    finally:
        registry.BUILD_PAYER.reset(reset)


def test_a_request_for_a_dataset_being_built_waits_for_it_without_paying() -> None:
    building, release = threading.Event(), threading.Event()
    built: list[Dataset] = []
    payers = [Tally(), Tally()]

    def slow() -> Dataset:
        building.set()
        release.wait(30)
        return Dataset(name="slow", description="", task="regression", X=np.zeros((2, 1)), y=np.zeros(2),
                       train_rows=np.arange(1), test_rows=np.arange(1, 2))

    def load(payer: Tally) -> None:
        reset = registry.BUILD_PAYER.set(payer)
        try:
            built.append(registry._CACHE.get(("test", "slow", 40_001), slow))
        finally:
            registry.BUILD_PAYER.reset(reset)

    first = threading.Thread(target=load, args=(payers[0],))
    first.start()
    assert building.wait(30)
    payers[1].refuse = True  # it would be refused, were it asked
    second = threading.Thread(target=load, args=(payers[1],))
    second.start()
    release.set()
    first.join(30)
    second.join(30)
    assert len(built) == 2 and built[0] is built[1]
    assert (len(payers[0].charged), payers[1].admitted, payers[1].charged) == (1, [], [])
