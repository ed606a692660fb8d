"""What makes a step cheap (#36 item 1) changes no rule and no answer: answers built without pydantic's
``model_construct`` are the models it builds, the counters' own methods are ``_replace``, a refused step still
charges and records nothing, and what a session in memory keeps of paid cells still makes them free."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, Field, PrivateAttr

from budgetlab.contract.base import built
from budgetlab.contract.budgets import Budget, Remaining
from budgetlab.contract.calls import (
    NextResponse,
    ObserveBatchResponse,
    ObservedValues,
    ObserveResponse,
    StepResponse,
)
from budgetlab.datasets.base import Dataset
from budgetlab.engine import Counters, Event, Observations, Outcome
from budgetlab.errors import BudgetExhausted, Code, OracleError
from budgetlab.local_session import LocalSession

REMAINING: dict[str, Any] = {"total": 3.0, "per_example": 4, "example": 2, "example_attributes": 1}
ANSWERS: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (Remaining, REMAINING),
    (Remaining, {"per_example": None, "total": None}),
    (StepResponse, {"example": 2, "label": -1.5, "position": 2, "attributes": [3, 1], "values": [0.5, 2.0],
                    "charged": 2.0, "fresh": 2, "spent": 9.0, "remaining": Remaining(**REMAINING)}),
    (StepResponse, {"spent": 1.0, "charged": 0.0, "values": [], "attributes": [], "position": 0, "example": 0,
                    "remaining": Remaining()}),
    (NextResponse, {"example": 1, "label": None, "position": 1, "remaining": Remaining()}),
    (ObservedValues, {"example": 1, "attributes": [0], "values": [1.0]}),
    (ObserveResponse, {"example": 1, "attributes": [0], "values": [1.0], "charged": 1.0, "fresh": 1, "spent": 1.0,
                       "remaining": Remaining()}),
    (ObserveBatchResponse, {"items": [ObservedValues(example=1, attributes=[0], values=[1.0])], "charged": 1.0,
                            "fresh": 1, "spent": 1.0, "remaining": Remaining()}),
]


@pytest.mark.parametrize(("model", "values"), ANSWERS)
def test_an_answer_built_is_the_one_model_construct_builds(model: type[BaseModel], values: dict[str, Any]) -> None:
    fast, reference = built(model, **values), model.model_construct(**values)
    assert type(fast) is model and fast == reference
    assert fast.model_fields_set == reference.model_fields_set
    assert list(fast.__dict__) == list(reference.__dict__)  # the fields' order, whatever the order given
    assert fast.model_dump_json() == reference.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == reference.model_dump(exclude_unset=True)
    assert repr(fast) == repr(reference)


class _WithFactory(BaseModel):
    items: list[int] = Field(default_factory=list)
    name: str = "x"


class _WithPrivate(BaseModel):
    name: str
    _seen: int = PrivateAttr(default=3)


def test_what_only_model_construct_handles_is_left_to_it() -> None:
    first, second = built(_WithFactory), built(_WithFactory)
    assert first.items == [] and first.items is not second.items  # a factory's value is new each time
    assert first.model_fields_set == set()
    assert built(_WithFactory, items=[1]).items == [1]
    private = built(_WithPrivate, name="n")
    assert private._seen == 3 and private.name == "n"


def test_the_counters_own_steps_are_replace() -> None:
    c = Counters("open", 1.5, 3, 1, 4, 2, 0.25)
    assert c.issue() == c._replace(issued=5)
    assert c.pay(0.1, 2, 1) == c._replace(spent_cost=1.5 + 0.1, spent_attributes=5, labels=2)
    assert c.pay(2.0) == c._replace(spent_cost=3.5)
    assert c.pay(0.5, labels=1, issued=1) == c._replace(spent_cost=2.0, labels=2, issued=5)  # next's label


def test_an_outcome_counts_a_row_a_cell_and_a_row_an_event() -> None:
    cells = Observations([4, 4, 5], [0, 1, 0], [1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    assert Outcome(None, Counters(), (Event("label", 4, 1.0), cells)).rows == 4
    assert Outcome(None, Counters()).rows == 0


def _data(n: int = 8, d: int = 6) -> Dataset:
    rows = np.arange(n, dtype=np.float64)
    X = 10.0 * rows[:, None] + np.arange(d, dtype=np.float64)[None, :]
    return Dataset(name="known", description="", task="regression", X=X, y=-rows, train_rows=np.arange(n - 2),
                   test_rows=np.arange(n - 2, n))


def _state(s: LocalSession) -> tuple[Any, ...]:
    return s.counters, s.ledger_rows, dict(s.paid.observed), dict(s.paid.labels)


@pytest.mark.parametrize(("budget", "attributes", "code"), [
    ({"per_example": 2}, [0, 1, 2], Code.BUDGET_EXCEEDED),  # the local budget k
    ({"total": 5.0, "label_cost": 1.0}, [0, 1, 2, 3, 4], Code.BUDGET_EXCEEDED),  # the label and 5 cells: 6 > 5
    ({}, [0, 0], Code.DUPLICATE_ATTRIBUTES),
    ({}, [0, 6], Code.UNKNOWN_ATTRIBUTE),
])
def test_a_refused_step_in_memory_issues_charges_and_records_nothing(budget: dict[str, Any], attributes: list[int],
                                                                     code: Code) -> None:
    s = LocalSession.open(_data(), budget=budget)
    s.step([0])
    before = _state(s)
    with pytest.raises(OracleError) as refused:
        s.step(attributes)
    assert refused.value.error == code.value
    assert _state(s) == before
    if code == Code.BUDGET_EXCEEDED:
        assert isinstance(refused.value, BudgetExhausted)
    answer = s.step([1])  # the next step is answered as if the refused one had never been made
    assert answer.example == 1 and answer.position == 1


def test_cells_a_step_paid_for_are_free_to_observe_again_and_the_same() -> None:
    s = LocalSession.open(_data(), budget=Budget(per_example=4))
    first = s.step([3, 0])
    s.step([5])
    again = s.observe(first.example, [0, 2, 3])  # 0 and 3 paid by the step: 2 alone is charged
    assert (again.fresh, again.charged) == (1, 1.0)
    row = first.values[1] // 10  # x[row, a] = 10 row + a
    assert again.values == [10 * row + 0, 10 * row + 2, 10 * row + 3]
    assert s.paid.observed[first.example] == (3, 0, 2)
    assert s.observe(first.example, [2, 3, 0]).charged == 0.0
    with pytest.raises(BudgetExhausted):  # 4 paid of k = 4 with 1 more: the fifth is refused, nothing charged
        s.observe(first.example, [1, 4])
    assert s.counters.spent_attributes == 4


def test_a_small_test_split_is_kept_read_only_as_its_chunks_are_read() -> None:
    dataset = _data(40, 5)
    chunked = [(X.copy(), y.copy()) for X, y in dataset.iter_split("test", chunk=1)]
    first, again = list(dataset.iter_split("test")), list(dataset.iter_split("test"))
    assert len(first) == len(again) == 1 and again[0][0] is first[0][0]  # kept, not converted again
    X, y = first[0]
    assert not X.flags.writeable and not y.flags.writeable
    assert np.array_equal(X, np.concatenate([c for c, _ in chunked])) and np.array_equal(y, [v for _, c in chunked
                                                                                            for v in c])
    assert [x for x, _ in dataset.iter_split("train")][0] is not [x for x, _ in dataset.iter_split("train")][0]
