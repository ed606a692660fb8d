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

import asyncio
import json
import select
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NotRequired, TypeAlias, TypedDict, cast

from sqlalchemy import Engine, Table
from sqlalchemy.engine.interfaces import DBAPICursor
from sqlalchemy.pool import PoolProxiedConnection

from budgetlab.errors import Code, Refused, SessionBusy
from budgetlab.ledger import (
    CELLS_FIELDS,
    LINK_FIELDS,
    Chain,
    ChainLink,
    ChainRow,
    ReadLink,
    links_of_stored,
    rows_of_links,
    unpack_cells,
)
from server.checkpoint import READERS_WAIT_MS, WRITER_BACKSTOP_PAGES, Checkpointer
from server.readiness import RESERVE_BYTES, LastRefusal, LedgerDisk
from server.tables import CELLS, LINKS, SESSIONS
from web.database_faults import (
    database_refusal,
    is_disconnect,
    is_postgres_error,
    is_postgres_lock_refused,
    postgres_errors,
)

# The driver's cursor (sqlite3's, psycopg's) and a pooled connection of it, detached: the DBAPI's, as SQLAlchemy
# describes them.
Cursor: TypeAlias = DBAPICursor
Connection: TypeAlias = PoolProxiedConnection


class SessionRow(TypedDict):
    """A session's row as the driver reads it (``Database.load``): JSON and datetime columns as the driver gives them
    (text on SQLite, which ``Database.decode`` reads as SQLAlchemy would). What it was opened with (``CONFIG_COLUMNS``)
    a step reads only when its runtime is not cached in this process (``Database.load``'s ``config``)."""

    id: str
    ledger_key: int
    token_hash: str
    dataset: NotRequired[str]
    dataset_params: NotRequired[str | dict[str, Any]]
    split: NotRequired[str]
    protocol: NotRequired[str]
    example_order: NotRequired[str]
    budget: NotRequired[str | dict[str, Any]]
    seed: NotRequired[int]
    n_examples: NotRequired[int]
    d: NotRequired[int]
    status: str
    spent_cost: float
    spent_attributes: int
    labels: int
    issued: int
    predictions: int
    cumulative_loss: float
    ledger_rows: int
    head_hash: str
    created_at: str | datetime
    last_active: NotRequired[str | datetime]
    account_id: str | None
    ledger_format: int


SESSION_COLUMNS = tuple(c.name for c in SESSIONS.columns)
assert SESSION_COLUMNS == tuple(SessionRow.__annotations__), "server.tables.SESSIONS and SessionRow disagree"
# What a session was opened with, and when it was last active: a step whose session's runtime (its config) is cached
# reads the row without them (3-4 us less a step's read, of 12 on SQLite).
CONFIG_COLUMNS = ("dataset", "dataset_params", "split", "protocol", "example_order", "budget", "seed", "n_examples",
                  "d")
STEP_COLUMNS = tuple(c for c in SESSION_COLUMNS if c not in (*CONFIG_COLUMNS, "last_active"))
# The chain builds links and packed cells as tuples in these orders; they go to the driver as they are.
assert tuple(c.name for c in LINKS.columns) == LINK_FIELDS, "server.tables.LINKS and ledger.LINK_FIELDS disagree"
assert tuple(c.name for c in CELLS.columns) == CELLS_FIELDS, "server.tables.CELLS and ledger.CELLS_FIELDS disagree"
LINK_COLUMNS = LINK_FIELDS[1:]  # as read back, without the session key
# What a step may change on the session row, besides the chain head.
COUNTER_COLUMNS = ("status", "spent_cost", "spent_attributes", "labels", "issued", "predictions", "cumulative_loss")
assert COUNTER_COLUMNS[0] == "status", "Database.append leaves the first counter out when the status is the same"
# PostgreSQL draws new sessions' ledger keys from this sequence (migration 0002).
KEY_SEQUENCE = "sessions_ledger_key_seq"
# Stay below SQLite's bound-parameter limit when looking up many examples at once.
IN_CHUNK = 900
# Up to this many link and cell rows, a PostgreSQL write is one statement (``Statements.written``); a big batch's
# thousands stay with executemany (PostgreSQL takes at most 65,535 parameters a statement).
ONE_STATEMENT_ROWS = 64
# Links read per query when paging through a ledger.
LINK_CHUNK = 2000
BUSY = "the session's ledger is busy with other requests; nothing was done, retry shortly"
# Connections kept open: a checkout from SQLAlchemy's pool (events, reset on return) costs about a fifth of a
# whole observe on SQLite, so the store keeps detached connections of its own.
IDLE_CONNECTIONS = 8


class NotNow(Exception):  # noqa: N818 - a signal, not an error: the caller goes on the thread pool instead
    """A write that would have to wait (another writer holds the lock, or a dataset must be loaded first)."""


class GateHeld(NotNow):
    """Another write of this process holds the SQLite gate: ``database.released()`` says when it is free."""

    def __init__(self, database: Database) -> None:
        super().__init__()
        self.database = database


def _identity(value: Any) -> Any:
    return value


def _insert(table: Table, columns: Sequence[str], p: str, rows: int = 1) -> str:
    marks = f"({', '.join([p] * len(columns))})"
    return f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES {', '.join([marks] * rows)}"


class Statements:
    """Every statement of the oracle for one dialect (qmark for SQLite, format for psycopg)."""

    def __init__(self, engine: Engine) -> None:
        dialect = engine.dialect
        self.sqlite = dialect.name == "sqlite"
        p = self.p = "?" if dialect.paramstyle == "qmark" else "%s"
        s, links, cells = SESSIONS.name, LINKS.name, CELLS.name
        self.load_session = f"SELECT {', '.join(SESSION_COLUMNS)} FROM {s} WHERE id = {p}"
        # SQLite's write lock is the database's, taken by BEGIN IMMEDIATE; PostgreSQL locks the session row.
        lock = "" if self.sqlite else " FOR UPDATE"
        self.lock_session = self.load_session + lock
        self.step_session = f"SELECT {', '.join(STEP_COLUMNS)} FROM {s} WHERE id = {p}"
        self.lock_step = self.step_session + lock
        # SQLite has one writer at a time, so MAX + 1 under its write lock is unique; PostgreSQL has a sequence.
        new_key = (f"(SELECT COALESCE(MAX(ledger_key), 0) + 1 FROM {s})" if self.sqlite
                   else f"nextval('{KEY_SEQUENCE}')")
        given = [c for c in SESSION_COLUMNS if c != "ledger_key"]
        self.session_columns_given = tuple(given)
        self.insert_session = (f"INSERT INTO {s} ({', '.join(given)}, ledger_key) "
                               f"VALUES ({', '.join([p] * len(given))}, {new_key}) RETURNING ledger_key")
        assigned = [f"{c} = {p}" for c in (*COUNTER_COLUMNS, "ledger_rows", "head_hash", "last_active")]
        self.update_session = f"UPDATE {s} SET {', '.join(assigned)} WHERE id = {p}"
        # The same, leaving the status alone (a step that neither closes nor exhausts the session): SQLite rewrites
        # the entry of an index whose column a statement sets, changed or not (ix_sessions_account: a page more in
        # the commit, 7 us a step).
        self.update_counters = f"UPDATE {s} SET {', '.join(assigned[1:])} WHERE id = {p}"
        self.insert_links = _insert(LINKS, LINK_FIELDS, p)
        self.insert_cells = _insert(CELLS, CELLS_FIELDS, p)
        self._written: dict[tuple[str, int, int], str] = {}
        self.link_of_kind = (f"SELECT value FROM {links} WHERE session_key = {p} AND example = {p} AND kind = {{kind}} "
                             "LIMIT 1")
        read_links = f"SELECT {', '.join(LINK_COLUMNS)} FROM {links} WHERE session_key = {p}"
        self.link_at = f"{read_links} AND seq <= {p} ORDER BY seq DESC LIMIT 1"
        self.open_payload = f"SELECT payload FROM {links} WHERE session_key = {p} AND seq = 0"
        self.links_from = f"{read_links} AND seq >= {p} ORDER BY seq LIMIT {p}"
        self.open_sessions = f"SELECT id, last_active FROM {s} WHERE status = 'open'"
        # A write that changes nothing yet is refused by a database that takes no writes (read-only file, server
        # in recovery, no privilege): the readiness check and the start-up check run it.
        self.probe_write = f"UPDATE {s} SET status = status WHERE 1 = 0"
        self._cells = f"SELECT example, seq, cells FROM {cells} WHERE session_key = {p} AND example IN ({{marks}})"
        types = {c.name: c.type.dialect_impl(dialect) for c in SESSIONS.columns}
        self.bind = {name: t.bind_processor(dialect) or _identity for name, t in types.items()}
        # Only JSON and datetime columns need decoding; numeric types have no processor for a type code of None.
        self.result = {name: types[name].result_processor(dialect, None) or _identity
                       for name in ("dataset_params", "budget", "created_at", "last_active")}

    def cells(self, n_examples: int) -> str:
        return self._cells.format(marks=", ".join([self.p] * n_examples))

    def written(self, update: str, links: int, cells: int) -> str:
        """PostgreSQL: a step's ``links`` and ``cells`` rows inserted and its session's row updated in one statement
        (data-modifying CTEs) instead of two ``executemany`` and an ``UPDATE``: psycopg's protocol costs the oracle's
        CPU per statement (a step on PostgreSQL, in one process: 0.70-0.74 ms against 0.95-0.96)."""
        key = (update, links, cells)
        statement = self._written.get(key)
        if statement is None:
            tables = (("l", LINKS, LINK_FIELDS, links), ("c", CELLS, CELLS_FIELDS, cells))
            inserts = [f"{name} AS ({_insert(table, columns, self.p, rows)})" for name, table, columns, rows in tables
                       if rows]
            statement = self._written[key] = f"WITH {', '.join(inserts)} {update}" if inserts else update
        return statement

    def of_kind(self, kind: str) -> str:
        # A literal, not a parameter: the partial indexes serve only a query whose WHERE names their kind.
        assert kind in ("label", "predict")
        return self.link_of_kind.format(kind=f"'{kind}'")


class Database:
    """The oracle's connections and its two kinds of transaction.

    On SQLite the writers of this process also queue at a gate before ``BEGIN IMMEDIATE``: SQLite's own busy
    handler polls with growing sleeps, so a small request could wait out several big ones that each grab the
    free lock first; at the gate it is woken as soon as the write before it commits.
    """

    def __init__(self, engine: Engine, lock_timeout: float, reserve_bytes: int = RESERVE_BYTES) -> None:
        self.engine = engine
        self.sql = Statements(engine)
        self.lock_timeout = lock_timeout
        self._idle: deque[Connection] = deque()
        # SQLite connections for writes that must not wait (``wait=False``), kept apart with a busy timeout of 0: set
        # once, not turned off and on again around each such write (two PRAGMA statements, ~10 us each, per step).
        self._prompt: deque[Connection] = deque()
        self._gate = threading.Lock() if self.sql.sqlite else None
        # The group transaction open on a thread (``grouped``): that thread's writes are savepoints of it.
        self._group: tuple[int, Cursor] | None = None
        # Event-loop waiters for the gate (``released``): woken as soon as it is released, without a thread.
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiters_lock = threading.Lock()
        path = sqlite_path(engine) if self.sql.sqlite else None
        self._checkpointer = None if path is None else Checkpointer(self._connect_raw, path, self._writers_held)
        # What refuses a write before it is tried, and what readiness reports besides the probe (server.readiness).
        self.disk = None if path is None else LedgerDisk(path, reserve_bytes)
        self.last_refusal = LastRefusal(self.disk)

    def write(self, *, wait: bool = True, probe: bool = False) -> AbstractContextManager[Cursor]:
        """A cursor in a transaction holding the write lock (SQLite) or ready to lock rows (PostgreSQL).

        ``wait=False`` (SQLite only) takes the lock only if it is free this instant, else raises ``NotNow``
        having done nothing: such a write may run on the event loop, which must never wait for a lock. A ledger
        whose file system is read-only or past its reserve refuses it (507) before anything is tried. ``probe``: a
        write that changes nothing, which says nothing of the room left (``check_writable``).
        """
        group = self._group
        if group is not None and group[0] == threading.get_ident():
            return _savepoint(group[1])
        return _Write(self, wait, probe)

    def _release(self) -> None:
        """Free the SQLite gate and wake the event loop's writers waiting for it."""
        assert self._gate is not None
        self._gate.release()
        self._wake_waiters()

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """One write transaction for every write this thread makes in the block, each in a savepoint of its own: one
        that raises is rolled back alone, and the others are committed together as the block ends (a group commit),
        or none if the commit fails. Taken as ``write(wait=False)`` takes its lock: ``NotNow`` (or ``GateHeld``) if
        it would wait."""
        with self.write(wait=False) as cursor:
            self._group = (threading.get_ident(), cursor)
            try:
                yield
            finally:
                self._group = None

    def _restart_log(self) -> None:
        """Start the write-ahead log over from this writer, which holds the gate, before it writes: the checkpoint
        thread fell behind and the log is past its hard limit (``server.checkpoint``). Readers get
        ``READERS_WAIT_MS`` to leave it, as the thread gives them."""
        try:
            conn = self._checkout(self._idle)
        except Exception:  # noqa: BLE001 - the database cannot be opened: the write says so itself
            return
        try:
            conn.execute(f"PRAGMA busy_timeout = {READERS_WAIT_MS}")
            conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
            conn.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout * 1000)}")
        except sqlite3.Error:  # the checkpoint thread logs why; the write meets the same fault, if it is one
            self._discard(conn)
            return
        self._checkin(conn, self._idle)

    @contextmanager
    def _writers_held(self) -> Iterator[bool]:
        """This process's writers held back at the gate (the checkpointer's TRUNCATE): True if the gate was taken
        within the lock timeout, else False (a write holds it that long)."""
        assert self._gate is not None
        if not self._gate.acquire(timeout=self.lock_timeout):
            yield False
            return
        try:
            yield True
        finally:
            self._release()

    async def released(self, timeout: float) -> bool:
        """Wait on the event loop, at most ``timeout`` seconds, until the gate is free: True if it is.

        A small write that found the gate held waits here rather than on a worker thread: it is then retried in
        place the moment the write before it commits, without two thread hops and a contended GIL."""
        assert self._gate is not None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._waiters_lock:
            self._waiters.append((loop, future))
        if not self._gate.locked():  # released before this waiter was listed
            return True
        try:
            await asyncio.wait_for(future, max(timeout, 0.0))
        except TimeoutError:
            return not self._gate.locked()
        return True

    def _wake_waiters(self) -> None:
        if not self._waiters:  # a waiter listed after this look finds the gate free (``released``) or is woken later
            return
        with self._waiters_lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    def read(self) -> AbstractContextManager[Cursor]:
        """A cursor on one consistent snapshot, without any write lock."""
        return _Transaction(self, write=False)

    def check_writable(self) -> None:
        """Return if a write would be taken now; else raise the refusal it would get (503, 507): the ledger's file
        system (read-only, or past its reserve), a write refused for lack of room since which none succeeded, or a
        write that changes nothing refused by the database (``server.readiness``)."""
        refused = self.last_refusal.current() or (None if self.disk is None else self.disk.refusal(touch=True))
        if refused is not None:
            raise refused
        with self.write(probe=True) as cursor:
            cursor.execute(self.sql.probe_write)

    def _raise_fault(self, exc: BaseException, *, write: bool) -> None:
        """Raise the refusal a database fault stands for (503, 507); return for any other error (a bug: re-raised).

        SQLite reports a write the file system refused (EROFS, ENOSPC on a file it had open) as an I/O error, which
        alone would read as a database out of reach: the file system's own state names it when it can."""
        refused = database_refusal(exc, "the oracle")
        if refused is None:
            return
        if write and self.disk is not None and refused.error == Code.DATABASE_UNAVAILABLE:
            refused = self.disk.refusal(touch=True) or refused
        if write:
            self.last_refusal.refused(refused)
        raise refused from exc

    def _after_fault(self, exc: BaseException) -> None:
        """A lost connection means the server went away: the idle ones, opened before, are gone too. Closing them
        all now (as SQLAlchemy's pool invalidates itself on a disconnect) spares the next requests their errors."""
        if is_disconnect(exc):
            self._close_idle()

    def _checkout(self, idle: deque[Connection]) -> Connection:
        while True:
            try:
                conn = idle.pop()
            except IndexError:
                break
            if self.sql.sqlite or _alive(conn):
                return conn
            self._discard(conn)
        conn = self._connect_raw()
        if self.sql.sqlite:  # the checkpointer's thread copies the log back, outside the write lock
            conn.execute(f"PRAGMA wal_autocheckpoint = {WRITER_BACKSTOP_PAGES}")
            if idle is self._prompt:
                conn.execute("PRAGMA busy_timeout = 0")
        return conn

    def _connect_raw(self) -> Connection:
        conn = self.engine.raw_connection()
        # Detached, the connection is ours: SQLAlchemy's pool neither counts nor resets it.
        conn.detach()
        return conn

    @staticmethod
    def _checkin(conn: Connection, idle: deque[Connection]) -> None:
        if len(idle) < IDLE_CONNECTIONS:
            idle.append(conn)
        else:
            conn.close()

    @staticmethod
    def _discard(conn: Connection) -> None:
        try:
            conn.rollback()
        except Exception:  # noqa: BLE001 - the connection is being thrown away; its own error is the one raised
            pass
        finally:
            conn.close()

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._close_idle()

    def _close_idle(self) -> None:
        # Taken meanwhile by another thread, or already broken.
        gone: tuple[type[Exception], ...] = (IndexError, *postgres_errors())
        for idle in (self._idle, self._prompt):
            while idle:
                try:
                    idle.pop().close()
                except gone:
                    pass

    # --- statements -------------------------------------------------------------------------------------

    def load(self, cursor: Cursor, session_id: str, *, lock: bool, config: bool = True) -> SessionRow | None:
        """The session's row as raw column values (JSON and datetime columns undecoded), or None; without
        ``CONFIG_COLUMNS`` and ``last_active`` unless ``config``."""
        sql = self.sql
        if config:
            statement, columns = (sql.lock_session if lock else sql.load_session), SESSION_COLUMNS
        else:
            statement, columns = (sql.lock_step if lock else sql.step_session), STEP_COLUMNS
        cursor.execute(statement, (session_id,))
        row = cursor.fetchone()
        # The statement reads these columns, SessionRow's keys (asserted above).
        return None if row is None else cast(SessionRow, dict(zip(columns, row, strict=True)))

    def decode(self, row: Mapping[str, Any], column: str) -> Any:
        """A raw column value as SQLAlchemy would read it back (JSON parsed, datetimes as datetime)."""
        value = row[column]
        return self.sql.result[column](value) if isinstance(value, str | bytes) else value

    def insert_session(self, cursor: Cursor, record: Mapping[str, Any]) -> int:
        """Insert a session row; returns the ledger key it was given."""
        bind = self.sql.bind
        cursor.execute(self.sql.insert_session, tuple(bind[c](record[c]) for c in self.sql.session_columns_given))
        return int(one_row(cursor)[0])

    def append(self, cursor: Cursor, session_id: str, chain: Chain, counters: Sequence[Any], *, now: datetime,
               same_status: bool = False) -> None:
        """Insert a chain's new links and cells and move the session's counters and head in the same transaction
        (``same_status``: the status among ``counters`` is the row's already, and is not written)."""
        statement, counters = (self.sql.update_counters, counters[1:]) if same_status else (self.sql.update_session,
                                                                                             counters)
        update = (*counters, chain.seq, chain.head, self.sql.bind["last_active"](now), session_id)
        links, cells = chain.links, chain.cells
        if not self.sql.sqlite and len(links) + len(cells) <= ONE_STATEMENT_ROWS:
            cursor.execute(self.sql.written(statement, len(links), len(cells)),
                           [*chain_values(links), *chain_values(cells), *update])
            return
        if links:
            cursor.executemany(self.sql.insert_links, links)
        if cells:
            cursor.executemany(self.sql.insert_cells, cells)
        cursor.execute(statement, update)

    def cells(self, cursor: Cursor, key: int, examples: Sequence[int]) -> dict[tuple[int, int], float]:
        """The (example, attribute) -> value cells the session paid for, of these examples."""
        paid: dict[tuple[int, int], float] = {}
        for example, _seq, blob in self._packed(cursor, key, examples):
            attributes, values, _ = unpack_cells(bytes(blob))
            paid.update(zip(((example, a) for a in attributes.tolist()), values.tolist(), strict=True))
        return paid

    def _packed(self, cursor: Cursor, key: int, examples: Sequence[int]) -> list[tuple[int, int, bytes]]:
        out: list[tuple[int, int, bytes]] = []
        for start in range(0, len(examples), IN_CHUNK):
            chunk = examples[start : start + IN_CHUNK]
            cursor.execute(self.sql.cells(len(chunk)), (key, *chunk))
            out += cursor.fetchall()
        return out

    def value_of_kind(self, cursor: Cursor, key: int, kind: str, example: int) -> tuple[float | None] | None:
        """(value,) of the session's first link of this kind (label, predict) for the example, or None."""
        cursor.execute(self.sql.of_kind(kind), (key, example))
        row = cursor.fetchone()
        return None if row is None else (row[0],)

    def declared_costs(self, cursor: Cursor, key: int) -> list[float] | None:
        """The attribute costs the session's ``open`` row declares (None: every attribute costs 1)."""
        cursor.execute(self.sql.open_payload, (key,))
        row = cursor.fetchone()
        return None if row is None or not row[0] else json.loads(row[0]).get("costs")

    def rows(self, cursor: Cursor, key: int, costs: Sequence[float] | None, after: int = -1,
             limit: int | None = None) -> list[ChainRow]:
        """The session's ledger rows with seq > after, in order (all of them without a limit)."""
        out: list[ChainRow] = []
        cursor.execute(self.sql.link_at, (key, after + 1))
        first = cursor.fetchone()
        for links, cells_of in self._stored(cursor, key, after + 1 if first is None else first[0]):
            for row in rows_of_links(links, cells_of, costs):
                if row["seq"] > after:
                    out.append(row)
                    if limit is not None and len(out) >= limit:
                        return out
        return out

    def links(self, cursor: Cursor, key: int, costs: Sequence[float] | None) -> Iterator[ChainLink]:
        """The session's whole chain, link by link, as the verifier and the audit read it (``costs``: the declared
        ones, as for ``rows``)."""
        for links, cells_of in self._stored(cursor, key, 0):
            yield from links_of_stored(links, cells_of, costs)

    def _stored(self, cursor: Cursor, key: int, start: int) -> Iterator[tuple[Sequence[ReadLink], dict[int, bytes]]]:
        """The session's links from seq ``start`` on, ``LINK_CHUNK`` at a time, each chunk with the packed cells
        of its observe links' examples, by seq."""
        while True:
            cursor.execute(self.sql.links_from, (key, start, LINK_CHUNK))
            links: Sequence[ReadLink] = cursor.fetchall()
            if not links:
                return
            # A link's example is never NULL but in a database altered by hand: its cells are then not found, and
            # the verifier names its rows missing.
            observed = sorted({link[2] for link in links if link[1] == "observe" and link[2] is not None})
            yield links, {seq: blob for _, seq, blob in self._packed(cursor, key, observed)}
            start = links[-1][0] + 1

    def open_sessions(self, cursor: Cursor) -> list[tuple[str, datetime]]:
        cursor.execute(self.sql.open_sessions)
        decode: Callable[[Any], Any] = self.sql.result["last_active"]
        return [(sid, decode(t) if isinstance(t, str) else t) for sid, t in cursor.fetchall()]


class _Transaction:
    """A transaction on a connection of the idle ones (``Database.read``, and ``_Write`` inside its gate), committed
    on success and rolled back on any exception. A refused or busy request leaves a healthy connection, which goes
    back to the idle list; any other failure may have broken it, so it is closed. Objects, not generators, as is
    ``_Write``: every step enters both (two generator context managers cost a step 9 us in one process)."""

    __slots__ = ("db", "write", "wait", "idle", "conn")

    def __init__(self, db: Database, *, write: bool, wait: bool = True) -> None:
        self.db, self.write, self.wait = db, write, wait
        # A write that must not wait must not wait for another process's lock either: its connection does not.
        self.idle = db._idle if wait or not db.sql.sqlite else db._prompt

    def __enter__(self) -> Cursor:
        db = self.db
        try:
            conn = self.conn = db._checkout(self.idle)
        except Exception as exc:  # the database cannot be reached (or opened) at all
            db._raise_fault(exc, write=self.write)
            raise
        try:
            cursor = conn.cursor()
            if db.sql.sqlite:
                cursor.execute("BEGIN IMMEDIATE" if self.write else "BEGIN")
            elif not self.write:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        except BaseException as exc:
            self._failed(exc)
            raise
        return cursor

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None:
            self._failed(exc)
            return
        try:
            self.conn.commit()
        except BaseException as failed:
            self._failed(failed)
            raise
        self.db._checkin(self.conn, self.idle)

    def _failed(self, exc: BaseException) -> None:
        """The connection back to the idle ones or closed, as ``exc`` leaves it; raises what ``exc`` stands for (a
        busy lock: ``NotNow`` or ``SessionBusy``; a database fault: its refusal), or returns if it stands for
        itself."""
        db, conn = self.db, self.conn
        if isinstance(exc, Refused | NotNow):
            conn.rollback()
            db._checkin(conn, self.idle)
            return
        if is_postgres_lock_refused(exc) or (isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)):
            conn.rollback()
            db._checkin(conn, self.idle)
            if not self.wait:
                raise NotNow from None
            raise SessionBusy(BUSY) from None
        db._discard(conn)
        if isinstance(exc, sqlite3.OperationalError) or is_postgres_error(exc):
            db._after_fault(exc)
            db._raise_fault(exc, write=self.write)


class _Write:
    """``Database.write``'s transaction once no group holds this thread's writes: the ledger's disk looked at, the
    SQLite gate taken (and the log started over if the checkpoint thread fell behind), a ``_Transaction``, and after
    its commit the readiness and checkpoint thread told."""

    __slots__ = ("db", "wait", "probe", "transaction")

    def __init__(self, db: Database, wait: bool, probe: bool) -> None:
        self.db, self.wait, self.probe = db, wait, probe
        self.transaction = _Transaction(db, write=True, wait=wait)

    def __enter__(self) -> Cursor:
        db, wait = self.db, self.wait
        if db.disk is not None and (refused := db.disk.refusal()) is not None:
            raise refused
        if db._gate is None:
            if not wait:
                raise NotNow
            return self.transaction.__enter__()
        if not db._gate.acquire(timeout=db.lock_timeout if wait else 0):
            if not wait:
                raise GateHeld(db)
            raise SessionBusy(BUSY)
        try:
            if db._checkpointer is not None and db._checkpointer.overdue():
                if not wait:  # a checkpoint takes milliseconds: not on the event loop
                    raise NotNow
                db._restart_log()
            return self.transaction.__enter__()
        except BaseException:
            db._release()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        db = self.db
        try:
            self.transaction.__exit__(kind, exc, tb)
        finally:
            if db._gate is not None:
                db._release()
        if exc is None:  # committed
            if not self.probe:
                db.last_refusal.wrote()
            if db._checkpointer is not None:
                db._checkpointer.wrote()


@contextmanager
def _savepoint(cursor: Cursor) -> Iterator[Cursor]:
    """A write within the group's transaction: undone alone if it raises."""
    cursor.execute("SAVEPOINT step")
    try:
        yield cursor
    except BaseException:
        cursor.execute("ROLLBACK TO step")
        cursor.execute("RELEASE step")
        raise
    cursor.execute("RELEASE step")


def chain_values(rows: Sequence[Sequence[Any]]) -> list[Any]:
    """The values of these rows, one after the other: the parameters of a multi-row insert."""
    return [value for row in rows for value in row]


def one_row(cursor: Cursor) -> Sequence[Any]:
    """The row of a statement that always answers one (an aggregate; RETURNING of a row it inserted or locked)."""
    row: Sequence[Any] | None = cursor.fetchone()
    assert row is not None, "the statement answered no row"
    return row


def sqlite_path(engine: Engine) -> Path | None:
    """The file of a SQLite engine's database (a ``file:`` URI's too), or None for an in-memory one."""
    name = engine.url.database or ""
    if name.startswith("file:"):
        name = name.removeprefix("file:").partition("?")[0]
    return None if name in ("", ":memory:") or engine.url.query.get("mode") == "memory" else Path(name)


def _alive(conn: Connection) -> bool:
    """Whether an idle PostgreSQL connection may still be used, without a round trip: an idle connection has
    nothing to read unless the server closed it (a restart, an admin's terminate) or sent a notice, so a readable
    socket means it is dropped and a new one is opened (SQLAlchemy's pre-ping, for free)."""
    import psycopg  # here: only PostgreSQL's connections are looked at, and the oracle on SQLite never imports it

    raw = conn.dbapi_connection
    if raw is None or raw.closed or raw.broken:
        return False
    try:
        readable, _, _ = select.select([raw.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text
