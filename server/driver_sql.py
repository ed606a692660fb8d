"""The observe path's statements, run on the database driver's own connection.

Observe is the oracle's hot path: a learner calls it once per example. Through SQLAlchemy Core its four
statements cost more than SQLite takes to run them, so they are written once per dialect as plain SQL
and executed on a pooled DBAPI connection. Values are converted with the column types' own bind and
result processors, so rows written here read back through SQLAlchemy unchanged (SQLite's datetime
strings, JSON text) and the schema stays the one the Alembic migration defines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Engine

from budgetlab.errors import OracleError
from budgetlab.ledger import ROW_FIELDS
from server.tables import SessionRecord

SESSIONS = SessionRecord.__table__
# Everything observe reads from a session row; the JSON columns are decoded only when a session's
# dataset is not cached yet.
SESSION_COLUMNS = ("id", "token_hash", "status", "dataset", "dataset_params", "split", "protocol", "example_order",
                   "budget", "seed", "n_examples", "issued", "d", "spent_cost", "spent_attributes", "labels",
                   "predictions", "cumulative_loss", "ledger_rows", "head_hash")
JSON_COLUMNS = ("dataset_params", "budget")
# Connections kept open for the observe path. A checkout from SQLAlchemy's pool (events, reset on return)
# costs about a fifth of a whole observe on SQLite, so the path keeps a few detached connections of its own.
IDLE_CONNECTIONS = 4


def _identity(value: Any) -> Any:
    return value


class DriverSQL:
    """Plain-SQL statements of the observe path for one engine's dialect (qmark for SQLite, format for psycopg)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._idle: deque[Any] = deque()
        dialect = engine.dialect
        self.sqlite = dialect.name == "sqlite"
        self.p = "?" if dialect.paramstyle == "qmark" else "%s"
        p = self.p
        # SQLite takes its write lock with BEGIN IMMEDIATE; PostgreSQL locks the session row.
        lock = "" if self.sqlite else " FOR UPDATE"
        self.load = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = {p}{lock}"
        marks = ", ".join([p] * len(ROW_FIELDS))
        self.insert = f"INSERT INTO ledger ({', '.join(ROW_FIELDS)}) VALUES ({marks})"
        self._updates: dict[tuple[str, ...], str] = {}
        self._row_of_kind = (f"SELECT seq, value FROM ledger WHERE session_id = {p} AND kind = {p} AND example = {p} "
                             "ORDER BY seq LIMIT 1")
        self._json: dict[str, Callable[[Any], Any]] = {
            name: SESSIONS.c[name].type.result_processor(dialect, None) or _identity for name in JSON_COLUMNS
        }
        self._datetime: Callable[[datetime], Any] = (
            SESSIONS.c.last_active.type.bind_processor(dialect) or _identity
        )

    def paid(self, n_examples: int) -> str:
        marks = ", ".join([self.p] * n_examples)
        return (f"SELECT example, attribute, value FROM ledger WHERE session_id = {self.p} AND kind = 'observe' "
                f"AND example IN ({marks})")

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A DBAPI cursor inside one transaction: committed on success, rolled back on any exception.

        ``OracleError`` is a refused request on a healthy connection, which goes back to the idle list; any
        other failure may be a broken connection, which is closed.
        """
        conn = self._checkout()
        try:
            cursor = conn.cursor()
            if self.sqlite:
                cursor.execute("BEGIN IMMEDIATE")
            yield cursor
            conn.commit()
        except OracleError:
            conn.rollback()
            self._checkin(conn)
            raise
        except BaseException:
            try:
                conn.rollback()
            finally:
                conn.close()
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

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    def load_session(self, cursor: Any, session_id: str) -> SimpleNamespace | None:
        cursor.execute(self.load, (session_id,))
        row = cursor.fetchone()
        return None if row is None else SimpleNamespace(**dict(zip(SESSION_COLUMNS, row, strict=True)))

    def row_of_kind(self, cursor: Any, session_id: str, kind: str, example: int) -> tuple[int, float | None] | None:
        """(seq, value) of the session's first row of this kind for the example, or None if there is none."""
        cursor.execute(self._row_of_kind, (session_id, kind, example))
        row = cursor.fetchone()
        return None if row is None else (row[0], row[1])

    def decode_json(self, rec: SimpleNamespace) -> None:
        """Turn the JSON columns of a raw session row into Python objects, as SQLAlchemy would."""
        for name, process in self._json.items():
            value = getattr(rec, name)
            if isinstance(value, str | bytes):
                setattr(rec, name, process(value))

    def write(self, cursor: Any, session_id: str, rows: Sequence[tuple], *, seq: int, head: str, now: datetime,
              **counters: Any) -> None:
        """Insert ``ROW_FIELDS`` tuples and move the session's counters and chain head in the same transaction."""
        cursor.executemany(self.insert, rows)
        names = tuple(counters)
        update = self._updates.get(names)
        if update is None:
            assigned = ", ".join(f"{name} = {self.p}" for name in ("ledger_rows", "head_hash", "last_active", *names))
            update = self._updates[names] = f"UPDATE sessions SET {assigned} WHERE id = {self.p}"
        cursor.execute(update, (seq, head, self._datetime(now), *counters.values(), session_id))
