"""The session engine: every rule of an oracle session, in one place, doing no I/O.

Given a session's ``Runtime`` (its fixed configuration and data), its ``Counters``, read access to what it
has already been charged for (``Paid``) and a validated request (None for an operation without a body), each
step returns an ``Outcome``: the answer, the events the ledger must record, and the new counters. Or it raises
the typed refusal (``OracleError`` and its subclasses, with a code of ``budgetlab.errors.Code``), having changed
nothing. Every step has that one signature (``Step``), so that the table of operations
(``budgetlab.operations``) names a step and every transport runs it alike.

Two stores apply outcomes: the oracle writes them in one database transaction (``server/store.py``) and
``LocalSession`` keeps them in memory. Both therefore give the same answers and the same refusals, in the
same order of checks, for the same requests.

The order of checks of every step: the session is open; the protocol allows the step; the example may be
addressed; the request is consistent (duplicates, attribute range); then the budgets; and only then are
values read and events made.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

import numpy as np

from budgetlab import budget as rules
from budgetlab.contract.base import ParamValue, built
from budgetlab.contract.budgets import Budget, ExamplePart, Remaining, Spent
from budgetlab.contract.calls import (
    EvaluateRequest,
    EvaluateResponse,
    LabelRequest,
    LabelResponse,
    MomentsResponse,
    NextResponse,
    ObserveBatchRequest,
    ObserveBatchResponse,
    ObservedValues,
    ObserveRequest,
    ObserveResponse,
    PredictRequest,
    PredictResponse,
    StepRequest,
    StepResponse,
    StepsRequest,
    StepsResponse,
)
from budgetlab.contract.ledger import LedgerKind
from budgetlab.contract.sessions import Order, SessionBasics, SessionCreate, SessionInfo, Split
from budgetlab.contract.sessions import Protocol as SessionProtocol
from budgetlab.datasets import DatasetError, load_dataset
from budgetlab.datasets.base import Dataset, stream_order
from budgetlab.errors import BudgetExhausted, Code, OracleError, StreamExhausted, refusal
from budgetlab.evaluation import evaluate_weights

A = TypeVar("A")
V = TypeVar("V", bound=SessionBasics)
Status = Literal["open", "closed"]
# The most cells, and examples, one request may ask for: no request holds a session's (or SQLite's) write lock
# for long (an example costs a ledger link, about as much as 20 to 80 cells).
MAX_CELLS = 100_000
MAX_EXAMPLES = 5_000
# A named tuple of the engine's, with all its fields, as a step makes several: a named tuple's class call runs its
# ``__new__``, a Python function, which costs twice the tuple's making (0.3 us a tuple in an in-process step).
_new = tuple.__new__


@dataclass(frozen=True)
class SessionConfig:
    """What a session was opened with; never changes."""

    dataset: str
    dataset_params: dict[str, ParamValue]
    split: Split
    protocol: SessionProtocol
    order: Order
    budget: Budget
    seed: int
    n_examples: int
    d: int


class Counters(NamedTuple):
    """What a session has spent and done so far: the numbers the ledger rows must add up to.

    A named tuple, not a dataclass: every step makes a new one. The two a step makes (an example issued, cells
    or a label paid for) have methods of their own, made by ``_new``: a tenth of ``_replace``'s cost."""

    status: Status = "open"
    spent_cost: float = 0.0
    spent_attributes: int = 0
    labels: int = 0
    issued: int = 0
    predictions: int = 0
    cumulative_loss: float = 0.0

    def issue(self) -> Counters:
        """One more example issued."""
        return _new(Counters, (self.status, self.spent_cost, self.spent_attributes, self.labels, self.issued + 1,
                               self.predictions, self.cumulative_loss))

    def pay(self, cost: float, attributes: int = 0, labels: int = 0, issued: int = 0) -> Counters:
        """``cost`` more spent, on ``attributes`` fresh cells and ``labels`` labels (of ``issued`` more examples
        issued: a batch session's ``next`` issues an example and reveals its label)."""
        return _new(Counters, (self.status, self.spent_cost + cost, self.spent_attributes + attributes,
                               self.labels + labels, self.issued + issued, self.predictions, self.cumulative_loss))


@dataclass(frozen=True)
class Runtime:
    """A session's configuration with its data: the dataset, the cost of each attribute, the stream order."""

    config: SessionConfig
    dataset: Dataset = field(repr=False)
    costs: np.ndarray = field(repr=False)
    order: np.ndarray | None = field(repr=False)
    # Every attribute costs 1 (the common case): a charge is then a count, with no array work per request.
    unit_costs: bool
    # The caps on one observe or step (the oracle sets its own, BUDGETLAB_MAX_CELLS and BUDGETLAB_MAX_EXAMPLES).
    max_cells: int = MAX_CELLS
    max_examples: int = MAX_EXAMPLES

    @classmethod
    def load(cls, config: SessionConfig) -> Runtime:
        """The runtime of a stored session (its dataset was validated when the session was opened)."""
        dataset = load_dataset(config.dataset, config.dataset_params, config.seed)
        return cls._build(config, dataset)

    @classmethod
    def _build(cls, config: SessionConfig, dataset: Dataset) -> Runtime:
        costs = rules.attribute_costs(config.budget, dataset.costs, dataset.d)
        order = (part_order(dataset.n(config.split), config.seed, config.budget.part) if config.order == "stream"
                 else None)
        return cls(config, dataset, costs, order, bool(np.all(costs == 1.0)))


class Paid(Protocol):
    """What a session was already charged for, as its store reads it (inside the step's transaction)."""

    def cells(self, examples: Sequence[int]) -> Mapping[tuple[int, int], float]:
        """The (example, attribute) -> value cells already observed, for these examples."""

    def label(self, example: int) -> float | None:
        """The label already revealed for this example, if any."""

    def predicted(self, example: int) -> bool:
        """Whether a prediction for this example was already committed."""


# Event, Observations and Outcome are named tuples, as Counters: a step makes each anew, and a frozen dataclass
# costs three times as much to make.


class Event(NamedTuple):
    """One ledger row to record (everything but an observed cell)."""

    kind: LedgerKind
    example: int | None = None
    value: float | None = None
    cost: float = 0.0
    payload: dict[str, Any] | None = None


class Observations(NamedTuple):
    """The cells one observe step paid for, in request order: one ledger row each."""

    examples: list[int]
    attributes: list[int]
    values: list[float]
    costs: list[float]


class Outcome(NamedTuple, Generic[A]):
    """A step's answer, what the ledger must record for it, and the session's counters after it."""

    answer: A
    counters: Counters
    events: tuple[Event | Observations, ...] = ()

    @property
    def rows(self) -> int:
        """The ledger rows it records (``rows_of``)."""
        return rows_of(self.events)


def rows_of(events: Sequence[Event | Observations]) -> int:
    """The ledger rows these events record: one a cell observed, one an other event."""
    rows = 0
    for e in events:  # a loop, not sum() over a generator: every in-process step asks, for one event or two
        rows += len(e.examples) if isinstance(e, Observations) else 1
    return rows


# One operation's rule: its outcome for the session as it is and the request (None for an operation without a body).
Step = Callable[[Runtime, Counters, Paid, Any], Outcome[Any]]


class _NothingPaid:
    """What a session has paid for of an example it has just issued: nothing."""

    def cells(self, examples: Sequence[int]) -> Mapping[tuple[int, int], float]:
        return {}

    def label(self, example: int) -> float | None:
        return None

    def predicted(self, example: int) -> bool:
        return False


NOTHING_PAID = _NothingPaid()


# --- opening and reading ----------------------------------------------------------------------------------


def part_order(n: int, seed: int, part: ExamplePart | None) -> np.ndarray:
    """The stream order of a split of ``n`` examples, cut to the session's part (folds keep the seeded order)."""
    order = stream_order(n, seed)
    if part is None:
        return order
    if part.stop > n:
        raise ValueError(f"the part {part.start}..{part.stop - 1} is not within the split's {n} examples")
    if part.complement:
        if part.stop - part.start == n:
            raise ValueError("the complement of the whole split is empty")
        return np.concatenate((order[: part.start], order[part.stop :]))
    return order[part.start : part.stop]


def open_session(request: SessionCreate, dataset: Dataset | None = None, *,
                 account: str | None = None) -> tuple[Runtime, Outcome[None]]:
    """A new session's runtime and its ``open`` event (the configuration the audit reads back, and the ``account``
    the session draws on: None for an anonymous one).

    ``dataset`` serves data of the caller's own in-process (the estimator's ``fit``) instead of a registered one.
    """
    try:
        if dataset is None:
            dataset = load_dataset(request.dataset, request.dataset_params, request.seed)
        n_examples = dataset.n(request.split)
        part = request.budget.part
        if part is not None:
            if request.order != "stream":
                raise ValueError("a part of the split is served as a stream: use order 'stream'")
            n_examples = len(part_order(n_examples, request.seed, part))
        config = SessionConfig(
            dataset=request.dataset, dataset_params=dataset.params, split=request.split, protocol=request.protocol,
            order=request.order, budget=request.budget, seed=request.seed, n_examples=n_examples, d=dataset.d,
        )
        rt = Runtime._build(config, dataset)
    except (DatasetError, ValueError) as exc:
        raise refusal(Code.INVALID_SESSION, str(exc)) from None
    payload = {
        "dataset": config.dataset, "dataset_params": config.dataset_params, "split": config.split,
        "protocol": config.protocol, "order": config.order, "seed": config.seed, "n_examples": config.n_examples,
        "d": config.d, "budget": config.budget.model_dump(),
        "costs": None if rt.unit_costs else [float(c) for c in rt.costs], "account": account,
    }
    return rt, Outcome(None, Counters(), (Event("open", payload=payload),))


def remaining(config: SessionConfig, counters: Counters) -> Remaining:
    return rules.remaining(config.budget, counters.spent_cost)


def session_view(model: type[V], config: SessionConfig, counters: Counters, *, session_id: str, ledger_rows: int,
                 created_at: datetime, **more: Any) -> V:
    """A session as ``model`` shows it, from its configuration and counters (and ``more``, the fields the model
    adds to ``SessionBasics``): ``SessionInfo`` for its owner, the dashboard's listing for others."""
    return model(
        id=session_id, dataset=config.dataset, dataset_params=config.dataset_params, split=config.split,
        protocol=config.protocol, order=config.order, budget=config.budget, n_examples=config.n_examples,
        n_attributes=config.d, status=counters.status,
        spent=Spent(cost=counters.spent_cost, attributes=counters.spent_attributes, labels=counters.labels,
                    examples_issued=counters.issued),
        remaining=remaining(config, counters), predictions=counters.predictions, ledger_rows=ledger_rows,
        created_at=created_at, **more,
    )


def session_info(config: SessionConfig, counters: Counters, *, session_id: str, ledger_rows: int, head_hash: str,
                 created_at: datetime) -> SessionInfo:
    """What ``GET /v1/sessions/{id}`` answers, from the session's configuration, counters and ledger head."""
    return session_view(SessionInfo, config, counters, session_id=session_id, ledger_rows=ledger_rows,
                        created_at=created_at, seed=config.seed, cumulative_loss=counters.cumulative_loss,
                        head_hash=head_hash)


def require_open(counters: Counters) -> None:
    if counters.status != "open":
        raise refusal(Code.SESSION_CLOSED, "this session is closed")


def close(rt: Runtime, counters: Counters, paid: Paid = NOTHING_PAID, request: None = None, *,
          reason: str | None = None) -> Outcome[None]:
    """Close the session (its answer: the session as it is after, which only the store can tell)."""
    require_open(counters)
    event = Event("close", payload={"reason": reason} if reason else None)
    return Outcome(None, counters._replace(status="closed"), (event,))


# --- the stream and labels --------------------------------------------------------------------------------


def position(rt: Runtime, counters: Counters, example: int) -> int:
    """The example's row within its split, once it is addressable: any id of a pool, issued ids of a stream."""
    n = rt.config.n_examples
    if rt.order is None:
        if not 0 <= example < n:
            raise refusal(Code.UNKNOWN_EXAMPLE, f"example {example} is not in 0..{n - 1}")
        return example
    if not 0 <= example < counters.issued:
        raise refusal(Code.EXAMPLE_NOT_ISSUED,
                      f"example {example} has not been issued yet ({counters.issued} issued by next)")
    return int(rt.order[example])


def _label_value(rt: Runtime, row: int) -> float:
    return rt.dataset.label(rt.config.split, row)


def _reveal(rt: Runtime, counters: Counters, example: int, row: int, issued: int = 0) -> tuple[float, Counters, Event]:
    """The example's label, revealed at the label's cost; ``issued``: the example is issued with it (``_issue``)."""
    budget = rt.config.budget
    try:
        rules.enforce_label(budget, counters.spent_cost)
    except rules.BudgetExceeded as exc:
        raise BudgetExhausted(exc.detail, exc.remaining) from None
    label = _label_value(rt, row)
    paid = counters.pay(budget.label_cost, labels=1, issued=issued)
    return label, paid, _new(Event, ("label", example, label, budget.label_cost, None))


def _issue(rt: Runtime, counters: Counters) -> tuple[int, int, float | None, Counters, tuple[Event, ...]]:
    """The rule of ``next``: the example it issues, its row in the split, its label (batch protocol), and the
    counters and events after it."""
    require_open(counters)
    config = rt.config
    if rt.order is None:
        raise refusal(Code.POOL_ORDER, "a pool session addresses examples by id; there is no next")
    if counters.issued >= config.n_examples:
        raise StreamExhausted(f"all {config.n_examples} examples have been issued")
    example = counters.issued
    row: int = rt.order.item(example)
    if config.protocol != "batch":
        return example, row, None, counters.issue(), ()
    label, after, event = _reveal(rt, counters, example, row, issued=1)
    return example, row, label, after, (event,)


def next_example(rt: Runtime, counters: Counters, paid: Paid = NOTHING_PAID,
                 request: None = None) -> Outcome[NextResponse]:
    """Issue the next example of the stream; in the batch protocol its label comes with it (at the label cost)."""
    example, _, label, after, events = _issue(rt, counters)
    answer = built(NextResponse, example=example, label=label, position=example,
                                          remaining=rules.remaining(rt.config.budget, after.spent_cost, example, 0))
    return Outcome(answer, after, events)


def reveal_label(rt: Runtime, counters: Counters, paid: Paid, request: LabelRequest) -> Outcome[LabelResponse]:
    """A training label (batch protocol); one already revealed is answered again for free."""
    require_open(counters)
    if rt.config.protocol != "batch":
        raise refusal(Code.ONLINE_PROTOCOL, "labels are revealed by predict in the online protocol")
    example = request.example
    row = position(rt, counters, example)
    seen = paid.label(example)
    if seen is not None:
        return Outcome(LabelResponse(example=example, label=seen, charged=0.0), counters)
    label, after, event = _reveal(rt, counters, example, row)
    return Outcome(LabelResponse(example=example, label=label, charged=rt.config.budget.label_cost), after, (event,))


# --- observation ------------------------------------------------------------------------------------------


def _check_cells(rt: Runtime, items: Sequence[tuple[int, Sequence[int]]]) -> None:
    """The checks of an observe request's (example, attributes) items, in their order: the caps on one request,
    then no example twice, no attribute of an example twice, every attribute within 0..d-1."""
    cells = 0
    for _, attributes in items:  # a loop, not sum() over a generator: a step checks one item
        cells += len(attributes)
    if cells > rt.max_cells or len(items) > rt.max_examples:
        raise refusal(Code.TOO_MANY_CELLS, f"this request asks for {cells} cells of {len(items)} examples; at "
                      f"most {rt.max_cells} cells of {rt.max_examples} examples are served per request: split it")
    if len(items) > 1 and len({example for example, _ in items}) != len(items):
        raise refusal(Code.DUPLICATE_EXAMPLE, "an example appears twice; list all its attributes once")
    for example, attributes in items:
        if len(set(attributes)) != len(attributes):
            raise refusal(Code.DUPLICATE_ATTRIBUTES, f"an attribute of example {example} is listed twice")
    d = rt.config.d
    for _, attributes in items:
        if min(attributes) < 0 or max(attributes) >= d:  # builtins first: a batch has 100,000 cells
            bad = [a for a in attributes if not 0 <= a < d]
            raise refusal(Code.UNKNOWN_ATTRIBUTE, f"attribute {bad[0]} is not in 0..{d - 1}")


def _prices(rt: Runtime, attributes: Sequence[int]) -> tuple[list[float], float]:
    """What each of these fresh attributes costs, and their sum: the charge."""
    if rt.unit_costs:
        return [1.0] * len(attributes), float(len(attributes))
    cost_array = rt.costs[np.asarray(attributes, dtype=np.int64)]
    return cost_array.tolist(), float(cost_array.sum()) if len(attributes) else 0.0


def _enforce(budget: Budget, spent_cost: float, charge: float, used: Mapping[int, int],
             new: Mapping[int, int]) -> None:
    """The budgets' verdict on an observation (``budget.enforce``), as the engine's refusal."""
    try:
        rules.enforce(budget, spent_cost, charge, used, new)
    except rules.BudgetExceeded as exc:
        raise BudgetExhausted(exc.detail, exc.remaining) from None


def observe(rt: Runtime, counters: Counters, paid: Paid,
            items: Sequence[ObserveRequest]) -> Outcome[ObserveBatchResponse]:
    """All-or-nothing observation of several examples; cells already paid for are free and unchanged."""
    require_open(counters)
    config = rt.config
    examples = [item.example for item in items]
    _check_cells(rt, [(item.example, item.attributes) for item in items])
    rows = [position(rt, counters, example) for example in examples]

    known = paid.cells(examples)
    used: Counter[int] = Counter(example for example, _ in known)
    # Fresh cells in request order; an example with nothing paid yet (the usual case) needs no lookups.
    fresh_ex: list[int] = []
    fresh_attr: list[int] = []
    new_counts: list[int] = []
    for item in items:
        new = item.attributes
        if item.example in used:
            new = [a for a in new if (item.example, a) not in known]
        fresh_ex.extend([item.example] * len(new))
        fresh_attr.extend(new)
        new_counts.append(len(new))
    new_by_example = dict(zip(examples, new_counts, strict=True))
    costs, charge = _prices(rt, fresh_attr)
    _enforce(config.budget, counters.spent_cost, charge, used, new_by_example)

    values: list[float] = []
    events: tuple[Observations, ...] = ()
    after = counters
    if fresh_attr:
        positions = np.repeat(np.asarray(rows, dtype=np.int64), new_counts)
        values = rt.dataset.values(config.split, positions, np.asarray(fresh_attr, dtype=np.int64)).tolist()
        events = (Observations(fresh_ex, fresh_attr, values, costs),)
        after = counters.pay(charge, len(fresh_attr))
    last = examples[-1]
    left = rules.remaining(config.budget, after.spent_cost, last, used[last] + new_by_example[last])
    answer = built(
        ObserveBatchResponse, items=_observed(items, new_counts, fresh_attr, values, known), charged=charge,
        fresh=len(fresh_attr), spent=after.spent_cost, remaining=left,
    )
    return Outcome(answer, after, events)


def observe_one(rt: Runtime, counters: Counters, paid: Paid, request: ObserveRequest) -> Outcome[ObserveResponse]:
    """``observe`` of a single example, answered in the single-example shape."""
    outcome = observe(rt, counters, paid, [request])
    batch = outcome.answer
    answer = built(
        ObserveResponse, example=request.example, attributes=request.attributes, values=batch.items[0].values,
        charged=batch.charged, fresh=batch.fresh, spent=batch.spent, remaining=batch.remaining,
    )
    return Outcome(answer, outcome.counters, outcome.events)


def observe_batch(rt: Runtime, counters: Counters, paid: Paid,
                  request: ObserveBatchRequest) -> Outcome[ObserveBatchResponse]:
    """``observe`` of the request's examples, all or nothing."""
    return observe(rt, counters, paid, request.items)


class Round(NamedTuple):
    """A step in plain values (``step_round``), before any answer model is made: the example issued, its label,
    the attributes paid for and their values, the charge, and the session's counters and events after it."""

    example: int
    label: float | None
    attributes: list[int]
    values: list[float]
    charged: float
    counters: Counters
    events: tuple[Event | Observations, ...]


def step_round(rt: Runtime, counters: Counters, attributes: list[int]) -> Round:
    """The rule of ``step``, on a request's attributes (ints, validated as the request's): its outcome in plain
    values. ``step`` answers it as a ``StepResponse``; ``LocalSession.step_round`` hands it to an in-process run as
    it is, since the run's algorithm takes plain values and a model a step costs as much as the step's rules.

    Nothing of a just-issued example can have been paid for, so the step needs no lookup of paid cells: the rules
    of ``next`` and ``observe`` (``_issue``, ``_check_cells``, the budgets) applied to one fresh example, without
    the batch's bookkeeping, since this is the oracle's most frequent request.
    """
    example, row, label, after, issued = _issue(rt, counters)
    charged = 0.0 if label is None else rt.config.budget.label_cost
    if not attributes:
        return _new(Round, (example, label, attributes, [], charged, after, issued))
    _check_cells(rt, ((example, attributes),))
    n = len(attributes)
    costs, charge = _prices(rt, attributes)
    _enforce(rt.config.budget, after.spent_cost, charge, {}, {example: n})
    values = rt.dataset.example_values(rt.config.split, row, attributes)
    events = (*issued, _new(Observations, ([example] * n, list(attributes), values, costs)))
    return _new(Round, (example, label, attributes, values, charged + charge, after.pay(charge, n), events))


def step(rt: Runtime, counters: Counters, paid: Paid, request: StepRequest) -> Outcome[StepResponse]:
    """``next`` and an ``observe`` of the example it issues, all or nothing: one round trip per example
    (``step_round``'s rule, answered as a model).

    This is the whole round of the batch protocol. In the online protocol it is the first of a round's two
    requests, ``predict`` the second: the attributes of the next example may depend on the label ``predict``
    reveals, so two requests per round is the floor there.
    """
    done = step_round(rt, counters, request.attributes)
    return Outcome(_step_answer(rt, done), done.counters, done.events)


def _step_answer(rt: Runtime, done: Round) -> StepResponse:
    """What ``step`` answers for a round."""
    example, spent, fresh = done.example, done.counters.spent_cost, len(done.values)
    # Built from a validated request, stored floats and the counters: nothing left to validate (as observe's).
    return built(
        StepResponse, example=example, label=done.label, position=example, attributes=done.attributes,
        values=done.values, charged=done.charged, fresh=fresh, spent=spent,
        remaining=rules.remaining(rt.config.budget, spent, example, fresh),
    )


def step_rounds(rt: Runtime, counters: Counters, selections: list[list[int]]) -> list[Round]:
    """The rule of ``steps``: ``step_round`` on each selection of attributes in turn (ints, validated as the
    request's), each on the counters the one before left, all or nothing. A refusal of a round is that step's
    refusal, its detail naming the round ("round 3 of 10: ..."); nothing of the earlier rounds is applied, since
    the caller applies the rounds only once they are all made.

    The request's caps are one request's, as an ``observe`` of as many examples: its cells and its rounds (each
    issues an example) together.
    """
    cells = 0
    for attributes in selections:  # a loop, not sum() over a generator, as _check_cells
        cells += len(attributes)
    n = len(selections)
    if cells > rt.max_cells or n > rt.max_examples:
        raise refusal(Code.TOO_MANY_CELLS, f"this request asks for {cells} cells of {n} rounds; at most "
                      f"{rt.max_cells} cells of {rt.max_examples} examples are served per request: split it")
    done: list[Round] = []
    for i, attributes in enumerate(selections):
        try:
            last = step_round(rt, counters, attributes)
        except OracleError as exc:
            # The same refusal (its class, code, status and remaining), told which round it is.
            exc.detail = f"round {i + 1} of {n}: {exc.detail}"
            exc.args = (f"{exc.status} {exc.error}: {exc.detail}",)
            raise
        done.append(last)
        counters = last.counters
    return done


def steps(rt: Runtime, counters: Counters, paid: Paid, request: StepsRequest) -> Outcome[StepsResponse]:
    """Several ``step`` rounds in one all-or-nothing request (``step_rounds``' rule): each round answered as its
    ``step`` would be, and recorded as it would be (every round's events in order: the same ledger rows)."""
    done = step_rounds(rt, counters, [round_.attributes for round_ in request.rounds])
    answer = built(StepsResponse, rounds=[_step_answer(rt, round_) for round_ in done])
    return Outcome(answer, done[-1].counters, events_of(done))


def events_of(rounds: Sequence[Round]) -> tuple[Event | Observations, ...]:
    """What these rounds record together: every round's events, in order."""
    events: list[Event | Observations] = []
    for round_ in rounds:
        events.extend(round_.events)
    return tuple(events)


def _observed(items: Sequence[ObserveRequest], new_counts: list[int], fresh_attr: list[int], values: list[float],
              known: Mapping[tuple[int, int], float]) -> list[ObservedValues]:
    """Each item's values in its own attribute order, from this step's fresh cells and the earlier ones."""
    out: list[ObservedValues] = []
    offset = 0
    for item, n_new in zip(items, new_counts, strict=True):
        fresh = values[offset : offset + n_new]
        if n_new != len(item.attributes):
            now_paid = dict(zip(fresh_attr[offset : offset + n_new], fresh, strict=True))
            fresh = [now_paid[a] if a in now_paid else known[(item.example, a)] for a in item.attributes]
        offset += n_new
        # Built from validated requests and stored floats: nothing left to validate.
        out.append(built(ObservedValues, example=item.example, attributes=item.attributes, values=fresh))
    return out


# --- online protocol, evaluation, prior knowledge ---------------------------------------------------------


def predict(rt: Runtime, counters: Counters, paid: Paid, request: PredictRequest) -> Outcome[PredictResponse]:
    """Commit a prediction, then reveal the label (online protocol and test sessions); one per example."""
    require_open(counters)
    if rt.config.protocol != "online":
        raise refusal(Code.BATCH_PROTOCOL, "predict belongs to the online protocol and test sessions")
    example = request.example
    row = position(rt, counters, example)
    if paid.predicted(example):
        raise refusal(Code.ALREADY_PREDICTED, f"a prediction for example {example} was already committed")
    label = _label_value(rt, row)
    try:
        loss = (request.prediction - label) ** 2
    except OverflowError:
        loss = math.inf
    total = counters.cumulative_loss + loss
    if not math.isfinite(total):
        raise refusal(Code.INVALID_PREDICTION, "the squared loss of this prediction overflows; scale it down")
    after = counters._replace(predictions=counters.predictions + 1, cumulative_loss=total)
    event = Event("predict", example=example, value=request.prediction, payload={"label": label, "loss": loss})
    answer = PredictResponse(example=example, prediction=request.prediction, label=label, loss=loss,
                             cumulative_loss=total, predictions=after.predictions)
    return Outcome(answer, after, (event,))


def evaluate(rt: Runtime, counters: Counters, paid: Paid, request: EvaluateRequest) -> Outcome[EvaluateResponse]:
    """Full-information test error of a linear predictor: free, but recorded (``evaluate_array``'s rule)."""
    return evaluate_array(rt, counters, np.asarray(request.weights, dtype=np.float64), request.bias)


def evaluate_array(rt: Runtime, counters: Counters, weights: np.ndarray, bias: float) -> Outcome[EvaluateResponse]:
    """The rule of ``evaluate`` on a validated request's weights as an array of floats (``LocalSession.evaluate_array``
    hands an in-process run's over as they are, not as a list of d floats made and read again)."""
    require_open(counters)
    d = rt.config.d
    if len(weights) != d:
        raise refusal(Code.INVALID_WEIGHTS, f"weights must have d={d} entries, got {len(weights)}")
    with np.errstate(over="ignore", invalid="ignore"):
        result = evaluate_weights(rt.dataset, weights, bias)
    if not all(np.isfinite([result.mse, result.normalized_mse])):
        raise refusal(Code.INVALID_WEIGHTS, "these weights overflow the test error; scale them down")
    payload = {"weights_sha256": hashlib.sha256(weights.tobytes()).hexdigest(), "bias": float(bias),
               **result.model_dump()}
    return Outcome(result, counters, (Event("evaluate", payload=payload),))


def moments(rt: Runtime, counters: Counters, paid: Paid = NOTHING_PAID,
            request: None = None) -> Outcome[MomentsResponse]:
    """Declared prior knowledge over the training split, E[x_i^2] and the scale bounds: free, but recorded."""
    require_open(counters)
    if rt.config.split != "train":
        raise refusal(Code.TEST_SESSION, "prior knowledge is for training sessions")
    second = rt.dataset.second_moments()
    bounds = rt.dataset.scale_bounds().as_dict()
    payload = {"what": "E[x_i^2] and the data's scale bounds over the training split",
               "sha256": hashlib.sha256(np.ascontiguousarray(second).tobytes()).hexdigest(), **bounds}
    return Outcome(MomentsResponse(second_moments=second.tolist(), costs=rt.costs.tolist(), **bounds), counters,
                   (Event("prior", payload=payload),))
