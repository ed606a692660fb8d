"""Oracle sessions: the session engine's steps, applied to the database.

Each charging call is one write transaction: the session row is locked and loaded, the engine decides
(``budgetlab.engine``), and the outcome's ledger rows, chain head and counters are written and committed
before the answer is sent. A refusal raised by the engine rolls the transaction back: an error never
charges or records anything. The rules themselves live in the engine only; here is how they are stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from budgetlab import engine as rules
from budgetlab.audit import audit_rows
from budgetlab.contract.calls import ObserveBatchRequest, ObserveBatchResponse, ObserveRequest
from budgetlab.contract.ledger import AuditReport, LedgerPage, LedgerQuery, LedgerRow, Receipt
from budgetlab.contract.sessions import SessionCreate, SessionCreated, SessionInfo
from budgetlab.datasets import DatasetError
from budgetlab.engine import Counters, Outcome, Runtime, Step
from budgetlab.errors import Code, OracleError, SessionBusy, refusal
from budgetlab.ledger import FORMAT, GENESIS, Chain
from budgetlab.operations import Kind, Operation
from server.db import DEFAULT_LOCK_TIMEOUT
from server.runtimes import RuntimeCache
from server.session_rows import config_of, counter_values, counters_of, moment, new_row
from server.store import BUSY, Database, GateHeld, NotNow

A = TypeVar("A")
# Set while a step runs on the event loop (``promptly``): it must then raise NotNow rather than wait.
_PROMPT: ContextVar[bool] = ContextVar("prompt", default=False)
# A step bound to its request, as the store runs it on the session it loaded.
LockedStep = Callable[[Runtime, Counters, "StoredPaid"], Outcome[A]]
# From this many cells on, an observe is prepared outside the write lock (see ``_write``): a small one is done
# under the lock sooner than its snapshot could be read.
PREPARE_CELLS = 1000


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Prepared(Generic[A]):
    """A step worked out on a snapshot, outside the write lock: stored as it is if the session is still where the
    snapshot saw it (``before``: counters, ledger rows, chain head; every write that changes anything moves them).
    ``answer`` is the answer's model, or from the batch process its JSON."""

    before: tuple[Counters, int, str]
    counters: Counters
    chain: Chain
    answer: A
    recorded: bool


class BatchPreparer(Protocol):
    """Works out big batches elsewhere (``server.batch_process``); None: the caller must do it itself."""

    def prepare(self, session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None: ...


@dataclass
class Loaded:
    """A session row, read in a transaction: its counters, chain head and (cached) runtime."""

    id: str
    key: int
    counters: Counters
    ledger_rows: int
    head_hash: str
    row: dict[str, Any]


class StoredPaid:
    """The engine's view of what a session already paid for, read inside the step's transaction."""

    def __init__(self, db: Database, cursor: Any, key: int) -> None:
        self._db, self._cursor, self._key = db, cursor, key

    def cells(self, examples: list[int]) -> dict[tuple[int, int], float]:
        return self._db.cells(self._cursor, self._key, examples)

    def label(self, example: int) -> float | None:
        row = self._db.value_of_kind(self._cursor, self._key, "label", example)
        return None if row is None else row[0]

    def predicted(self, example: int) -> bool:
        return self._db.value_of_kind(self._cursor, self._key, "predict", example) is not None


class SessionService:
    def __init__(self, engine: Engine, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, *,
                 max_cells: int = rules.MAX_CELLS, max_examples: int = rules.MAX_EXAMPLES,
                 batch_process: BatchPreparer | None = None) -> None:
        self.db = Database(engine, lock_timeout)
        self.caps = {"max_cells": max_cells, "max_examples": max_examples}
        self.batch_process = batch_process
        self._runtimes = RuntimeCache()
        # The operations of the kind LEDGER, read from the recorded rows.
        self._ledger_reads: dict[str, Callable[[str, str, Any], BaseModel]] = {
            "ledger": lambda session_id, token, query: self.page(session_id, token, query),
            "audit": lambda session_id, token, _: self.audit(session_id, token),
        }

    def close_connections(self) -> None:
        self.db.close()

    # --- loading --------------------------------------------------------------------------------------

    def _runtime(self, row: dict[str, Any]) -> Runtime:
        session_id = row["id"]
        rt = self._runtimes.get(session_id)
        if rt is not None:
            return rt
        if _PROMPT.get():  # loading a dataset can take long: not on the event loop
            raise NotNow
        try:
            rt = replace(Runtime.load(config_of(self.db, row)), **self.caps)
        except DatasetError as exc:  # e.g. an admin removed the user dataset this session was opened on
            raise refusal(Code.DATASET_UNAVAILABLE, f"this session's dataset cannot be served: {exc}") from None
        self._runtimes.put(session_id, rt)
        return rt

    def _load(self, cursor: Any, session_id: str, token: str | None, *, lock: bool) -> Loaded:
        row = self.db.load(cursor, session_id, lock=lock)
        # A wrong token and an unknown id answer the same, so a token reveals nothing about other sessions.
        if row is None or (token is not None and not hmac.compare_digest(row["token_hash"], token_hash(token))):
            raise refusal(Code.NOT_FOUND, f"session {session_id} does not exist (or the token is not its own)")
        return Loaded(session_id, row["ledger_key"], counters_of(row), row["ledger_rows"], row["head_hash"], row)

    def _info(self, loaded: Loaded, rt: Runtime) -> SessionInfo:
        return rules.session_info(rt.config, loaded.counters, session_id=loaded.id, ledger_rows=loaded.ledger_rows,
                                  head_hash=loaded.head_hash, created_at=moment(self.db, loaded.row, "created_at"))

    # --- the two ways a step runs ---------------------------------------------------------------------

    def _prepare(self, session_id: str, token: str | None, step: LockedStep[A]) -> Prepared[A] | None:
        """``step`` worked out on a snapshot of the session, outside the write lock, hashing included (None if it
        is refused there: the locked state gives the refusal)."""
        db = self.db
        with db.read() as cursor:
            snap = self._load(cursor, session_id, token, lock=False)
            try:
                outcome = step(self._runtime(snap.row), snap.counters, StoredPaid(db, cursor, snap.key))
            except OracleError:
                return None
        chain = Chain(session_id, snap.key, snap.ledger_rows, snap.head_hash).record(outcome.events)
        return Prepared((snap.counters, snap.ledger_rows, snap.head_hash), outcome.counters, chain, outcome.answer,
                        bool(outcome.events))

    def _write(self, session_id: str, token: str | None, step: LockedStep[A], *,
               prepared: Prepared[Any] | None = None) -> tuple[A, Loaded, Runtime]:
        """Run ``step`` on the locked session and store its outcome; returns the answer and the session after it.

        Given what ``_prepare`` worked out (big requests), only the inserts remain under the lock, provided the
        session has not moved meanwhile (its counters and chain head are unchanged). Otherwise the step runs
        under the lock, so the answer is always the one the locked state gives.
        """
        db = self.db
        with db.write(wait=not _PROMPT.get()) as cursor:
            loaded = self._load(cursor, session_id, token, lock=True)
            rt = self._runtime(loaded.row)
            if prepared is not None and prepared.before == (loaded.counters, loaded.ledger_rows, loaded.head_hash):
                answer, c, chain, recorded = prepared.answer, prepared.counters, prepared.chain, prepared.recorded
            else:
                outcome = step(rt, loaded.counters, StoredPaid(db, cursor, loaded.key))
                chain = Chain(session_id, loaded.key, loaded.ledger_rows, loaded.head_hash).record(outcome.events)
                answer, c, recorded = outcome.answer, outcome.counters, bool(outcome.events)
            db.append(cursor, session_id, chain, counter_values(c), now=_now())
        if recorded and isinstance(answer, BaseModel) and "receipt" in type(answer).model_fields:
            answer.receipt = Receipt(rows=chain.seq, head=chain.head)
        after = Loaded(session_id, loaded.key, c, chain.seq, chain.head, loaded.row)
        return answer, after, rt

    def _read(self, session_id: str, token: str) -> tuple[Loaded, Runtime]:
        with self.db.read() as cursor:
            loaded = self._load(cursor, session_id, token, lock=False)
        return loaded, self._runtime(loaded.row)

    # --- lifecycle ------------------------------------------------------------------------------------

    def create(self, req: SessionCreate) -> SessionCreated:
        rt, outcome = rules.open_session(req)
        rt = replace(rt, **self.caps)
        config = rt.config
        session_id = secrets.token_hex(16)
        token = secrets.token_urlsafe(32)
        now = _now()
        c = outcome.counters
        record = new_row(session_id, token_hash(token), config, c, head_hash=GENESIS, now=now)
        with self.db.write() as cursor:
            key = self.db.insert_session(cursor, record)
            chain = Chain(session_id, key, 0, GENESIS).record(outcome.events)
            self.db.append(cursor, session_id, chain, counter_values(c), now=now)
        self._runtimes.put(session_id, rt)
        info = rules.session_info(config, c, session_id=session_id, ledger_rows=chain.seq, head_hash=chain.head,
                                  created_at=now)
        return SessionCreated(id=session_id, token=token, session=info)

    def info(self, session_id: str, token: str) -> SessionInfo:
        return self._info(*self._read(session_id, token))

    def close_idle(self, idle_seconds: float) -> list[str]:
        """Close every open session idle for longer than ``idle_seconds``; returns their ids."""
        cutoff = _now() - timedelta(seconds=idle_seconds)
        with self.db.read() as cursor:
            candidates = [sid for sid, last in self.db.open_sessions(cursor)
                          if last.replace(tzinfo=last.tzinfo or UTC) < cutoff]
        closed: list[str] = []
        reason = f"idle for more than {idle_seconds:g} s"
        for session_id in candidates:
            try:
                self._write(session_id, None, lambda rt, c, paid: rules.close(rt, c, paid, reason=reason))
            except OracleError as exc:
                # Closed meanwhile by its owner: nothing to do. A session whose dataset can no longer be served
                # (removed by an admin) cannot take a close either; it must not stop the others from closing.
                if exc.error not in (Code.SESSION_CLOSED, Code.DATASET_UNAVAILABLE):
                    raise
                continue
            closed.append(session_id)
        return closed

    # --- operations -----------------------------------------------------------------------------------

    def perform(self, op: Operation[..., Any], session_id: str, token: str,
                request: BaseModel | None = None) -> BaseModel:
        """One operation of the table (``budgetlab.operations``) on the session, applied as its kind says."""
        if op.kind is Kind.READ:
            return self.info(session_id, token)
        if op.kind is Kind.LEDGER:
            return self._ledger_reads[op.name](session_id, token, request)
        step = op.step
        assert step is not None, f"the step of {op.name}"
        if op.kind is Kind.OFF_LOCK:
            return self._off_lock(session_id, token, step, request)
        answer, after, rt = self._write(session_id, token, lambda rt, c, paid: step(rt, c, paid, request))
        return self._info(after, rt) if answer is None else answer

    def _off_lock(self, session_id: str, token: str, step: Step, request: BaseModel | None) -> Any:
        # Worked out on a snapshot, outside the lock (evaluate reads the whole test split): such a step reads the
        # session's data and the request only, nothing paid. Only its record is serialised.
        loaded, rt = self._read(session_id, token)
        outcome = step(rt, loaded.counters, rules.NOTHING_PAID, request)

        def record(rt: Runtime, c: Counters, paid: StoredPaid) -> Outcome[Any]:
            rules.require_open(c)
            return Outcome(outcome.answer, c, outcome.events)

        return self._write(session_id, token, record)[0]

    def observe_batch_json(self, session_id: str, token: str, items: list[ObserveRequest], raw: bytes) -> bytes:
        """``observe_batch``'s answer as JSON, the same bytes; a big one prepared in the batch process if there is
        one (``server.batch_process``), which is sent the request's ``raw`` body rather than its parsed items."""
        step = _observe_step(items)
        big = sum(len(item.attributes) for item in items) >= PREPARE_CELLS
        prepared: Prepared[Any] | None = None
        if big and self.batch_process is not None:
            prepared = self.batch_process.prepare(session_id, token, raw)
        if big and prepared is None:
            prepared = self._prepare(session_id, token, step)
        answer = self._write(session_id, token, step, prepared=prepared)[0]
        return answer if isinstance(answer, bytes) else batch_json(answer)

    def prepare_batch(self, session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None:
        """In the batch process: a batch worked out on a snapshot, its answer (receipt included) as JSON; None
        when it is refused there (an unknown session, a wrong token: the worker answers the refusal)."""
        items = ObserveBatchRequest.model_validate_json(raw).items
        try:
            prepared = self._prepare(session_id, token, _observe_step(items))
        except OracleError:
            return None
        if prepared is None:
            return None
        answer, chain = prepared.answer, prepared.chain
        answer.receipt = Receipt(rows=chain.seq, head=chain.head)
        return replace(prepared, answer=batch_json(answer))

    # --- ledger and audit -----------------------------------------------------------------------------

    def page(self, session_id: str, token: str, query: LedgerQuery) -> LedgerPage:
        rows, next_after = self.ledger_page(session_id, token, query.after, query.limit)
        return LedgerPage(rows=rows, next_after=next_after)

    def ledger_page(self, session_id: str, token: str, after: int, limit: int) -> tuple[list[LedgerRow], int | None]:
        with self.db.read() as cursor:
            loaded = self._load(cursor, session_id, token, lock=False)
            rows = self.db.rows(cursor, loaded.key, self.db.declared_costs(cursor, loaded.key), after, limit + 1)
        more = len(rows) > limit
        page = [LedgerRow.model_construct(session_id=session_id, **r) for r in rows[:limit]]
        return page, (page[-1].seq if more and page else None)

    def iter_ledger(self, session_id: str, token: str, after: int = -1, chunk: int = 20_000,
                    ) -> Iterator[dict[str, Any]]:
        """Every row of a session after ``after``, in order, read in chunks (for exports)."""
        while True:
            with self.db.read() as cursor:
                loaded = self._load(cursor, session_id, token, lock=False)
                rows = self.db.rows(cursor, loaded.key, self.db.declared_costs(cursor, loaded.key), after, chunk)
            yield from rows
            if len(rows) < chunk:
                return
            after = rows[-1]["seq"]

    def head(self, session_id: str, token: str) -> dict[str, Any]:
        """The session's recorded counters: the last line of an NDJSON export, checked by the offline audit."""
        with self.db.read() as cursor:
            return recorded_counters(self._load(cursor, session_id, token, lock=False))

    def audit(self, session_id: str, token: str) -> AuditReport:
        # Rows and counters come from one snapshot, so no write interleaves; no lock is taken.
        with self.db.read() as cursor:
            loaded = self._load(cursor, session_id, token, lock=False)
            rows = self.db.rows(cursor, loaded.key, self.db.declared_costs(cursor, loaded.key))
        return audit_rows(session_id, rows, recorded_counters(loaded))


async def promptly(call: Callable[..., A], *args: Any) -> A:
    """``call(*args)`` (a small step of ``SessionService``) right here on the event loop when it needs no wait,
    else on the thread pool.

    A small SQLite write whose lock is free this instant takes a fraction of a millisecond: running it in
    place saves the two thread hops that cost more than the write itself. When another write of this worker
    holds the lock, the step waits for it on the loop (which goes on serving others meanwhile) and runs in place
    as soon as it commits; not freed within the lock timeout, it is 503 ``busy``. Anything else that would wait
    (another process holds SQLite's lock, PostgreSQL's locks, a dataset to load) goes to the thread pool, so the
    loop never blocks on it.
    """
    deadline: float | None = None
    while True:
        reset = _PROMPT.set(True)
        try:
            return call(*args)
        except GateHeld as held:
            database = held.database
        except NotNow:
            break
        finally:
            _PROMPT.reset(reset)
        now = time.monotonic()
        deadline = deadline or now + database.lock_timeout
        if not await database.released(deadline - now):
            raise SessionBusy(BUSY)
    return await run_in_threadpool(call, *args)


def _observe_step(items: list[ObserveRequest]) -> LockedStep[ObserveBatchResponse]:
    return lambda rt, c, paid: rules.observe(rt, c, paid, items)


def batch_json(answer: ObserveBatchResponse) -> bytes:
    """``answer.model_dump_json()``, the same bytes, an item at a time: the JSON of 10,000 values in one call holds
    the GIL for half a millisecond, during which no other request of the worker moves; between items it can."""
    rest = answer.model_dump_json(exclude={"items"})
    items = ",".join([item.model_dump_json() for item in answer.items])
    return f'{{"items":[{items}],{rest[1:]}'.encode()


def export_header(session_id: str) -> dict[str, Any]:
    """The first line of an NDJSON export: what it is and in which format."""
    return {"type": "ledger", "format": FORMAT, "session_id": session_id}


def recorded_counters(loaded: Loaded) -> dict[str, Any]:
    c = loaded.counters
    return {
        "type": "head", "session_id": loaded.id, "rows": loaded.ledger_rows, "head_hash": loaded.head_hash,
        "spent_cost": c.spent_cost, "spent_attributes": c.spent_attributes, "labels": c.labels,
        "predictions": c.predictions, "status": c.status,
    }
