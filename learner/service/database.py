"""The learner's engine (a SQLite file by default, PostgreSQL in compose) and its Alembic migrations."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

MIGRATIONS = Path(__file__).parent / "migrations"
# A writer waits this long for SQLite's lock; the learner's writes are a few small rows per curve point.
SQLITE_BUSY_SECONDS = 30


def make_engine(url: str) -> Engine:
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if not url.startswith("sqlite"):
        return create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # WAL: the API's reads never wait for a run's writes.
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine


def upgrade(url: str) -> None:
    """Apply the learner's migrations up to head."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, "head")
