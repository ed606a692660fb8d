"""Accounts: what the admin does with them (create, list, show, revoke, audit) and what a key's holder sees of its
own, on the rows of ``server.account_rows``. Blocking calls, for the thread pool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from budgetlab.audit import audit_account
from budgetlab.contract.accounts import (
    AccountAudit,
    AccountCreate,
    AccountCreated,
    AccountInfo,
    AccountList,
    AccountView,
)
from budgetlab.contract.sessions import SessionBasics
from budgetlab.engine import session_view
from budgetlab.errors import Code, refusal
from budgetlab.ledger import ChainLink
from server.account_rows import Account, new_key
from server.ledger_export import recorded_counters
from server.session_rows import SESSION_FACTS, config_of, counters_of
from server.sessions import SessionService
from server.steps import now
from server.store import Cursor
from server.tables import SESSIONS

REVOKED = "the account was revoked"


class AccountService:
    def __init__(self, sessions: SessionService) -> None:
        self.sessions = sessions
        self.db = sessions.db
        self.rows = sessions.accounts
        p = self.db.sql.p
        self._sessions_of = (f"SELECT {', '.join(SESSION_FACTS)} FROM {SESSIONS.name} WHERE account_id = {p} "
                             f"ORDER BY ledger_key DESC LIMIT {p}")
        self._ids_of = f"SELECT id FROM {SESSIONS.name} WHERE account_id = {p} ORDER BY ledger_key"

    def create(self, request: AccountCreate) -> AccountCreated:
        account_id, key, digest = new_key()
        at = now()
        record: dict[str, Any] = {
            "id": account_id, "name": request.name, "key_hash": digest,
            "allowance": request.allowance.model_dump(mode="json"), "status": "active", "spent_cost": 0.0,
            "evaluations": 0, "sessions": 0, "created_at": at, "revoked_at": None}
        with self.db.write() as cursor:
            self.rows.insert(cursor, record)
            account = self._load(cursor, account_id)
        return AccountCreated(key=key, account=account.info(0))

    def listing(self) -> AccountList:
        with self.db.read() as cursor:
            return AccountList(accounts=self.rows.infos(cursor))

    def view(self, account_id: str, limit: int) -> AccountView:
        with self.db.read() as cursor:
            return self._view(cursor, self._load(cursor, account_id), limit)

    def own(self, key: str, limit: int) -> AccountView:
        """The account of this key, with its sessions (a revoked account still sees what it did)."""
        with self.db.read() as cursor:
            return self._view(cursor, self.rows.authenticate(cursor, key), limit)

    def revoke(self, account_id: str) -> AccountInfo:
        """Revoke the account (its key opens nothing more) and close its open sessions."""
        with self.db.write() as cursor:
            self._load(cursor, account_id)
            self.rows.revoke(cursor, account_id, now())
            open_ids = self.rows.open_ids(cursor, account_id)
        # Each close takes its session's lock, as any step; a session of a revoked account draws nothing meanwhile.
        self.sessions.close_all(open_ids, REVOKED)
        with self.db.read() as cursor:
            return self._load(cursor, account_id).info(self.rows.open_of(cursor, account_id))

    def audit(self, account_id: str) -> AccountAudit:
        # One snapshot: the account's recorded draws and every session's rows, so no write interleaves.
        with self.db.read() as cursor:
            return self._audit(cursor, self._load(cursor, account_id))

    def own_audit(self, key: str) -> AccountAudit:
        with self.db.read() as cursor:
            return self._audit(cursor, self.rows.authenticate(cursor, key))

    def _audit(self, cursor: Cursor, account: Account) -> AccountAudit:
        return audit_account(account.id, account.allowance, self._ledgers(cursor, account.id),
                             spent_recorded=account.spent_cost, evaluations_recorded=account.evaluations)

    def _ledgers(self, cursor: Cursor, account_id: str,
                 ) -> Iterator[tuple[str, Iterator[ChainLink], dict[str, Any], int]]:
        """Each session of the account: its id, links, recorded counters and ledger format (one at a time: read
        its links before the next session's)."""
        cursor.execute(self._ids_of, (account_id,))
        steps, db = self.sessions.steps, self.db
        for (session_id,) in cursor.fetchall():
            loaded = steps.load(cursor, session_id, None, lock=False)
            links = db.links(cursor, loaded.key, db.declared_costs(cursor, loaded.key))
            yield session_id, links, recorded_counters(loaded), loaded.row["ledger_format"]

    def _load(self, cursor: Cursor, account_id: str) -> Account:
        account = self.rows.load(cursor, account_id)
        if account is None:
            raise refusal(Code.NOT_FOUND, f"account {account_id} does not exist")
        return account

    def _view(self, cursor: Cursor, account: Account, limit: int) -> AccountView:
        cursor.execute(self._sessions_of, (account.id, limit))
        sessions = [self._basics(values) for values in cursor.fetchall()]
        return AccountView(account=account.info(self.rows.open_of(cursor, account.id)), sessions=sessions)

    def _basics(self, values: Any) -> SessionBasics:
        row = dict(zip(SESSION_FACTS, values, strict=True))
        return session_view(SessionBasics, config_of(self.db, row), counters_of(row), session_id=row["id"],
                            ledger_rows=row["ledger_rows"], created_at=self.db.decode(row, "created_at"))
