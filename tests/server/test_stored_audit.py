"""The audit of a stored ledger reads its links and packed cells; what was changed in the database behind the oracle's
back is named as the audit of the same ledger's rows names it (``audit_rows``, which an NDJSON export goes through)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetlab.audit import audit_rows
from budgetlab.contract.calls import ObserveRequest, StepRequest
from budgetlab.contract.ledger import AuditReport
from budgetlab.contract.sessions import SessionCreate
from budgetlab.ledger import chain_name, event_header, link_digest, observe_header, pack_cells, unpack_cells, value_tags
from budgetlab.operations import OPERATIONS
from server.app import create_app
from server.config import Settings
from server.ledger_export import recorded_counters
from server.sessions import SessionService

Tamper = Callable[[sqlite3.Connection, int], None]


def _links(db: sqlite3.Connection, key: int, kind: str) -> list[tuple[int, int, int]]:
    """(seq, example, n) of the session's links of this kind, in order."""
    return db.execute("SELECT seq, example, n FROM links WHERE session_key = ? AND kind = ? ORDER BY seq",
                      (key, kind)).fetchall()


def _cells(db: sqlite3.Connection, key: int, seq: int) -> list[np.ndarray]:
    (blob,) = db.execute("SELECT cells FROM cells WHERE session_key = ? AND seq = ?", (key, seq)).fetchone()
    return [a.copy() for a in unpack_cells(blob)]


def _put(db: sqlite3.Connection, key: int, seq: int, cells: list[np.ndarray]) -> None:
    db.execute("UPDATE cells SET cells = ? WHERE session_key = ? AND seq = ?", (pack_cells(*cells), key, seq))


def _rechain(db: sqlite3.Connection, key: int) -> None:
    """Re-tag every value and re-hash every link, as someone with write access to the database could."""
    session_id, account = db.execute("SELECT id, account_id FROM sessions WHERE ledger_key = ?", (key,)).fetchone()
    name, head = chain_name(session_id, account), bytes(32)
    for seq, kind, example, value, cost, n, payload in db.execute(
            "SELECT seq, kind, example, value, cost, n, payload FROM links WHERE session_key = ? ORDER BY seq",
            (key,)).fetchall():
        if kind == "observe":
            attributes, values, _ = _cells(db, key, seq)
            _put(db, key, seq, [attributes, values, value_tags(np.arange(seq, seq + n), np.full(n, example),
                                                               attributes, values)])
            head = link_digest(head, observe_header(name, seq, example, n), attributes, values)
        else:
            head = link_digest(head, event_header(name, seq, kind, example, value, cost, payload or ""))
        db.execute("UPDATE links SET digest = ? WHERE session_key = ? AND seq = ?", (head, key, seq))
    db.execute("UPDATE sessions SET head_hash = ? WHERE ledger_key = ?", (head.hex(), key))


# The observe link changed: a step's (three values), not the first.
TARGET = 2


def _value_altered(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "observe")[TARGET][0]
    attributes, values, tags = _cells(db, key, seq)
    values[1] += 1.0
    _put(db, key, seq, [attributes, values, tags])


def _cells_deleted(db: sqlite3.Connection, key: int) -> None:
    db.execute("DELETE FROM cells WHERE session_key = ? AND seq = ?", (key, _links(db, key, "observe")[TARGET][0]))


def _last_cells_deleted(db: sqlite3.Connection, key: int) -> None:
    db.execute("DELETE FROM cells WHERE session_key = ? AND seq = ?", (key, _links(db, key, "observe")[-1][0]))


def _cells_emptied(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "observe")[TARGET][0]
    db.execute("UPDATE cells SET cells = ? WHERE session_key = ? AND seq = ?", (b"", key, seq))


def _count_altered(db: sqlite3.Connection, key: int) -> None:
    seq, _, n = _links(db, key, "observe")[TARGET]
    db.execute("UPDATE links SET n = ? WHERE session_key = ? AND seq = ?", (n + 1, key, seq))


def _label_altered(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "label")[2][0]
    db.execute("UPDATE links SET value = -value WHERE session_key = ? AND seq = ?", (key, seq))


def _label_example_cleared(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "label")[2][0]
    db.execute("UPDATE links SET example = NULL WHERE session_key = ? AND seq = ?", (key, seq))


def _observe_example_cleared(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "observe")[TARGET][0]
    db.execute("UPDATE links SET example = NULL WHERE session_key = ? AND seq = ?", (key, seq))


def _attribute_charged_twice(db: sqlite3.Connection, key: int) -> None:
    seq = _links(db, key, "observe")[TARGET][0]
    attributes, values, tags = _cells(db, key, seq)
    attributes[1] = attributes[0]
    _put(db, key, seq, [attributes, values, tags])
    _rechain(db, key)


def _charged_again_later(db: sqlite3.Connection, key: int) -> None:
    """The example's next observe link charges again the first attribute its step did."""
    seq = _links(db, key, "observe")[TARGET][0]
    later = _links(db, key, "observe")[TARGET + 1][0]
    attributes, values, tags = _cells(db, key, later)
    attributes[0] = _cells(db, key, seq)[0][0]
    _put(db, key, later, [attributes, values, tags])
    _rechain(db, key)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A database holding one session of a few steps and observes (labels charged), not touched."""
    path = tmp_path_factory.mktemp("stored") / "ledger.db"
    service: SessionService = create_app(Settings(database_url=f"sqlite:///{path}")).state.sessions
    created = service.create(SessionCreate.model_validate({
        "dataset": "sparse-gaussian", "dataset_params": {"d": 12, "n_train": 40, "n_test": 10, "s_plus": 2,
                                                         "s_minus": 2},
        "budget": {"per_example": 4, "label_cost": 0.5}, "seed": 3}))
    for i in range(5):
        step = service.perform(OPERATIONS["step"], created.id, created.token, StepRequest(attributes=[i, i + 1, 9]))
        service.perform(OPERATIONS["observe"], created.id, created.token,
                        ObserveRequest(example=step.example, attributes=[11]))
    service.close_connections()
    yield path, created.id


def _audits(path: Path, session_id: str) -> tuple[AuditReport, AuditReport, list[dict[str, Any]]]:
    """The oracle's audit of the stored ledger, and the audit of the rows its pages and export show."""
    service: SessionService = create_app(Settings(database_url=f"sqlite:///{path}")).state.sessions
    try:
        with service.db.read() as cursor:
            loaded = service.steps.load(cursor, session_id, None, lock=False)
            rows = service.db.rows(cursor, loaded.key, service.db.declared_costs(cursor, loaded.key))
        of_rows = audit_rows(session_id, rows, recorded_counters(loaded), format=loaded.row["ledger_format"],
                             account=loaded.account)
        return service.audit(session_id, None), of_rows, rows
    finally:
        service.close_connections()


# Each change, and what the audit says of it: the first row the chain finds bad (None: the chain holds) and a reason,
# written with the facts of the untouched ledger (``_facts``).
CASES: dict[str, tuple[Tamper, str | None, str]] = {
    "cell-value": (_value_altered, "{second}", "row {second} was altered: its value does not match its tag or its "
                                               "link's hash"),
    "cells-deleted": (_cells_deleted, "{seq}", "row {seq} is missing: found seq {end} in its place"),
    "cells-emptied": (_cells_emptied, "{seq}", "row {seq} is missing: found seq {end} in its place"),
    "count": (_count_altered, "{end}", "row {end} is missing: link {seq} records {more} values"),
    "label-value": (_label_altered, "{label}", "row {label} was altered: its content does not hash to its recorded "
                                               "hash"),
    # An example cleared (NULL) made the audit fail with a 500 (TypeError): now the chain names the link.
    "label-example-cleared": (_label_example_cleared, "{label}", "row {label} was altered: its content does not hash "
                                                                 "to its recorded hash"),
    "observe-example-cleared": (_observe_example_cleared, "{seq}", "row {seq} was altered: its link does not hash to "
                                                                   "its recorded hash"),
    "last-cells-deleted": (_last_cells_deleted, None, "the last row's hash is not the session's recorded head: rows "
                                                      "are missing at the end"),
    "charged-twice": (_attribute_charged_twice, None, "row {second} charges attribute {attribute} of example {example} "
                                                      "a second time"),
    "charged-again": (_charged_again_later, None, "row {end} charges attribute {attribute} of example {example} a "
                                                  "second time"),
}


def _facts(db: sqlite3.Connection, key: int) -> dict[str, int]:
    """Of the observe link changed (``TARGET``) and the label link changed, before the change."""
    seq, example, n = _links(db, key, "observe")[TARGET]
    return {"seq": seq, "second": seq + 1, "end": seq + n, "more": n + 1, "example": example,
            "attribute": int(_cells(db, key, seq)[0][0]), "label": _links(db, key, "label")[2][0]}


@pytest.mark.parametrize("case", CASES)
def test_a_change_in_the_database_is_named_as_the_rows_name_it(stored: tuple[Path, str], tmp_path: Path,
                                                               case: str) -> None:
    tamper, first_bad, reason = CASES[case]
    original, session_id = stored
    path = tmp_path / "ledger.db"
    path.write_bytes(original.read_bytes())
    with sqlite3.connect(path) as db:
        (key,) = db.execute("SELECT ledger_key FROM sessions WHERE id = ?", (session_id,)).fetchone()
        facts = _facts(db, key)
        tamper(db, key)
    report, of_rows, _ = _audits(path, session_id)
    assert report == of_rows  # field by field: the stored form's audit is its rows' audit
    assert not report.compliant and reason.format(**facts) in report.reasons, report.reasons
    bad = None if first_bad is None else int(first_bad.format(**facts))
    assert (report.chain_ok, report.first_bad_seq) == (bad is None, bad)


def test_an_untouched_ledger_audits_the_same_both_ways(stored: tuple[Path, str]) -> None:
    path, session_id = stored
    report, of_rows, rows = _audits(path, session_id)
    assert report == of_rows and report.compliant, report.reasons
    assert (report.rows, report.attributes_recomputed, report.labels_recomputed) == (len(rows), 20, 5)
    assert report.spent_recomputed == 20 + 5 * 0.5


def test_an_attribute_the_declared_costs_do_not_cover_is_named_not_a_crash(tmp_path: Path) -> None:
    # With per-attribute costs declared, a stored attribute changed to one past them (or below 0, which Python's
    # indexing would have read from the end) made the pages and the audit fail with a 500 (IndexError).
    path = tmp_path / "ledger.db"
    service: SessionService = create_app(Settings(database_url=f"sqlite:///{path}")).state.sessions
    d = 6
    created = service.create(SessionCreate.model_validate({
        "dataset": "sparse-gaussian", "dataset_params": {"d": d, "n_train": 20, "n_test": 5, "s_plus": 1,
                                                         "s_minus": 1},
        "budget": {"per_example": 3, "costs": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}, "seed": 0}))
    for _ in range(3):
        service.perform(OPERATIONS["step"], created.id, created.token, StepRequest(attributes=[0, 2]))
    service.close_connections()
    with sqlite3.connect(path) as db:
        (key,) = db.execute("SELECT ledger_key FROM sessions WHERE id = ?", (created.id,)).fetchone()
        (seq, _, _), (later, _, _) = _links(db, key, "observe")[1:3]
        for link, attribute in ((seq, 40), (later, -1)):
            attributes, values, tags = _cells(db, key, link)
            attributes[1] = attribute
            _put(db, key, link, [attributes, values, tags])
        _rechain(db, key)
    report, of_rows, rows = _audits(path, created.id)
    assert report == of_rows and not report.compliant
    assert f"row {seq + 1} observes attribute 40 outside 0..{d - 1}" in report.reasons, report.reasons
    assert f"row {later + 1} observes attribute -1 outside 0..{d - 1}" in report.reasons, report.reasons
    assert [(r["attribute"], r["cost"]) for r in rows if r["seq"] in (seq + 1, later + 1)] == [(40, 0.0), (-1, 0.0)]
