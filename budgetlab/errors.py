"""Every error budgetlab raises on purpose, shared by the engine, both services and the SDK.

A refusal is the same object on every side of the wire: the session engine raises it, the services answer it
as JSON ``{"error", "detail", "remaining"?}`` with its status, and the SDK raises it again from that body. So
in-process and over HTTP a runner catches the same classes with the same fields.

``Code`` is the one catalog of refusal codes: each code's HTTP status, when it is given, and the class a caller
catches. The engine and the services raise codes of it (``refusal``), the OpenAPI documents list them
(``responses``), and the SDK maps an answer's code back to its class (``oracle_refusal``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from budgetlab.contract.budgets import Remaining
from budgetlab.contract.service import ErrorBody


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
    """HTTP 402: the request would break a budget (``budget_exceeded``: the session's own; ``allowance_exceeded``: its
    account's, shared with the account's other sessions); nothing of it was charged."""

    def __init__(self, detail: str, remaining: Remaining | None = None, error: str = "budget_exceeded") -> None:
        super().__init__(Code.BUDGET_EXCEEDED.status, error, detail, remaining)


class StreamExhausted(OracleError):
    """Every example of the session's split has been issued."""

    def __init__(self, detail: str = "every example of this split has been issued") -> None:
        super().__init__(Code.STREAM_EXHAUSTED.status, Code.STREAM_EXHAUSTED.value, detail)


class SessionBusy(OracleError):
    """HTTP 503 with Retry-After: the session's lock was not free in time (``busy``), or the oracle's database could
    not be reached (``database_unavailable``); nothing was done, so a retry is safe."""

    def __init__(self, detail: str, retry_after: float = 1.0, error: str = "busy") -> None:
        super().__init__(Code.BUSY.status, error, detail, retry_after=retry_after)


class RateLimited(SessionBusy):
    """HTTP 429 with Retry-After: past the oracle's request rate for this address or key; nothing was done, so a retry
    after the wait it names is safe (the SDK's session requests retry it as they retry ``busy``)."""

    def __init__(self, detail: str, retry_after: float = 1.0) -> None:
        OracleError.__init__(self, Code.RATE_LIMITED.status, Code.RATE_LIMITED.value, detail, retry_after=retry_after)


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


class Code(StrEnum):
    """Every refusal code of both services: the code (its value, as the JSON body's ``error`` says it), its HTTP
    status and when it is given."""

    status: int
    when: str

    def __new__(cls, value: str, status: int, when: str) -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.status = status
        member.when = when
        return member

    # Any request.
    BAD_REQUEST = "bad_request", 400, "the HTTP request is malformed (a control character in a header, say)"
    UNAUTHORIZED = ("unauthorized", 401, "no bearer token, or one this service could not have issued (malformed, "
                                         "non-ASCII, unknown)")
    NOT_FOUND = "not_found", 404, "nothing has this id (or the token is not its own), or no route has this path"
    METHOD_NOT_ALLOWED = "method_not_allowed", 405, "the path takes another HTTP method"
    REQUEST_TIMEOUT = ("request_timeout", 408, "the request's headers did not arrive in time "
                                               "(BUDGETLAB_HEADER_TIMEOUT); the connection is closed")
    TOO_LARGE = "too_large", 413, "the body is larger than the service's limit (BUDGETLAB_MAX_BODY_BYTES)"
    RATE_LIMITED = ("rate_limited", 429, "more requests of this kind from this address than the service's rate "
                                         "allows (BUDGETLAB_SESSIONS_PER_SECOND, ...); nothing was done, retry after "
                                         "Retry-After")
    INVALID_REQUEST = "invalid_request", 422, "the path, query, headers or body do not validate (see detail)"
    HTTP_ERROR = "http_error", 400, "any other refusal of the HTTP layer (its status says which)"
    INTERNAL_ERROR = ("internal_error", 500, "a bug: the service failed to answer a stream message (the stream stays "
                                             "open; the service logs one line)")
    # Admin endpoints.
    ADMIN_DISABLED = "admin_disabled", 403, "the oracle has no admin token (BUDGETLAB_ADMIN_TOKEN)"
    FORBIDDEN = "forbidden", 403, "this token is not the admin token"
    NAME_TAKEN = "name_taken", 409, "another account has this name"
    # Accounts and their allowances.
    ACCOUNT_REQUIRED = ("account_required", 401, "this oracle opens no anonymous session (BUDGETLAB_ANONYMOUS=0): "
                                                 "send an account's API key as the bearer token")
    ACCOUNT_REVOKED = ("account_revoked", 403, "the account was revoked: its key opens nothing and its sessions "
                                               "draw nothing more")
    NOT_ALLOWED = ("not_allowed", 403, "the allowance (the account's, or the anonymous one) does not cover this "
                                       "dataset, local budget k, global budget or price")
    TEST_SHIELDED = ("test_shielded", 403, "this test split is shielded (BUDGETLAB_SHIELDED_DATASETS, or the "
                                           "allowance's splits): only evaluation results leave it")
    TOO_MANY_SESSIONS = ("too_many_sessions", 409, "as many sessions are open as the allowance allows (the "
                                                   "account's sessions, or BUDGETLAB_ANONYMOUS_SESSIONS): close one")
    # Datasets and opening a session.
    UNKNOWN_DATASET = "unknown_dataset", 404, "no dataset has this name (built-in datasets cannot be removed)"
    INVALID_DATASET_PARAMS = "invalid_dataset_params", 422, "the dataset does not take these parameters"
    INVALID_DATASET = "invalid_dataset", 422, "the file cannot be read as a dataset, or the name is taken"
    INVALID_SESSION = ("invalid_session", 422, "an unknown dataset or parameter, or a part outside the split")
    # A session's requests (the session engine's refusals, in its order of checks).
    DATASET_UNAVAILABLE = ("dataset_unavailable", 409, "the session's dataset can no longer be served (an admin "
                                                       "removed it)")
    SESSION_CLOSED = "session_closed", 409, "the session is closed"
    BUSY = ("busy", 503, "the session's lock was not free within BUDGETLAB_LOCK_TIMEOUT; nothing was done, retry "
                         "after Retry-After")
    POOL_ORDER = "pool_order", 409, "a pool session has no next: it addresses examples by id"
    STREAM_EXHAUSTED = "stream_exhausted", 409, "every example was issued"
    ONLINE_PROTOCOL = "online_protocol", 409, "predict reveals the labels of an online session"
    BATCH_PROTOCOL = "batch_protocol", 409, "predict belongs to online and test sessions"
    TEST_SESSION = "test_session", 409, "prior knowledge is for training sessions"
    UNKNOWN_EXAMPLE = "unknown_example", 404, "no example of a pool session has this id"
    EXAMPLE_NOT_ISSUED = "example_not_issued", 409, "the stream has not issued this example yet"
    TOO_MANY_CELLS = ("too_many_cells", 413, "more cells or examples than one request may ask for "
                                             "(BUDGETLAB_MAX_CELLS, BUDGETLAB_MAX_EXAMPLES): split it")
    DUPLICATE_EXAMPLE = "duplicate_example", 422, "an example is listed twice"
    DUPLICATE_ATTRIBUTES = "duplicate_attributes", 422, "an attribute of an example is listed twice"
    UNKNOWN_ATTRIBUTE = "unknown_attribute", 404, "an attribute is not in 0..d-1"
    BUDGET_EXCEEDED = ("budget_exceeded", 402, "it would break the local budget k (per_example) or the global budget "
                                               "(total); nothing was charged, and remaining says what is left")
    ALLOWANCE_EXCEEDED = ("allowance_exceeded", 402, "it would take the session's account past its allowance (the "
                                                     "cost of all its sessions together, or their evaluations); "
                                                     "nothing was charged, and remaining says what is left")
    ALREADY_PREDICTED = "already_predicted", 409, "this example already has a prediction"
    INVALID_PREDICTION = "invalid_prediction", 422, "its squared loss overflows"
    INVALID_WEIGHTS = "invalid_weights", 422, "not d weights, or weights whose test error overflows"
    # A session's stream (its messages).
    INVALID_MESSAGE = "invalid_message", 400, "a stream message is not JSON {\"op\": ..., \"body\": ...}"
    UNKNOWN_OP = "unknown_op", 400, "a stream message names no operation of the session"
    # The learner service.
    INVALID_PARAMS = ("invalid_params", 422, "no algorithm has this name (its own, or an installed plugin's), or it "
                                             "has no such parameter, or not such a value")
    ALGORITHM_NOT_ALLOWED = ("algorithm_not_allowed", 403, "the run names code to import (package.module:Class) that "
                                                           "the learner's settings do not allow-list "
                                                           "(BUDGETLAB_LEARNER_ALGORITHMS)")
    ORACLE_REJECTED = "oracle_rejected", 422, "the oracle refused to open the run's session (see detail)"
    ORACLE_ERROR = "oracle_error", 502, "the oracle refused the learner's request about the run (see detail)"
    ORACLE_UNAVAILABLE = ("oracle_unavailable", 502, "the run's oracle is not allowed, cannot be reached or does not "
                                                     "answer as an oracle")
    ORACLE_BUSY = "oracle_busy", 503, "the oracle's session was busy; retry after Retry-After"
    TOO_MANY_RUNS = ("too_many_runs", 429, "the caller has as many runs queued or executing as one caller may "
                                           "(BUDGETLAB_LEARNER_MAX_QUEUED); nothing was started, retry after "
                                           "Retry-After or once one ends")
    # The service's database (either service).
    DATABASE_UNAVAILABLE = ("database_unavailable", 503, "the service's database cannot be reached right now (it is "
                                                         "restarting, say); nothing was done, retry after Retry-After")
    STORAGE_FULL = ("storage_full", 507, "the database's disk is full; nothing was done or charged (an operator must "
                                         "free space)")
    READ_ONLY = ("read_only", 507, "the database refuses writes (a read-only file, disk or server); nothing was done "
                                   "or charged (an operator must make it writable)")


def refusal(code: Code, detail: str, remaining: Remaining | None = None,
            retry_after: float | None = None) -> OracleError:
    """The oracle's refusal with this code, as the class a caller catches (the engine and the oracle raise it)."""
    return oracle_refusal(code.status, code.value, detail, remaining, retry_after)


def learner_refusal(code: Code, detail: str, retry_after: float | None = None) -> LearnerError:
    """The learner service's refusal with this code."""
    return LearnerError(code.status, code.value, detail, retry_after=retry_after)


def oracle_refusal(status: int, error: str, detail: str, remaining: Remaining | None = None,
                   retry_after: float | None = None) -> OracleError:
    """The oracle's refusal as the class a caller catches, from the fields of its JSON body."""
    if status == Code.BUDGET_EXCEEDED.status:
        return BudgetExhausted(detail, remaining, error)
    if error == Code.STREAM_EXHAUSTED:
        return StreamExhausted(detail)
    if status == Code.BUSY.status:  # busy or database_unavailable: nothing was done, a retry is safe
        return SessionBusy(detail, retry_after if retry_after is not None else 1.0, error)
    if error == Code.RATE_LIMITED:  # nothing was done either
        return RateLimited(detail, retry_after if retry_after is not None else 1.0)
    return OracleError(status, error, detail, remaining)


def responses(*codes: Code) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of an endpoint that may refuse with these codes: each status, its error body, and
    the codes it stands for (the one way every endpoint of both services declares its refusals)."""
    by_status: dict[int, list[Code]] = {}
    for code in codes:
        if code not in by_status.setdefault(code.status, []):
            by_status[code.status].append(code)
    return {status: {"model": ErrorBody, "description": "; ".join(f"{c.value}: {c.when}" for c in by_status[status])}
            for status in sorted(by_status)}


def error_body(error: str, detail: Any, remaining: Remaining | None = None) -> dict[str, Any]:
    """The JSON body of every refusal, over HTTP and on the session stream."""
    return ErrorBody(error=error, detail=detail, remaining=remaining).model_dump(exclude_none=True)


def validation_detail(errors: Sequence[Any], drop_body: bool = False) -> list[dict[str, Any]]:
    """pydantic's errors as plain JSON: where (``loc``), what (``msg``) and which rule (``type``)."""
    out = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]
        if drop_body and loc[:1] == ["body"]:
            loc = loc[1:]
        out.append({"loc": loc, "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    return out


def invalid_request(exc: ValidationError) -> OracleError:
    """The oracle's 422 for a request model that does not validate (in-process, as over HTTP)."""
    detail = validation_detail(exc.errors())
    return refusal(Code.INVALID_REQUEST, "; ".join(f"{'.'.join(d['loc']) or 'body'}: {d['msg']}" for d in detail))
