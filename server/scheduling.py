"""Where a session's step runs: right on the event loop when it needs no wait, else on the thread pool.

A small SQLite write whose lock is free this instant takes a fraction of a millisecond: running it in place saves
the two thread hops that cost more than the write itself. While a step runs on the loop (``on_the_loop``), anything
that would make it wait (a lock another write holds, a dataset to load) raises ``NotNow`` instead, and the step goes
to the thread pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from budgetlab.errors import SessionBusy
from server.store import BUSY, GateHeld, NotNow

A = TypeVar("A")
# Set while a step runs on the event loop (``promptly``): it must then raise NotNow rather than wait.
_PROMPT: ContextVar[bool] = ContextVar("prompt", default=False)


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
