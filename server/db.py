"""Engine set-up: SQLite (embedded default, WAL, writers serialised) or PostgreSQL (row locks)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, NullPool, create_engine, event, text
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

from server.checkpoint import LIMIT_BYTES as WAL_LIMIT_BYTES

MIGRATIONS = Path(__file__).parent / "migrations"
# The PostgreSQL advisory lock that oracles starting together on one database take in turn to migrate it.
MIGRATION_LOCK = 0x62756467_65746C62  # "budgetlb"


# How long a request waits for a session's lock before it is answered 503 (seconds).
DEFAULT_LOCK_TIMEOUT = 5.0


class _BrokenConnectionReset(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not reset on its return (a rollback on a connection the database
    dropped: a restart, a failover) at ERROR with its traceback, several per restart, although the pool discards the
    connection and the request that held it was already answered 503. One line at WARNING says the same."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith("Exception during reset"):
            error = record.exc_info[1] if record.exc_info else None
            record.msg, record.args = "a pooled database connection could not be reset and was discarded: %s", (
                str(error).strip().splitlines()[0] if error is not None else "unknown error",)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info = record.exc_text = None
        return True


logging.getLogger("sqlalchemy.pool.impl.QueuePool").addFilter(_BrokenConnectionReset())


def _driver(url: str) -> str:
    return "postgresql+psycopg://" + url.removeprefix("postgresql://") if url.startswith("postgresql://") else url


def make_engine(url: str, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Engine:
    url = _driver(url)
    if not url.startswith("sqlite"):
        engine = create_engine(url, pool_size=20, max_overflow=20, pool_pre_ping=True)

        @event.listens_for(engine, "connect")
        def _lock_timeout(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
            # A row lock not granted in time fails the statement (LockNotAvailable) instead of waiting on.
            cursor = dbapi_conn.cursor()
            try:
                cursor.execute(f"SET lock_timeout = {int(lock_timeout * 1000)}")
            finally:
                cursor.close()
            dbapi_conn.commit()

        return engine
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": lock_timeout}, pool_size=20,
                           max_overflow=40)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy's begin event, not pysqlite, open transactions, so every one is IMMEDIATE.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # WAL with synchronous=NORMAL is durable across application crashes; an OS crash may lose the
        # last transactions but never corrupts the chain, since each commit is atomic.
        cursor.execute("PRAGMA synchronous=NORMAL")
        # A writer that starts the log over truncates its file to this size (server.checkpoint bounds the log).
        cursor.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        cursor.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # IMMEDIATE takes the write lock up front: budget checks and their rows are one atomic step
        # even with several worker processes on the same file.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def upgrade(url: str) -> None:
    """Apply the Alembic migrations up to head."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    with _migrating_alone(url):
        command.upgrade(config, "head")


@contextmanager
def _migrating_alone(url: str) -> Iterator[None]:
    """On PostgreSQL, hold the database's migration lock: oracles started at once on one database (side by side, or
    ``--scale``) migrate it one after the other, the later ones finding it at head; SQLite needs none (one host,
    and its migrations take the file's write lock)."""
    if url.startswith("sqlite"):
        yield
        return
    engine = create_engine(_driver(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
                conn.commit()
    finally:
        engine.dispose()
