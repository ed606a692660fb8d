"""Every algorithm gives, for a fixed seed and parameters, the weights it gave when ``tests/data/pinned_weights.json``
was recorded (``tests/data/pin_weights.py``, from main before the ridge/lasso twins shared one implementation per
family, #21 item 6), under both ``defaults``: a refactoring of the algorithms keeps every run.

How exactly depends on where the suite runs (``learner/reproducibility.py``). On the floating-point platform the file
records (the machine, NumPy's version and SIMD level, each BLAS library's version and kernel), the weights must be the
same bit for bit: a refactoring that reorders a single sum is caught there. On any other platform OpenBLAS's kernel
may add a dot product's terms in another order, and the weights must agree within 1e-12 of the largest weight: replayed
under three other kernels the runs differed by at most 1.7e-15 of it (a one-ulp difference in a product, carried
through 300 examples), while a step size changed by one part in 1e10 moves them by 2.6e-11 or more. The test ids and
the run's summary say which comparison ran.
"""

from __future__ import annotations

import json

import pytest

from learner.algorithms import algorithm_modules
from learner.reproducibility import compare_floats, compare_params, float_platform
from tests.data.pin_weights import run
from tests.helpers import DATA

PINNED = json.loads((DATA / "pinned_weights.json").read_text())
HERE = float_platform()
COMPARISON = "bit-for-bit" if PINNED["platform"] == HERE else "within-1e-12"


def test_every_algorithm_is_pinned_under_both_defaults() -> None:
    pinned = {(case["algorithm"], case["defaults"]) for case in PINNED["runs"]}
    ours = algorithm_modules()  # budgetlab's own, not plugins
    assert pinned == {(algorithm, defaults) for algorithm in ours for defaults in ("practical", "theory")}


@pytest.mark.parametrize("case", PINNED["runs"], ids=[f"{COMPARISON}-{c['algorithm']}-{c['defaults']}-{i}"
                                                      for i, c in enumerate(PINNED["runs"])])
def test_the_same_seed_and_parameters_give_the_pinned_weights(case: dict) -> None:
    again = run(case, case["defaults"])
    weights = compare_floats(again["weights"], case["weights"], PINNED["platform"], here=HERE)
    assert weights.holds, f"weights not {weights.describe()}"
    assert (again["status"], again["examples"]) == (case["status"], case["examples"])
    params = compare_params(again["resolved_params"], case["resolved_params"], PINNED["platform"], here=HERE)
    assert params.holds, f"{again['resolved_params']} against {case['resolved_params']}: not {params.describe()}"
