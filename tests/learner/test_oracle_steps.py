"""``SessionOracle.step_observed``, the runner's step, is ``step`` with its values as the algorithms take them."""

from __future__ import annotations

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from learner.oracle import LocalOracle


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
