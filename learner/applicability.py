"""Which algorithm applies to which problem: the rule ``budgetlab bench`` builds its grid by, and the refusal check
``budgetlab compare`` runs on every entry of a config before anything starts (``client.comparison.preflight``).

A problem is a dataset served in a protocol at a local budget k. An algorithm applies when

- its protocol is the problem's: an online learner (Ito et al.) is scored by its regret in the online protocol, a batch
  learner by the test error of its final predictor;
- a full-information reference (ridge, lasso: ``budget_kind = "full"``) sees every attribute: it applies at k = d
  only, where it is the reference the budgeted learners are measured against;
- a learner that prices attributes (``needs_costs``) meets a dataset whose attributes differ in price: on equal prices
  it draws exactly as its cost-blind twin (``ddaerr-cost`` as ``ddaerr``), and running it adds a copy, not a learner;
- it accepts the problem: built as its runs build it (the dataset's d and size, the budget, the parameters), without
  data, it raises nothing (a budget below its ``min_budget``, a parameter it refuses).
"""

from __future__ import annotations

import numpy as np

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.sessions import Protocol
from learner.algorithms import Algorithm, ParamError, Problem


def refusal(cls: type[Algorithm], problem: Problem, seed: int, params: dict[str, ParamValue]) -> str:
    """Why the algorithm refuses to be built on ``problem`` with these parameters ('' when it accepts them)."""
    try:
        cls(problem, seed=seed, **params)
    except (ParamError, ValueError, TypeError) as exc:
        return str(exc)
    return ""


def priced(costs: list[float] | None) -> bool:
    """Whether the attributes' declared prices differ (None: every attribute costs the same)."""
    return costs is not None and len(set(costs)) > 1


def inapplicable(cls: type[Algorithm], *, protocol: Protocol, d: int, k: int, n_examples: int,
                 costs: list[float] | None = None, defaults: Defaults = "practical",
                 params: dict[str, ParamValue] | None = None) -> str:
    """Why ``cls`` does not apply to a dataset of ``d`` attributes (priced ``costs``) served in ``protocol`` at the
    local budget ``k`` over ``n_examples`` examples; '' when it applies."""
    if cls.protocol != protocol:
        return f"{cls.id} learns in the {cls.protocol} protocol, the problem is {protocol}"
    if cls.budget_kind == "full" and k < d:
        return f"{cls.id} is a full-information reference: it applies at k = d = {d} only"
    if cls.needs_costs and not priced(costs):
        return f"{cls.id} prices attributes: on equal prices it draws as its cost-blind twin"
    problem = Problem(d=d, k=k, n_examples=n_examples,
                      second_moments=np.ones(d) if cls.needs_second_moments else None,
                      costs=np.asarray(costs, dtype=float) if costs is not None and cls.needs_costs else None,
                      defaults=defaults)
    return refusal(cls, problem, 0, params or {})
