"""Where a session's step runs: right on the event loop when it needs no wait, else on the thread pool.

A small SQLite write whose lock is free this instant takes a fraction of a millisecond: running it in place saves
the two thread hops that cost more than the write itself. While a step runs on the loop (``on_the_loop``), anything
that would make it wait (a lock another write holds, a dataset to load) raises ``NotNow`` instead, and the step goes
to the thread pool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from budgetlab.errors import Refused, SessionBusy
from server.store import BUSY, Database, GateHeld, NotNow

A = TypeVar("A")
# Set while a step runs on the event loop (``promptly``): it must then raise NotNow rather than wait.
_PROMPT: ContextVar[bool] = ContextVar("prompt", default=False)
# A session whose steps have been the worker's only ones this long (seconds) has each run at once, not gathered for
# a group (one client stepping back to back: the group's wait, a future and two loop passes, cost it 5 % of the
# oracle's CPU a streamed step).
ALONE = 0.05
# A step waiting for its group (``GroupCommit``): the call, its arguments and the future of its answer.
Pending = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]


def on_the_loop() -> bool:
    """Whether the step running now runs on the event loop, where it must not wait."""
    return _PROMPT.get()


async def promptly(call: Callable[..., A], *args: Any) -> A:
    """``call(*args)`` (a small step of ``SessionService``) right here on the event loop when it needs no wait,
    else on the thread pool.

    When another write of this worker holds the lock, the step waits for it on the loop (which goes on serving
    others meanwhile) and runs in place as soon as it commits; not freed within the lock timeout, it is 503
    ``busy``. Anything else that would wait (another process holds SQLite's lock, PostgreSQL's locks, a dataset to
    load) goes to the thread pool, so the loop never blocks on it.
    """
    deadline: float | None = None
    while True:
        reset = _PROMPT.set(True)
        try:
            return call(*args)
        except GateHeld as held:
            database = held.database
        except NotNow:
            break
        finally:
            _PROMPT.reset(reset)
        now = time.monotonic()
        deadline = deadline or now + database.lock_timeout
        if not await database.released(deadline - now):
            raise SessionBusy(BUSY)
    return await run_in_threadpool(call, *args)




class GroupCommit:
    """Small steps ready on the event loop at the same time, applied in one transaction (``Database.grouped``): the
    first schedules the group's run for the loop's second pass from now (a ``call_soon`` of a ``call_soon``): by then
    the loop has taken every message it read at once, and those its next look at the sockets found too. Each step's
    answer is handed back only once the group's commit returned, so nothing is answered that is not in
    the ledger. A step refused in the group is rolled back alone (its savepoint), and gets its refusal.

    A group that cannot be taken now (another write holds the lock), a step of it that would wait (a dataset to load),
    or a fault of the group's transaction (any error but a refusal) leaves its steps to ``promptly``, one by one, as
    before groups: each then gets the answer it gets alone. Only a SQLite ledger groups (there small writes run on
    the loop); on PostgreSQL every step goes to ``promptly`` (the thread pool)."""

    def __init__(self, database: Database, *, enabled: bool = True) -> None:
        self._database = database
        self._groups = enabled and database.sql.sqlite
        self._pending: list[Pending] = []
        # The session of the last step, and when a step of a session other than the one before it came.
        self._last: str | None = None
        self._mixed_at = 0.0

    async def run(self, session: str, call: Callable[..., A], *args: Any) -> A:
        """``call(*args)``, a small step of ``SessionService`` on ``session``, in the group of the steps ready now;
        at once, as ``promptly`` runs it, if no other session stepped for ``ALONE`` seconds: no group would form."""
        if not self._groups:
            return await promptly(call, *args)
        loop = asyncio.get_running_loop()
        now = loop.time()
        if session != self._last:
            self._last, self._mixed_at = session, now
        if not self._pending and now - self._mixed_at > ALONE:
            return await promptly(call, *args)
        future: asyncio.Future[A] = loop.create_future()
        if not self._pending:
            # One pass more than the messages read at once: with 4 clients stepping, the oracle's CPU per streamed
            # step was 0.87x of one pass's (groups larger); with 1 client, as much as before (0.97x), a few
            # microseconds later.
            loop.call_soon(loop.call_soon, self._flush)
        self._pending.append((call, args, future))
        return await future

    def _flush(self) -> None:
        group, self._pending = self._pending, []
        reset = _PROMPT.set(True)
        try:
            alone = self._one(*group[0]) if len(group) == 1 else self._together(group)
        finally:
            _PROMPT.reset(reset)
        self._alone(alone)

    def _together(self, group: list[Pending]) -> list[Pending]:
        """Apply the group in one transaction; returns the steps left to ``promptly`` (all, if the group failed)."""
        done: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        alone = []
        try:
            with self._database.grouped():
                for call, args, future in group:
                    try:
                        done.append((future, call(*args), None))
                    except NotNow:
                        alone.append((call, args, future))
                    except Refused as exc:
                        done.append((future, None, exc))
        except Exception:  # noqa: BLE001 - not taken now, or a fault of the group: each step alone says what it gets
            return group
        for future, answer, refused in done:  # committed
            if not future.done():  # its client may have gone meanwhile
                if refused is None:
                    future.set_result(answer)
                else:
                    future.set_exception(refused)
        return alone

    @staticmethod
    def _one(call: Callable[..., Any], args: tuple[Any, ...], future: asyncio.Future[Any]) -> list[Pending]:
        """A group of one: no savepoint to pay for."""
        try:
            answer = call(*args)
        except NotNow:
            return [(call, args, future)]
        except Exception as exc:  # noqa: BLE001 - handed to the step's caller, whose error it is
            if not future.done():
                future.set_exception(exc)
            return []
        if not future.done():
            future.set_result(answer)
        return []

    @staticmethod
    def _alone(steps: list[Pending]) -> None:
        for call, args, future in steps:
            asyncio.ensure_future(_settle(future, promptly(call, *args)))


async def _settle(future: asyncio.Future[A], work: Coroutine[Any, Any, A]) -> None:
    _PROMPT.set(False)  # this task's own context: its step goes to the thread pool if it would wait
    try:
        answer = await work
    except Exception as exc:  # noqa: BLE001 - handed to the step's caller, whose error it is
        if not future.done():
            future.set_exception(exc)
        return
    if not future.done():
        future.set_result(answer)
