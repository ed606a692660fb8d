"""Every error budgetlab raises on purpose, shared by the engine, both services and the SDK.

A refusal is the same object on every side of the wire: the session engine raises it, the services answer it
as JSON ``{"error", "detail", "remaining"?}`` with its status, and the SDK raises it again from that body. So
in-process and over HTTP a runner catches the same classes with the same fields.
"""

from __future__ import annotations

from budgetlab.models import Remaining


class BudgetlabError(Exception):
    """Base of every error of budgetlab: refusals and services that cannot be reached."""


class Refused(BudgetlabError):
    """The request was refused and nothing of it was charged or recorded.

    ``status`` is the HTTP status (4xx, or 503 when the session was busy past the lock timeout),
    ``error`` a stable machine-readable code, ``detail`` the human text.
    """

    def __init__(self, status: int, error: str, detail: str, remaining: Remaining | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.detail = detail
        self.remaining = remaining
        self.retry_after = retry_after


class OracleError(Refused):
    """The oracle refused the request (4xx)."""


class BudgetExhausted(OracleError):
    """HTTP 402: the request would break a budget; nothing of it was charged."""

    def __init__(self, detail: str, remaining: Remaining | None = None) -> None:
        super().__init__(402, "budget_exceeded", detail, remaining)


class StreamExhausted(OracleError):
    """Every example of the session's split has been issued."""

    def __init__(self, detail: str = "every example of this split has been issued") -> None:
        super().__init__(409, "stream_exhausted", detail)


class SessionBusy(OracleError):
    """HTTP 503 with Retry-After: the session's lock was not free in time; nothing was done, so a retry is safe."""

    def __init__(self, detail: str, retry_after: float = 1.0) -> None:
        super().__init__(503, "busy", detail, retry_after=retry_after)


class LearnerError(Refused):
    """The learner service refused the request (4xx)."""


class RunTimeout(BudgetlabError, TimeoutError):
    """A run did not end within the deadline its caller set while waiting for it; the run itself goes on."""

    def __init__(self, run_id: str, timeout: float, status: str) -> None:
        super().__init__(f"run {run_id} did not end within {timeout:g} s (last status: {status})")
        self.run_id = run_id
        self.timeout = timeout
        self.status = status


class Unavailable(BudgetlabError):
    """A service could not be reached, or answered with a server error."""


class OracleUnavailable(Unavailable):
    """The oracle could not be reached, or answered with a server error."""


class LearnerUnavailable(Unavailable):
    """The learner service could not be reached, or answered with a server error."""


def oracle_refusal(status: int, error: str, detail: str, remaining: Remaining | None = None,
                   retry_after: float | None = None) -> OracleError:
    """The oracle's refusal as the class a caller catches, from the fields of its JSON body."""
    if status == 402:
        return BudgetExhausted(detail, remaining)
    if error == "stream_exhausted":
        return StreamExhausted(detail)
    if status == 503:
        return SessionBusy(detail, retry_after if retry_after is not None else 1.0)
    return OracleError(status, error, detail, remaining)
