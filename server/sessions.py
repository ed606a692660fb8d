"""Oracle sessions: what a caller can do with one (open it, read it, apply an operation of the table, close idle
ones, page and audit its ledger), on the stored sessions of ``server.steps``.

Jobs of their own, beside this one: how a step is stored (``server.steps``), where it runs (``server.scheduling``),
big batches prepared outside the lock (``server.batch_preparation``), the export (``server.ledger_export``), a
session's row (``server.session_rows``).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Engine

from budgetlab import engine as rules
from budgetlab.allowance import admit, check_costs, check_open
from budgetlab.audit import audit_links
from budgetlab.contract.accounts import Allowance
from budgetlab.contract.ledger import AuditReport, LedgerPage, LedgerQuery, LedgerRow
from budgetlab.contract.sessions import SessionCreate, SessionCreated, SessionInfo
from budgetlab.engine import Counters, Outcome, Runtime, Step
from budgetlab.errors import Code, OracleError, Refused, refusal
from budgetlab.ledger import GENESIS, Chain, chain_name
from budgetlab.operations import Kind, Operation
from server.batch_preparation import Batches, BatchPreparer
from server.db import DEFAULT_LOCK_TIMEOUT
from server.ledger_export import LedgerExport, recorded_counters
from server.readiness import RESERVE_BYTES
from server.scheduling import GroupCommit
from server.session_rows import counter_values, new_row
from server.steps import Caps, SessionSteps, StoredPaid, now, token_hash
from server.store import Database

# How often the dashboards' readiness is looked at again (seconds), whatever the number of viewers.
READINESS_SECONDS = 1.0


@dataclass(frozen=True)
class Admission:
    """Who may open sessions, as the oracle's settings say: anonymous clients (within ``anonymous_allowance``) or
    only accounts, and which datasets' test splits no one opens (``shielded``, "*": all)."""

    anonymous: bool = True
    anonymous_allowance: Allowance = field(default_factory=lambda: Allowance(sessions=None))
    shielded: tuple[str, ...] = ()

    def shields(self, dataset: str) -> bool:
        return "*" in self.shielded or dataset in self.shielded


class SessionService:
    def __init__(self, engine: Engine, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, caps: Caps = Caps(), *,
                 batch_process: BatchPreparer | None = None, admission: Admission | None = None,
                 reserve_bytes: int = RESERVE_BYTES, group_commit: bool = True) -> None:
        self.db = Database(engine, lock_timeout, reserve_bytes)
        self.steps = SessionSteps(self.db, caps)
        self.accounts = self.steps.accounts
        self.admission = admission or Admission()
        self.batches = Batches(self.steps, batch_process)
        # The small steps ready on the event loop at once, committed together (``server.scheduling``).
        self.group = GroupCommit(self.db, enabled=group_commit)
        self.export = LedgerExport(self.steps)
        self._readiness_lock = threading.Lock()
        self._readiness: tuple[float, Refused | None] = (-READINESS_SECONDS, None)
        # The operations of the kind LEDGER, read from the recorded rows.
        self._ledger_reads: dict[str, Callable[[str, str, Any], BaseModel]] = {
            "ledger": lambda session_id, token, query: self.page(session_id, token, query),
            "audit": lambda session_id, token, _: self.audit(session_id, token),
        }

    def check_ready(self) -> None:
        """Return if the ledger would take a write now, else raise the refusal it would get (503
        ``database_unavailable``, 507 ``storage_full``, ``read_only``)."""
        self.db.check_writable()

    def readiness(self) -> Refused | None:
        """``check_ready``'s answer (None: ready), looked at most once every ``READINESS_SECONDS``: what the
        dashboards show, polled by every viewer. While one viewer's look waits (for the write lock, a database out
        of reach), the others get the last answer rather than wait on a thread of the pool too."""
        if self._readiness_lock.acquire(blocking=False):
            try:
                if time.monotonic() - self._readiness[0] >= READINESS_SECONDS:
                    try:
                        self.check_ready()
                        refused = None
                    except Refused as exc:
                        refused = exc
                    self._readiness = (time.monotonic(), refused)
            finally:
                self._readiness_lock.release()
        return self._readiness[1]

    def close_connections(self) -> None:
        self.db.close()

    def create(self, req: SessionCreate, api_key: str | None = None) -> SessionCreated:
        """Open a session: an account's if ``api_key`` is its key, else an anonymous one (if the oracle opens any),
        within the allowance of either."""
        admission = self.admission
        account_id: str | None = None
        if api_key is None:
            if not admission.anonymous:
                raise refusal(Code.ACCOUNT_REQUIRED, "this oracle opens sessions for accounts only: send your "
                                                     "account's API key as 'Authorization: Bearer <key>'")
            allowance = admission.anonymous_allowance
        else:
            with self.db.read() as cursor:
                account = self.accounts.authenticate(cursor, api_key)
            if account.status == "revoked":
                raise refusal(Code.ACCOUNT_REVOKED, f"the account {account.name} was revoked: its key opens nothing")
            account_id, allowance = account.id, account.allowance
        req = admit(req, allowance, shielded=admission.shields(req.dataset), anonymous=account_id is None)
        rt, outcome = rules.open_session(req, account=account_id)
        if allowance.total is not None:
            check_costs(req, rt.costs, rt.dataset.costs)
        rt = self.steps.bounded(rt)
        config = rt.config
        session_id = secrets.token_hex(16)
        token = secrets.token_urlsafe(32)
        at = now()
        c = outcome.counters
        record = new_row(session_id, token_hash(token), config, c, head_hash=GENESIS, now=at, account=account_id)
        with self.db.write() as cursor:
            if account_id is not None:
                locked = self.accounts.load(cursor, account_id, lock=True)
                if locked is None or locked.status == "revoked":
                    raise refusal(Code.ACCOUNT_REVOKED, "the account was revoked: its key opens nothing")
                check_open(allowance, self.accounts.open_of(cursor, account_id))
                self.accounts.opened(cursor, account_id)
            elif allowance.sessions is not None:
                self.accounts.lock_anonymous(cursor)
                check_open(allowance, self.accounts.open_of(cursor, None), anonymous=True)
            key = self.db.insert_session(cursor, record)
            chain = Chain(chain_name(session_id, account_id), key, 0, GENESIS).record(outcome.events)
            self.db.append(cursor, session_id, chain, counter_values(c), now=at)
        self.steps.remember(session_id, rt)
        info = rules.session_info(config, c, session_id=session_id, ledger_rows=chain.seq, head_hash=chain.head,
                                  created_at=at)
        return SessionCreated(id=session_id, token=token, session=info)

    def info(self, session_id: str, token: str) -> SessionInfo:
        return self.steps.info(*self.steps.read(session_id, token))

    def close_idle(self, idle_seconds: float) -> list[str]:
        """Close every open session idle for longer than ``idle_seconds``; returns their ids."""
        cutoff = now() - timedelta(seconds=idle_seconds)
        with self.db.read() as cursor:
            candidates = [sid for sid, last in self.db.open_sessions(cursor)
                          if last.replace(tzinfo=last.tzinfo or UTC) < cutoff]
        return self.close_all(candidates, f"idle for more than {idle_seconds:g} s")

    def close_all(self, session_ids: list[str], reason: str) -> list[str]:
        """Close these sessions, recording ``reason`` in each one's close row; returns those this call closed."""
        closed: list[str] = []
        for session_id in session_ids:
            try:
                self.steps.write(session_id, None, lambda rt, c, paid: rules.close(rt, c, paid, reason=reason))
            except OracleError as exc:
                # Closed meanwhile by its owner: nothing to do. A session whose dataset can no longer be served
                # (removed by an admin) cannot take a close either; it must not stop the others from closing.
                if exc.error not in (Code.SESSION_CLOSED, Code.DATASET_UNAVAILABLE):
                    raise
                continue
            closed.append(session_id)
        return closed

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
        answer: BaseModel | None
        answer, after, rt = self.steps.write(session_id, token, lambda rt, c, paid: step(rt, c, paid, request))
        return self.steps.info(after, rt) if answer is None else answer

    def _off_lock(self, session_id: str, token: str, step: Step, request: BaseModel | None) -> BaseModel:
        # Worked out on a snapshot, outside the lock (evaluate reads the whole test split): such a step reads the
        # session's data and the request only, nothing paid. Only its record is serialised.
        loaded, rt = self.steps.read(session_id, token)
        outcome = step(rt, loaded.counters, rules.NOTHING_PAID, request)

        def record(rt: Runtime, c: Counters, paid: StoredPaid) -> Outcome[Any]:
            rules.require_open(c)
            return Outcome(outcome.answer, c, outcome.events)

        answer: BaseModel = self.steps.write(session_id, token, record)[0]
        return answer

    def page(self, session_id: str, token: str, query: LedgerQuery) -> LedgerPage:
        rows, next_after = self.ledger_page(session_id, token, query.after, query.limit)
        return LedgerPage(rows=rows, next_after=next_after)

    def ledger_page(self, session_id: str, token: str, after: int, limit: int) -> tuple[list[LedgerRow], int | None]:
        with self.db.read() as cursor:
            loaded = self.steps.load(cursor, session_id, token, lock=False)
            rows = self.db.rows(cursor, loaded.key, self.db.declared_costs(cursor, loaded.key), after, limit + 1)
        more = len(rows) > limit
        page = [LedgerRow.model_construct(session_id=session_id, **r) for r in rows[:limit]]
        return page, (page[-1].seq if more and page else None)

    def audit(self, session_id: str, token: str | None) -> AuditReport:
        """The session's audit; ``token`` None for the oracle's own dashboard, which reads no token (the report
        names no value)."""
        # Links and counters come from one snapshot, so no write interleaves; no lock is taken.
        with self.db.read() as cursor:
            loaded = self.steps.load(cursor, session_id, token, lock=False)
            links = self.db.links(cursor, loaded.key, self.db.declared_costs(cursor, loaded.key))
            return audit_links(session_id, links, recorded_counters(loaded), format=loaded.row["ledger_format"],
                               account=loaded.account)
