"""The accounts' rows of the oracle's database: the one SQL path to an account, its allowance and what it drew.

A draw (``draw``) is one ``UPDATE ... RETURNING``: on PostgreSQL it takes the account's row lock, after the
session's (every transaction locks a session before its account, so two never wait on each other), and the
allowance rule (``budgetlab.allowance.check_draw``) then judges the account as it is after the draw, inside the
same transaction; a refusal rolls the draw back with the step. On SQLite the transaction already holds the
database's write lock. Either way the sessions of an account draw on it one at a time, atomically with their own
budgets.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from budgetlab import allowance as rules
from budgetlab.contract.accounts import AccountInfo, AccountSpent, Allowance
from budgetlab.errors import Code, refusal
from server.store import Cursor, Database, one_row
from server.tables import ACCOUNTS
from web.database_faults import is_postgres_unique_violation

ACCOUNT_COLUMNS = tuple(c.name for c in ACCOUNTS.columns)
# An account's id: the first part of its key, looked up before the secret part is compared in constant time.
ID_BYTES = 8
# PostgreSQL serialises the opening of anonymous sessions on this advisory lock when they are capped in number.
ANONYMOUS_LOCK = 0x424C414E


def _identity(value: Any) -> Any:
    return value


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def new_key() -> tuple[str, str, str]:
    """(account id, key, digest of the key's secret): the key is ``ID.SECRET``, shown once."""
    account_id = secrets.token_hex(ID_BYTES)
    secret = secrets.token_urlsafe(32)
    return account_id, f"{account_id}.{secret}", secret_hash(secret)


@dataclass(frozen=True)
class Account:
    """An account's row as read: its allowance parsed."""

    id: str
    name: str
    status: str
    allowance: Allowance
    spent_cost: float
    evaluations: int
    sessions: int
    created_at: datetime
    revoked_at: datetime | None
    key_hash: str

    def info(self, open_now: int) -> AccountInfo:
        return AccountInfo(
            id=self.id, name=self.name, status="revoked" if self.status == "revoked" else "active",
            allowance=self.allowance,
            spent=AccountSpent(cost=self.spent_cost, evaluations=self.evaluations, sessions=self.sessions,
                               open=open_now),
            remaining=rules.remaining(self.allowance, self.spent_cost, self.evaluations),
            created_at=self.created_at, revoked_at=self.revoked_at)


class AccountRows:
    """The statements on accounts, for one database's dialect."""

    def __init__(self, db: Database) -> None:
        self.db = db
        p = db.sql.p
        a, s = ACCOUNTS.name, "sessions"
        self._select = f"SELECT {', '.join(ACCOUNT_COLUMNS)} FROM {a}"
        self._load = f"{self._select} WHERE id = {p}"
        self._lock = self._load + ("" if db.sql.sqlite else " FOR UPDATE")
        self._all = f"{self._select} ORDER BY created_at, id"
        marks = ", ".join([p] * len(ACCOUNT_COLUMNS))
        self._insert = f"INSERT INTO {a} ({', '.join(ACCOUNT_COLUMNS)}) VALUES ({marks})"
        self._draw = (f"UPDATE {a} SET spent_cost = spent_cost + {p}, evaluations = evaluations + {p} WHERE id = {p} "
                      "RETURNING status, allowance, spent_cost, evaluations")
        self._opened = f"UPDATE {a} SET sessions = sessions + 1 WHERE id = {p}"
        self._revoke = f"UPDATE {a} SET status = 'revoked', revoked_at = {p} WHERE id = {p} AND status = 'active'"
        self._open_of = f"SELECT COUNT(*) FROM {s} WHERE account_id = {p} AND status = 'open'"
        self._open_anonymous = f"SELECT COUNT(*) FROM {s} WHERE account_id IS NULL AND status = 'open'"
        self._open_by_account = (f"SELECT account_id, COUNT(*) FROM {s} WHERE account_id IS NOT NULL "
                                 "AND status = 'open' GROUP BY account_id")
        self._open_ids = f"SELECT id FROM {s} WHERE account_id = {p} AND status = 'open'"
        self._name_taken = f"SELECT 1 FROM {a} WHERE name = {p}"
        dialect = db.engine.dialect
        bind = {c.name: c.type.dialect_impl(dialect).bind_processor(dialect) for c in ACCOUNTS.columns}
        self._bind = {name: processor or _identity for name, processor in bind.items()}
        self._result = {name: ACCOUNTS.c[name].type.dialect_impl(dialect).result_processor(dialect, None)
                        for name in ("allowance", "created_at", "revoked_at")}
        # Allowances never change once an account is created: each is parsed once per process.
        self._allowances: dict[str, Allowance] = {}
        self._allowances_lock = threading.Lock()

    # --- reading ----------------------------------------------------------------------------------------

    def _decode(self, column: str, value: Any) -> Any:
        processor = self._result[column]
        return processor(value) if processor is not None and isinstance(value, str | bytes) else value

    def _allowance(self, account_id: str, raw: Any) -> Allowance:
        found = self._allowances.get(account_id)
        if found is None:
            found = Allowance.model_validate(self._decode("allowance", raw))
            with self._allowances_lock:
                self._allowances[account_id] = found
        return found

    def _account(self, values: Any) -> Account:
        row = dict(zip(ACCOUNT_COLUMNS, values, strict=True))
        return Account(id=row["id"], name=row["name"], status=row["status"],
                       allowance=self._allowance(row["id"], row["allowance"]), spent_cost=float(row["spent_cost"]),
                       evaluations=int(row["evaluations"]), sessions=int(row["sessions"]),
                       created_at=self._decode("created_at", row["created_at"]),
                       revoked_at=self._decode("revoked_at", row["revoked_at"]), key_hash=row["key_hash"])

    def load(self, cursor: Cursor, account_id: str, *, lock: bool = False) -> Account | None:
        cursor.execute(self._lock if lock else self._load, (account_id,))
        values = cursor.fetchone()
        return None if values is None else self._account(values)

    def all(self, cursor: Cursor) -> list[Account]:
        cursor.execute(self._all)
        return [self._account(values) for values in cursor.fetchall()]

    def infos(self, cursor: Cursor, limit: int | None = None) -> list[AccountInfo]:
        """The accounts as their listings show them (the oldest ``limit``), each with its sessions open now."""
        accounts = self.all(cursor)[:limit]
        open_now = self.open_by_account(cursor)
        return [a.info(open_now.get(a.id, 0)) for a in accounts]

    def open_of(self, cursor: Cursor, account_id: str | None) -> int:
        """Sessions open now of the account (None: anonymous sessions)."""
        if account_id is None:
            cursor.execute(self._open_anonymous)
        else:
            cursor.execute(self._open_of, (account_id,))
        return int(one_row(cursor)[0])

    def open_by_account(self, cursor: Cursor) -> dict[str, int]:
        cursor.execute(self._open_by_account)
        return {account_id: int(n) for account_id, n in cursor.fetchall()}

    def open_ids(self, cursor: Cursor, account_id: str) -> list[str]:
        cursor.execute(self._open_ids, (account_id,))
        return [session_id for (session_id,) in cursor.fetchall()]

    def authenticate(self, cursor: Cursor, key: str) -> Account:
        """The account whose key this is (its secret compared in constant time), or the 401 refusal."""
        account_id, dot, secret = key.partition(".")
        found = self.load(cursor, account_id) if dot and secret else None
        if found is None or not hmac.compare_digest(found.key_hash, secret_hash(secret)):
            raise refusal(Code.UNAUTHORIZED, "this is not an account's API key (the key is ID.SECRET, as "
                                             "'budgetlab accounts create' printed it)")
        return found

    # --- writing ----------------------------------------------------------------------------------------

    def insert(self, cursor: Cursor, record: dict[str, Any]) -> None:
        taken = refusal(Code.NAME_TAKEN, f"an account is already named {record['name']!r}")
        cursor.execute(self._name_taken, (record["name"],))
        if cursor.fetchone() is not None:
            raise taken
        try:
            cursor.execute(self._insert, tuple(self._bind[c](record[c]) for c in ACCOUNT_COLUMNS))
        except Exception as exc:
            if isinstance(exc, sqlite3.IntegrityError) or is_postgres_unique_violation(exc):
                # Another admin request took the name since the look above (PostgreSQL: a concurrent transaction).
                raise taken from None
            raise

    def opened(self, cursor: Cursor, account_id: str) -> None:
        cursor.execute(self._opened, (account_id,))

    def lock_anonymous(self, cursor: Cursor) -> None:
        """Serialise the opening of anonymous sessions (PostgreSQL; SQLite's write lock already does)."""
        if not self.db.sql.sqlite:
            cursor.execute(f"SELECT pg_advisory_xact_lock({ANONYMOUS_LOCK})")

    def draw(self, cursor: Cursor, account_id: str, draw: rules.Draw) -> None:
        """Add ``draw`` to the account, inside the step's transaction; the refusal if that takes it past its
        allowance (the transaction then rolls back, the draw with it)."""
        cursor.execute(self._draw, (draw.cost, draw.evaluations, account_id))
        status, raw, cost, evaluations = one_row(cursor)
        rules.check_draw(self._allowance(account_id, raw), status == "revoked", float(cost), int(evaluations), draw)

    def revoke(self, cursor: Cursor, account_id: str, now: datetime) -> bool:
        """Mark the account revoked; False if it already was."""
        cursor.execute(self._revoke, (self._bind["revoked_at"](now), account_id))
        return bool(cursor.rowcount)
