"""Budget rules: local (distinct attributes per example), global (total cost) and per-attribute costs.

Pure functions over counters, called by the session engine (``budgetlab.engine``) only, which both the oracle
and the in-process ``LocalSession`` run.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from budgetlab.contract.base import built
from budgetlab.contract.budgets import Budget, Remaining

# Costs are summed in floating point; a budget equal to the exact sum must not fail on the last ulp.
_COST_SLACK = 1e-9


class BudgetExceeded(Exception):
    """The request would break a budget; nothing of it may be charged or recorded."""

    def __init__(self, detail: str, remaining: Remaining) -> None:
        super().__init__(detail)
        self.detail = detail
        self.remaining = remaining


def attribute_costs(budget: Budget, dataset_costs: np.ndarray | None, d: int) -> np.ndarray:
    """The cost vector in force: the session's, else the dataset's, else 1 per attribute."""
    if budget.costs is not None:
        if len(budget.costs) != d:
            raise ValueError(f"budget.costs has {len(budget.costs)} entries; the dataset has d={d} attributes")
        return np.asarray(budget.costs, dtype=np.float64)
    if dataset_costs is not None:
        return np.asarray(dataset_costs, dtype=np.float64)
    return np.ones(d)


def remaining(budget: Budget, spent_cost: float, example: int | None = None, used: int | None = None) -> Remaining:
    total, per_example = budget.total, budget.per_example
    total_left = None if total is None else max(total - spent_cost, 0.0)
    example_left = None
    if example is not None and per_example is not None:
        example_left = max(per_example - (used or 0), 0)
    # The budget is validated and the counters are the engine's: nothing left to validate, on every step's answer.
    return built(Remaining, total=total_left, per_example=per_example, example=example,
                 example_attributes=example_left)


def enforce(
    budget: Budget,
    spent_cost: float,
    charge: float,
    used_by_example: Mapping[int, int],
    new_by_example: Mapping[int, int],
) -> None:
    """Raise ``BudgetExceeded`` if adding ``new_by_example`` fresh attributes (costing ``charge``) breaks a budget.

    ``used_by_example`` counts the distinct attributes each example already had observed.
    """
    if budget.per_example is not None:
        for example, new in new_by_example.items():
            used = used_by_example.get(example, 0)
            if used + new > budget.per_example:
                raise BudgetExceeded(
                    f"example {example} would have {used + new} distinct attributes observed; "
                    f"the local budget is {budget.per_example} per example ({used} already observed)",
                    remaining(budget, spent_cost, example, used),
                )
    if budget.total is not None and spent_cost + charge > budget.total + _COST_SLACK:
        raise BudgetExceeded(
            f"this request costs {charge:g}; {max(budget.total - spent_cost, 0.0):g} of the global budget "
            f"of {budget.total:g} remains",
            remaining(budget, spent_cost),
        )


def enforce_label(budget: Budget, spent_cost: float) -> None:
    if budget.total is None or budget.label_cost == 0:
        return
    if spent_cost + budget.label_cost > budget.total + _COST_SLACK:
        raise BudgetExceeded(
            f"revealing a label costs {budget.label_cost:g}; {max(budget.total - spent_cost, 0.0):g} remains",
            remaining(budget, spent_cost),
        )
