"""Exceptions shared by the SDK and the in-process oracle, so a runner handles both alike."""

from __future__ import annotations

from budgetlab.models import Remaining


class OracleError(Exception):
    """A 4xx answer: the request was wrong and nothing was charged."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.detail = detail


class BudgetExhausted(OracleError):
    """HTTP 402: the request would break a budget; nothing of it was charged."""

    def __init__(self, detail: str, remaining: Remaining | None = None) -> None:
        super().__init__(402, "budget_exceeded", detail)
        self.remaining = remaining


class StreamExhausted(OracleError):
    """Every example of the session's split has been issued."""

    def __init__(self, detail: str = "every example of this split has been issued") -> None:
        super().__init__(409, "stream_exhausted", detail)


class OracleUnavailable(Exception):
    """The oracle could not be reached or answered with a server error."""
