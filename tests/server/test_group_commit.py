"""Small steps ready at once share one transaction (``GroupCommit``), and the small steps over HTTP are answered
without the routes (``SmallSteps``): on a real SQLite ledger, every answer is in the ledger, a refused step leaves no
trace and its refusal is its own, and what the fast path does not take is answered by the routes. On PostgreSQL a small
step's rows and counters are written in one statement, and its chain audits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from budgetlab.contract.calls import StepRequest, StepResponse
from budgetlab.contract.sessions import SessionCreate, SessionCreated
from budgetlab.errors import Refused
from budgetlab.operations import OPERATIONS
from server import scheduling
from server.app import create_app
from server.config import Settings
from server.db import make_engine, upgrade
from server.sessions import SessionService
from server.small_steps import SmallSteps
from tests.helpers import TINY

STEP = OPERATIONS["step"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[SessionService]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    upgrade(url)
    sessions = SessionService(make_engine(url))
    yield sessions
    sessions.close_connections()


def opened(sessions: SessionService, total: float | None = None) -> SessionCreated:
    return sessions.create(SessionCreate(dataset="sparse-gaussian", dataset_params=TINY, order="stream",
                                         budget={"per_example": 3, "total": total}))


@contextmanager
def counting_groups(sessions: SessionService) -> Iterator[list[int]]:
    """How many group transactions the database opens meanwhile (its ``grouped``, wrapped to count)."""
    database, counted = sessions.db, []
    grouped = database.grouped

    @contextmanager
    def counting() -> Iterator[None]:
        counted.append(1)
        with grouped():
            yield

    database.grouped = counting  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        database.grouped = grouped  # type: ignore[method-assign]


def test_steps_ready_at_once_commit_together_and_a_refused_one_alone_leaves_no_trace(
        service: SessionService) -> None:
    ok_a, ok_b, poor = opened(service), opened(service), opened(service, total=2.0)
    poor_before = service.info(poor.id, poor.token)

    async def together() -> list[Any]:
        runs = [service.group.run(s.id, service.perform, STEP, s.id, s.token, StepRequest(attributes=[0, 1, 2]))
                for s in (ok_a, poor, ok_b)]
        return await asyncio.gather(*runs, return_exceptions=True)

    with counting_groups(service) as groups:
        a, refused, b = asyncio.run(together())
    assert len(groups) == 1  # one transaction for the three
    assert isinstance(refused, Refused) and refused.status == 402, refused
    for session, answer in ((ok_a, a), (ok_b, b)):
        info = service.info(session.id, session.token)
        assert answer.receipt.rows == info.ledger_rows and answer.receipt.head == info.head_hash
        assert info.spent.cost == 3.0
        assert service.audit(session.id, session.token).compliant
    after = service.info(poor.id, poor.token)
    assert (after.ledger_rows, after.head_hash, after.spent) == (poor_before.ledger_rows, poor_before.head_hash,
                                                                poor_before.spent)
    assert service.audit(poor.id, poor.token).compliant


def test_a_group_that_cannot_take_the_lock_now_leaves_each_step_to_wait_its_turn(service: SessionService) -> None:
    sessions = [opened(service) for _ in range(3)]

    async def while_held() -> list[Any]:
        gate = service.db._gate
        assert gate is not None
        gate.acquire()  # another write of this process holds the lock: the group cannot be taken on the loop
        runs = [asyncio.ensure_future(service.group.run(s.id, service.perform, STEP, s.id, s.token,
                                                        StepRequest(attributes=[1]))) for s in sessions]
        await asyncio.sleep(0.05)
        assert not any(run.done() for run in runs)  # nothing answered while nothing can be committed
        gate.release()
        service.db._wake_waiters()
        return await asyncio.gather(*runs)

    answers = asyncio.run(while_held())
    for session, answer in zip(sessions, answers, strict=True):
        info = service.info(session.id, session.token)
        assert answer.receipt.head == info.head_hash
        assert service.audit(session.id, session.token).compliant


def test_a_session_stepping_alone_is_not_held_for_a_group_and_one_beside_another_is(
        service: SessionService, monkeypatch: pytest.MonkeyPatch) -> None:
    alone, other = opened(service), opened(service)
    monkeypatch.setattr(scheduling, "ALONE", 0.0)  # no wait: alone as soon as no other session stepped meanwhile

    async def at_once(session: SessionCreated) -> bool:
        """Whether the step is answered without the coroutine ever waiting (no group's pass of the loop)."""
        step = service.group.run(session.id, service.perform, STEP, session.id, session.token,
                                 StepRequest(attributes=[0]))
        try:
            waited = step.send(None)
        except StopIteration:
            return True
        while True:  # it waits for its group: let it finish, as its task would (which takes the wait over)
            waited._asyncio_future_blocking = False
            await waited
            try:
                waited = step.send(None)
            except StopIteration:
                return False

    async def steps() -> list[bool]:
        return [await at_once(alone), await at_once(alone), await at_once(other), await at_once(alone)]

    # A first step (its session new to the worker) waits for a group; then alone at once; another session's step,
    # and the next of the first after it, wait for a group again.
    assert asyncio.run(steps()) == [False, True, False, False]


def asgi_call(app: Any, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """One request to an ASGI app, in this process; (status, JSON body)."""

    async def one() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://oracle") as client:
            return await client.post(path, content=body, headers=headers)

    response = asyncio.run(one())
    return response.status_code, response.json()


def test_small_steps_answer_well_formed_steps_themselves_and_hand_the_rest_to_the_routes(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}"))
    sessions: SessionService = app.state.sessions
    created = opened(sessions)
    reached: list[str] = []

    async def routes(scope: Any, receive: Any, send: Any) -> None:  # stands for the routes: says it was reached
        reached.append(scope["path"])
        body = (await receive())["body"]
        await send({"type": "http.response.start", "status": 299, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"body": body.decode(errors="replace")}).encode()})

    fast = SmallSteps(routes)

    def post(op: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        async def with_app(scope: Any, receive: Any, send: Any) -> None:
            await fast({**scope, "app": app}, receive, send)
        return asgi_call(with_app, f"/v1/sessions/{created.id}/{op}", body, headers)

    auth = {"Authorization": f"Bearer {created.token}", "content-type": "application/json"}
    status, answer = post("step", b'{"attributes": [0, 4]}', auth)
    assert (status, answer["attributes"], reached) == (200, [0, 4], [])
    assert answer["receipt"]["head"] == sessions.info(created.id, created.token).head_hash
    status, answer = post("step", b'{"attributes": [0, 1, 2, 3]}', auth)  # past k = 3: the session's refusal
    assert (status, answer["error"], reached) == (402, "budget_exceeded", [])
    # Not for the fast path: the routes get the very body sent.
    for body, headers in [(b'{"attributes": "all"}', auth), (b"not json", auth),
                          (b'{"attributes": [1]}', {**auth, "content-type": "text/plain"}),
                          (b'{"attributes": [1]}', {"content-type": "application/json"}),
                          (b'{"attributes": [1]}', {**auth, "Authorization": "Bearer two words"}),
                          (b'\xef\xbb\xbf{"attributes": [1]}', auth)]:  # JSON after a UTF-8 BOM: json.loads reads it
        status, answer = post("step", body, headers)
        assert (status, answer["body"]) == (299, body.decode()), headers
    assert len(reached) == 6


@pytest.mark.postgres
def test_a_small_step_is_written_in_one_statement_on_postgresql(postgres_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    upgrade(postgres_url)
    sessions = SessionService(make_engine(postgres_url))
    try:
        created = opened(sessions)
        statements = sessions.db.sql
        written = statements.written
        made: list[tuple[int, int]] = []

        def counting(update: str, links: int, cells: int) -> str:
            made.append((links, cells))
            return written(update, links, cells)

        monkeypatch.setattr(statements, "written", counting)
        answers = [sessions.perform(STEP, created.id, created.token, StepRequest(attributes=a)) for a in ([0, 1], [2])]
        with pytest.raises(Refused):  # past k = 3: nothing written
            sessions.perform(STEP, created.id, created.token, StepRequest(attributes=[0, 1, 2, 3]))
        assert len(made) == 2 and all(cells == 1 for _, cells in made)  # one statement a step: its links, its cells
        info = sessions.info(created.id, created.token)
        last = answers[-1]
        assert isinstance(last, StepResponse) and last.receipt is not None
        assert (last.receipt.rows, last.receipt.head) == (info.ledger_rows, info.head_hash)
        assert sessions.audit(created.id, created.token).compliant
    finally:
        sessions.close_connections()
