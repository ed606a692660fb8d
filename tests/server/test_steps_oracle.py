"""``steps`` on the real oracle (#36): rounds sent in one request, over HTTP (``POST /steps``) and over the session's
stream, are recorded row for row as the same rounds sent as ``step`` requests, on SQLite and on PostgreSQL (where a
request of hundreds of rows leaves the one-statement write of small steps); a refused request (a budget, an
account's allowance crossed mid-request, a malformed body) records and charges nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from budgetlab.contract.calls import StepsRequest, StepsResponse
from budgetlab.errors import BudgetExhausted
from budgetlab.oracle_client import AsyncOracleClient, OracleClient, OracleSession
from budgetlab.session_stream import stream_url
from server.routers.stream import BIG_MESSAGE, STEPS_MESSAGE, _steps_request
from tests.helpers import ADMIN, LONG, TINY, bearer
from tests.servers import oracle_server

pytestmark = pytest.mark.process

DATASET = "sparse-gaussian"
D = TINY["d"]
BUDGET = {"label_cost": 0.5, "per_example": 5, "costs": [1.0 + (a % 3) / 2 for a in range(D)]}
# 40 rounds of 1 to 5 attributes: a first request of 3 rounds (a few rows), then one of 37 (hundreds of rows).
ROUNDS = [[(7 * i + 3 * j) % D for j in range(1 + i % 5)] for i in range(40)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_oracle_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The module's oracle on SQLite, or one on a fresh PostgreSQL database (skipped where there is none)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("shared_oracle_url")
        return
    with oracle_server(request.getfixturevalue("postgres_url")) as url:
        yield url


def _rows(session: OracleSession) -> list[tuple[Any, ...]]:
    return [(r.kind, r.example, r.attribute, r.value, r.cost) for r in session.iter_ledger()]


@pytest.mark.parametrize("stream", [False, True], ids=["http", "stream"])
def test_steps_record_row_for_row_what_the_same_steps_record(any_oracle_url: str, stream: bool) -> None:
    with OracleClient(any_oracle_url, stream=stream) as client, OracleClient(any_oracle_url, stream=False) as plain:
        together, one_by_one = (c.open_session(DATASET, dataset_params=TINY, budget=BUDGET, seed=3)
                                for c in (client, plain))
        answers = [*together.steps(ROUNDS[:3]).rounds, *together.steps(ROUNDS[3:]).rounds]
        assert together.transport == ("websocket" if stream else "http")
        singles = [one_by_one.step(attributes) for attributes in ROUNDS]
        assert all(a.receipt is None for a in answers)
        assert [a.model_copy(update={"receipt": None}) for a in answers] == [
            s.model_copy(update={"receipt": None}) for s in singles]
        rows = _rows(together)
        assert rows[1:] == _rows(one_by_one)[1:] and len(rows) == 1 + len(ROUNDS) + sum(map(len, ROUNDS))
        assert together.receipt is not None and together.receipt.rows == len(rows)  # the chain head after all
        assert together.get().spent == one_by_one.get().spent
        assert together.audit().compliant and one_by_one.audit().compliant


def test_an_async_session_s_steps_are_the_same_steps(shared_oracle_url: str) -> None:
    async def steps() -> tuple[StepsResponse, str]:
        async with AsyncOracleClient(shared_oracle_url) as client:
            session = await client.open_session(DATASET, dataset_params=TINY, budget=BUDGET, seed=5)
            return await session.steps(ROUNDS[:4]), session.transport

    answer, transport = asyncio.run(steps())
    with OracleClient(shared_oracle_url, stream=False) as client:
        twin = client.open_session(DATASET, dataset_params=TINY, budget=BUDGET, seed=5)
        singles = [twin.step(attributes) for attributes in ROUNDS[:4]]
    assert transport == "websocket" and answer.receipt is not None and answer.receipt.rows == 1 + 4 + 10
    assert answer.rounds == [s.model_copy(update={"receipt": None}) for s in singles]


def test_a_refused_steps_request_records_and_charges_nothing(shared_oracle_url: str, http: httpx.Client) -> None:
    opened = http.post(f"{shared_oracle_url}/v1/sessions", json={
        "dataset": DATASET, "dataset_params": TINY, "budget": {"total": 10.0}}).json()
    url, auth = f"{shared_oracle_url}/v1/sessions/{opened['id']}", bearer(opened["token"])
    assert http.post(f"{url}/steps", json={"rounds": [{"attributes": [0, 1, 2]}]}, headers=auth).status_code == 200
    before = http.get(url, headers=auth).json()
    # 3 + 3 + 3 = 9 of the 7 left: the third round crosses the global budget, and the whole request is refused.
    crossing = {"rounds": [{"attributes": [0, 1, 2]}, {"attributes": [3, 4, 5]}, {"attributes": [6, 7, 8]}]}
    malformed: list[dict[str, Any]] = [
        {"json": {"rounds": []}}, {"json": {"rounds": [{"attributes": [1.5]}]}}, {"json": {"rounds": "all"}},
        {"json": {"rounds": [{"attributes": [1]}], "more": 1}}, {"json": {"rounds": [{}] * 1001}},
        {"content": b'{"rounds": [', "headers": {"content-type": "application/json"}}, {"json": [1, 2]},
    ]
    refused = http.post(f"{url}/steps", json=crossing, headers=auth)
    assert refused.status_code == 402, refused.text
    body = refused.json()
    assert body["error"] == "budget_exceeded" and body["detail"].startswith("round 3 of 3: ")
    for bad in malformed:
        answer = http.post(f"{url}/steps", **{**bad, "headers": {**bad.get("headers", {}), **auth}})
        assert answer.status_code == 422 and answer.json()["error"] == "invalid_request", (bad, answer.text)
        assert answer.json()["detail"]
    assert http.get(url, headers=auth).json() == before
    audit = http.get(f"{url}/audit", headers=auth).json()
    assert audit["compliant"] and audit["rows"] == before["ledger_rows"] == 1 + 1 + 3


def test_steps_draw_on_the_account_what_the_same_steps_draw(shared_oracle_url: str, http: httpx.Client) -> None:
    keys = []
    for name in ("steps-together", "steps-one-by-one"):
        made = http.post(f"{shared_oracle_url}/v1/accounts", headers=ADMIN,
                         json={"name": name, "allowance": {"total": 30, "per_example": 5}})
        assert made.status_code == 201, made.text
        keys.append(made.json()["key"])
    budget = {"label_cost": 0.5}
    with OracleClient(shared_oracle_url, api_key=keys[0]) as a, OracleClient(shared_oracle_url, api_key=keys[1]) as b:
        together = a.open_session(DATASET, dataset_params=TINY, budget=budget)
        one_by_one = b.open_session(DATASET, dataset_params=TINY, budget=budget)
        together.steps([[0, 1, 2]] * 4)
        for _ in range(4):
            one_by_one.step([0, 1, 2])
        assert a.account().account.spent == b.account().account.spent and a.account().account.spent.cost == 14.0
        rows = together.get().ledger_rows
        with pytest.raises(BudgetExhausted) as exc:  # 14 + 5 x 3.5 = 31.5: past the account's 30 at the 5th round
            together.steps([[0, 1, 2]] * 5)
        assert exc.value.error == "allowance_exceeded"
        assert a.account().account.spent.cost == 14.0 and together.get().ledger_rows == rows
        assert [r.charged for r in together.steps([[0, 1, 2]] * 4).rounds] == [3.5] * 4
        assert a.account().account.spent.cost == 28.0


def _steps_over_the_stream(url: str, session: OracleSession, messages: list[str]) -> list[tuple[int, Any]]:
    with connect(stream_url(url, session.id), additional_headers={"Authorization": f"Bearer {session.token}"},
                 legacy=True) as ws:
        replies = []
        for message in messages:
            ws.send(message)
            status, _, body = ws.recv(timeout=30).partition(" ")
            replies.append((int(status), json.loads(body)))
    return replies


def test_a_big_steps_message_is_answered_as_the_same_message_written_otherwise(shared_oracle_url: str) -> None:
    """The stream validates a big ``steps`` message written as the SDK writes it from its JSON at once
    (``server.routers.stream.STEPS_MESSAGE``): the answers and refusals of the same messages written with spaces,
    which it parses first."""
    rounds: list[dict[str, Any]] = [{"attributes": list(range(D))} for _ in range(1000)]
    refused = [*rounds[:999], {"attributes": [1.5]}]
    written = [json.dumps({"op": "steps", "body": {"rounds": body}}, separators=separators)
               for separators in ((",", ":"), (", ", ": ")) for body in (refused, rounds)]
    assert written[0].startswith(STEPS_MESSAGE) and not written[2].startswith(STEPS_MESSAGE)
    assert min(map(len, written)) >= BIG_MESSAGE
    # The SDK's is read by the model at once; one it refuses, and one written otherwise, are not.
    assert _steps_request(written[1]) == StepsRequest.model_validate(json.loads(written[3])["body"])
    assert _steps_request(written[0]) is None and _steps_request(written[3]) is None
    with OracleClient(shared_oracle_url, stream=False) as client:
        sdk, spaced = (client.open_session(DATASET, dataset_params=LONG, seed=4) for _ in range(2))
        replies = _steps_over_the_stream(shared_oracle_url, sdk, written[:2])
        twins = _steps_over_the_stream(shared_oracle_url, spaced, written[2:])
        assert [status for status, _ in replies] == [status for status, _ in twins] == [422, 200]
        assert replies[0] == twins[0] and "round" in replies[0][1]["detail"]
        assert [{**r, "receipt": None} for r in replies[1][1]["rounds"]] == [
            {**r, "receipt": None} for r in twins[1][1]["rounds"]]
        assert len(replies[1][1]["rounds"]) == 1000 and sdk.get().spent == spaced.get().spent
        assert sdk.audit().compliant
