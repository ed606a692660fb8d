"""The oracle's sessions as its dashboard lists them without their tokens: never a value, never a token.

A session seen without its token shows what it is and what it used: dataset and its parameters, split,
protocol, budget, counters (cost and attributes spent, labels, examples issued, predictions), status, ledger
rows, times, and its audit verdict. Not its seed (with the dataset it regenerates synthetic data), its cumulative
loss (made of labels), its chain head, or any row's example, attribute, value or payload: its ledger reads as
links, each a kind, a row count and a cost. The SQL here selects no token, no chain head and no row's content
(``SESSION_FACTS``, ``LinkSummary``), so a value is never read on this path; the audit does read the rows (it
must, to check the chain) but answers a verdict. A session's row is read as the session service reads it
(``server.session_rows``), and shown as ``SessionBasics`` (``budgetlab.engine.session_view``).

These are blocking reads on snapshots (no write lock): callers run them on the thread pool.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from budgetlab.contract.accounts import AccountInfo
from budgetlab.contract.base import SESSION_ID_EXAMPLE, UtcTime
from budgetlab.contract.budgets import BUDGET_EXAMPLE, REMAINING_EXAMPLE, SPENT_EXAMPLE
from budgetlab.contract.ledger import AuditReport, LedgerKind
from budgetlab.contract.sessions import SessionBasics
from budgetlab.engine import session_view
from budgetlab.errors import Code, refusal
from server.session_rows import SESSION_FACTS, config_of, counters_of
from server.sessions import SessionService
from server.tables import LINKS, SESSIONS

# The audit reads every row of a session; bigger sessions are left to `budgetlab audit` (seconds per million rows).
AUDIT_MAX_ROWS = 200_000
# Rows one request (a GET of the list, a refresh of the live feed) may audit, all its sessions together: a session
# whose verdict is older than its ledger beyond that keeps its last verdict, or shows one pending, until a later
# request audits it. So no request costs more than about one big session's audit, however many it lists.
AUDIT_ROWS_PER_REQUEST = 200_000
# An open session's verdict is at most this old (seconds) while it keeps writing rows.
AUDIT_EVERY = 5.0
# Verdicts kept (the most recently computed).
VERDICTS_KEPT = 4096


VERDICT_EXAMPLE = {"compliant": True, "reasons": [], "rows": 1001, "detail": ""}
COUNTS_EXAMPLE = {"sessions": 12, "open": 3, "closed": 9, "ledger_rows": 48210}


class Verdict(BaseModel):
    """The oracle's audit of a session, reduced to its verdict (the audit report holds no value either)."""

    compliant: bool | None = Field(None, description="None: not audited here (see detail)", examples=[True])
    reasons: list[str] = Field(default_factory=list, description="why not compliant", examples=[[]])
    rows: int = Field(0, description="ledger rows the verdict covers", examples=[1001])
    detail: str = Field("", description="why the session was not audited here, if it was not", examples=[""])


class SessionSummary(SessionBasics):
    """A session as the dashboard lists it without its token: never a value."""

    last_active: UtcTime = Field(description="its last request that wrote to the ledger (UTC)",
                                  examples=["2026-11-23T15:34:40.512207Z"])
    account: str | None = Field(None, description="the account it draws on (None: anonymous)",
                                examples=["7c1e5a0f93d24b6e"])
    audit: Verdict | None = Field(None, description="the audit's verdict on its ledger", examples=[VERDICT_EXAMPLE])


SUMMARY_EXAMPLE = {
    "id": SESSION_ID_EXAMPLE, "dataset": "powerlaw", "dataset_params": {"alpha": -1.0, "scenario": "ridge", "d": 100},
    "split": "train", "protocol": "batch", "order": "stream", "budget": BUDGET_EXAMPLE, "n_examples": 20000,
    "n_attributes": 100, "status": "open", "spent": SPENT_EXAMPLE, "remaining": REMAINING_EXAMPLE, "predictions": 0,
    "ledger_rows": 1001,
    "created_at": "2026-11-23T15:32:02.148551Z", "last_active": "2026-11-23T15:34:40.512207Z",
    "account": "7c1e5a0f93d24b6e", "audit": VERDICT_EXAMPLE}


class SessionCounts(BaseModel):
    """How many sessions the oracle holds, for anyone to see."""

    sessions: int = Field(0, description="sessions in all", examples=[12])
    open: int = Field(0, description="open sessions", examples=[3])
    closed: int = Field(0, description="closed sessions", examples=[9])
    ledger_rows: int = Field(0, description="ledger rows of every session together", examples=[48210])


class LinkSummary(BaseModel):
    """One link of a session's chain without its content: rows ``seq`` .. ``seq + n - 1`` of one kind."""

    seq: int
    kind: LedgerKind
    n: int
    cost: float


class Overview:
    """The dashboard's reads of the oracle's database, and the verdicts of recent audits."""

    def __init__(self, service: SessionService) -> None:
        self.service = service
        self.db = service.db
        p = self.db.sql.p
        s, links = SESSIONS.name, LINKS.name
        listed = f"SELECT {', '.join(SESSION_FACTS)} FROM {s}"
        self._newest = f"{listed} ORDER BY ledger_key DESC LIMIT {p}"
        self._newest_of = f"{listed} WHERE account_id = {p} ORDER BY ledger_key DESC LIMIT {p}"
        self._with_ids = listed + " WHERE id IN ({marks})"
        counted = f"SELECT status, COUNT(*), COALESCE(SUM(ledger_rows), 0) FROM {s}"
        self._counts = f"{counted} GROUP BY status"
        self._counts_of = f"{counted} WHERE account_id = {p} GROUP BY status"
        self._key = f"SELECT ledger_key FROM {s} WHERE id = {p}"
        self._links_after = (f"SELECT seq, kind, n, cost FROM {links} WHERE session_key = {p} AND seq > {p} "
                             f"ORDER BY seq LIMIT {p}")
        self._last_links = f"SELECT seq, kind, n, cost FROM {links} WHERE session_key = {p} ORDER BY seq DESC LIMIT {p}"
        self._verdicts: OrderedDict[str, tuple[int, str, float, Verdict]] = OrderedDict()
        self._auditing: set[str] = set()  # sessions a request is auditing now
        self._lock = threading.Lock()

    def accounts(self, limit: int) -> list[AccountInfo]:
        """The oldest ``limit`` accounts, their allowances and what their sessions drew (no key, no value)."""
        with self.db.read() as cursor:
            return self.service.accounts.infos(cursor, limit)

    def counts(self, account: str | None = None) -> SessionCounts:
        """How many sessions the oracle holds (open, closed, their ledger rows), or ``account`` holds."""
        counts = SessionCounts()
        with self.db.read() as cursor:
            if account is None:
                cursor.execute(self._counts)
            else:
                cursor.execute(self._counts_of, (account,))
            for status, n, rows in cursor.fetchall():
                setattr(counts, status, int(n))
                counts.sessions += int(n)
                counts.ledger_rows += int(rows)
        return counts

    def newest(self, limit: int, account: str | None = None) -> list[SessionSummary]:
        """The newest sessions, or those of ``account``."""
        with self.db.read() as cursor:
            if account is None:
                cursor.execute(self._newest, (limit,))
            else:
                cursor.execute(self._newest_of, (account, limit))
            return [self._summary(row) for row in cursor.fetchall()]

    def of(self, ids: Sequence[str]) -> list[SessionSummary]:
        """Those of these sessions that exist, newest first."""
        if not ids:
            return []
        with self.db.read() as cursor:
            cursor.execute(self._with_ids.format(marks=", ".join([self.db.sql.p] * len(ids))), tuple(ids))
            found = [self._summary(row) for row in cursor.fetchall()]
        return sorted(found, key=lambda s: s.created_at, reverse=True)

    def links(self, session_id: str, after: int | None, limit: int) -> list[LinkSummary]:
        """The session's links whose first row comes after ``after``, oldest first; ``after`` None: its last
        ``limit`` links."""
        with self.db.read() as cursor:
            cursor.execute(self._key, (session_id,))
            found = cursor.fetchone()
            if found is None:
                raise refusal(Code.NOT_FOUND, f"session {session_id} does not exist")
            if after is None:
                cursor.execute(self._last_links, (found[0], limit))
                rows = cursor.fetchall()[::-1]
            else:
                cursor.execute(self._links_after, (found[0], after, limit))
                rows = cursor.fetchall()
        return [LinkSummary(seq=seq, kind=kind, n=n, cost=cost) for seq, kind, n, cost in rows]

    def audit(self, session_id: str) -> AuditReport:
        """The audit ``GET /v1/sessions/{id}/audit`` answers, without the session's token (the report names no
        value; the dashboard keeps only its verdict)."""
        return self.service.audit(session_id, None)

    def with_verdicts(self, sessions: list[SessionSummary]) -> list[SessionSummary]:
        """The sessions with their verdicts, auditing at most ``AUDIT_ROWS_PER_REQUEST`` rows for them all."""
        budget = AUDIT_ROWS_PER_REQUEST
        for summary in sessions:
            summary.audit, audited = self.verdict(summary, budget)
            budget -= audited
        return sessions

    def verdict(self, summary: SessionSummary, budget: int = AUDIT_ROWS_PER_REQUEST) -> tuple[Verdict, int]:
        """The session's audit verdict, and the rows audited for it now (at most ``budget``). A verdict is kept
        while the session's ledger does not change (its rows count: a chain only grows), and for a few seconds
        while it does; one session is audited by one request at a time."""
        with self._lock:
            cached = self._verdicts.get(summary.id)
        if cached is not None:
            rows, status, checked, verdict = cached
            unchanged = rows == summary.ledger_rows and status == summary.status
            if unchanged or (summary.status == "open" and time.monotonic() - checked < AUDIT_EVERY):
                return verdict, 0
        if summary.ledger_rows > AUDIT_MAX_ROWS:
            verdict = Verdict(rows=summary.ledger_rows,
                              detail=f"{summary.ledger_rows} rows: too many to audit here; run its audit with the "
                                     "session's token, or 'budgetlab audit' on its NDJSON export")
            self._keep(summary, verdict)
            return verdict, 0
        with self._lock:
            busy = summary.ledger_rows > budget or summary.id in self._auditing
            if not busy:
                self._auditing.add(summary.id)
        if busy:  # its last verdict for now, or none yet: a later request audits it
            if cached is not None:
                return cached[3], 0
            return Verdict(rows=summary.ledger_rows,
                           detail="not audited yet: each request audits a bounded number of rows; a later refresh "
                                  "shows it"), 0
        try:
            report = self.audit(summary.id)
        finally:
            with self._lock:
                self._auditing.discard(summary.id)
        verdict = Verdict(compliant=report.compliant, reasons=report.reasons, rows=report.rows)
        self._keep(summary, verdict)
        return verdict, summary.ledger_rows

    def _keep(self, summary: SessionSummary, verdict: Verdict) -> None:
        with self._lock:
            self._verdicts[summary.id] = (summary.ledger_rows, summary.status, time.monotonic(), verdict)
            self._verdicts.move_to_end(summary.id)
            while len(self._verdicts) > VERDICTS_KEPT:
                self._verdicts.popitem(last=False)

    def _summary(self, values: Sequence[Any]) -> SessionSummary:
        row = dict(zip(SESSION_FACTS, values, strict=True))
        db = self.db
        return session_view(SessionSummary, config_of(db, row), counters_of(row), session_id=row["id"],
                            ledger_rows=row["ledger_rows"], created_at=db.decode(row, "created_at"),
                            last_active=db.decode(row, "last_active"), account=row["account_id"])
