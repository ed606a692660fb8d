"""An in-process run's steps in plain values (#36 item 1) are the session's own ``step`` and ``evaluate``: the same
rule (the engine's ``step_round`` and ``evaluate_array``), the same answers, the same refusals, the same record.

``LocalSession.step_round`` and ``LocalSession.evaluate_array`` skip the request and answer models; two sessions
opened alike, one asked through the table's methods and one through these, must agree request by request, refused
ones included, and end in the same state (counters, ledger rows, paid cells and labels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from budgetlab.contract.calls import MAX_ATTRIBUTES_PER_REQUEST
from budgetlab.datasets.base import Dataset
from budgetlab.errors import OracleError
from budgetlab.evaluation import _one_blas_thread, evaluate_weights
from budgetlab.local_session import LocalSession

D = 6
# Attribute lists aimed at every check of a step: fine ones, numpy ints, a duplicate, one out of range, a negative
# one, too many for the local budget or the total, too many for the request's model, nothing at all.
ASKED: list[Any] = [[0, 1], np.array([3, 2]), [5], [], [1, 1], [0, D], [-1], list(range(D)), [4, 0, 2],
                    [0] * (MAX_ATTRIBUTES_PER_REQUEST + 1), [2, 3], [1], [0, 5], [3], [4], [2], [1, 2, 3], [0],
                    [0]]
BUDGETS: dict[str, dict[str, Any]] = {
    "local": {"per_example": 3},
    "total-and-label-cost": {"total": 14.0, "label_cost": 0.5},
    "costs": {"costs": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0], "total": 20.0},
    "none": {},
}


def _data(n: int = 12) -> Dataset:
    rows = np.arange(n, dtype=np.float64)
    X = 10.0 * rows[:, None] + np.arange(D, dtype=np.float64)[None, :]
    return Dataset(name="known", description="", task="regression", X=X, y=-rows, train_rows=np.arange(n - 3),
                   test_rows=np.arange(n - 3, n))


def _state(s: LocalSession) -> tuple[Any, ...]:
    return s.counters, s.ledger_rows, dict(s.paid.observed), dict(s.paid.labels), set(s.paid.predictions)


def _refusal(call: Any) -> tuple[str, Any]:
    """What a request got: its answer, or its refusal (an error that is no refusal, by its type and text)."""
    try:
        return "ok", call()
    except OracleError as exc:
        return "refused", (exc.status, exc.error, exc.detail)
    except (TypeError, ValueError) as exc:
        return "raised", (type(exc), str(exc))


@pytest.mark.parametrize("protocol", ["batch", "online"])
@pytest.mark.parametrize("budget", list(BUDGETS.values()), ids=list(BUDGETS))
def test_a_round_in_plain_values_is_the_step_the_table_answers(budget: dict[str, Any], protocol: str) -> None:
    table, plain = (LocalSession.open(_data(), budget=budget, protocol=protocol) for _ in range(2))  # type: ignore[arg-type]
    answered = 0
    for wanted in ASKED:
        kind, answer = _refusal(lambda w=wanted: table.step(w))
        plain_kind, done = _refusal(lambda w=wanted: plain.step_round(w))
        assert kind == plain_kind
        if kind == "refused":
            assert done == answer
        else:
            answered += 1
            assert (done.example, done.label, done.attributes, done.values, done.charged) == (
                answer.example, answer.label, answer.attributes, answer.values, answer.charged)
            assert (len(done.values), done.counters.spent_cost) == (answer.fresh, answer.spent)
            assert all(type(a) is int for a in done.attributes)
        assert _state(plain) == _state(table)
        if protocol == "online" and kind == "ok":  # the round's second request, the same on both
            assert table.predict(answer.example, 0.5) == plain.predict(done.example, 0.5)
    assert answered >= 5  # some steps answered before the budgets or the stream (9 examples) ran out


@pytest.mark.parametrize(("weights", "bias"), [
    (np.linspace(-1.0, 1.0, D), 0.25),
    (np.zeros(D), 0.0),
    (np.arange(D), 1),  # integers: the request's floats
    (np.array([1.0, np.nan, 0.0, 0.0, 0.0, 0.0]), 0.0),  # not finite: the request's refusal
    (np.ones(D), float("inf")),
    (np.ones((2, 3)), 0.0),  # not a vector
    (np.ones(D - 1), 0.0),  # not d entries: the engine's refusal
    (np.array([]), 0.0),
    (np.full(D, 1e200), 0.0),  # finite, but the test error overflows
])
def test_evaluate_of_an_array_is_evaluate_of_its_list(weights: np.ndarray, bias: float) -> None:
    table, plain = LocalSession.open(_data()), LocalSession.open(_data())
    asked = _refusal(lambda: table.evaluate(np.asarray(weights, dtype=np.float64).tolist(), bias))
    assert _refusal(lambda: plain.evaluate_array(weights, bias)) == asked
    assert _state(plain) == _state(table)


def test_evaluate_weights_scores_what_the_formulas_give() -> None:
    # The test error as numpy's sum and sign comparisons give it (np.add.reduce and count_nonzero, bit for bit), over
    # test labels with zeros and predictions exactly 0 (the positive class)
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((40, D)), rng.standard_normal(40)
    X[:5] = 0.0
    y[5:8] = 0.0
    data = Dataset(name="scored", description="", task="regression", X=np.vstack([X, X]), y=np.r_[y, y],
                   train_rows=np.arange(40), test_rows=np.arange(40, 80))
    w = rng.standard_normal(D)
    pred = X @ w + 0.25
    scores = evaluate_weights(data, w, 0.25)
    assert scores.mse == float(np.sum((pred - y) ** 2)) / 40
    assert scores.zero_mse == float(np.sum(y**2)) / 40
    assert scores.zero_one == float(np.sum(np.where(pred >= 0, 1.0, -1.0) != np.where(y >= 0, 1.0, -1.0))) / 40


def test_evaluations_run_on_one_blas_thread_and_restore_the_threads() -> None:
    def blas_threads() -> list[int]:
        return [library["num_threads"] for library in threadpool_info() if library["user_api"] == "blas"]

    before = blas_threads()
    with _one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before
