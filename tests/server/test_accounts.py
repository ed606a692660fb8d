"""Accounts: the admin creates them with allowances the oracle enforces on every session opened with their keys; the
ledger names the account of every row and the audit checks the allowance (real oracle on loopback, HTTP)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest

from budgetlab.audit import audit_ndjson
from budgetlab.errors import BudgetExhausted, OracleError
from budgetlab.oracle_client import OracleClient
from server.config import ANONYMOUS_SESSIONS, Settings
from tests.helpers import ADMIN, bearer
from tests.servers import oracle_server

DATASET = "sparse-gaussian"
PARAMS = {"d": 10, "n_train": 200, "n_test": 20, "s_plus": 2, "s_minus": 2}


def create(http: httpx.Client, url: str, name: str, **allowance: object) -> tuple[str, str]:
    r = http.post(f"{url}/v1/accounts", json={"name": name, "allowance": allowance}, headers=ADMIN)
    assert r.status_code == 201, r.text
    return r.json()["account"]["id"], r.json()["key"]


def open_session(http: httpx.Client, url: str, key: str | None, **body: object) -> httpx.Response:
    return http.post(f"{url}/v1/sessions", json={"dataset": DATASET, "dataset_params": PARAMS, "order": "pool",
                                                  **body}, headers=bearer(key) if key else {})


def refused(response: httpx.Response, status: int, error: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error, body
    return body


@pytest.mark.process
def test_an_account_bounds_its_sessions_and_its_ledgers_name_it(tmp_path: Path, http: httpx.Client) -> None:
    database = tmp_path / "ledger.db"
    with oracle_server(f"sqlite:///{database}") as url:
        account_id, key = create(http, url, "student-01", total=20, per_example=3, datasets=[DATASET], splits=["train"],
                                 sessions=2, evaluations=1)
        # The key is shown once: the oracle keeps the digest of its secret, and no listing repeats it.
        with sqlite3.connect(database) as db:
            (stored,) = db.execute("select key_hash from accounts where id = ?", (account_id,)).fetchone()
        assert key.split(".")[1] not in stored and key not in http.get(f"{url}/v1/accounts", headers=ADMIN).text
        refused(http.post(f"{url}/v1/accounts", json={"name": "student-01"}, headers=ADMIN), 409, "name_taken")

        # The server completes and bounds the budget; the allowance's datasets and splits are the only ones.
        first = open_session(http, url, key)
        assert first.status_code == 201 and first.json()["session"]["budget"]["per_example"] == 3
        refused(open_session(http, url, key, budget={"per_example": 4}), 403, "not_allowed")
        refused(open_session(http, url, key, dataset="powerlaw", dataset_params={}), 403, "not_allowed")
        refused(open_session(http, url, key, split="test", protocol="online"), 403, "test_shielded")
        refused(open_session(http, url, key, budget={"costs": [0.0] * 10}), 403, "not_allowed")
        refused(open_session(http, url, key[:-1] + ("A" if key[-1] != "A" else "B")), 401, "unauthorized")
        second = open_session(http, url, key)
        assert second.status_code == 201
        refused(open_session(http, url, key), 409, "too_many_sessions")

        # Two sessions draw on one total of 20: 3 + 3 + 3 in the first, 3 + 3 + 3 in the second, then 2 are left.
        a, b = (OracleClient(url).session(r.json()["id"], r.json()["token"]) for r in (first, second))
        for example in range(3):
            a.observe(example, [0, 1, 2])
            b.observe(example, [0, 1, 2])
        with pytest.raises(BudgetExhausted) as exc:
            a.observe(3, [0, 1, 2])
        assert exc.value.error == "allowance_exceeded" and exc.value.remaining.total == 2
        assert b.observe(3, [0, 1]).charged == 2  # what is left can still be spent, by either session
        a.evaluate([0.0] * 10)
        with pytest.raises(BudgetExhausted) as exc:  # one evaluation, all sessions together
            b.evaluate([0.0] * 10)
        assert exc.value.error == "allowance_exceeded"

        view = http.get(f"{url}/v1/account", headers=bearer(key)).json()
        assert view["account"]["spent"] == {"cost": 20.0, "evaluations": 1, "sessions": 2, "open": 2}
        assert view["account"]["remaining"] == {"total": 0.0, "evaluations": 0}
        assert {s["id"] for s in view["sessions"]} == {a.id, b.id}
        audit = http.get(f"{url}/v1/accounts/{account_id}/audit", headers=ADMIN).json()
        assert audit["compliant"], audit["reasons"]
        assert (audit["sessions"], audit["spent_recomputed"], audit["evaluations_recomputed"]) == (2, 20.0, 1)

        # Every link of the session's chain names the account: the export says which, and the offline audit checks.
        export = a.export_ledger(tmp_path / "a.ndjson").read_text().splitlines()
        assert json.loads(export[0]) == {"type": "ledger", "format": 3, "session_id": a.id, "account": account_id}
        assert json.loads(export[1])["payload"]["account"] == account_id
        assert audit_ndjson(export).compliant
        moved = [json.dumps({**json.loads(export[0]), "account": None}), *export[1:]]
        report = audit_ndjson(moved)
        assert not report.compliant and report.first_bad_seq == 0

        # The account's recorded spend is checked against the rows: an edit of either is named.
        with sqlite3.connect(database) as db:
            db.execute("update accounts set spent_cost = 12 where id = ?", (account_id,))
        audit = http.get(f"{url}/v1/account/audit", headers=bearer(key)).json()
        assert not audit["compliant"] and "records a spend of 12" in audit["reasons"][0]


def test_a_revoked_account_opens_nothing_and_its_sessions_are_closed(oracle_url: str, http: httpx.Client) -> None:
    account_id, key = create(http, oracle_url, "student-02")
    opened = open_session(http, oracle_url, key).json()
    revoked = http.delete(f"{oracle_url}/v1/accounts/{account_id}", headers=ADMIN).json()
    assert revoked["status"] == "revoked" and revoked["spent"]["open"] == 0
    refused(open_session(http, oracle_url, key), 403, "account_revoked")
    session = OracleClient(oracle_url).session(opened["id"], opened["token"])
    with pytest.raises(OracleError) as exc:
        session.observe(0, [1])
    assert exc.value.error == "session_closed"
    close = list(session.iter_ledger())[-1]
    assert close.kind == "close" and close.payload == {"reason": "the account was revoked"}
    refused(http.get(f"{oracle_url}/v1/accounts", headers=bearer(key)), 403, "forbidden")


def test_anonymous_sessions_open_at_once_are_bounded_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strangers together hold at most ANONYMOUS_SESSIONS open (the cap itself is exercised below with a cap of 1);
    the setting moves it, 0 lifts it."""
    monkeypatch.delenv("BUDGETLAB_ANONYMOUS_SESSIONS", raising=False)
    assert Settings().anonymous_allowance().sessions == ANONYMOUS_SESSIONS == 10_000
    monkeypatch.setenv("BUDGETLAB_ANONYMOUS_SESSIONS", "3")
    assert Settings().anonymous_allowance().sessions == 3
    monkeypatch.setenv("BUDGETLAB_ANONYMOUS_SESSIONS", "0")
    assert Settings().anonymous_allowance().sessions is None


@pytest.mark.process
def test_anonymous_sessions_can_be_refused_limited_and_shielded(tmp_path: Path, http: httpx.Client) -> None:
    with oracle_server(f"sqlite:///{tmp_path / 'closed.db'}", anonymous=False) as url:
        refused(open_session(http, url, None), 401, "account_required")
        _, key = create(http, url, "lab")
        assert open_session(http, url, key).status_code == 201
    limited = {"anonymous_per_example": 2, "anonymous_total": 5.0, "anonymous_sessions": 1,
               "shielded_datasets": (DATASET,)}
    with oracle_server(f"sqlite:///{tmp_path / 'open.db'}", **limited) as url:
        r = open_session(http, url, None)
        budget = r.json()["session"]["budget"]
        assert r.status_code == 201 and (budget["per_example"], budget["total"]) == (2, 5.0)
        refused(open_session(http, url, None), 409, "too_many_sessions")
        http.delete(f"{url}/v1/sessions/{r.json()['id']}", headers=bearer(r.json()["token"]))
        refused(open_session(http, url, None, budget={"total": 6}), 403, "not_allowed")
        refused(open_session(http, url, None, budget={"per_example": 3}), 403, "not_allowed")
        # The dataset's test split is shielded from everyone, accounts included: only evaluations leave it.
        _, key = create(http, url, "lab")
        for who in (None, key):
            refused(open_session(http, url, who, split="test", protocol="online"), 403, "test_shielded")
        trained = open_session(http, url, key).json()
        evaluation = http.post(f"{url}/v1/sessions/{trained['id']}/evaluate", json={"weights": [0.0] * 10},
                               headers=bearer(trained["token"]))
        assert evaluation.status_code == 200 and evaluation.json()["normalized_mse"] == pytest.approx(1.0)
