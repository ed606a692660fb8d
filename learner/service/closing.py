"""Closing the oracle sessions the learner opened, until each is closed: one the oracle could not close now (it was
down, its database restarting, the session busy) is tried again in the background, every ``retry_every`` seconds,
for at most ``give_up_after`` seconds, so that an outage of the oracle leaves no session of the learner open. Each
session closed is reported to ``on_closed`` (the learner marks it closed in its database; one it never closed, its
next start closes)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from budgetlab.errors import OracleError, OracleUnavailable, SessionBusy
from budgetlab.oracle_client import OracleClient
from learner.held import OpenSession

log = logging.getLogger(__name__)

# Closing a session is housekeeping: a slow or dead oracle must not hold a worker for long.
CLOSE_TIMEOUT = 10.0
RETRY_EVERY = 2.0
GIVE_UP_AFTER = 24 * 3600.0


def close_now(session: OpenSession) -> bool:
    """Close one session (a 'close' row in its ledger): True when it is closed (or the oracle says there is nothing
    to close: already closed, unknown), False when it should be tried again."""
    try:
        with OracleClient(session.oracle_url, timeout=CLOSE_TIMEOUT, stream=False, busy_retries=0) as client:
            client.session(session.id, session.token).close()
    except (SessionBusy, OracleUnavailable) as exc:  # nothing was done: worth another try
        log.info("oracle session %s not closed yet: %s", session.id, exc)
        return False
    except OracleError as exc:
        log.info("oracle session %s not closed: %s", session.id, exc)
    return True


class SessionCloser:
    def __init__(self, retry_every: float = RETRY_EVERY, give_up_after: float = GIVE_UP_AFTER,
                 on_closed: Callable[[str], None] | None = None) -> None:
        self.retry_every = retry_every
        self.on_closed = on_closed
        self.give_up_after = give_up_after
        self._pending: dict[str, tuple[OpenSession, float]] = {}  # by session id: the session, when it first failed
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def close(self, sessions: Iterable[OpenSession]) -> None:
        """Close each session now; those that cannot be closed now are tried again in the background."""
        for session in sessions:
            if close_now(session):
                self._done(session)
            else:
                self._later(session)

    def pending(self) -> list[str]:
        """The ids of the sessions still to be closed."""
        with self._lock:
            return list(self._pending)

    def _done(self, session: OpenSession) -> None:
        if self.on_closed is None:
            return
        try:
            self.on_closed(session.id)
        except Exception:  # its record stays unclosed: the learner's next start closes it (the oracle says closed)
            log.exception("oracle session %s closed, but not marked closed", session.id)

    def _later(self, session: OpenSession) -> None:
        with self._lock:
            self._pending.setdefault(session.id, (session, time.monotonic()))
            if self._thread is None:
                self._thread = threading.Thread(target=self._retry, name="close-sessions", daemon=True)
                self._thread.start()

    def _retry(self) -> None:
        while True:
            self._wake.wait(self.retry_every)
            with self._lock:
                due = list(self._pending.values())
            for session, since in due:
                closed = close_now(session)
                if closed:
                    self._done(session)
                if closed or time.monotonic() - since > self.give_up_after:
                    with self._lock:
                        self._pending.pop(session.id, None)
