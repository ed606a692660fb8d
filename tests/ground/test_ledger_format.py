"""The compact ledger end to end: old ledgers migrate and still audit, receipts catch a wholesale rewrite, and the
step request is ``next`` + ``observe`` in one all-or-nothing request."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from budgetlab import ledger_v1
from budgetlab.audit import audit_ndjson
from budgetlab.contract.ledger import Receipt
from budgetlab.errors import BudgetExhausted, OracleError
from budgetlab.ledger import (
    GENESIS,
    chain_name,
    event_header,
    link_digest,
    observe_header,
    pack_cells,
    unpack_cells,
    value_tags,
)
from budgetlab.local_session import LocalSession
from budgetlab.operations import SessionOperations
from budgetlab.oracle_client import OracleClient
from server.db import MIGRATIONS, make_engine
from server.sessions import SessionService
from server.steps import token_hash

DATASET = "sparse-gaussian"
PARAMS = {"d": 12, "n_train": 40, "n_test": 10, "s_plus": 2, "s_minus": 2}


# --- migration of a format-1 ledger -----------------------------------------------------------------------


def _alembic(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _format1_rows() -> tuple[str, list[dict[str, Any]], LocalSession, list[tuple[int, int, float]]]:
    """A session's ledger as format 1 chained it, one hex-chained row per value (payloads as stored, text)."""
    session = LocalSession.open(DATASET, dataset_params=PARAMS, budget={"per_example": 3, "label_cost": 0.5},
                                seed=3)
    cells: list[tuple[int, int, float]] = []
    rows = [("open", None, None, None, 0.0, {"dataset": DATASET, "budget": session.info.budget.model_dump(),
                                             "costs": None, "d": PARAMS["d"]})]
    for _ in range(4):
        nxt = session.next()
        rows.append(("label", nxt.example, None, nxt.label, 0.5, {}))
        observed = session.observe(nxt.example, [1, 5, 7])
        for a, v in zip(observed.attributes, observed.values, strict=True):
            rows.append(("observe", nxt.example, a, v, 1.0, {}))
            cells.append((nxt.example, a, v))
    sid = "f1" * 16
    head = ledger_v1.GENESIS
    out = []
    for seq, (kind, example, attribute, value, cost, payload) in enumerate(rows):
        text = ledger_v1.canonical_payload(payload)
        digest = ledger_v1.chain_hash(head, ledger_v1.canonical(sid, seq, kind, example, attribute, value, cost, text))
        out.append({"session_id": sid, "seq": seq, "kind": kind, "example": example, "attribute": attribute,
                    "value": value, "cost": cost, "payload": text, "prev_hash": head, "hash": digest})
        head = digest
    return sid, out, session, cells


def _format1_session(url: str) -> tuple[str, str, list[tuple[int, int, float]]]:
    """A session written as format 1 wrote it: the 0001 schema, one hex-chained row per value."""
    command.upgrade(_alembic(url), "0001")
    sid, out, session, cells = _format1_rows()
    token, head = "format-one-token", out[-1]["hash"]
    c = session.counters
    now = datetime.now(UTC)
    engine = make_engine(url)
    sessions = sa.Table("sessions", sa.MetaData(), autoload_with=engine)
    ledger = sa.Table("ledger", sa.MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        conn.execute(sessions.insert().values(
            id=sid, token_hash=token_hash(token), dataset=DATASET, dataset_params=PARAMS,
            split="train", protocol="batch", example_order="stream", budget=session.info.budget.model_dump(), seed=3,
            n_examples=PARAMS["n_train"], d=PARAMS["d"], status="open", spent_cost=c.spent_cost,
            spent_attributes=c.spent_attributes, labels=c.labels, issued=c.issued, predictions=0, cumulative_loss=0.0,
            ledger_rows=len(out), head_hash=head, created_at=now, last_active=now))
        conn.execute(ledger.insert(), out)
    engine.dispose()
    return sid, token, cells


def _migrated_session_audits(url: str) -> None:
    sid, token, cells = _format1_session(url)
    command.upgrade(_alembic(url), "head")
    service = SessionService(make_engine(url))
    report = service.audit(sid, token)
    assert report.compliant, report.reasons
    assert report.rows == 1 + 4 * 4 and report.attributes_recomputed == 12 and report.spent_recomputed == 14.0
    rows = list(service.export.rows(sid, token))
    assert [(r["example"], r["attribute"], r["value"]) for r in rows if r["kind"] == "observe"] == cells
    # Consecutive values of one example became one link each; the session goes on from the new head.
    assert sum(1 for r in rows if r["hash"] is not None) == 1 + 4 * 2
    info = service.info(sid, token)
    assert info.head_hash != GENESIS and info.ledger_rows == 17
    # The migrated session keeps working and auditing: the next example continues the chain, in format 2 (before
    # accounts), which its export says and the offline audit reads.
    service.perform(SessionOperations.next, sid, token)
    assert service.audit(sid, token).compliant
    export = "".join(service.export.ndjson(sid, token)).splitlines()
    assert json.loads(export[0]) == {"type": "ledger", "format": 2, "session_id": sid}
    assert audit_ndjson(export).compliant and audit_ndjson(export).rows == 18
    # And the migration goes back down and up again without losing a value.
    command.downgrade(_alembic(url), "0001")
    command.upgrade(_alembic(url), "head")
    again = SessionService(make_engine(url))
    assert again.audit(sid, token).compliant
    assert [(r["example"], r["attribute"], r["value"]) for r in again.export.rows(sid, token)
            if r["kind"] == "observe"] == cells


def test_a_format1_ledger_migrates_and_audits_on_sqlite(tmp_path: Path) -> None:
    _migrated_session_audits(f"sqlite:///{tmp_path / 'old.db'}")


@pytest.mark.postgres
def test_a_format1_ledger_migrates_and_audits_on_postgresql(postgres_url: str) -> None:
    _migrated_session_audits(postgres_url)


# --- a format-1 export, verified offline ---------------------------------------------------------------


def _format1_export(path: Path, change: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> Path:
    """An NDJSON export as the format-1 oracle wrote it (no format line; each row with its payload as an object,
    then the session's head line), after ``change`` was done to its rows."""
    sid, rows, session, _ = _format1_rows()
    c = session.counters
    head = {"type": "head", "session_id": sid, "rows": len(rows), "head_hash": rows[-1]["hash"],
            "spent_cost": c.spent_cost, "spent_attributes": c.spent_attributes, "labels": c.labels,
            "predictions": c.predictions, "status": c.status}
    rows = [{**row, "payload": json.loads(row["payload"])} for row in rows]
    change(rows)
    path.write_text("".join(json.dumps(line) + "\n" for line in [*rows, head]))
    return path


def _alter_value(rows: list[dict[str, Any]]) -> None:
    assert rows[3]["kind"] == "observe"
    rows[3]["value"] += 1.0


def _delete_row(rows: list[dict[str, Any]]) -> None:
    del rows[6]


def test_a_format1_export_audits_offline(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from client.cli import app

    path = _format1_export(tmp_path / "format1.ndjson")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert "format" not in lines[0]
    # Format 1 as its oracle hashed it, spelled out here rather than taken from ledger_v1 (the verifier's own).
    label = lines[1]
    content = f"{label['session_id']}|1|label|{label['example']}||{label['value']!r}|0.5|{{}}"
    assert label["hash"] == hashlib.sha256(f"{lines[0]['hash']}\n{content}".encode()).hexdigest()
    report = audit_ndjson(path.read_text().splitlines())
    assert report.compliant, report.reasons
    assert (report.rows, report.attributes_recomputed, report.spent_recomputed, report.labels_recomputed) == (
        17, 12, 14.0, 4)
    result = CliRunner().invoke(app, ["audit", str(path)])
    assert result.exit_code == 0 and "compliant" in result.output and "17 rows" in result.output
    # A receipt is a chain head of format 2 or later: a format-1 export cannot hold one, and the audit says so.
    report = audit_ndjson(path.read_text().splitlines(), [Receipt(rows=17, head=GENESIS)])
    assert not report.compliant and "format 2 or later" in report.reasons[0]


@pytest.mark.parametrize(("change", "seq", "what"), [(_alter_value, 3, "altered"), (_delete_row, 6, "missing")])
def test_the_offline_audit_names_what_was_changed_in_a_format1_export(
        tmp_path: Path, change: Callable[[list[dict[str, Any]]], None], seq: int, what: str) -> None:
    from typer.testing import CliRunner

    from client.cli import app

    path = _format1_export(tmp_path / "format1.ndjson", change)
    report = audit_ndjson(path.read_text().splitlines())
    assert not report.compliant and report.first_bad_seq == seq
    assert report.reasons[0].startswith(f"row {seq} ") and what in report.reasons[0]
    result = CliRunner().invoke(app, ["audit", str(path)])
    assert result.exit_code == 1 and "NOT compliant" in result.output and f"row {seq} " in result.output


# --- receipts -----------------------------------------------------------------------------------------


def _rewrite_wholesale(db_path: str, session_id: str) -> None:
    """What someone with write access to the database could do: change a value and re-hash the whole chain."""
    with sqlite3.connect(db_path) as db:
        key, account = db.execute("SELECT ledger_key, account_id FROM sessions WHERE id = ?",
                                  (session_id,)).fetchone()
        name = chain_name(session_id, account)
        head = bytes(32)
        links = db.execute("SELECT seq, kind, example, value, cost, n, payload FROM links "
                           "WHERE session_key = ? ORDER BY seq", (key,)).fetchall()
        altered = False
        for seq, kind, example, value, cost, n, payload in links:
            if kind == "observe":
                (blob,) = db.execute("SELECT cells FROM cells WHERE session_key = ? AND seq = ?", (key, seq)).fetchone()
                attributes, values, _ = (a.copy() for a in unpack_cells(blob))
                if not altered:
                    values[0] += 1.0
                    altered = True
                tags = value_tags(np.arange(seq, seq + n), np.full(n, example), attributes, values)
                db.execute("UPDATE cells SET cells = ? WHERE session_key = ? AND seq = ?",
                           (pack_cells(attributes, values, tags), key, seq))
                new = link_digest(head, observe_header(name, seq, example, n), attributes, values)
            else:
                new = link_digest(head, event_header(name, seq, kind, example, value, cost, payload or ""))
            db.execute("UPDATE links SET digest = ? WHERE session_key = ? AND seq = ?", (new, key, seq))
            head = new
        db.execute("UPDATE sessions SET head_hash = ? WHERE id = ?", (head.hex(), session_id))


def test_a_kept_receipt_exposes_a_ledger_rewritten_wholesale(oracle_url: str, sqlite_url: str,
                                                             tmp_path: Path) -> None:
    with OracleClient(oracle_url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, budget={"per_example": 3}, seed=1)
        receipts = []
        for _ in range(3):
            answer = s.step([0, 4, 9])
            assert answer.receipt is not None and answer.receipt == s.receipt
            receipts.append(s.receipt)
        assert receipts[-1].rows == s.get().ledger_rows and receipts[-1].head == s.get().head_hash
        before = s.export_ledger(tmp_path / "before.ndjson").read_text().splitlines()
        assert audit_ndjson(before, receipts).compliant

        _rewrite_wholesale(sqlite_url.removeprefix("sqlite:///"), s.id)
        after = s.export_ledger(tmp_path / "after.ndjson").read_text().splitlines()
        assert s.audit().compliant  # the rewrite is self-consistent: the chain alone cannot tell
        assert audit_ndjson(after).compliant
        report = audit_ndjson(after, receipts[:1])
        assert not report.compliant and "receipt" in report.reasons[0]
    # The CLI takes the receipt the same way.
    from typer.testing import CliRunner

    from client.cli import app

    token = f"{receipts[0].rows}:{receipts[0].head}"
    assert CliRunner().invoke(app, ["audit", str(tmp_path / "before.ndjson"), "--receipt", token]).exit_code == 0
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "after.ndjson"), "--receipt", token])
    assert result.exit_code == 1 and "receipt" in result.output
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "after.ndjson"), "--receipt", "12:abc"])
    assert result.exit_code == 2 and "ROWS:HEAD" in result.output


# --- the step request ---------------------------------------------------------------------------------


def test_a_step_is_next_and_observe_with_the_same_rows_and_budget(oracle_url: str, http: httpx.Client) -> None:
    budget = {"per_example": 3, "total": 20, "label_cost": 0.5}
    with OracleClient(oracle_url) as client:
        stepped = client.open_session(DATASET, dataset_params=PARAMS, budget=budget, seed=2)
        separate = client.open_session(DATASET, dataset_params=PARAMS, budget=budget, seed=2)
        for attrs in ([0, 3], [5], [], [1, 2, 11]):
            one = stepped.step(attrs)
            nxt = separate.next()
            values = separate.observe(nxt.example, attrs).values if attrs else []
            assert (one.example, one.label, one.values) == (nxt.example, nxt.label, values)
            assert one.charged == 0.5 + len(attrs)
        a, b = stepped.get(), separate.get()
        assert (a.spent, a.remaining, a.ledger_rows) == (b.spent, b.remaining, b.ledger_rows)
        strip = {"hash", "link", "n", "tag", "session_id"}
        assert ([{k: v for k, v in r.model_dump().items() if k not in strip} for r in stepped.iter_ledger()]
                == [{k: v for k, v in r.model_dump().items() if k not in strip} for r in separate.iter_ledger()])

        # All or nothing: an observe over the local budget refuses the whole step, so no example is issued.
        with pytest.raises(BudgetExhausted):
            stepped.step([0, 1, 2, 3])
        assert stepped.get().spent == a.spent and stepped.get().ledger_rows == a.ledger_rows
        assert stepped.step([4]).example == 4

        raw = http.post(f"{oracle_url}/v1/sessions/{stepped.id}/step", json={"attributes": [99]},
                        headers={"Authorization": f"Bearer {stepped.token}"})
        assert raw.status_code == 404 and raw.json()["error"] == "unknown_attribute"
        pool = client.open_session(DATASET, dataset_params=PARAMS, order="pool", seed=2)
        with pytest.raises(OracleError) as no_next:
            pool.step([1])
        assert no_next.value.status == 409 and no_next.value.error == "pool_order"


def test_the_step_request_is_in_the_openapi_contract(oracle_url: str, http: httpx.Client) -> None:
    spec = http.get(f"{oracle_url}/openapi.json").json()
    assert "/v1/sessions/{session_id}/step" in spec["paths"]
    assert "receipt" in json.dumps(spec["components"]["schemas"]["StepResponse"])
