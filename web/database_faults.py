"""A database fault as the refusal it is, for both services: never a 500.

A database that restarts or cannot be reached is a 503 ``database_unavailable`` with Retry-After (the request did
nothing: every write is one transaction, rolled back whole); a full disk is a 507 ``storage_full`` and a database
that refuses writes a 507 ``read_only`` (nothing charged either; an operator must act, so the SDK does not wait on
them). Anything else is not a fault of the database's state but a bug, and stays one.
"""

from __future__ import annotations

import sqlite3
import sys

from sqlalchemy.exc import DBAPIError

from budgetlab.errors import Code, Refused

# What a client waits before it tries a database that was unreachable again (seconds).
RETRY_AFTER = 1.0
# SQLite's primary result codes (the low byte of an extended code).
SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 8, 10, 13, 14


def psycopg_loaded() -> bool:
    """Whether this process has imported psycopg. Only then can an exception be one of its (an engine on a PostgreSQL
    URL imports it as it is made), so the services on SQLite never import it (0.1 CPU-s per process start) just to
    tell its exceptions apart: every look at one goes through here, and imports psycopg only once this is true."""
    return "psycopg" in sys.modules


def database_refusal(exc: BaseException, service: str = "the service") -> Refused | None:
    """The refusal a driver's (or SQLAlchemy's) exception stands for, or None when it is not a database fault."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        if code == SQLITE_FULL:
            return full_refusal(service, str(exc))
        if code == SQLITE_READONLY:
            return read_only_refusal(service, str(exc))
        if code in (SQLITE_IOERR, SQLITE_CANTOPEN):
            return _unavailable(service, str(exc))
        return None
    if not psycopg_loaded():
        return None
    import psycopg

    if isinstance(exc, psycopg.errors.DiskFull):
        return full_refusal(service, str(exc).strip())
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return read_only_refusal(service, str(exc).strip())
    # Connection refused or lost, the server shutting down or starting up, too many connections: all transient.
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return _unavailable(service, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    return None


def is_disconnect(exc: BaseException) -> bool:
    """Whether the connection the exception came from is gone (so other connections opened before it likely are)."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    if not psycopg_loaded():
        return False
    import psycopg

    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and not isinstance(
        exc, psycopg.errors.DiskFull | psycopg.errors.LockNotAvailable)


def postgres_errors() -> tuple[type[Exception], ...]:
    """``(psycopg.Error,)`` once psycopg is loaded, else none: what an ``except`` clause names for psycopg's errors."""
    if not psycopg_loaded():
        return ()
    import psycopg

    return (psycopg.Error,)


def is_postgres_error(exc: BaseException) -> bool:
    """Whether ``exc`` is psycopg's (any ``psycopg.Error``)."""
    return isinstance(exc, postgres_errors())


def is_postgres_lock_refused(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's refusal of a row lock not granted within ``lock_timeout``."""
    if not psycopg_loaded():
        return False
    import psycopg

    return isinstance(exc, psycopg.errors.LockNotAvailable)


def is_postgres_unique_violation(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's refusal of a row that a unique constraint forbids."""
    if not psycopg_loaded():
        return False
    import psycopg

    return isinstance(exc, psycopg.errors.UniqueViolation)


def _unavailable(service: str, why: str) -> Refused:
    return Refused(Code.DATABASE_UNAVAILABLE.status, Code.DATABASE_UNAVAILABLE.value,
                   f"{service}'s database cannot be reached right now ({why}); nothing was done, retry after "
                   "Retry-After", retry_after=RETRY_AFTER)


def full_refusal(service: str, why: str) -> Refused:
    return Refused(Code.STORAGE_FULL.status, Code.STORAGE_FULL.value,
                   f"{service}'s database has no space left ({why}); nothing was done or charged",
                   retry_after=RETRY_AFTER * 30)


def read_only_refusal(service: str, why: str) -> Refused:
    return Refused(Code.READ_ONLY.status, Code.READ_ONLY.value,
                   f"{service}'s database refuses writes ({why}); nothing was done or charged",
                   retry_after=RETRY_AFTER * 30)
