"""Every algorithm gives, for a fixed seed and parameters, exactly the weights it gave when
``tests/data/pinned_weights.json`` was recorded (``tests/data/pin_weights.py``, from main before the ridge/lasso twins
shared one implementation per family, #21 item 6), under both ``defaults``: a refactoring of the algorithms keeps
every run bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from learner.algorithms import algorithm_modules
from tests.data.pin_weights import run
from tests.helpers import DATA

PINNED = json.loads((DATA / "pinned_weights.json").read_text())["runs"]


def test_every_algorithm_is_pinned_under_both_defaults() -> None:
    pinned = {(case["algorithm"], case["defaults"]) for case in PINNED}
    ours = algorithm_modules()  # budgetlab's own, not plugins
    assert pinned == {(algorithm, defaults) for algorithm in ours for defaults in ("practical", "theory")}


@pytest.mark.parametrize("case", PINNED, ids=[f"{c['algorithm']}-{c['defaults']}-{i}" for i, c in enumerate(PINNED)])
def test_the_same_seed_and_parameters_give_the_pinned_weights(case: dict) -> None:
    again = run(case, case["defaults"])
    np.testing.assert_array_equal(again["weights"], case["weights"])
    assert (again["status"], again["examples"]) == (case["status"], case["examples"])
    assert again["resolved_params"] == case["resolved_params"]
