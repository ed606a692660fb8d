"""``steps``: several rounds of a stream session in one all-or-nothing request (#36) are the same rounds as ``step``
requests, answered and recorded alike; a refusal of any round refuses the whole request, names the round, and
changes nothing.

Twin sessions opened alike, one asked round by round (``step``) and one in requests of several rounds (``steps``,
and ``LocalSession.step_rounds`` in plain values), must agree answer by answer and end in the same state (counters,
ledger rows, paid cells and labels, examples issued)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from budgetlab import engine
from budgetlab.contract.calls import MAX_ATTRIBUTES_PER_REQUEST, MAX_ROUNDS_PER_REQUEST, StepsRequest
from budgetlab.datasets.base import Dataset
from budgetlab.errors import BudgetExhausted, OracleError, StreamExhausted
from budgetlab.local_session import LocalSession
from budgetlab.operations import OPERATIONS

D = 6
N = 14  # 11 training examples
BUDGETS: dict[str, dict[str, Any]] = {
    "local": {"per_example": 3},
    "total-and-label-cost": {"total": 40.0, "label_cost": 0.5},
    "costs": {"costs": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0], "total": 60.0},
}
# Rounds in requests of several: numpy ints, empty rounds, rounds of one attribute and of several.
REQUESTS: list[list[Any]] = [[[0, 1], np.array([3, 2]), []], [[5]], [[1, 2, 4], [], [0], [2, 3]], [[4, 0], [1]]]


def _data(n: int = N) -> Dataset:
    rows = np.arange(n, dtype=np.float64)
    X = 10.0 * rows[:, None] + np.arange(D, dtype=np.float64)[None, :] / 8.0
    return Dataset(name="known", description="", task="regression", X=X, y=1.0 - rows, train_rows=np.arange(n - 3),
                   test_rows=np.arange(n - 3, n))


def _twins(budget: dict[str, Any], protocol: str = "batch", n: int = 3) -> list[LocalSession]:
    return [LocalSession.open(_data(), budget=budget, protocol=protocol) for _ in range(n)]  # type: ignore[arg-type]


def _state(s: LocalSession) -> tuple[Any, ...]:
    return s.counters, s.ledger_rows, dict(s.paid.observed), dict(s.paid.labels), set(s.paid.predictions)


def _refused(call: Any) -> OracleError:
    with pytest.raises(OracleError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("protocol", ["batch", "online"])
@pytest.mark.parametrize("budget", list(BUDGETS.values()), ids=list(BUDGETS))
def test_rounds_in_one_request_are_the_steps_one_by_one(budget: dict[str, Any], protocol: str) -> None:
    one_by_one, together, plain = _twins(budget, protocol)
    for rounds in REQUESTS:
        singles = [one_by_one.step(attributes) for attributes in rounds]
        answer = together.steps(rounds)
        done = plain.step_rounds(rounds)
        assert answer.rounds == singles and answer.receipt is None
        assert [(r.example, r.label, r.attributes, r.values, r.charged, r.counters.spent_cost) for r in done] == [
            (s.example, s.label, s.attributes, s.values, s.charged, s.spent) for s in singles]
        assert all(type(a) is int for r in done for a in r.attributes)
        assert _state(together) == _state(one_by_one) == _state(plain)
    assert one_by_one.counters.issued == sum(map(len, REQUESTS))


def test_the_outcome_records_every_round_s_events_in_order() -> None:
    session = LocalSession.open(_data(), budget={"label_cost": 0.5})
    rt, counters = session.runtime, session.counters
    request = StepsRequest.model_validate({"rounds": [{"attributes": [1, 0]}, {"attributes": []}, {"attributes": [5]}]})
    outcome = engine.steps(rt, counters, engine.NOTHING_PAID, request)
    one: list[Any] = []
    for round_ in request.rounds:
        step = engine.step(rt, counters, engine.NOTHING_PAID, round_)
        one.extend(step.events)
        counters = step.counters
    assert list(outcome.events) == one and outcome.counters == counters
    assert [e.kind if isinstance(e, engine.Event) else "observe" for e in outcome.events] == [
        "label", "observe", "label", "label", "observe"]


def _prepared(budget: dict[str, Any], before: int) -> tuple[LocalSession, LocalSession]:
    """Twin sessions after ``before`` steps of attribute 0."""
    twins = _twins(budget, n=2)
    for session in twins:
        for _ in range(before):
            session.step([0])
    return twins[0], twins[1]


# A request whose round ``bad`` (from 1) is refused as that step alone would be, on a session after ``before`` steps.
REFUSALS = [
    ("local budget k", {"per_example": 2}, 0, [[0], [1, 2], [0, 1, 2], [3]], 3, BudgetExhausted),
    ("global budget crossed mid-request", {"total": 7.0}, 2, [[0, 1], [2, 3], [4, 5]], 3, BudgetExhausted),
    ("stream exhausted", {}, 9, [[0], [1], [2]], 3, StreamExhausted),
    ("unknown attribute", {}, 0, [[0], [1], [D]], 3, OracleError),
    ("duplicate attribute", {}, 1, [[0], [4, 4]], 2, OracleError),
    ("negative attribute", {}, 0, [[-1], [0]], 1, OracleError),
]


@pytest.mark.parametrize(("budget", "before", "rounds", "bad", "kind"), [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_a_refused_round_refuses_the_whole_request_names_it_and_changes_nothing(
        budget: dict[str, Any], before: int, rounds: list[list[int]], bad: int, kind: type[OracleError]) -> None:
    session, twin = _prepared(budget, before)
    for attributes in rounds[: bad - 1]:
        twin.step(attributes)
    alone = _refused(lambda: twin.step(rounds[bad - 1]))
    state = _state(session)
    for call in (lambda: session.steps(rounds), lambda: session.step_rounds(rounds)):
        refused = _refused(call)
        assert type(refused) is type(alone) and isinstance(refused, kind)
        assert (refused.status, refused.error, refused.remaining) == (alone.status, alone.error, alone.remaining)
        assert refused.detail == f"round {bad} of {len(rounds)}: {alone.detail}"
        assert str(refused) == f"{refused.status} {refused.error}: {refused.detail}"
        assert _state(session) == state
    assert session.steps(rounds[: bad - 1] or [[]]).rounds  # the rounds before it still go through


@pytest.mark.parametrize(("rounds", "says"), [
    ([], "at least 1 item"),
    ([[]] * (MAX_ROUNDS_PER_REQUEST + 1), f"at most {MAX_ROUNDS_PER_REQUEST} items"),
    ([[0] * (MAX_ATTRIBUTES_PER_REQUEST // 2 + 1)] * 2, f"at most {MAX_ATTRIBUTES_PER_REQUEST} per request"),
], ids=["empty", "too many rounds", "too many attributes"])
def test_a_request_of_no_round_or_too_many_rounds_or_attributes_is_an_invalid_request(rounds: list[list[int]],
                                                                                      says: str) -> None:
    session = LocalSession.open(_data())
    state = _state(session)
    for call in (lambda: session.steps(rounds), lambda: session.step_rounds(rounds)):
        refused = _refused(call)
        assert (refused.status, refused.error) == (422, "invalid_request") and says in refused.detail
    assert _state(session) == state


def test_the_oracle_s_caps_on_one_request_count_every_round() -> None:
    session = LocalSession.open(_data())
    session.runtime = dataclasses.replace(session.runtime, max_cells=4, max_examples=3)
    too_big: list[list[list[int]]] = [[[0, 1], [2, 3], [4]], [[], [], [], []]]
    for rounds in too_big:
        refused = _refused(lambda r=rounds: session.steps(r))
        assert (refused.status, refused.error) == (413, "too_many_cells")
    assert [r.example for r in session.steps([[0, 1], [2, 3], []]).rounds] == [0, 1, 2]


def test_steps_is_a_step_of_the_table_next_to_step() -> None:
    names = list(OPERATIONS)
    assert names[names.index("step") + 1] == "steps"
    op = OPERATIONS["steps"]
    assert (op.method, op.path, op.rule, op.stream) == ("POST", "/steps", "steps", True)
    assert set(OPERATIONS["step"].refusals) == set(op.refusals)
