"""A session over its WebSocket: same seed, same weights as in-process; the protocol's errors; the fallback to HTTP."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.sync.client import connect

from budgetlab.contract.budgets import Budget
from budgetlab.errors import BudgetExhausted
from budgetlab.oracle_client import OracleClient
from budgetlab.session_stream import stream_url
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle
from learner.runner import run_algorithm
from server.app import create_app
from server.config import Settings
from server.routers.stream import BIG_MESSAGE
from tests.servers import serve_in_thread

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

DATASET = "sparse-gaussian"
PARAMS = {"d": 30, "n_train": 300, "n_test": 50, "s_plus": 3, "s_minus": 3}


@pytest.mark.parametrize(("algorithm", "protocol", "dataset", "params", "alg_params"), [
    ("aerr", "batch", DATASET, PARAMS, None),
    ("ito1", "online", "online-sparse", {"d": 10, "k": 2}, {"k": 2}),
])
def test_same_seed_same_weights_over_the_stream_as_in_process(oracle_url: str, algorithm: str, protocol: str,
                                                              dataset: str, params: dict, alg_params: dict | None,
                                                              ) -> None:
    budget = Budget(per_example=4)
    local = run_algorithm(algorithm, LocalOracle(dataset, dataset_params=params, protocol=protocol,  # type: ignore[arg-type]
                                                 budget=budget, seed=3),
                          seed=3, params=alg_params, max_examples=200, eval_every=100)
    with OracleClient(oracle_url) as client:
        remote = HttpOracle(oracle_url, dataset, dataset_params=params, protocol=protocol,  # type: ignore[arg-type]
                            budget=budget, seed=3, client=client)
        result = run_algorithm(algorithm, remote, seed=3, params=alg_params, max_examples=200, eval_every=100)
        assert remote.session.transport == "websocket"
        assert remote.session.audit().compliant
    assert result.status == local.status == "finished"
    np.testing.assert_array_equal(result.weights, local.weights)
    assert [p.attributes for p in result.curve] == [p.attributes for p in local.curve]


def test_the_stream_answers_bad_messages_with_4xx_and_refuses_a_wrong_token(oracle_url: str) -> None:
    with OracleClient(oracle_url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, budget={"per_example": 2, "total": 3}, seed=1)
        with connect(stream_url(oracle_url, s.id), additional_headers={"Authorization": f"Bearer {s.token}"},
                     legacy=True) as ws:
            for message, status, error in [("not json", 400, "invalid_message"),
                                            (json.dumps({"op": "teleport"}), 400, "unknown_op"),
                                            (json.dumps({"op": "step", "body": {"attributes": "all"}}), 422,
                                             "invalid_request"),
                                            (json.dumps({"op": "step", "body": {"attributes": [0, 1, 2]}}), 402,
                                             "budget_exceeded")]:
                ws.send(message)
                code, _, body = ws.recv(timeout=10).partition(" ")
                assert (int(code), json.loads(body)["error"]) == (status, error), message
            ws.send(json.dumps({"op": "step", "body": {"attributes": [0, 1]}}))
            code, _, body = ws.recv(timeout=10).partition(" ")
            assert code == "200" and json.loads(body)["example"] == 0  # the refused step issued nothing
        assert s.get().spent.attributes == 2
        # The SDK raises the same refusal over the stream as over HTTP.
        with pytest.raises(BudgetExhausted):
            s.step([3, 4])
        assert s.transport == "websocket"
        for token in ("wrong", ""):
            with pytest.raises(InvalidStatus):
                connect(stream_url(oracle_url, s.id), additional_headers={"Authorization": f"Bearer {token}"},
                        legacy=True, open_timeout=10)


def test_a_big_message_gets_the_answer_and_the_refusals_http_gives(oracle_url: str) -> None:
    """A message past BIG_MESSAGE is handled whole on the thread pool: the same answers, the same refusals."""
    pool = {"d": 100, "n_train": 400, "n_test": 10}
    items = [{"example": e, "attributes": list(range(100))} for e in range(200)]
    batch = json.dumps({"op": "observe_batch", "body": {"items": items}})
    assert len(batch) >= BIG_MESSAGE
    with OracleClient(oracle_url) as client, OracleClient(oracle_url, stream=False) as http:
        s = client.open_session(DATASET, dataset_params=pool, order="pool", seed=2)
        over_http = http.open_session(DATASET, dataset_params=pool, order="pool", seed=2)
        with connect(stream_url(oracle_url, s.id), additional_headers={"Authorization": f"Bearer {s.token}"},
                     legacy=True) as ws:
            padding = " " * BIG_MESSAGE
            # Big ones are parsed by pydantic's parser, and what it refuses by the standard library's: a lone
            # surrogate it does not take, nesting too deep for either (the refusal says so).
            for message, status, error, detail in [
                    ("not json" + padding, 400, "invalid_message", "a message is JSON"),
                    ("[" * BIG_MESSAGE, 400, "invalid_message", "nested too deep"),
                    (json.dumps({"op": "teleport", "body": padding}), 400, "unknown_op", "op must be"),
                    (json.dumps({"op": "step\ud800", "body": padding}), 400, "unknown_op", "op must be"),
                    (json.dumps({"op": "observe_batch", "body": {"items": items + items}}), 422, "duplicate_example",
                     "")]:
                ws.send(message)
                code, _, body = ws.recv(timeout=30).partition(" ")
                refusal = json.loads(body)
                assert (int(code), refusal["error"]) == (status, error) and detail in refusal["detail"], message[:40]
            ws.send(batch)
            code, _, body = ws.recv(timeout=30).partition(" ")
        assert code == "200"
        answer = json.loads(body)
        expected = over_http.observe_batch([(i["example"], i["attributes"]) for i in items]).model_dump(mode="json")
        assert [i["values"] for i in answer["items"]] == [i["values"] for i in expected["items"]]
        assert answer["fresh"] == expected["fresh"] == 20_000
        assert s.audit().compliant


def test_the_sdk_falls_back_to_http_when_the_oracle_offers_no_stream(tmp_path: Path) -> None:
    # The real oracle behind a server that cannot upgrade to WebSocket (as behind a proxy that does not).
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}"))
    with serve_in_thread(app, ws="none") as url, OracleClient(url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, budget={"per_example": 2}, seed=1)
        first = s.step([0, 1])
        assert s.transport == "http" and first.receipt is not None and len(first.values) == 2
        assert s.step([5]).example == 1 and s.audit().compliant


def test_nothing_a_client_sends_crashes_the_stream(oracle_url: str) -> None:
    """Binary frames, JSON too deep to parse and ops that are not names get a 400 and the stream stays usable;
    a text frame that is not UTF-8 is closed with 1007 as RFC 6455 says, logged in one line."""
    lines: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = lines.append  # type: ignore[method-assign]
    logging.getLogger("uvicorn.error").addHandler(handler)
    try:
        with OracleClient(oracle_url) as client:
            s = client.open_session(DATASET, dataset_params=PARAMS, budget={"per_example": 2}, seed=1)
            headers = {"Authorization": f"Bearer {s.token}"}
            with connect(stream_url(oracle_url, s.id), additional_headers=headers) as ws:
                for message, error in [(b"\x00\x01", "invalid_message"),
                                       ("[" * 100_000 + "]" * 100_000, "invalid_message"),
                                       ('{"op": "step", "body": ' + "[" * 5_000 + "]" * 5_000 + "}", "invalid_message"),
                                       (json.dumps({"op": ["step"]}), "unknown_op"),
                                       (json.dumps({"op": {"step": 1}}), "unknown_op")]:
                    ws.send(message)
                    code, _, body = ws.recv(timeout=30).partition(" ")
                    assert (code, json.loads(body)["error"]) == ("400", error), str(message)[:30]
                ws.send(json.dumps({"op": "step", "body": {"attributes": [0]}}))
                code, _, body = ws.recv(timeout=30).partition(" ")
                assert code == "200" and json.loads(body)["example"] == 0
            with connect(stream_url(oracle_url, s.id), additional_headers=headers) as ws:
                ws.send(b"\xff\xfe", text=True)
                with pytest.raises(ConnectionClosedError) as closed:
                    ws.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
            assert s.get().spent.attributes == 1  # nothing refused was charged; the stream's step was
    finally:
        logging.getLogger("uvicorn.error").removeHandler(handler)
    errors = [r for r in lines if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None, [r.getMessage() for r in errors]


@pytest.mark.parametrize(("headers", "status", "error"), [({}, 401, "unauthorized"),
                                                          ({"Authorization": "Bearer wrong"}, 404, "not_found")])
def test_a_refused_handshake_is_the_http_refusal(oracle_url: str, headers: dict, status: int, error: str) -> None:
    with OracleClient(oracle_url) as client:
        s = client.open_session(DATASET, dataset_params=PARAMS, seed=1)
        with pytest.raises(InvalidStatus) as refused:
            connect(stream_url(oracle_url, s.id), additional_headers=headers, open_timeout=10)
    assert refused.value.response.status_code == status
    assert json.loads(bytes(refused.value.response.body or b""))["error"] == error
