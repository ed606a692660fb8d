"""A step of the session engine applied to a stored session: the session's row loaded (and locked) in a
transaction, the engine's decision (``budgetlab.engine``), its outcome's ledger rows, chain head and counters
written and committed before the answer is sent.

A refusal raised by the engine rolls the transaction back: an error never charges or records anything. The rules
themselves live in the engine only; here is how they are stored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from budgetlab.allowance import Draw, draw_of
from budgetlab.contract.calls import carries_receipt
from budgetlab.contract.ledger import Receipt
from budgetlab.contract.sessions import SessionInfo
from budgetlab.datasets import DatasetError
from budgetlab.engine import MAX_CELLS, MAX_EXAMPLES, Counters, Outcome, Runtime, session_info
from budgetlab.errors import Code, OracleError, refusal
from budgetlab.ledger import Chain, chain_name
from server.account_rows import AccountRows
from server.runtimes import RuntimeCache
from server.scheduling import on_the_loop
from server.session_rows import config_of, counter_values, counters_of
from server.store import Cursor, Database, NotNow, SessionRow

A = TypeVar("A")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Loaded:
    """A session row, read in a transaction: its counters, chain head and (cached) runtime."""

    id: str
    key: int
    counters: Counters
    ledger_rows: int
    head_hash: str
    row: SessionRow

    @property
    def account(self) -> str | None:
        """The account the session draws on (None: anonymous)."""
        account: str | None = self.row["account_id"]
        return account

    def chain(self) -> Chain:
        """The session's chain as it stands, to record a step's events on."""
        name = chain_name(self.id, self.row["account_id"], self.row["ledger_format"])
        return Chain(name, self.key, self.ledger_rows, self.head_hash)


class StoredPaid:
    """The engine's view of what a session already paid for, read inside the step's transaction."""

    def __init__(self, db: Database, cursor: Cursor, key: int) -> None:
        self._db, self._cursor, self._key = db, cursor, key

    def cells(self, examples: Sequence[int]) -> dict[tuple[int, int], float]:
        return self._db.cells(self._cursor, self._key, examples)

    def label(self, example: int) -> float | None:
        row = self._db.value_of_kind(self._cursor, self._key, "label", example)
        return None if row is None else row[0]

    def predicted(self, example: int) -> bool:
        return self._db.value_of_kind(self._cursor, self._key, "predict", example) is not None


# A step bound to its request, as the store runs it on the session it loaded.
LockedStep = Callable[[Runtime, Counters, StoredPaid], Outcome[A]]


@dataclass(frozen=True)
class Prepared(Generic[A]):
    """A step worked out on a snapshot, outside the write lock (``server.batch_preparation``): stored as it is if
    the session is still where the snapshot saw it (``before``: counters, ledger rows, chain head; every write that
    changes anything moves them). ``answer`` is the answer's model, or from the batch process its JSON."""

    before: tuple[Counters, int, str]
    counters: Counters
    chain: Chain
    answer: A
    recorded: bool


@dataclass(frozen=True)
class Caps:
    """The engine's bounds on one request, as the oracle's settings set them."""

    max_cells: int = MAX_CELLS
    max_examples: int = MAX_EXAMPLES


class SessionSteps:
    """Load, read and write stored sessions; their runtimes (dataset, costs, order) cached in this process."""

    def __init__(self, db: Database, caps: Caps) -> None:
        self.db = db
        self.caps = caps
        self.accounts = AccountRows(db)
        self._runtimes = RuntimeCache()

    def bounded(self, rt: Runtime) -> Runtime:
        return replace(rt, max_cells=self.caps.max_cells, max_examples=self.caps.max_examples)

    def remember(self, session_id: str, rt: Runtime) -> None:
        self._runtimes.put(session_id, rt)

    def runtime(self, row: SessionRow) -> Runtime:
        session_id = row["id"]
        rt = self._runtimes.get(session_id)
        if rt is not None:
            return rt
        if on_the_loop():  # loading a dataset can take long: not on the event loop
            raise NotNow
        try:
            rt = self.bounded(Runtime.load(config_of(self.db, row)))
        except DatasetError as exc:  # e.g. an admin removed the user dataset this session was opened on
            raise refusal(Code.DATASET_UNAVAILABLE, f"this session's dataset cannot be served: {exc}") from None
        self._runtimes.put(session_id, rt)
        return rt

    def load(self, cursor: Cursor, session_id: str, token: str | None, *, lock: bool, config: bool = True) -> Loaded:
        """The session, if ``token`` is its own (None: no token asked, as for the dashboard's listing); its row
        without what it was opened with unless ``config`` (``Database.load``)."""
        row = self.db.load(cursor, session_id, lock=lock, config=config)
        # A wrong token and an unknown id answer the same, so a token reveals nothing about other sessions.
        if row is None or (token is not None and not hmac.compare_digest(row["token_hash"], token_hash(token))):
            also = "" if token is None else " (or the token is not its own)"
            raise refusal(Code.NOT_FOUND, f"session {session_id} does not exist{also}")
        return Loaded(session_id, row["ledger_key"], counters_of(row), row["ledger_rows"], row["head_hash"], row)

    def info(self, loaded: Loaded, rt: Runtime) -> SessionInfo:
        return session_info(rt.config, loaded.counters, session_id=loaded.id, ledger_rows=loaded.ledger_rows,
                            head_hash=loaded.head_hash, created_at=self.db.decode(loaded.row, "created_at"))

    def read(self, session_id: str, token: str) -> tuple[Loaded, Runtime]:
        with self.db.read() as cursor:
            loaded = self.load(cursor, session_id, token, lock=False)
        return loaded, self.runtime(loaded.row)

    def write(self, session_id: str, token: str | None, step: LockedStep[A], *,
              prepared: Prepared[Any] | None = None) -> tuple[A, Loaded, Runtime]:
        """Run ``step`` on the locked session and store its outcome; returns the answer and the session after it.

        Given what was prepared on a snapshot (big requests), only the inserts remain under the lock, provided the
        session has not moved meanwhile (its counters and chain head are unchanged). Otherwise the step runs
        under the lock, so the answer is always the one the locked state gives. A session of an account then draws
        on the account's allowance, in the same transaction (``server.account_rows``).
        """
        db = self.db
        with db.write(wait=not on_the_loop()) as cursor:
            # A cached runtime holds the session's config: the row is then read without it.
            cached = self._runtimes.get(session_id)
            loaded = self.load(cursor, session_id, token, lock=True, config=cached is None)
            rt = self.runtime(loaded.row) if cached is None else cached
            account = loaded.account
            if prepared is not None and prepared.before == (loaded.counters, loaded.ledger_rows, loaded.head_hash):
                answer, c, chain, recorded = prepared.answer, prepared.counters, prepared.chain, prepared.recorded
                drawn = Draw(c.spent_cost - loaded.counters.spent_cost)  # a prepared step observes: cost only
                if account is not None and drawn:
                    self.accounts.draw(cursor, account, drawn)
            else:
                outcome = step(rt, loaded.counters, StoredPaid(db, cursor, loaded.key))
                chain = loaded.chain().record(outcome.events)
                answer, c, recorded = outcome.answer, outcome.counters, bool(outcome.events)
                if account is not None:
                    draw = draw_of(loaded.counters, c, outcome.events)
                    if draw:
                        self.accounts.draw(cursor, account, draw)
            db.append(cursor, session_id, chain, counter_values(c), now=now(),
                      same_status=c.status == loaded.counters.status)
        if recorded and carries_receipt(answer):
            answer.receipt = Receipt(rows=chain.seq, head=chain.head)
        after = Loaded(session_id, loaded.key, c, chain.seq, chain.head, loaded.row)
        return answer, after, rt

    def snapshot(self, session_id: str, token: str | None, step: LockedStep[A]) -> Prepared[A] | None:
        """``step`` worked out on a snapshot of the session, outside the write lock, hashing included (None if it
        is refused there: the locked state gives the refusal)."""
        db = self.db
        with db.read() as cursor:
            snap = self.load(cursor, session_id, token, lock=False)
            try:
                outcome = step(self.runtime(snap.row), snap.counters, StoredPaid(db, cursor, snap.key))
            except OracleError:
                return None
        chain = snap.chain().record(outcome.events)
        return Prepared((snap.counters, snap.ledger_rows, snap.head_hash), outcome.counters, chain, outcome.answer,
                        bool(outcome.events))
