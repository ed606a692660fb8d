"""The learner's run pool on the real learner and oracle: a bounded number of runs execute while the others wait
'queued'; every run that ends closes its oracle sessions (checked in the oracle's own database); GET /v1/runs is
paginated without curves or weights; ended runs beyond the retention setting leave memory but not the database."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetlab.service_client import tls_context
from tests.helpers import LONG, caller
from tests.servers import learner_app, oracle_server

GAUSS = {"d": 20, "n_train": 150, "n_test": 30, "s_plus": 3, "s_minus": 2}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    ledger = tmp_path_factory.mktemp("oracle") / "ledger.db"
    with oracle_server(f"sqlite:///{ledger}") as url:
        yield url, ledger


@pytest.fixture(scope="module")
def learner(oracle: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, object]]:
    """A learner that executes one run at a time and keeps one ended run in memory."""
    runs = tmp_path_factory.mktemp("learner") / "runs.db"
    with learner_app(f"sqlite:///{runs}", oracle[0], max_running=1, retained_runs=1) as (url, app):
        yield url, app


@pytest.fixture(scope="module")
def auth(learner: tuple[str, object]) -> dict[str, str]:
    return caller(learner[0])


def start(http: httpx.Client, url: str, auth: dict[str, str], **changes: object) -> dict:
    body = {"dataset": "sparse-gaussian", "dataset_params": GAUSS, "algorithm": "aerr", "budget": {"per_example": 4},
            "eval_every": 50, **changes}
    r = http.post(f"{url}/v1/runs", json=body, headers=auth)
    assert r.status_code == 201, r.text
    return r.json()


def get(url: str, auth: dict[str, str], run_id: str, http: httpx.Client | None = None) -> dict:
    r = http.get(f"{url}/v1/runs/{run_id}", headers=auth) if http else httpx.get(
        f"{url}/v1/runs/{run_id}", headers=auth, verify=tls_context())
    assert r.status_code == 200, r.text
    return r.json()


def session_status(ledger: Path, session_id: str) -> str:
    with sqlite3.connect(ledger) as db:
        return db.execute("select status from sessions where id = ?", (session_id,)).fetchone()[0]


def wait_closed(ledger: Path, session_id: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while (status := session_status(ledger, session_id)) != "closed" and time.monotonic() < deadline:
        time.sleep(0.05)
    return status


def wait_running(url: str, auth: dict[str, str], run_id: str, examples: int = 1, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    # One client for the looks: httpx.get makes a new one a call, ~45-60 ms of CPU (its TLS settings).
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while time.monotonic() < deadline:
            info = get(url, auth, run_id, http)
            if info["status"] == "running" and info["progress_examples"] >= examples:
                return info
            time.sleep(0.02)
    raise TimeoutError(f"run {run_id} did not start")


def test_one_run_executes_at_a_time_the_others_wait_queued_and_every_session_closes(
        learner: tuple[str, object], auth: dict[str, str], oracle: tuple[str, Path], http: httpx.Client) -> None:
    url, ledger = learner[0], oracle[1]
    ids = [start(http, url, auth, seed=s, test_budget=3 if s == 0 else None)["id"] for s in range(3)]
    seen_running: list[int] = []
    statuses: dict[str, set[str]] = {i: set() for i in ids}
    deadline = time.monotonic() + 60
    # One client for the looks: httpx.get makes a new one a call, ~45-60 ms of CPU (its TLS settings).
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while time.monotonic() < deadline:
            listed = {r["id"]: r["status"] for r in http.get(f"{url}/v1/runs", headers=auth).json()["runs"]}
            for i in ids:
                statuses[i].add(listed[i])
            seen_running.append(sum(listed[i] == "running" for i in ids))
            if all(listed[i] == "finished" for i in ids):
                break
            time.sleep(0.01)
    assert max(seen_running) == 1, "the pool of one ran two runs at once"
    assert "queued" in statuses[ids[2]] and "running" in statuses[ids[2]], statuses
    for run_id in ids:
        info = get(url, auth, run_id)
        assert info["status"] == "finished" and info["progress_examples"] == 150, info["message"]
        assert wait_closed(ledger, info["session"]) == "closed"
    # The run scored with a test budget opened a test session too: it is closed as well, like every other.
    test_session = get(url, auth, ids[0])["result"]["test_budget"]["session"]
    assert test_session
    with sqlite3.connect(ledger) as db:
        ours = {get(url, auth, i)["session"] for i in ids} | {test_session}
        marks = ",".join("?" * len(ours))
        closed = db.execute(f"select count(*) from sessions where id in ({marks}) and status = 'closed'",
                            tuple(ours)).fetchone()[0]
    assert closed == len(ours) == 4


def test_cancelled_queued_and_running_runs_and_a_failed_run_close_their_sessions(
        learner: tuple[str, object], auth: dict[str, str], oracle: tuple[str, Path], http: httpx.Client) -> None:
    url, ledger = learner[0], oracle[1]
    running = start(http, url, auth, dataset_params=LONG, eval_every=20)
    queued = start(http, url, auth, dataset_params=LONG, seed=1)
    assert queued["status"] == "queued"
    wait_running(url, auth, running["id"], examples=20)
    withdrawn = http.delete(f"{url}/v1/runs/{queued['id']}", headers=auth).json()
    assert withdrawn["status"] == "cancelled" and withdrawn["progress_examples"] == 0
    assert get(url, auth, running["id"])["status"] == "running", "cancelling a queued run touched another"
    stopped = http.delete(f"{url}/v1/runs/{running['id']}", headers=auth).json()
    assert stopped["status"] == "cancelled" and 20 <= stopped["progress_examples"] < 50_000 and stopped["curve"]
    failed = start(http, url, auth, params={"eta": -1.0})  # read as a number, refused by the algorithm once it runs
    deadline = time.monotonic() + 30
    while (info := get(url, auth, failed["id"]))["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert info["status"] == "failed" and info["message"], info
    for run in (queued, running, failed):
        assert wait_closed(ledger, run["session"]) == "closed", run["id"]


def test_runs_are_listed_newest_first_in_pages_without_curves_or_weights(learner: tuple[str, object],
                                                                         oracle: tuple[str, Path],
                                                                                 http: httpx.Client) -> None:
    url = learner[0]
    auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
    ids = [start(http, url, auth, seed=s, max_examples=20, eval_every=10)["id"] for s in range(5)]
    pages, cursor = [], None
    while True:
        r = http.get(f"{url}/v1/runs", params={"limit": 2, **({"cursor": cursor} if cursor else {})}, headers=auth)
        assert r.status_code == 200, r.text
        assert "weights" not in r.text and '"curve"' not in r.text
        pages.append([run["id"] for run in r.json()["runs"]])
        cursor = r.json()["next"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [i for page in pages for i in page] == ids[::-1]
    bad = http.get(f"{url}/v1/runs", params={"cursor": "x' or 1=1"}, headers=auth)
    assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"
    too_many = http.get(f"{url}/v1/runs", params={"limit": 100_000}, headers=auth)
    assert too_many.status_code == 422


def test_ended_runs_beyond_the_retention_leave_memory_and_are_read_back_from_the_database(
        learner: tuple[str, object], http: httpx.Client) -> None:
    url, app = learner
    auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
    ids = [start(http, url, auth, seed=s, max_examples=40, eval_every=10)["id"] for s in range(3)]
    deadline = time.monotonic() + 60
    while any(get(url, auth, i)["status"] != "finished" for i in ids):
        assert time.monotonic() < deadline, "runs did not finish"
        time.sleep(0.05)
    manager = app.state.runs  # type: ignore[attr-defined]
    assert not (set(ids) & set(manager.live)) and len(manager.recent) <= 1
    for run_id in ids:
        info = get(url, auth, run_id)
        assert info["result"]["weights"] and [p["examples"] for p in info["curve"]] == [10, 20, 30, 40]
        assert info["result"]["curve"] == info["curve"] and info["result"]["final"] == info["curve"][-1]


def test_the_listing_takes_a_run_s_end_from_memory_over_a_row_read_before_it(learner: tuple[str, object],
                                                                             http: httpx.Client) -> None:
    # The race of a listing: its page is read from the database a moment before a run's end is written there, and
    # the next run already executes. Here the page is made stale by hand (the ended run's row says 'running' again);
    # the listing must still say 'finished', from the ended runs the learner keeps in memory, or a pool of one shows
    # two runs executing at once.
    url, app = learner
    auth = {"Authorization": f"Bearer {http.post(f'{url}/v1/callers').json()['token']}"}
    run_id = start(http, url, auth, max_examples=20, eval_every=10)["id"]
    deadline = time.monotonic() + 60
    while get(url, auth, run_id, http)["status"] != "finished":
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.02)
    manager = app.state.runs  # type: ignore[attr-defined]
    manager.store.set_status(run_id, "running")
    try:
        listed = {run["id"]: run for run in http.get(f"{url}/v1/runs", headers=auth).json()["runs"]}
    finally:
        manager.store.set_status(run_id, "finished")
    assert listed[run_id]["status"] == "finished"
    assert listed[run_id]["progress_examples"] == 20 and listed[run_id]["last_point"]["examples"] == 20
