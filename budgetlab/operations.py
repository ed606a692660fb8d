"""The table of a session's operations: each one declared once, here.

An ``Operation`` says everything every side needs of one operation of an oracle session: its name, its HTTP
method and path (under ``/v1/sessions/{id}``), the models of its request and answer, the arguments of the SDK's
method (``build`` turns them into the request), the engine's step that decides it (``budgetlab.engine``), how a
store applies that step (``Kind``), and the refusals it may give (codes of ``budgetlab.errors.Code``).

Everything else is made from this table: the oracle's HTTP routes and their OpenAPI ``responses``
(``server/routers/sessions.py``), the operations of a session's WebSocket (``server/routers/stream.py``), the
oracle's ``SessionService.perform``, and one method per operation on every SDK session, synchronous
(``OracleSession``), asynchronous (``AsyncOracleSession``) and in memory (``LocalSession``), which inherit
``SessionOperations``. Adding an operation is an entry of ``SessionOperations`` and its step in the engine.

Nothing here does I/O or knows a web framework: a session class says how it performs an operation
(``SyncSession._perform`` or ``AsyncSession._perform``), and the entry's descriptor gives it the method.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, Self, TypeVar, overload

from pydantic import BaseModel, ValidationError

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.calls import (
    MAX_ATTRIBUTES_PER_REQUEST,
    MAX_ROUNDS_PER_REQUEST,
    EvaluateRequest,
    EvaluateResponse,
    LabelRequest,
    LabelResponse,
    MomentsResponse,
    NextResponse,
    ObserveBatchRequest,
    ObserveBatchResponse,
    ObserveRequest,
    ObserveResponse,
    PredictRequest,
    PredictResponse,
    StepRequest,
    StepResponse,
    StepsRequest,
    StepsResponse,
)
from budgetlab.contract.ledger import AuditReport, LedgerPage, LedgerQuery
from budgetlab.contract.sessions import Order, Protocol, SessionCreate, SessionInfo, Split
from budgetlab.errors import Code, invalid_request

if TYPE_CHECKING:
    from budgetlab.engine import Step

P = ParamSpec("P")
A = TypeVar("A", bound=BaseModel)
SESSIONS = "/v1/sessions"
Method = Literal["GET", "POST", "DELETE"]


class Kind(Enum):
    """How a store applies an operation."""

    READ = "read"  # the session as stored: nothing recorded, no lock taken (get)
    STEP = "step"  # the engine's step on the locked session, its events recorded before the answer is sent
    # The same, but worked out on a snapshot outside the lock, then recorded under it: for a step whose answer
    # reads no counter and takes long (evaluate reads the whole test split).
    OFF_LOCK = "off_lock"
    LEDGER = "ledger"  # read from the session's recorded ledger: the oracle's only, a session in memory keeps none


class SyncSession:
    """A session whose operations answer at once (``OracleSession`` over HTTP, ``LocalSession`` in memory)."""

    def _perform(self, op: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _offers(self, op: Operation[..., Any]) -> bool:
        """Whether this session has the operation (a session in memory has no ledger to read)."""
        return True


class AsyncSession:
    """A session whose operations are awaited (``AsyncOracleSession``)."""

    async def _perform(self, op: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _offers(self, op: Operation[..., Any]) -> bool:
        return True


@dataclass(eq=False, repr=False)
class Operation(Generic[P, A]):
    """One operation of a session. As an attribute of a session class, it is that session's method (``build``'s
    parameters, the answer ``response``), which the session performs its own way."""

    method: Method
    path: str  # under /v1/sessions/{id}
    response: type[A]
    build: Callable[P, BaseModel | None]  # the SDK method's arguments -> the request (None: the operation has none)
    request: type[BaseModel] | None
    doc: str
    kind: Kind = Kind.STEP
    # The name of the engine's rule (a function of ``budgetlab.engine``), imported when a session first applies it:
    # the SDK's remote sessions and the commands built on them never do, and so never import the engine (numpy).
    rule: str | None = None
    refusals: tuple[Code, ...] = ()  # the step's own; those every operation of its kind may give are added
    # A small per-example step: the oracle answers it in place on its event loop when it needs no wait.
    small: bool = False
    # Offered on the session's stream (one WebSocket, no HTTP round per request). Not so: what reads the recorded
    # ledger (big answers) and close, the session's last request, for which a stream would not be worth opening.
    stream: bool = True
    name: str = field(default="", init=False)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<operation {self.method} {self.url}: {self.name}{self.signature}>"

    @cached_property
    def step(self) -> Step | None:
        """The engine's rule. A step answering None (close) answers the session as it is after it."""
        if self.rule is None:
            return None
        from budgetlab import engine

        rule: Step = getattr(engine, self.rule)
        return rule

    @property
    def url(self) -> str:
        """Its path template, as the oracle routes it."""
        return f"{SESSIONS}/{{session_id}}{self.path}"

    @property
    def all_refusals(self) -> tuple[Code, ...]:
        """Every refusal it may give: those of the token and the path, of loading the session's dataset, of
        writing (a closed session, a busy lock), of a body, then the step's own."""
        codes = [Code.UNAUTHORIZED, Code.NOT_FOUND, Code.INVALID_REQUEST]
        if self.kind is not Kind.LEDGER:
            codes.append(Code.DATASET_UNAVAILABLE)
        if self.kind in (Kind.STEP, Kind.OFF_LOCK):
            codes += [Code.SESSION_CLOSED, Code.BUSY]
        if self.request is not None and self.method != "GET":
            codes.append(Code.TOO_LARGE)
        return tuple(dict.fromkeys([*codes, *self.refusals]))

    def request_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> BaseModel | None:
        """The request the SDK method's arguments make; one that does not validate is the oracle's 422."""
        try:
            return self.build(*args, **kwargs)
        except ValidationError as exc:
            raise invalid_request(exc) from None

    @overload
    def __get__(self, session: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, session: AsyncSession, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, A]]: ...

    @overload
    def __get__(self, session: SyncSession, owner: type[Any]) -> Callable[P, A]: ...

    def __get__(self, session: SyncSession | AsyncSession | None, owner: type[Any]) -> Any:
        if session is None:
            return self
        if not session._offers(self):
            raise AttributeError(f"{type(session).__name__} has no {self.name}: a session in memory keeps no ledger")
        perform = session._perform
        op = self

        def method(*args: Any, **kwargs: Any) -> Any:
            return perform(op, args, kwargs)

        method.__name__ = method.__qualname__ = self.name
        method.__doc__ = self.doc
        # What help() and inspect show: the SDK's arguments (setattr: a function has no such attribute to type).
        setattr(method, "__signature__", self.signature)  # noqa: B010
        session.__dict__[self.name] = method  # bound once per session: later calls skip this descriptor
        return method

    @cached_property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.build).replace(return_annotation=self.response.__name__)


# --- the SDK methods' arguments, as requests ---------------------------------------------------------------


def _nothing() -> None:
    return None


def step_attributes(attributes: Sequence[int]) -> list[int]:
    """The attributes of ``step``'s request, without making the request: an in-process run's steps need no model.
    The only check the request's model adds to ints, its length, is made here, with the model's refusal."""
    wanted = list(map(int, attributes))
    if len(wanted) > MAX_ATTRIBUTES_PER_REQUEST:
        try:
            StepRequest(attributes=wanted)
        except ValidationError as exc:
            raise invalid_request(exc) from None
    return wanted


def _step(attributes: Sequence[int]) -> StepRequest:
    return StepRequest(attributes=step_attributes(attributes))


def step_selections(rounds: Sequence[Sequence[int]]) -> list[list[int]]:
    """The rounds of ``steps``' request, without making the request (``step_attributes``' plural): each round's
    attributes as ints, and the request model's checks of their counts, with its refusal."""
    wanted = [list(map(int, attributes)) for attributes in rounds]
    total = 0
    for attributes in wanted:
        total += len(attributes)
    if not 1 <= len(wanted) <= MAX_ROUNDS_PER_REQUEST or total > MAX_ATTRIBUTES_PER_REQUEST:
        _steps_request(wanted)  # refused by the model, as the oracle refuses it
    return wanted


def _steps_request(rounds: list[list[int]]) -> StepsRequest:
    try:
        return StepsRequest(rounds=[StepRequest(attributes=attributes) for attributes in rounds])
    except ValidationError as exc:
        raise invalid_request(exc) from None


def _steps(rounds: Sequence[Sequence[int]]) -> StepsRequest:
    return _steps_request(step_selections(rounds))


def _observe(example: int, attributes: Sequence[int]) -> ObserveRequest:
    return ObserveRequest(example=int(example), attributes=list(map(int, attributes)))


def _observe_batch(items: Sequence[tuple[int, Sequence[int]]]) -> ObserveBatchRequest:
    return ObserveBatchRequest(items=[_observe(example, attributes) for example, attributes in items])


def _label(example: int) -> LabelRequest:
    return LabelRequest(example=int(example))


def _predict(example: int, prediction: float) -> PredictRequest:
    return PredictRequest(example=int(example), prediction=float(prediction))


def _evaluate(weights: Sequence[float], bias: float = 0.0) -> EvaluateRequest:
    return EvaluateRequest(weights=list(map(float, weights)), bias=float(bias))


def _ledger(after: int = -1, limit: int = 1000) -> LedgerQuery:
    return LedgerQuery(after=after, limit=limit)


# --- the table ----------------------------------------------------------------------------------------------

# Refusals several steps share.
_EXAMPLE = (Code.UNKNOWN_EXAMPLE, Code.EXAMPLE_NOT_ISSUED)
_STREAM = (Code.POOL_ORDER, Code.STREAM_EXHAUSTED)
# What a step that charges its session may also get from the session's account (``budgetlab.allowance``).
_DRAW = (Code.ALLOWANCE_EXCEEDED, Code.ACCOUNT_REVOKED)
_CELLS = (Code.TOO_MANY_CELLS, Code.DUPLICATE_ATTRIBUTES, Code.UNKNOWN_ATTRIBUTE, Code.BUDGET_EXCEEDED, *_DRAW)


class SessionOperations:
    """Every operation of a session, in the order the oracle's document lists them."""

    get = Operation(
        "GET", "", SessionInfo, _nothing, None, kind=Kind.READ,
        doc="The session's configuration, what it spent and what remains of its budgets (never a value).")
    close = Operation(
        "DELETE", "", SessionInfo, _nothing, None, rule="close", stream=False,
        doc="Close the session: its ledger stays readable and auditable; every later charging request is a 409.")
    next = Operation(
        "POST", "/next", NextResponse, _nothing, None, rule="next_example", small=True,
        refusals=(Code.BUDGET_EXCEEDED, *_DRAW, *_STREAM),
        doc="Issue the next example of the stream (with its label in the batch protocol).")
    step = Operation(
        "POST", "/step", StepResponse, _step, StepRequest, rule="step", small=True,
        refusals=(*_STREAM, *_CELLS),
        doc="``next`` and ``observe`` of the issued example in one all-or-nothing request: a round of the batch "
            "protocol in one round trip (in the online protocol, ``predict`` completes the round).")
    steps = Operation(
        "POST", "/steps", StepsResponse, _steps, StepsRequest, rule="steps", refusals=(*_STREAM, *_CELLS),
        doc="Several ``step`` rounds (``rounds``: each next example's attributes) in one all-or-nothing request: "
            "each round answered as its ``step`` would be, and recorded as it would be; a refusal of any round "
            "(its detail names the round) refuses them all. For an algorithm that chooses the attributes of "
            "several upcoming examples before seeing any of them.")
    observe = Operation(
        "POST", "/observe", ObserveResponse, _observe, ObserveRequest, rule="observe_one", small=True,
        refusals=(*_EXAMPLE, *_CELLS),
        doc="Pay for attributes of one example; already-paid ones are free. All or nothing (402 on any budget).")
    observe_batch = Operation(
        "POST", "/observe/batch", ObserveBatchResponse, _observe_batch, ObserveBatchRequest,
        rule="observe_batch", refusals=(*_EXAMPLE, *_CELLS, Code.DUPLICATE_EXAMPLE),
        doc="Pay for attributes of many examples in one all-or-nothing request.")
    label = Operation(
        "POST", "/label", LabelResponse, _label, LabelRequest, rule="reveal_label", small=True,
        refusals=(*_EXAMPLE, Code.BUDGET_EXCEEDED, *_DRAW, Code.ONLINE_PROTOCOL),
        doc="Reveal a training label (batch protocol); a second reveal of the same label is free.")
    predict = Operation(
        "POST", "/predict", PredictResponse, _predict, PredictRequest, rule="predict", small=True,
        refusals=(*_EXAMPLE, Code.BATCH_PROTOCOL, Code.ALREADY_PREDICTED, Code.INVALID_PREDICTION),
        doc="Commit a prediction for an example, then learn its label (online protocol and test sessions).")
    evaluate = Operation(
        "POST", "/evaluate", EvaluateResponse, _evaluate, EvaluateRequest, kind=Kind.OFF_LOCK, rule="evaluate",
        refusals=(Code.INVALID_WEIGHTS, *_DRAW),
        doc="Full-information test error of a linear predictor: free, but recorded in the ledger (and counted "
            "against the evaluations of the session's account).")
    moments = Operation(
        "POST", "/moments", MomentsResponse, _nothing, None, rule="moments", refusals=(Code.TEST_SESSION,),
        doc="Declared prior knowledge: E[x_i^2] over the training split (recorded in the ledger).")
    ledger = Operation(
        "GET", "/ledger", LedgerPage, _ledger, LedgerQuery, kind=Kind.LEDGER, stream=False,
        doc="A page of the ledger (json), or the whole ledger from ``after`` on as an NDJSON or CSV export.\n\n"
            "The NDJSON export starts with ``{\"type\": \"ledger\", \"format\": 2, ...}`` and ends with the session's "
            "recorded counters (``{\"type\": \"head\", ...}``), which ``budgetlab audit FILE`` checks offline.")
    audit = Operation(
        "GET", "/audit", AuditReport, _nothing, None, kind=Kind.LEDGER, stream=False,
        doc="Recompute every budget from the rows, the per-example maxima and the hash chain.")


OPERATIONS: dict[str, Operation[..., Any]] = {
    name: op for name, op in vars(SessionOperations).items() if isinstance(op, Operation)}


# --- opening a session (not an operation of one: it makes one) ----------------------------------------------

OPEN_REFUSALS = (Code.UNAUTHORIZED, Code.ACCOUNT_REQUIRED, Code.ACCOUNT_REVOKED, Code.TOO_LARGE, Code.INVALID_REQUEST,
                 Code.INVALID_SESSION, Code.NOT_ALLOWED, Code.TEST_SHIELDED, Code.TOO_MANY_SESSIONS, Code.BUSY,
                 Code.RATE_LIMITED)


def session_create(dataset: str, *, dataset_params: dict[str, ParamValue] | None = None, split: Split = "train",
                   protocol: Protocol = "batch", order: Order = "stream", budget: Budget | dict[str, Any] | None = None,
                   seed: int = 0) -> SessionCreate:
    """The request that opens a session, from the arguments of ``open_session`` (a 422 if it does not validate)."""
    try:
        limits = budget if isinstance(budget, Budget) else Budget.model_validate(budget or {})
        return SessionCreate(dataset=dataset, dataset_params=dataset_params or {}, split=split, protocol=protocol,
                             order=order, budget=limits, seed=seed)
    except ValidationError as exc:
        raise invalid_request(exc) from None
