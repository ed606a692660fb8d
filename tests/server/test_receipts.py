"""Every charging answer carries the session's new chain head: over HTTP and over the stream, for each request that
charges, a big ``observe/batch`` worked out in the batch process included, the receipt is the head an export made
right after shows."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetlab.audit import audit_ndjson
from budgetlab.contract.ledger import Receipt
from budgetlab.oracle_client import OracleClient, OracleSession
from server.app import create_app
from server.batch_preparation import PREPARE_CELLS
from server.config import Settings
from tests.servers import serve_in_thread

DATASET = "sparse-gaussian"
PARAMS = {"d": 12, "n_train": 40, "n_test": 10, "s_plus": 2, "s_minus": 2}
WIDE = {"d": 60, "n_train": 60, "n_test": 10}
BUDGET = {"per_example": 60, "label_cost": 0.5}  # labels charge too


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[bool]]]:
    """The oracle with its batch process up, and a record of each batch sent there (True: it prepared it)."""
    path = tmp_path_factory.mktemp("receipts") / "ledger.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}", batch_process=True))
    batches = app.state.sessions.batches.process
    batches.start()
    assert batches.ready(timeout=60)
    prepared: list[bool] = []
    real = batches.prepare

    def prepare(*args: Any) -> Any:
        answer = real(*args)
        prepared.append(answer is not None)
        return answer

    batches.prepare = prepare
    try:
        with serve_in_thread(app) as url:
            yield url, prepared
    finally:
        batches.close()


def _stream_session(client: OracleClient, protocol: str = "batch") -> OracleSession:
    return client.open_session(DATASET, dataset_params=PARAMS, budget=BUDGET, protocol=protocol, seed=1)


def _pool_session(client: OracleClient) -> OracleSession:
    return client.open_session(DATASET, dataset_params=WIDE, budget=BUDGET, order="pool", seed=1)


# Each opens a session, makes a charging request first (so the receipt checked is not the open's), then the request
# under test; it returns the session, the first request's receipt, the answer under test, and whether that answer
# must come from the batch process.
Done = tuple[OracleSession, Receipt | None, Any, bool]
Charging = Callable[[OracleClient], Done]


def _next(client: OracleClient) -> Done:
    s = _stream_session(client)
    first = s.step([0]).receipt
    return s, first, s.next(), False


def _step(client: OracleClient) -> Done:
    s = _stream_session(client)
    first = s.next().receipt
    return s, first, s.step([1, 2]), False


def _observe(client: OracleClient) -> Done:
    s = _stream_session(client)
    example = s.next().example
    first = s.observe(example, [0]).receipt
    return s, first, s.observe(example, [3, 7]), False


def _label(client: OracleClient) -> Done:
    s = _pool_session(client)
    first = s.observe(5, [1]).receipt
    answer = s.label(5)
    assert answer.charged == 0.5
    return s, first, answer, False


def _predict(client: OracleClient) -> Done:
    s = _stream_session(client, protocol="online")
    issued = s.step([4])
    return s, issued.receipt, s.predict(issued.example, 0.25), False


def _observe_batch(client: OracleClient) -> Done:
    s = _pool_session(client)
    first = s.observe(0, [1]).receipt
    return s, first, s.observe_batch([(0, [1, 2]), (3, [4])]), False


def _observe_batch_big(client: OracleClient) -> Done:
    s = _pool_session(client)
    first = s.observe(0, [1]).receipt
    items = [(e, list(range(WIDE["d"]))) for e in range(30)]
    assert sum(len(a) for _, a in items) >= PREPARE_CELLS
    return s, first, s.observe_batch(items), True


CHARGING: dict[str, Charging] = {
    "next": _next, "step": _step, "observe": _observe, "label": _label, "predict": _predict,
    "observe_batch": _observe_batch, "observe_batch_big": _observe_batch_big,
}


def _export(session: OracleSession, path: Path) -> tuple[list[str], list[dict[str, Any]], dict[str, Any]]:
    lines = session.export_ledger(path).read_text().splitlines()
    objects = [json.loads(line) for line in lines]
    rows = [o for o in objects if "seq" in o]
    (head,) = [o for o in objects if o.get("type") == "head"]
    return lines, rows, head


@pytest.mark.parametrize("transport", ["http", "websocket"])
@pytest.mark.parametrize("request_name", list(CHARGING))
def test_each_charging_answer_carries_the_chain_head_an_export_then_shows(
        oracle: tuple[str, list[bool]], tmp_path: Path, transport: str, request_name: str) -> None:
    url, prepared = oracle
    sent_to_process = len(prepared)
    with OracleClient(url, stream=transport == "websocket") as client:
        session, first, answer, big = CHARGING[request_name](client)
        assert session.transport == transport
        lines, rows, head = _export(session, tmp_path / "ledger.ndjson")
    receipt = answer.receipt
    assert isinstance(receipt, Receipt) and session.receipt == receipt
    # The receipt is the head right after this request: every row, and the digest of the link the last row ends.
    last_link = [r for r in rows if r["hash"] is not None][-1]
    assert receipt.rows == len(rows) == head["rows"]
    assert last_link["seq"] + (last_link["n"] or 1) == receipt.rows
    assert receipt.head == last_link["hash"] == head["head_hash"]
    # A new head, past the earlier request's, which the export contains as well.
    assert first is not None and first.rows < receipt.rows and first.head != receipt.head
    assert audit_ndjson(lines, [first, receipt]).compliant
    forged = Receipt(rows=receipt.rows, head=first.head)
    assert not audit_ndjson(lines, [forged]).compliant
    # The big batch was worked out in the batch process (its receipt computed there); no other request goes there.
    assert prepared[sent_to_process:] == ([True] if big else [])
