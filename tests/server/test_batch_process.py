"""Big batches worked out in the worker's batch process: the same answers and ledger rows as in the worker, the
locked state's answer when the session moved meanwhile, and no process left behind when its worker is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetlab import engine as rules
from budgetlab.contract.calls import ObserveBatchRequest, ObserveRequest
from budgetlab.contract.sessions import SessionCreate
from budgetlab.errors import OracleError
from budgetlab.operations import SessionOperations
from client.services import announced_url, wait_healthy
from server.batch_process import BatchProcess
from server.db import make_engine, upgrade
from server.sessions import SessionService
from server.steps import Caps
from tests.helpers import BUDGETLAB

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

CAPS = Caps(max_cells=100_000, max_examples=5_000)
POOL = {"dataset": "sparse-gaussian", "order": "pool", "seed": 4,
        "dataset_params": {"d": 60, "n_train": 400, "n_test": 10}}


def service(tmp_path: Path, name: str, batches: bool = False) -> tuple[SessionService, BatchProcess | None]:
    """A session service on a fresh SQLite ledger; with ``batches``, its batch process started and ready."""
    url = f"sqlite:///{tmp_path / name}.db"
    upgrade(url)
    process = BatchProcess(url, 5.0, CAPS) if batches else None
    if process is not None:
        process.start()
        assert process.ready(timeout=60)
    return SessionService(make_engine(url), 5.0, CAPS, batch_process=process), process


@pytest.fixture
def with_process(tmp_path: Path) -> Iterator[tuple[SessionService, BatchProcess]]:
    svc, process = service(tmp_path, "with", batches=True)
    assert process is not None
    yield svc, process
    process.close()


def batch(first: int, attributes: range) -> bytes:
    return json.dumps({"items": [{"example": e, "attributes": list(attributes)}
                                 for e in range(first, first + 30)]}).encode()


def answered(svc: SessionService, session: tuple[str, str], raw: bytes) -> dict:
    items = ObserveBatchRequest.model_validate_json(raw).items
    answer = json.loads(svc.batches.observe_json(*session, items, raw))
    answer.pop("receipt")  # its head hashes the session's random id
    return answer


def test_the_batch_process_answers_and_records_what_the_worker_would(
        tmp_path: Path, with_process: tuple[SessionService, BatchProcess]) -> None:
    in_process, batches = with_process
    in_worker, _ = service(tmp_path, "without")
    sessions = [(s.id, s.token) for s in (svc.create(SessionCreate.model_validate(POOL))
                                        for svc in (in_process, in_worker))]
    # Fresh cells, then a batch half of whose cells are paid already (free, answered from the ledger).
    for raw in (batch(0, range(40)), batch(15, range(20, 60))):
        assert batches.prepare(*sessions[0], raw) is not None  # the process does prepare it
        assert answered(in_process, sessions[0], raw) == answered(in_worker, sessions[1], raw)
    for svc, (sid, token) in zip((in_process, in_worker), sessions, strict=True):
        report = svc.audit(sid, token)
        assert report.compliant and report.attributes_recomputed == 30 * 40 + 15 * 40 + 15 * 20
    values = [[(r["example"], r["attribute"], r["value"]) for r in svc.export.rows(*s) if r["kind"] == "observe"]
              for svc, s in zip((in_process, in_worker), sessions, strict=True)]
    assert values[0] == values[1]


def test_a_batch_refused_in_the_batch_process_leaves_the_refusal_to_the_worker(
        with_process: tuple[SessionService, BatchProcess]) -> None:
    """A wrong token or an unknown session is refused by the worker (404, nothing charged); the batch process
    neither answers it nor is restarted for it."""
    svc, batches = with_process
    created = svc.create(SessionCreate.model_validate(POOL))
    raw = batch(0, range(40))
    items = ObserveBatchRequest.model_validate_json(raw).items
    for session_id, token in ((created.id, "wrong"), ("nosuchsession", created.token)):
        assert batches.prepare(session_id, token, raw) is None
        with pytest.raises(OracleError) as refused:
            svc.batches.observe_json(session_id, token, items, raw)
        assert refused.value.status == 404
    assert batches.ready(timeout=0) and batches.prepare(created.id, created.token, raw) is not None
    assert svc.audit(created.id, created.token).attributes_recomputed == 0


def test_a_batch_prepared_before_the_session_moved_gets_the_locked_states_answer(
        with_process: tuple[SessionService, BatchProcess]) -> None:
    svc, batches = with_process
    created = svc.create(SessionCreate.model_validate(POOL))
    raw = batch(0, range(40))
    stale = batches.prepare(created.id, created.token, raw)
    assert stale is not None and json.loads(stale.answer)["charged"] == 30 * 40
    svc.perform(SessionOperations.observe, created.id, created.token,
                ObserveRequest(example=0, attributes=[0, 1, 2]))  # the session moves
    items = ObserveBatchRequest.model_validate_json(raw).items
    answer = svc.steps.write(created.id, created.token, lambda rt, c, paid: rules.observe(rt, c, paid, items),
                             prepared=stale)[0]
    assert answer.charged == 30 * 40 - 3  # the three cells paid meanwhile were free
    report = svc.audit(created.id, created.token)
    assert report.compliant and report.attributes_recomputed == 30 * 40


def spawned_children(pid: int) -> list[int]:
    """multiprocessing's spawned processes whose parent is ``pid`` (the batch process, not its resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_the_batch_process_ends_when_its_worker_is_killed(tmp_path: Path, http: httpx.Client) -> None:
    args = ["serve", "oracle", "--port", "0"]
    log = tmp_path / "oracle.log"
    with log.open("w") as sink:
        oracle = subprocess.Popen([BUDGETLAB, *args], stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                                  env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}"})
    try:
        deadline = time.monotonic() + 60
        url = announced_url(args, oracle, log, deadline)
        wait_healthy(url, oracle, log, deadline)
        created = http.post(f"{url}/v1/sessions", json=POOL, timeout=30).json()
        answer = http.post(f"{url}/v1/sessions/{created['id']}/observe/batch", content=batch(0, range(60)),
                           headers={"Authorization": f"Bearer {created['token']}",
                                     "content-type": "application/json"}, timeout=30)
        assert answer.status_code == 200 and answer.json()["fresh"] == 30 * 60
        while not spawned_children(oracle.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        (batch_process,) = spawned_children(oracle.pid)
    finally:
        oracle.send_signal(signal.SIGKILL)
        oracle.wait(timeout=10)
    # It may still be starting (importing, its watch not yet running) when the worker dies: a bound, not a timing.
    gone = time.monotonic() + 30
    while Path(f"/proc/{batch_process}").exists() and time.monotonic() < gone:
        time.sleep(0.05)
    state = Path(f"/proc/{batch_process}/stat")
    assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] == "Z", "the batch process outlived it"
