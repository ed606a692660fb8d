"""The session engine on its own (``budgetlab.engine``): no server, no database, no HTTP.

A session is driven step by step on a small dataset whose every value is known (x[row, a] = 10 row + a, y[row] = -row),
its outcomes kept by a store of a few lines (``Store``: the counters, what was paid for, the hash chain), as the
oracle's SQL store and ``LocalSession`` keep them. Checked: the local budget k, the global budget K with prices and
label costs, the test-time budget, every refusal's code and status in the engine's order of checks, that a refused
request changes nothing (the next request is answered as if it had never been made), and that the ledger the
outcomes make audits to the counters the engine kept.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from budgetlab import engine
from budgetlab.audit import audit_rows
from budgetlab.contract.budgets import ExamplePart
from budgetlab.contract.calls import (
    EvaluateRequest,
    LabelRequest,
    ObserveBatchRequest,
    ObserveRequest,
    PredictRequest,
    StepRequest,
)
from budgetlab.contract.sessions import SessionCreate
from budgetlab.datasets.base import Dataset
from budgetlab.engine import Counters, Runtime, Step
from budgetlab.errors import BudgetExhausted, Code, OracleError, StreamExhausted
from budgetlab.ledger import GENESIS, Chain, chain_name, rows_of_links
from budgetlab.local_session import MemoryPaid

N_TRAIN, N_TEST, D = 6, 3, 5


def known_data() -> Dataset:
    """Values that say where they come from: x[row, a] = 10 row + a; labels y[row] = -row."""
    rows = np.arange(N_TRAIN + N_TEST, dtype=np.float64)
    X = 10.0 * rows[:, None] + np.arange(D, dtype=np.float64)[None, :]
    return Dataset(name="known", description="", task="regression", X=X, y=-rows,
                   train_rows=np.arange(N_TRAIN), test_rows=np.arange(N_TRAIN, N_TRAIN + N_TEST))


class Store:
    """Applies the engine's outcomes as the oracle's store does, in memory: counters, paid cells, the chain."""

    def __init__(self, **create: Any) -> None:
        request = SessionCreate(dataset="known", **create)
        self.rt, opened = engine.open_session(request, known_data())
        self.paid = MemoryPaid(self.rt)
        self.chain = Chain(chain_name("s", None), 1, 0, GENESIS).record(opened.events)  # anonymous, as the oracle's
        self.counters: Counters = opened.counters

    def __call__(self, step: Step, request: Any = None) -> Any:
        outcome = step(self.rt, self.counters, self.paid, request)
        self.paid.record(outcome.events)
        self.chain.record(outcome.events)
        self.counters = outcome.counters
        return outcome.answer

    def refused(self, step: Step, request: Any = None) -> OracleError:
        """The refusal of ``step``, checked to have changed nothing the store keeps."""
        before = (self.counters, self.chain.seq, self.chain.head)
        with pytest.raises(OracleError) as refused:
            self(step, request)
        assert (self.counters, self.chain.seq, self.chain.head) == before
        return refused.value

    def row_of(self, example: int) -> int:
        return example if self.rt.order is None else int(self.rt.order[example])


def observe(example: int, *attributes: int) -> ObserveRequest:
    return ObserveRequest(example=example, attributes=list(attributes))


def batch(*items: ObserveRequest) -> ObserveBatchRequest:
    return ObserveBatchRequest(items=list(items))


def x(row: int, *attributes: int) -> list[float]:
    return [10.0 * row + a for a in attributes]


# --- the local budget k -----------------------------------------------------------------------------------------


def test_the_local_budget_counts_distinct_attributes_of_each_example() -> None:
    s = Store(order="pool", budget={"per_example": 3})
    first = s(engine.observe_one, observe(2, 0, 4))
    assert first.values == x(2, 0, 4) and first.charged == 2.0 and first.remaining.example_attributes == 1
    # Attributes already paid are free and do not count again: 0 and 4 again, plus one new one, fit in k = 3.
    again = s(engine.observe_one, observe(2, 4, 1, 0))
    assert again.values == x(2, 4, 1, 0) and again.charged == 1.0 and again.fresh == 1
    assert again.remaining.example_attributes == 0
    over = s.refused(engine.observe_one, observe(2, 3))
    assert isinstance(over, BudgetExhausted) and (over.status, over.error) == (402, "budget_exceeded")
    assert over.remaining is not None and over.remaining.example == 2 and over.remaining.example_attributes == 0
    assert "local budget is 3" in over.detail
    # k is per example: another example has its own 3.
    assert s(engine.observe_one, observe(5, 1, 2, 3)).charged == 3.0
    assert s(engine.observe_one, observe(2, 0, 1, 4)).charged == 0.0  # what was paid stays readable, free
    assert (s.counters.spent_attributes, s.counters.spent_cost) == (6, 6.0)


# --- the global budget K, prices, labels ------------------------------------------------------------------------


def test_the_global_budget_charges_each_attribute_its_price_and_refuses_past_it() -> None:
    s = Store(order="pool", budget={"total": 10.0, "costs": [1.0, 2.0, 3.0, 4.0, 0.5]})
    assert s(engine.observe_one, observe(0, 1, 2)).charged == 5.0  # 2 + 3
    over = s.refused(engine.observe_one, observe(1, 3, 2))  # 4 + 3 = 7 > the 5 left
    assert over.remaining is not None and over.remaining.total == 5.0
    assert "costs 7" in over.detail and "5 of the global budget of 10 remains" in over.detail
    answer = s(engine.observe_one, observe(1, 3, 0))  # 4 + 1 = 5: exactly what is left
    assert answer.charged == 5.0 and answer.remaining.total == 0.0 and answer.spent == 10.0
    assert s(engine.observe_one, observe(0, 2, 1)).charged == 0.0  # paid cells stay free at 0 left
    s.refused(engine.observe_one, observe(0, 4))  # even the cheapest new one is refused


def test_a_budget_equal_to_the_sum_of_float_prices_is_not_missed_by_rounding() -> None:
    # 0.1 + 0.2 is 0.30000000000000004 in floating point: the budget of 0.3 still pays for both.
    s = Store(order="pool", budget={"total": 0.3, "costs": [0.1, 0.2, 1.0, 1.0, 1.0]})
    assert s(engine.observe_one, observe(0, 0, 1)).charged == pytest.approx(0.3)


def test_the_session_s_prices_come_before_the_dataset_s_and_must_have_d_entries() -> None:
    data = replace(known_data(), costs=np.array([5.0, 5.0, 5.0, 5.0, 5.0]))
    rt, _ = engine.open_session(SessionCreate(dataset="known", order="pool"), data)
    assert rt.costs.tolist() == [5.0] * D and not rt.unit_costs
    rt, _ = engine.open_session(SessionCreate(dataset="known", order="pool", budget={"costs": [1.0] * D}), data)
    assert rt.unit_costs
    with pytest.raises(OracleError) as wrong:
        engine.open_session(SessionCreate(dataset="known", budget={"costs": [1.0, 2.0]}), data)
    assert (wrong.value.status, wrong.value.error) == (422, "invalid_session") and "d=5" in wrong.value.detail


def test_next_issues_the_seeded_stream_and_a_batch_label_charges_its_cost() -> None:
    s = Store(budget={"total": 2.0, "label_cost": 0.75, "costs": [0.5] * D})
    issued = [s(engine.next_example) for _ in range(2)]
    assert [n.example for n in issued] == [0, 1]
    assert [n.label for n in issued] == [-float(s.row_of(0)), -float(s.row_of(1))]
    assert sorted(int(r) for r in s.rt.order) == list(range(N_TRAIN))  # every example once, in a seeded order
    assert s.counters.spent_cost == 1.5 and s.counters.labels == 2
    # A label already revealed is answered again for free; a third label (0.75 > 0.5 left) is refused.
    again = s(engine.reveal_label, LabelRequest(example=1))
    assert (again.label, again.charged) == (issued[1].label, 0.0)
    over = s.refused(engine.next_example)
    assert over.error == "budget_exceeded" and "revealing a label costs 0.75" in over.detail
    assert s.counters.issued == 2  # the refused next issued nothing
    assert s(engine.observe_one, observe(1, 0)).values == x(s.row_of(1), 0)  # the 0.5 left pays one attribute


def test_the_same_seed_gives_the_same_stream_and_another_seed_another() -> None:
    orders = [Store(seed=seed).rt.order.tolist() for seed in (3, 3, 4)]
    assert orders[0] == orders[1] != orders[2]


def test_step_is_next_and_observe_in_one_and_charges_both() -> None:
    s = Store(budget={"per_example": 2, "label_cost": 0.5})
    answer = s(engine.step, StepRequest(attributes=[4, 1]))
    row = s.row_of(0)
    assert (answer.example, answer.label, answer.values) == (0, -float(row), x(row, 4, 1))
    assert answer.charged == 2.5 and answer.spent == 2.5 and answer.remaining.example_attributes == 0
    assert s(engine.step, StepRequest(attributes=[])).values == []  # a step may observe nothing


def test_a_stream_part_serves_only_its_examples() -> None:
    whole = Store().rt.order.tolist()
    fit = Store(budget={"part": ExamplePart(start=2, stop=4, complement=True)})
    held = Store(budget={"part": ExamplePart(start=2, stop=4)})
    assert fit.rt.config.n_examples == 4 and held.rt.order.tolist() == whole[2:4]
    assert fit.rt.order.tolist() == whole[:2] + whole[4:]


# --- the test-time budget ---------------------------------------------------------------------------------------


def test_a_test_session_observes_within_k_commits_a_prediction_then_reveals_the_label() -> None:
    s = Store(split="test", protocol="online", budget={"per_example": 2})
    example = s(engine.next_example)
    assert example.label is None  # a test label comes only after the prediction
    row = N_TRAIN + s.row_of(0)  # the test split's rows follow the training rows in X
    assert s(engine.observe_one, observe(0, 0, 3)).values == x(row, 0, 3)
    assert s.refused(engine.observe_one, observe(0, 1)).error == "budget_exceeded"
    answer = s(engine.predict, PredictRequest(example=0, prediction=1.0))
    assert answer.label == -float(row) and answer.loss == pytest.approx((1.0 + row) ** 2)
    assert answer.cumulative_loss == answer.loss and answer.predictions == 1
    assert s.refused(engine.predict, PredictRequest(example=0, prediction=0.0)).error == "already_predicted"
    s(engine.next_example)
    second = s(engine.predict, PredictRequest(example=1, prediction=0.0))
    assert second.cumulative_loss == pytest.approx(answer.loss + float(s.row_of(1) + N_TRAIN) ** 2)


# --- refusals: each code, its status, the order of checks, nothing changed -------------------------------------


REFUSALS: list[tuple[str, dict[str, Any], list[tuple[Step, Any]], Step, Any]] = [
    # (expected code, session, steps before, the refused step, its request)
    ("session_closed", {}, [(engine.close, None)], engine.next_example, None),
    ("pool_order", {"order": "pool"}, [], engine.next_example, None),
    ("stream_exhausted", {}, [(engine.next_example, None)] * N_TRAIN, engine.next_example, None),
    ("online_protocol", {"protocol": "online"}, [(engine.next_example, None)], engine.reveal_label,
     LabelRequest(example=0)),
    ("batch_protocol", {}, [(engine.next_example, None)], engine.predict, PredictRequest(example=0, prediction=0.0)),
    ("test_session", {"split": "test", "protocol": "online"}, [], engine.moments, None),
    ("unknown_example", {"order": "pool"}, [], engine.observe_one, observe(N_TRAIN, 0)),
    ("example_not_issued", {}, [(engine.next_example, None)], engine.observe_one, observe(1, 0)),
    ("duplicate_example", {"order": "pool"}, [], engine.observe_batch, batch(observe(1, 0), observe(1, 2))),
    ("duplicate_attributes", {"order": "pool"}, [], engine.observe_one, observe(1, 2, 2)),
    ("unknown_attribute", {"order": "pool"}, [], engine.observe_one, observe(1, 0, D)),
    ("budget_exceeded", {"order": "pool", "budget": {"per_example": 1}}, [], engine.observe_one, observe(1, 0, 1)),
    ("invalid_prediction", {"protocol": "online"}, [(engine.next_example, None)], engine.predict,
     PredictRequest(example=0, prediction=1e200)),
    ("invalid_weights", {}, [], engine.evaluate, EvaluateRequest(weights=[0.0] * (D - 1))),
    ("invalid_weights", {}, [], engine.evaluate, EvaluateRequest(weights=[1e300] * D)),
    ("already_predicted", {"protocol": "online"},
     [(engine.next_example, None), (engine.predict, PredictRequest(example=0, prediction=0.0))], engine.predict,
     PredictRequest(example=0, prediction=1.0)),
]


@pytest.mark.parametrize(("code", "create", "before", "step", "request_"), REFUSALS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_each_refusal_has_its_code_and_status_and_changes_nothing(code: str, create: dict[str, Any],
                                                                  before: list[tuple[Step, Any]], step: Step,
                                                                  request_: Any) -> None:
    s = Store(**create)
    for done, request in before:
        s(done, request)
    refused = s.refused(step, request_)
    assert (refused.error, refused.status) == (code, Code(code).status), refused.detail
    assert isinstance(refused, StreamExhausted) == (code == "stream_exhausted")


def test_too_many_cells_or_examples_are_refused_before_anything_is_read() -> None:
    s = Store(order="pool")
    s.rt = replace(s.rt, max_cells=3, max_examples=2)
    refused = s.refused(engine.observe_batch, batch(observe(0, 0, 1), observe(1, 2, 3)))
    assert (refused.error, refused.status) == ("too_many_cells", 413) and "at most 3 cells" in refused.detail
    assert s.refused(engine.observe_batch, batch(observe(0, 0), observe(1, 0), observe(2, 0))).error == "too_many_cells"
    assert s(engine.observe_batch, batch(observe(0, 0, 1), observe(1, 2))).charged == 3.0


def test_a_session_that_cannot_be_opened_is_invalid_session() -> None:
    for create in ({"budget": {"part": ExamplePart(start=0, stop=2)}, "order": "pool"},  # a part is a stream
                   {"budget": {"part": ExamplePart(start=0, stop=N_TRAIN + 1)}},  # past the split
                   {"budget": {"part": ExamplePart(start=0, stop=N_TRAIN, complement=True)}}):  # empty
        with pytest.raises(OracleError) as refused:
            engine.open_session(SessionCreate(dataset="known", **create), known_data())
        assert (refused.value.error, refused.value.status) == ("invalid_session", 422)
    with pytest.raises(OracleError) as unknown:
        engine.open_session(SessionCreate(dataset="no-such-dataset"))
    assert unknown.value.error == "invalid_session"


def test_the_order_of_checks_names_the_first_fault() -> None:
    # Closed before anything else; then the request's consistency (duplicates, then the attributes' range), then
    # whether the example may be addressed, and the budgets last.
    closed = Store(order="pool", budget={"per_example": 1})
    closed(engine.close)
    assert closed.refused(engine.observe_one, observe(99, 7, 7)).error == "session_closed"
    s = Store(order="pool", budget={"per_example": 1})
    assert s.refused(engine.observe_one, observe(99, 1, 1, 9)).error == "duplicate_attributes"
    assert s.refused(engine.observe_one, observe(99, 1, 9)).error == "unknown_attribute"
    assert s.refused(engine.observe_one, observe(99, 0, 1)).error == "unknown_example"
    assert s.refused(engine.observe_one, observe(0, 1, 2)).error == "budget_exceeded"
    stream = Store(budget={"per_example": 1})
    assert stream.refused(engine.observe_one, observe(0, 0, 1)).error == "example_not_issued"


def test_a_refused_request_charges_nothing_of_it() -> None:
    """All or nothing: a batch whose last example breaks k pays for none of its examples, and a step that breaks k
    does not even issue its example; the requests after are answered as if the refused ones had not been made."""
    s = Store(order="pool", budget={"per_example": 2, "total": 100.0})
    s.refused(engine.observe_batch, batch(observe(0, 0, 1), observe(1, 2), observe(2, 0, 1, 2)))
    assert s.paid.observed == {} and s.counters == Counters()
    again = s(engine.observe_batch, batch(observe(0, 0, 1), observe(1, 2)))
    assert again.charged == 3.0 and again.fresh == 3  # none of it was paid by the refused request
    stream = Store(budget={"per_example": 1, "label_cost": 1.0})
    stream.refused(engine.step, StepRequest(attributes=[0, 1]))
    assert stream.counters == Counters()  # no example issued, no label charged
    answer = stream(engine.step, StepRequest(attributes=[3]))
    assert (answer.example, answer.charged) == (0, 2.0)


def test_reads_are_free_and_recorded() -> None:
    s = Store(order="pool")
    moments = s(engine.moments)
    X = known_data().X[:N_TRAIN]
    assert moments.second_moments == pytest.approx((X**2).mean(axis=0).tolist())
    evaluated = s(engine.evaluate, EvaluateRequest(weights=[0.0] * D, bias=0.0))
    y = -np.arange(N_TRAIN, N_TRAIN + N_TEST, dtype=np.float64)
    assert evaluated.mse == pytest.approx(float((y**2).mean()))
    assert s.counters.spent_cost == 0.0 and s.chain.seq == 3  # open, prior, evaluate


# --- the chain ---------------------------------------------------------------------------------------------------


def test_the_ledger_of_the_outcomes_audits_to_the_engine_s_counters() -> None:
    """What the engine says to record is enough for the audit to recompute every counter it kept."""
    s = Store(protocol="online", budget={"per_example": 3, "total": 40.0, "costs": [1.0, 2.0, 3.0, 1.5, 0.5]})
    for _ in range(3):
        issued = s(engine.step, StepRequest(attributes=[0, 2]))
        s(engine.observe_one, observe(issued.example, 2, 4))
        s(engine.predict, PredictRequest(example=issued.example, prediction=0.5))
    s(engine.evaluate, EvaluateRequest(weights=[0.1] * D))
    s.refused(engine.observe_one, observe(0, 1))  # past k: no row
    s(engine.close)
    costs = s.rt.costs.tolist()
    cells = {seq: blob for _, _, seq, blob in s.chain.cells}
    rows = list(rows_of_links([link[1:] for link in s.chain.links], cells, costs))
    c = s.counters
    recorded = {"rows": s.chain.seq, "spent_attributes": c.spent_attributes, "labels": c.labels,
                "predictions": c.predictions, "spent_cost": c.spent_cost, "head_hash": s.chain.head}
    report = audit_rows("s", rows, recorded)
    assert report.compliant, report.reasons
    assert (report.spent_recomputed, report.attributes_recomputed, report.predictions_recomputed) == (13.5, 9, 3)
    assert c.status == "closed" and [r["kind"] for r in rows][-1] == "close"
    # The audit is not a formality: a counter the rows do not add up to is named.
    wrong = audit_rows("s", rows, {**recorded, "spent_cost": c.spent_cost - 1.5})
    assert not wrong.compliant and "the rows add up to 13.5" in wrong.reasons[0]


def test_the_runtime_of_a_stored_session_is_rebuilt_from_its_configuration() -> None:
    rt, _ = engine.open_session(SessionCreate(dataset="sparse-gaussian",
                                              dataset_params={"d": 6, "s_plus": 2, "s_minus": 2, "n_train": 20,
                                                                              "n_test": 5}, seed=2))
    again = Runtime.load(rt.config)
    assert again.order.tolist() == rt.order.tolist()
    assert np.array_equal(again.dataset.X, rt.dataset.X)
