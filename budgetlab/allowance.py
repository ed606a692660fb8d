"""The allowance rules: which sessions an account (or an anonymous client) may open, and what its sessions may draw
together. Pure functions, like ``budgetlab.budget``'s; the oracle calls them inside the transaction that holds the
account's row, so every session of an account draws on its allowance atomically with its own budget.

Opening (``admit``): the dataset must be one the allowance names, the split one it allows and not shielded by the
oracle, the local budget k at most the allowance's (a session that asks none gets the allowance's), and fewer
sessions open than it allows. An anonymous client's allowance is the oracle's settings; its ``total`` bounds each
anonymous session's global budget, since anonymous sessions cannot be told apart.

Drawing (``check_draw``): after a step, the account's cost and evaluations, all its sessions together, must stay
within the allowance; the step's ``Draw`` is what it added (``draw_of``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from budgetlab.contract.accounts import AccountRemaining, Allowance
from budgetlab.contract.budgets import Remaining
from budgetlab.contract.sessions import SessionCreate
from budgetlab.engine import Counters, Event, Observations
from budgetlab.errors import BudgetExhausted, Code, refusal

# Costs are summed in floating point, as a session's (``budgetlab.budget``).
_COST_SLACK = 1e-9


@dataclass(frozen=True)
class Draw:
    """What one step adds to its account: cost units and evaluate requests."""

    cost: float = 0.0
    evaluations: int = 0

    def __bool__(self) -> bool:
        return self.cost > 0 or self.evaluations > 0


NOTHING = Draw()


def draw_of(before: Counters, after: Counters, events: Iterable[Event | Observations]) -> Draw:
    """What a step that took a session's counters from ``before`` to ``after``, recording ``events``, draws."""
    evaluations = sum(1 for e in events if isinstance(e, Event) and e.kind == "evaluate")
    cost = after.spent_cost - before.spent_cost
    return Draw(cost, evaluations) if cost > 0 or evaluations else NOTHING


def admit(request: SessionCreate, allowance: Allowance, *, shielded: bool, anonymous: bool = False) -> SessionCreate:
    """The session the request opens under ``allowance`` (its budget completed by the allowance's), or the refusal.

    ``shielded``: whether the oracle shields the test split of the request's dataset. How many sessions are open
    is checked apart (``check_open``), inside the transaction that opens it.
    """
    who = "anonymous sessions" if anonymous else "this account"
    if allowance.datasets is not None and request.dataset not in allowance.datasets:
        raise refusal(Code.NOT_ALLOWED, f"{who} may use only the datasets {', '.join(allowance.datasets) or '(none)'}"
                                        f", not {request.dataset}")
    if request.split == "test" and shielded:
        raise refusal(Code.TEST_SHIELDED, f"the oracle shields the test split of {request.dataset}: only evaluation "
                                          "results leave it (evaluate from a training session)")
    if request.split not in allowance.splits:
        raise refusal(Code.TEST_SHIELDED if request.split == "test" else Code.NOT_ALLOWED,
                      f"{who} may use only the {' and '.join(allowance.splits)} split(s)"
                      + (": only evaluation results leave the test split" if request.split == "test" else ""))
    budget = request.budget
    changes: dict[str, float | int] = {}
    if allowance.per_example is not None:
        if budget.per_example is None:
            changes["per_example"] = allowance.per_example
        elif budget.per_example > allowance.per_example:
            raise refusal(Code.NOT_ALLOWED, f"{who} may observe at most {allowance.per_example} attributes of an "
                                            f"example: ask for per_example <= {allowance.per_example}")
    if anonymous and allowance.total is not None:
        if budget.total is None:
            changes["total"] = allowance.total
        elif budget.total > allowance.total:
            raise refusal(Code.NOT_ALLOWED, f"an anonymous session may spend at most {allowance.total:g}: ask for "
                                            f"total <= {allowance.total:g} (or use an account)")
    if not changes:
        return request
    return request.model_copy(update={"budget": budget.model_copy(update=changes)})


def check_open(allowance: Allowance, open_now: int, *, anonymous: bool = False) -> None:
    """The refusal if ``open_now`` sessions of the account (of anonymous clients) are as many as it may open."""
    if allowance.sessions is not None and open_now >= allowance.sessions:
        who = "anonymous clients already have" if anonymous else "this account already has"
        raise refusal(Code.TOO_MANY_SESSIONS, f"{who} {open_now} sessions open, as many as allowed "
                                              f"({allowance.sessions}): close one first")


def check_costs(request: SessionCreate, costs: np.ndarray, dataset_costs: np.ndarray | None) -> None:
    """Under an allowance a session pays at least the dataset's prices: its own ``costs`` may raise them, not lower
    them (else a total would bound nothing)."""
    if request.budget.costs is None:
        return
    floor = np.ones(len(costs)) if dataset_costs is None else np.asarray(dataset_costs, dtype=np.float64)
    cheaper = np.flatnonzero(costs < floor - _COST_SLACK)
    if len(cheaper):
        a = int(cheaper[0])
        raise refusal(Code.NOT_ALLOWED, f"under an allowance attributes cost at least the dataset's prices: "
                                        f"attribute {a} costs {floor[a]:g}, not {costs[a]:g}")


def remaining(allowance: Allowance, cost: float, evaluations: int) -> AccountRemaining:
    return AccountRemaining(
        total=None if allowance.total is None else max(allowance.total - cost, 0.0),
        evaluations=None if allowance.evaluations is None else max(allowance.evaluations - evaluations, 0))


def check_draw(allowance: Allowance, revoked: bool, cost_after: float, evaluations_after: int, draw: Draw) -> None:
    """Raise the refusal if a draw took the account to ``cost_after`` and ``evaluations_after`` past its allowance
    (or the account is revoked); nothing of the step may then be recorded."""
    if revoked:
        raise refusal(Code.ACCOUNT_REVOKED, "this session's account was revoked: it draws nothing more")
    if draw.cost > 0 and allowance.total is not None and cost_after > allowance.total + _COST_SLACK:
        left = max(allowance.total - (cost_after - draw.cost), 0.0)
        raise BudgetExhausted(f"this request costs {draw.cost:g}; {left:g} of the account's allowance of "
                              f"{allowance.total:g} remains (all its sessions together)",
                              Remaining(total=left), Code.ALLOWANCE_EXCEEDED.value)
    if draw.evaluations and allowance.evaluations is not None and evaluations_after > allowance.evaluations:
        raise BudgetExhausted(f"the account's sessions have made the {allowance.evaluations} evaluations its "
                              "allowance allows", None, Code.ALLOWANCE_EXCEEDED.value)
