"""End to end: the real oracle under uvicorn on loopback, driven over HTTP."""

from __future__ import annotations

import json
import sqlite3

import httpx
import numpy as np
import pytest
from fastapi import FastAPI

from budgetlab.contract.calls import ObserveBatchResponse
from budgetlab.datasets import load_dataset
from budgetlab.datasets.base import stream_order
from budgetlab.errors import BudgetExhausted, OracleError
from budgetlab.evaluation import evaluate_weights
from budgetlab.oracle_client import OracleClient
from server.app import TELEMETRY_LOOK_SECONDS, TelemetryLook, telemetry_looked_up
from server.batch_preparation import batch_json
from server.routers.sessions import serialized
from tests.helpers import ADMIN

DATASET = "sparse-gaussian"
PARAMS = {"d": 20, "n_train": 300, "n_test": 100, "s_plus": 5, "s_minus": 5}


def open_session(http: httpx.Client, url: str, **kw):
    body = {"dataset": DATASET, "dataset_params": PARAMS, "seed": 3, **kw}
    r = http.post(f"{url}/v1/sessions", json=body)
    assert r.status_code == 201, r.text
    data = r.json()
    return data["id"], {"Authorization": f"Bearer {data['token']}"}, data


def assert_error(r: httpx.Response, status: int, error: str | None = None) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) >= {"error", "detail"}
    if error:
        assert body["error"] == error
    return body


def counters(http: httpx.Client, url: str, sid: str, headers: dict) -> tuple[float, int, int]:
    info = http.get(f"{url}/v1/sessions/{sid}", headers=headers).json()
    return info["spent"]["cost"], info["spent"]["attributes"], info["ledger_rows"]


def test_health_docs_and_datasets_never_show_values(oracle_url: str, http: httpx.Client) -> None:
    assert http.get(f"{oracle_url}/healthz").json() == {"status": "ok"}
    assert http.get(f"{oracle_url}/docs").status_code == 200
    listing = http.get(f"{oracle_url}/v1/datasets", timeout=60).json()  # the first parses the bundled sets
    names = {d["name"] for d in listing["datasets"]}
    assert {"powerlaw", "sparse-gaussian", "online-sparse", "diabetes"} <= names
    info = http.get(f"{oracle_url}/v1/datasets/sparse-gaussian:d=20,n_train=300,n_test=100,s_plus=5,s_minus=5").json()
    assert (info["n_attributes"], info["n_train"], info["n_test"]) == (20, 300, 100)
    assert not {"X", "y", "values", "d"} & set(info)  # d: the number of attributes' name until 2026-11-29
    assert_error(http.get(f"{oracle_url}/v1/datasets/no-such-set"), 404, "unknown_dataset")


def test_values_are_the_datasets_in_stream_order_and_reobserving_is_free(oracle_url: str, http: httpx.Client) -> None:
    sid, h, created = open_session(http, oracle_url, budget={"per_example": 3})
    assert created["session"]["remaining"]["per_example"] == 3
    assert created["session"]["n_attributes"] == PARAMS["d"] and "d" not in created["session"]
    dataset = load_dataset(DATASET, PARAMS, 3)
    order = stream_order(dataset.n("train"), 3)
    first = http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h).json()
    assert first["example"] == 0
    assert first["label"] == pytest.approx(dataset.labels("train", order[:1])[0])
    r = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 0, "attributes": [17, 2]})
    body = r.json()
    expected = dataset.values("train", np.array([order[0]] * 2), np.array([17, 2]))
    assert body["values"] == pytest.approx(expected.tolist())
    assert (body["charged"], body["spent"], body["fresh"]) == (2.0, 2.0, 2)
    again = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h,
                      json={"example": 0, "attributes": [2, 17]}).json()
    assert again["values"] == body["values"][::-1]
    assert (again["charged"], again["spent"]) == (0.0, 2.0)


def test_local_budget_rejects_whole_request_and_charges_nothing(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url, budget={"per_example": 3})
    http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 0, "attributes": [0, 1]})
    before = counters(http, oracle_url, sid, h)
    r = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 0, "attributes": [1, 5, 6]})
    body = assert_error(r, 402, "budget_exceeded")
    assert body["remaining"]["example_attributes"] == 1
    assert counters(http, oracle_url, sid, h) == before
    # the one attribute that fits still goes through afterwards
    ok = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 0, "attributes": [5]})
    assert ok.status_code == 200 and ok.json()["remaining"]["example_attributes"] == 0


def test_global_budget_and_per_attribute_costs(oracle_url: str, http: httpx.Client) -> None:
    costs = [float(i % 3 + 1) for i in range(20)]  # 1, 2, 3, 1, 2, 3, ...
    sid, h, _ = open_session(http, oracle_url, budget={"total": 10, "costs": costs})
    for _ in range(3):
        http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    r = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 0, "attributes": [0, 1, 2]})
    assert r.json()["charged"] == 6.0 and r.json()["remaining"]["total"] == 4.0
    before = counters(http, oracle_url, sid, h)
    batch = {"items": [{"example": 1, "attributes": [0, 1]}, {"example": 2, "attributes": [2]}]}  # 3 + 3 > 4
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/observe/batch", headers=h, json=batch), 402)
    assert counters(http, oracle_url, sid, h) == before
    batch = {"items": [{"example": 1, "attributes": [0, 1]}, {"example": 2, "attributes": [3]}]}  # 3 + 1 = 4
    done = http.post(f"{oracle_url}/v1/sessions/{sid}/observe/batch", headers=h, json=batch).json()
    assert done["charged"] == 4.0 and done["remaining"]["total"] == 0.0
    assert [len(item["values"]) for item in done["items"]] == [2, 1]
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h,
                           json={"example": 0, "attributes": [3]}), 402)
    audit = http.get(f"{oracle_url}/v1/sessions/{sid}/audit", headers=h).json()
    assert audit["compliant"] and audit["spent_recomputed"] == 10.0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"example": 0, "attributes": [20]}, 404),
        ({"example": 0, "attributes": [-1]}, 404),
        ({"example": 0, "attributes": [1, 1]}, 422),
        ({"example": 0, "attributes": []}, 422),
        ({"example": 0, "attributes": ["a"]}, 422),
        ({"example": "zero", "attributes": [1]}, 422),
        ({"example": 0}, 422),
        ({"example": 0, "attributes": [1], "extra": 1}, 422),
        ({"example": 5, "attributes": [1]}, 409),
    ],
)
def test_bad_observe_requests_get_json_4xx_and_record_nothing(shared_oracle_url: str, body: dict,
                                                               status: int, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, shared_oracle_url)
    http.post(f"{shared_oracle_url}/v1/sessions/{sid}/next", headers=h)
    before = counters(http, shared_oracle_url, sid, h)
    assert_error(http.post(f"{shared_oracle_url}/v1/sessions/{sid}/observe", headers=h, json=body), status)
    assert counters(http, shared_oracle_url, sid, h) == before


def test_tokens_belong_to_their_session_and_only_hashes_are_stored(oracle_url: str, sqlite_url: str,
                                                                   http: httpx.Client) -> None:
    a, ha, created = open_session(http, oracle_url)
    b, hb, _ = open_session(http, oracle_url)
    assert_error(http.get(f"{oracle_url}/v1/sessions/{a}", headers=hb), 404, "not_found")
    assert_error(http.post(f"{oracle_url}/v1/sessions/{a}/next", headers=hb), 404)
    for fmt in ("json", "ndjson", "csv"):  # the streamed exports must refuse before streaming starts
        assert_error(http.get(f"{oracle_url}/v1/sessions/{a}/ledger", params={"format": fmt}, headers=hb), 404)
    assert_error(http.get(f"{oracle_url}/v1/sessions/{a}"), 401, "unauthorized")
    assert http.get(f"{oracle_url}/v1/sessions/{a}", headers=ha).status_code == 200
    token = ha["Authorization"].split()[1]
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        stored = [row[0] for row in db.execute("select token_hash from sessions")]
    assert token not in stored and len(stored) == 2 and all(len(s) == 64 for s in stored)


def test_online_protocol_commits_prediction_before_label(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url, protocol="online", budget={"per_example": 2})
    nxt = http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h).json()
    assert nxt["label"] is None
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/label", headers=h, json={"example": 0}), 409)
    p = http.post(f"{oracle_url}/v1/sessions/{sid}/predict", headers=h, json={"example": 0, "prediction": 0.5})
    body = p.json()
    assert body["loss"] == pytest.approx((0.5 - body["label"]) ** 2)
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/predict", headers=h,
                           json={"example": 0, "prediction": 1.0}), 409, "already_predicted")
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/predict", headers=h,
                           json={"example": 1, "prediction": 1.0}), 409, "example_not_issued")
    http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    p2 = http.post(f"{oracle_url}/v1/sessions/{sid}/predict", headers=h, json={"example": 1, "prediction": 0}).json()
    info = http.get(f"{oracle_url}/v1/sessions/{sid}", headers=h).json()
    assert info["predictions"] == 2
    assert info["cumulative_loss"] == pytest.approx(body["loss"] + p2["label"] ** 2)


def test_test_session_predicts_on_a_budget(oracle_url: str, http: httpx.Client) -> None:
    r = http.post(f"{oracle_url}/v1/sessions", json={"dataset": DATASET, "dataset_params": PARAMS, "split": "test",
                                                      "protocol": "batch"})
    assert_error(r, 422, "invalid_request")
    sid, h, created = open_session(http, oracle_url, split="test", protocol="online", budget={"per_example": 2})
    assert created["session"]["n_examples"] == 100
    http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    assert http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h,
                     json={"example": 0, "attributes": [0, 1]}).status_code == 200
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h,
                           json={"example": 0, "attributes": [2]}), 402)
    assert http.post(f"{oracle_url}/v1/sessions/{sid}/predict", headers=h,
                     json={"example": 0, "prediction": 0.0}).status_code == 200


def test_evaluate_is_free_correct_and_ledgered(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url, budget={"total": 0})
    dataset = load_dataset(DATASET, PARAMS, 3)
    w = np.zeros(20)
    w[:5], w[5:10] = 1.0, -1.0
    got = http.post(f"{oracle_url}/v1/sessions/{sid}/evaluate", headers=h, json={"weights": w.tolist()}).json()
    want = evaluate_weights(dataset, w)
    assert got["mse"] == pytest.approx(want.mse) and got["zero_one"] == pytest.approx(want.zero_one)
    assert got["normalized_mse"] < 0.2  # theta* explains most of the variance
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/evaluate", headers=h, json={"weights": [1.0]}), 422)
    rows = http.get(f"{oracle_url}/v1/sessions/{sid}/ledger", headers=h).json()["rows"]
    assert [r["kind"] for r in rows] == ["open", "evaluate"]
    assert rows[1]["payload"]["mse"] == pytest.approx(want.mse) and rows[1]["cost"] == 0.0


def test_ledger_pages_export_and_offline_audit_names_tampering(oracle_url: str, tmp_path) -> None:
    with OracleClient(oracle_url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, budget={"per_example": 4}, seed=1)
        for _ in range(5):
            ex = s.next().example
            s.observe(ex, [1, 3, 5])
        pages, after = [], -1
        while True:
            page = s.ledger(after=after, limit=4)
            pages.append(page.rows)
            if page.next_after is None:
                break
            after = page.next_after
        rows = [r for p in pages for r in p]
        assert [r.seq for r in rows] == list(range(1 + 5 * 4))  # open + (label + 3 observations) x 5
        assert len(pages) == 6
        assert s.audit().compliant
        export = s.export_ledger(tmp_path / "ledger.ndjson")
    from budgetlab.audit import audit_ndjson

    lines = export.read_text().splitlines()
    assert json.loads(lines[0]) == {"type": "ledger", "format": 3, "session_id": s.id, "account": None}
    assert audit_ndjson(lines).compliant
    assert audit_ndjson(lines, receipts=[s.receipt]).compliant  # the client's last receipt is in the export

    # lines[0] is the header, so row seq s is lines[s + 1]; row 7 is the second value of an observe link.
    altered = [json.loads(x) for x in lines]
    altered[8]["value"] = altered[8]["value"] + 1.0
    report = audit_ndjson(json.dumps(x) for x in altered)
    assert not report.compliant and report.first_bad_seq == 7 and "altered" in report.reasons[0]

    missing = lines[:10] + lines[11:]
    report = audit_ndjson(missing)
    assert not report.compliant and report.first_bad_seq == 9 and "missing" in report.reasons[0]

    inserted = lines[:5] + [lines[4]] + lines[5:]
    report = audit_ndjson(inserted)
    assert not report.compliant and report.first_bad_seq == 4

    truncated = lines[:-3] + lines[-1:]
    report = audit_ndjson(truncated)
    assert not report.compliant and any("missing at the end" in r for r in report.reasons)


def test_closed_session_answers_409_but_stays_auditable(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url)
    assert http.delete(f"{oracle_url}/v1/sessions/{sid}", headers=h).json()["status"] == "closed"
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h), 409, "session_closed")
    assert_error(http.delete(f"{oracle_url}/v1/sessions/{sid}", headers=h), 409)
    audit = http.get(f"{oracle_url}/v1/sessions/{sid}/audit", headers=h).json()
    assert audit["compliant"] and audit["rows"] == 2


def test_idle_sessions_are_closed_by_the_admin(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url)
    assert_error(http.post(f"{oracle_url}/v1/admin/close-idle", headers=h), 403)
    admin = ADMIN
    assert http.post(f"{oracle_url}/v1/admin/close-idle", headers=admin).json()["closed"] == []
    closed = http.post(f"{oracle_url}/v1/admin/close-idle?idle_seconds=0", headers=admin).json()["closed"]
    assert sid in closed
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h), 409)


def test_labels_can_be_priced(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url, budget={"total": 2.5, "label_cost": 1.0})
    http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h)
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h), 402)
    assert counters(http, oracle_url, sid, h)[0] == 2.0


def test_pool_order_addresses_any_example(oracle_url: str, http: httpx.Client) -> None:
    sid, h, _ = open_session(http, oracle_url, order="pool", budget={"per_example": 1})
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/next", headers=h), 409, "pool_order")
    dataset = load_dataset(DATASET, PARAMS, 3)
    r = http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h, json={"example": 299, "attributes": [4]})
    assert r.json()["values"][0] == pytest.approx(dataset.values("train", np.array([299]), np.array([4]))[0])
    lab = http.post(f"{oracle_url}/v1/sessions/{sid}/label", headers=h, json={"example": 299}).json()
    assert lab["label"] == pytest.approx(dataset.labels("train", np.array([299]))[0])
    assert_error(http.post(f"{oracle_url}/v1/sessions/{sid}/observe", headers=h,
                           json={"example": 300, "attributes": [4]}), 404)


def test_sdk_raises_typed_errors(oracle_url: str) -> None:
    with OracleClient(oracle_url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, budget={"total": 1})
        ex = s.next().example
        s.observe(ex, [0])
        with pytest.raises(BudgetExhausted) as info:
            s.observe(ex, [1])
        assert info.value.remaining is not None and info.value.remaining.total == 0
        with pytest.raises(OracleError) as bad:
            client.open_session("nope")
        assert bad.value.status == 422


@pytest.mark.process
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_observe_on_driver_sql_reads_back_through_sqlalchemy(backend: str, request: pytest.FixtureRequest,
                                                             http: httpx.Client) -> None:
    """Observe writes with plain driver SQL; what it writes must read back through SQLAlchemy on both databases."""
    from tests.servers import oracle_server

    database_url = request.getfixturevalue(f"{backend}_url")
    with oracle_server(database_url) as url:
        sid, h, _ = open_session(http, url, order="pool", budget={"per_example": 2, "total": 3})
        assert http.post(f"{url}/v1/sessions/{sid}/observe", headers=h,
                         json={"example": 0, "attributes": [1, 2]}).status_code == 200
        # Refusals roll back on a connection that stays in use: later observes still work and charge.
        assert_error(http.post(f"{url}/v1/sessions/{sid}/observe", headers=h,
                               json={"example": 1, "attributes": [1, 2, 3]}), 402)
        assert_error(http.post(f"{url}/v1/sessions/{sid}/observe", headers={"Authorization": "Bearer x"},
                               json={"example": 1, "attributes": [1]}), 404)
        assert http.post(f"{url}/v1/sessions/{sid}/observe", headers=h,
                         json={"example": 1, "attributes": [4]}).status_code == 200
        assert counters(http, url, sid, h) == (3.0, 3, 4)
        # last_active, written by the driver path, is parsed by the idle sweep: recent, so not closed.
        admin = ADMIN
        assert sid not in http.post(f"{url}/v1/admin/close-idle?idle_seconds=3600", headers=admin).json()["closed"]
        assert sid in http.post(f"{url}/v1/admin/close-idle?idle_seconds=0", headers=admin).json()["closed"]
        report = http.get(f"{url}/v1/sessions/{sid}/audit", headers=h).json()
        assert report["compliant"] and report["spent_recomputed"] == report["spent_recorded"] == 3.0

        # next, label and predict run on the same path.
        sid, h, _ = open_session(http, url, protocol="online", budget={"per_example": 2})
        example = http.post(f"{url}/v1/sessions/{sid}/next", headers=h).json()["example"]
        first = http.post(f"{url}/v1/sessions/{sid}/predict", headers=h, json={"example": example, "prediction": 0.5})
        assert first.status_code == 200 and first.json()["predictions"] == 1
        assert_error(http.post(f"{url}/v1/sessions/{sid}/predict", headers=h,
                               json={"example": example, "prediction": 0.0}), 409, "already_predicted")
        info = http.get(f"{url}/v1/sessions/{sid}", headers=h).json()
        assert info["predictions"] == 1 and info["cumulative_loss"] == pytest.approx(first.json()["loss"])
        sid, h, _ = open_session(http, url, order="pool", budget={"total": 1.5, "label_cost": 1.0})
        once = http.post(f"{url}/v1/sessions/{sid}/label", headers=h, json={"example": 4}).json()
        again = http.post(f"{url}/v1/sessions/{sid}/label", headers=h, json={"example": 4}).json()
        assert (once["charged"], again["charged"], again["label"]) == (1.0, 0.0, once["label"])
        assert_error(http.post(f"{url}/v1/sessions/{sid}/label", headers=h, json={"example": 5}), 402)
        assert http.get(f"{url}/v1/sessions/{sid}/audit", headers=h).json()["compliant"]


@pytest.mark.parametrize("receipt", [None, {"rows": 12, "head": "ab" * 32}])
def test_a_batch_answer_serialised_an_item_at_a_time_is_the_same_json(receipt: dict | None) -> None:
    answer = ObserveBatchResponse.model_validate({
        "items": [{"example": 3, "attributes": [0, 7], "values": [0.5, -1e-300]},
                  {"example": 4, "attributes": [2], "values": [float(np.float32(0.1))]}],
        "charged": 3.0, "fresh": 3, "spent": 7.5, "remaining": {"total": 12.5, "per_example": 4, "example": 4,
                                                                 "example_attributes": 3},
        "receipt": receipt})
    assert batch_json(answer) == serialized(answer).body


def test_fastapis_telemetry_check_is_answered_from_a_look_at_most_a_second_old() -> None:
    clock = [100.0]
    looks: list[bool] = []

    def enabled() -> bool:  # FastAPI's own check: a provider configured at the third look
        looks.append(len(looks) >= 2)
        return looks[-1]

    check = TelemetryLook(enabled, lambda: clock[0])
    assert [check(), check()] == [False, False] and len(looks) == 1  # asked again only a second later
    clock[0] += TELEMETRY_LOOK_SECONDS
    assert not check() and len(looks) == 2
    clock[0] += TELEMETRY_LOOK_SECONDS
    assert check() and len(looks) == 3
    clock[0] += 3600
    assert check() and len(looks) == 3  # a provider, once set, stays: never asked again
    app = FastAPI()
    telemetry_looked_up(app)
    assert isinstance(app._native_telemetry.enabled, TelemetryLook)  # the check FastAPI calls at every request
