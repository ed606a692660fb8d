"""``SessionOracle.step_observed``, the runner's step, is ``step`` with its values as the algorithms take them (a dict,
or a ``PaidRow`` for an algorithm that ``takes_paid_row``); the runner tells its progress often enough, not at every
example, and its loop of steps between two curve points ends a run where a refused step or a cancel ends it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from learner.algorithms import Problem, get_algorithm
from learner.algorithms.base import PaidRow
from learner.oracle import LocalOracle
from learner.runner import PROGRESS_UPDATES, Progress, run_algorithm


def test_step_observed_is_step_as_attribute_to_value() -> None:
    params: dict[str, ParamValue] = {"d": 20, "n_train": 30, "n_test": 5, "s_plus": 2, "s_minus": 1}
    one, other = (LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4), seed=3)
                  for _ in range(2))
    asked: list[list[int]] = [[3, 0, 7], np.array([5, 1, 2, 19]).tolist(), []]
    asked[1] = list(np.array(asked[1]))  # numpy ints, as an algorithm may select them
    for wanted in asked:
        example, label, values = one.step(wanted)
        example_b, label_b, observed = other.step_observed(wanted)
        assert (example, label) == (example_b, label_b)
        assert list(observed) == [int(a) for a in wanted]
        assert all(type(a) is int for a in observed) and all(type(v) is float for v in observed.values())
        assert list(observed.values()) == values.tolist()
    assert (one.spent, one.attributes) == (other.spent, other.attributes) == (7.0, 7)


def test_a_paid_row_is_the_step_observed_mapping_made_only_when_read_by_key() -> None:
    """``step_row`` answers what ``step_observed`` answers, as a ``PaidRow``: the same mapping (only the attributes paid
    for: another is absent, not 0), its values in the order asked, and its dict made at its first read by key."""
    params: dict[str, ParamValue] = {"d": 20, "n_train": 30, "n_test": 5, "s_plus": 2, "s_minus": 1}
    one, other = (LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4), seed=3)
                  for _ in range(2))
    for wanted in ([3, 0, 7], list(np.array([5, 1, 2, 19])), []):
        _, _, observed = one.step_observed(wanted)
        _, _, row = other.step_row(wanted)
        assert isinstance(row, PaidRow) and row._by_key is None and len(row) == len(wanted)
        assert row.attributes == [int(a) for a in wanted] and row.attribute_values == list(observed.values())
        assert row._by_key is None  # nothing read by key yet
        assert dict(row) == observed and list(row) == list(observed) and row == observed
        assert 4 not in row and row.get(4) is None and (not wanted or row[wanted[0]] == observed[int(wanted[0])])
        with pytest.raises(KeyError):
            row[4]
    assert (one.spent, one.attributes) == (other.spent, other.attributes)


def test_a_full_information_learner_reads_its_row_from_a_paid_row() -> None:
    """A learner that ``takes_paid_row`` (the full-information references) is run on ``PaidRow``s and learns what it
    learns from the dicts of the same steps, bit for bit."""
    params: dict[str, ParamValue] = {"d": 20, "n_train": 200, "n_test": 20, "s_plus": 2, "s_minus": 1}
    seen: list[type] = []

    def weights(as_row: bool) -> list[str]:
        oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(), seed=2)
        cls = get_algorithm("ogd-ridge")
        algorithm = cls(Problem(d=20, k=20, n_examples=200), seed=2)
        assert cls.takes_paid_row
        for _ in range(200):
            wanted = algorithm.select()
            _, y, observed = oracle.step_row(wanted) if as_row else oracle.step_observed(wanted)
            seen.append(type(observed))
            assert y is not None
            algorithm.update(observed, y)
        return [w.hex() for w in algorithm.weights]

    assert weights(True) == weights(False)
    assert set(seen) == {PaidRow, dict}

    def no_dict(attributes: object) -> None:
        raise AssertionError("the runner made a dict for a learner that takes paid rows")

    oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(), seed=2)
    oracle.step_observed = no_dict  # type: ignore[assignment,method-assign]
    assert run_algorithm("ogd-ridge", oracle, seed=2).examples == 200


def test_progress_is_told_of_every_curve_point_the_last_example_and_a_thousand_between() -> None:
    params: dict[str, ParamValue] = {"d": 20, "n_train": 3_000, "n_test": 50, "s_plus": 2, "s_minus": 1}
    oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4), seed=1)
    told: list[Progress] = []
    result = run_algorithm("aerr", oracle, max_examples=2_500, eval_every=300, progress=told.append)
    examples = [p.examples for p in told]
    assert examples == sorted(examples) and examples[-1] == 2_500 and told[-1].point is not None
    assert [p.point for p in told if p.point is not None] == result.curve
    assert len(told) <= 2_500 // (2_500 // PROGRESS_UPDATES) + len(result.curve)
    assert all(e % 2 == 0 for e in examples if e % 300 and e != 2_500)  # every other example, at 2,500


def test_a_run_ends_at_the_step_refused_or_the_cancel_with_the_examples_before_it() -> None:
    params: dict[str, ParamValue] = {"d": 20, "n_train": 400, "n_test": 20, "s_plus": 2, "s_minus": 1}
    # A global budget of 50 cells, at most 4 an example: the step that would pass 50 is refused, and issued nothing.
    oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4, total=50.0), seed=1)
    result = run_algorithm("aerr", oracle, max_examples=300, eval_every=5)
    counters = oracle.local.counters
    assert (result.status, result.examples, result.attributes) == ("budget_exhausted", 14, 50)
    assert (counters.issued, counters.spent_attributes) == (14, 50)
    assert [p.examples for p in result.curve] == [5, 10, 14]  # the last point at the examples seen
    cancel = threading.Event()

    def stop_at_7(progress: Progress) -> None:
        if progress.examples == 7:
            cancel.set()

    oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4), seed=1)
    result = run_algorithm("aerr", oracle, max_examples=300, eval_every=5, progress=stop_at_7, cancel=cancel)
    assert (result.status, result.examples, oracle.local.counters.issued) == ("cancelled", 7, 7)
    assert [p.examples for p in result.curve] == [5, 7]


def test_a_schedule_below_one_example_still_steps_one_example_at_a_time() -> None:
    # RunCreate refuses an eval_every below 1; run_algorithm, called directly, checks the modulo after every example.
    params: dict[str, ParamValue] = {"d": 20, "n_train": 100, "n_test": 20, "s_plus": 2, "s_minus": 1}
    oracle = LocalOracle("sparse-gaussian", dataset_params=params, budget=Budget(per_example=4), seed=1)
    result = run_algorithm("aerr", oracle, max_examples=30, eval_every=-7)
    assert (result.status, [p.examples for p in result.curve]) == ("finished", [7, 14, 21, 28, 30])
