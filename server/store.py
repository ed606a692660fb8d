"""The oracle's one SQL path: statements generated from the table definitions, run on the driver's connections.

Through SQLAlchemy Core a per-example request costs more than SQLite takes to run its statements, so every
statement is written once per dialect from ``server.tables`` (the schema Alembic's migration creates) and run
on a pooled DBAPI connection. Values cross with the column types' own bind and result processors, so rows
written here read back through SQLAlchemy unchanged (SQLite's datetime strings, JSON text).

Transactions come in two kinds:

- ``write``: takes the session's lock (``BEGIN IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` on
  PostgreSQL) and commits before the answer is sent. A lock not granted within the lock timeout raises
  ``SessionBusy`` (503 with Retry-After): nothing was done, so a retry is safe.
- ``read``: one consistent snapshot (a deferred transaction in SQLite's WAL, REPEATABLE READ on PostgreSQL)
  that never takes a write lock.

Both are blocking calls: the endpoints that use them run on the thread pool, never on the event loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import Engine, Table

from budgetlab.errors import Refused, SessionBusy
from budgetlab.ledger import ROW_FIELDS
from server.tables import LedgerEntry, SessionRecord

SESSIONS: Table = SessionRecord.__table__  # type: ignore[assignment]
LEDGER: Table = LedgerEntry.__table__  # type: ignore[assignment]
SESSION_COLUMNS = tuple(c.name for c in SESSIONS.columns)
# The chain builds rows as ROW_FIELDS tuples; they go to the driver as they are, so the table must agree.
assert tuple(c.name for c in LEDGER.columns) == ROW_FIELDS, "server.tables.LedgerEntry and ROW_FIELDS disagree"
# What a step may change on the session row, besides the chain head.
COUNTER_COLUMNS = ("status", "spent_cost", "spent_attributes", "labels", "issued", "predictions", "cumulative_loss")
# Stay below SQLite's bound-parameter limit when looking up many examples at once.
IN_CHUNK = 900
BUSY = "the session's ledger is busy with other requests; nothing was done, retry shortly"
# Connections kept open: a checkout from SQLAlchemy's pool (events, reset on return) costs about a fifth of a
# whole observe on SQLite, so the store keeps detached connections of its own.
IDLE_CONNECTIONS = 8


def _identity(value: Any) -> Any:
    return value


class Statements:
    """Every statement of the oracle for one dialect (qmark for SQLite, format for psycopg)."""

    def __init__(self, engine: Engine) -> None:
        dialect = engine.dialect
        self.sqlite = dialect.name == "sqlite"
        p = self.p = "?" if dialect.paramstyle == "qmark" else "%s"
        s, led = SESSIONS.name, LEDGER.name
        self.load_session = f"SELECT {', '.join(SESSION_COLUMNS)} FROM {s} WHERE id = {p}"
        # SQLite's write lock is the database's, taken by BEGIN IMMEDIATE; PostgreSQL locks the session row.
        self.lock_session = self.load_session + ("" if self.sqlite else " FOR UPDATE")
        self.insert_session = (f"INSERT INTO {s} ({', '.join(SESSION_COLUMNS)}) "
                               f"VALUES ({', '.join([p] * len(SESSION_COLUMNS))})")
        assigned = ", ".join(f"{c} = {p}" for c in (*COUNTER_COLUMNS, "ledger_rows", "head_hash", "last_active"))
        self.update_session = f"UPDATE {s} SET {assigned} WHERE id = {p}"
        self.insert_rows = f"INSERT INTO {led} ({', '.join(ROW_FIELDS)}) VALUES ({', '.join([p] * len(ROW_FIELDS))})"
        self.row_of_kind = (f"SELECT value FROM {led} WHERE session_id = {p} AND kind = {p} AND example = {p} "
                            "ORDER BY seq LIMIT 1")
        self.rows_after = (f"SELECT {', '.join(ROW_FIELDS)} FROM {led} WHERE session_id = {p} AND seq > {p} "
                           f"ORDER BY seq LIMIT {p}")
        self.all_rows = f"SELECT {', '.join(ROW_FIELDS)} FROM {led} WHERE session_id = {p} ORDER BY seq"
        self.open_sessions = f"SELECT id, last_active FROM {s} WHERE status = 'open'"
        self._cells = (f"SELECT example, attribute, value FROM {led} WHERE session_id = {p} AND kind = 'observe' "
                       "AND example IN ({marks})")
        types = {c.name: c.type.dialect_impl(dialect) for c in SESSIONS.columns}
        self.bind = {name: t.bind_processor(dialect) or _identity for name, t in types.items()}
        # Only JSON and datetime columns need decoding; numeric types have no processor for a type code of None.
        self.result = {name: types[name].result_processor(dialect, None) or _identity
                       for name in ("dataset_params", "budget", "created_at", "last_active")}

    def cells(self, n_examples: int) -> str:
        return self._cells.format(marks=", ".join([self.p] * n_examples))


class Database:
    """The oracle's connections and its two kinds of transaction.

    On SQLite the writers of this process also queue at a gate before ``BEGIN IMMEDIATE``: SQLite's own busy
    handler polls with growing sleeps, so a small request could wait out several big ones that each grab the
    free lock first; at the gate it is woken as soon as the write before it commits.
    """

    def __init__(self, engine: Engine, lock_timeout: float) -> None:
        self.engine = engine
        self.sql = Statements(engine)
        self.lock_timeout = lock_timeout
        self._idle: deque[Any] = deque()
        self._gate = threading.Lock() if self.sql.sqlite else None

    @contextmanager
    def write(self) -> Iterator[Any]:
        """A cursor in a transaction holding the write lock (SQLite) or ready to lock rows (PostgreSQL)."""
        if self._gate is None:
            with self._transaction(write=True) as cursor:
                yield cursor
            return
        if not self._gate.acquire(timeout=self.lock_timeout):
            raise SessionBusy(BUSY)
        try:
            with self._transaction(write=True) as cursor:
                yield cursor
        finally:
            self._gate.release()

    @contextmanager
    def read(self) -> Iterator[Any]:
        """A cursor on one consistent snapshot, without any write lock."""
        with self._transaction(write=False) as cursor:
            yield cursor

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Any]:
        """Committed on success; rolled back on any exception. A refused request leaves a healthy connection,
        which goes back to the idle list; any other failure may have broken it, so it is closed."""
        conn = self._checkout()
        try:
            cursor = conn.cursor()
            if self.sql.sqlite:
                cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            elif not write:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield cursor
            conn.commit()
        except (sqlite3.OperationalError, psycopg.errors.LockNotAvailable) as exc:
            self._discard(conn)
            if isinstance(exc, psycopg.errors.LockNotAvailable) or _is_busy(exc):
                raise SessionBusy(BUSY) from None
            raise
        except Refused:
            conn.rollback()
            self._checkin(conn)
            raise
        except BaseException:
            self._discard(conn)
            raise
        else:
            self._checkin(conn)

    def _checkout(self) -> Any:
        try:
            return self._idle.pop()
        except IndexError:
            conn = self.engine.raw_connection()
            # Detached, the connection is ours: SQLAlchemy's pool neither counts nor resets it.
            conn.detach()
            return conn

    def _checkin(self, conn: Any) -> None:
        if len(self._idle) < IDLE_CONNECTIONS:
            self._idle.append(conn)
        else:
            conn.close()

    @staticmethod
    def _discard(conn: Any) -> None:
        try:
            conn.rollback()
        except Exception:  # noqa: BLE001 - the connection is being thrown away; its own error is the one raised
            pass
        finally:
            conn.close()

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    # --- statements -------------------------------------------------------------------------------------

    def load(self, cursor: Any, session_id: str, *, lock: bool) -> dict[str, Any] | None:
        """The session's row as raw column values (JSON and datetime columns undecoded), or None."""
        cursor.execute(self.sql.lock_session if lock else self.sql.load_session, (session_id,))
        row = cursor.fetchone()
        return None if row is None else dict(zip(SESSION_COLUMNS, row, strict=True))

    def decode(self, row: Mapping[str, Any], column: str) -> Any:
        """A raw column value as SQLAlchemy would read it back (JSON parsed, datetimes as datetime)."""
        value = row[column]
        return self.sql.result[column](value) if isinstance(value, str | bytes) else value

    def insert_session(self, cursor: Any, record: Mapping[str, Any]) -> None:
        bind = self.sql.bind
        cursor.execute(self.sql.insert_session, tuple(bind[c](record[c]) for c in SESSION_COLUMNS))

    def append(self, cursor: Any, session_id: str, rows: Sequence[tuple], counters: Sequence[Any], *, ledger_rows: int,
               head: str, now: datetime) -> None:
        """Insert ``ROW_FIELDS`` tuples and move the session's counters and chain head in the same transaction."""
        if rows:
            cursor.executemany(self.sql.insert_rows, rows)
        cursor.execute(self.sql.update_session,
                       (*counters, ledger_rows, head, self.sql.bind["last_active"](now), session_id))

    def cells(self, cursor: Any, session_id: str, examples: Sequence[int]) -> dict[tuple[int, int], float]:
        paid: dict[tuple[int, int], float] = {}
        for start in range(0, len(examples), IN_CHUNK):
            chunk = examples[start : start + IN_CHUNK]
            cursor.execute(self.sql.cells(len(chunk)), (session_id, *chunk))
            for example, attribute, value in cursor.fetchall():
                paid[(example, attribute)] = value
        return paid

    def value_of_kind(self, cursor: Any, session_id: str, kind: str, example: int) -> tuple[float | None] | None:
        """(value,) of the session's first row of this kind for the example, or None if there is none."""
        cursor.execute(self.sql.row_of_kind, (session_id, kind, example))
        row = cursor.fetchone()
        return None if row is None else (row[0],)

    def rows(self, cursor: Any, session_id: str, after: int = -1, limit: int | None = None) -> list[tuple]:
        """The session's ledger rows with seq > after, in order (all of them without a limit)."""
        if limit is None and after < 0:
            cursor.execute(self.sql.all_rows, (session_id,))
        else:
            cursor.execute(self.sql.rows_after, (session_id, after, limit if limit is not None else 2**62))
        return cursor.fetchall()

    def open_sessions(self, cursor: Any) -> list[tuple[str, datetime]]:
        cursor.execute(self.sql.open_sessions)
        decode: Callable[[Any], Any] = self.sql.result["last_active"]
        return [(sid, decode(t) if isinstance(t, str) else t) for sid, t in cursor.fetchall()]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
