"""The runner: drives one algorithm against any oracle and records its learning curve.

Per example it asks the algorithm which attributes to observe, pays for them at the oracle and hands
back only those values. It is the only part of the learner that talks to an oracle. A budget that runs
out, an exhausted stream, a cancel or an unreachable oracle end the run with a status and the curve so
far; they are outcomes, not crashes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.runs import CurvePoint, RunResult, RunStatus
from budgetlab.errors import BudgetExhausted, OracleError, OracleUnavailable, StreamExhausted
from learner.algorithms import Algorithm, DataScale, Problem, get_algorithm
from learner.diagnosis import diagnose
from learner.oracle import Oracle

DEFAULT_EVAL_POINTS = 20


@dataclass
class Progress:
    examples: int
    attributes: int
    cost: float
    max_examples: int
    point: CurvePoint | None = None


def run_horizon(max_examples: int | None, n: int) -> int:
    """How many training examples a run sees: its ``max_examples``, at most the ``n`` of its split (all of them
    without one)."""
    return min(max_examples or n, n)


def default_eval_every(max_examples: int) -> int:
    return max(1, max_examples // DEFAULT_EVAL_POINTS)


def build_algorithm(
    algorithm_id: str, oracle: Oracle, *, params: dict[str, ParamValue], seed: int, max_examples: int,
    defaults: Defaults = "practical",
) -> Algorithm:
    """Instantiate an algorithm for an oracle session, fetching declared prior knowledge if it needs it."""
    cls = get_algorithm(algorithm_id)
    prior = oracle.prior() if cls.needs_second_moments or cls.needs_scale or cls.needs_costs else None
    problem = Problem(
        d=oracle.d,
        k=oracle.budget.per_example,
        n_examples=max_examples,
        total=oracle.budget.total,
        second_moments=np.asarray(prior.second_moments) if prior is not None and cls.needs_second_moments else None,
        scale=DataScale.declared(prior) if prior is not None and cls.needs_scale else DataScale.unit(),
        defaults=defaults,
        costs=np.asarray(prior.costs) if prior is not None and cls.needs_costs and prior.costs else None,
    )
    return cls(problem, seed=seed, **params)


def run_algorithm(
    algorithm_id: str,
    oracle: Oracle,
    *,
    params: dict[str, ParamValue] | None = None,
    seed: int = 0,
    max_examples: int | None = None,
    eval_every: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    cancel: threading.Event | None = None,
    dataset: str = "",
    defaults: Defaults = "practical",
    python_advice: bool = False,
) -> RunResult:
    """Run ``algorithm_id`` on ``oracle`` for at most ``max_examples`` examples (default: the whole split), the
    parameters not in ``params`` taking the ``defaults`` named (practical or the theorems'). ``python_advice``: the
    diagnosis of a run near the zero predictor names what to try as the estimator's arguments, not the CLI's."""
    params = dict(params or {})
    started = time.perf_counter()
    horizon = run_horizon(max_examples, oracle.n_examples)
    every = eval_every or default_eval_every(horizon)
    algorithm = build_algorithm(algorithm_id, oracle, params=params, seed=seed, max_examples=horizon,
                                defaults=defaults)
    result = RunResult(
        algorithm=algorithm_id,
        dataset=dataset,
        dataset_params=dict(oracle.dataset_params),
        params=params,
        defaults=defaults,
        seed=seed,
        status="running",
        session=oracle.session_id,
    )
    online = algorithm.protocol == "online"
    cumulative_loss = 0.0
    examples = 0

    def evaluate() -> CurvePoint:
        scores = oracle.evaluate(algorithm.weights, algorithm.bias)
        point = CurvePoint(
            examples=examples,
            attributes=oracle.attributes,
            cost=oracle.spent,
            test_mse=scores.mse,
            normalized_mse=scores.normalized_mse,
            zero_one=scores.zero_one,
            cumulative_loss=cumulative_loss if online else None,
        )
        result.curve.append(point)
        return point

    status: RunStatus = "finished"
    message = ""
    try:
        while examples < horizon:
            if cancel is not None and cancel.is_set():
                status, message = "cancelled", "cancelled before the horizon"
                break
            # The algorithms choose before they see the example, so one step request issues and observes it.
            wanted = [int(a) for a in algorithm.select()]
            example, y, values = oracle.step(wanted)
            observed = dict(zip(wanted, (float(v) for v in values), strict=True))
            if online:
                y_hat = algorithm.predict_one(observed)
                y = oracle.predict(example, y_hat)
                cumulative_loss += (y_hat - y) ** 2
            assert y is not None
            algorithm.update(observed, y)
            examples += 1
            point = evaluate() if examples % every == 0 or examples == horizon else None
            if progress is not None:
                progress(Progress(examples, oracle.attributes, oracle.spent, horizon, point))
    except BudgetExhausted as exc:
        status, message = "budget_exhausted", exc.detail
    except StreamExhausted as exc:
        status, message = "finished", exc.detail
    except OracleUnavailable as exc:
        status, message = "oracle_unavailable", str(exc)
    except OracleError as exc:
        status, message = "failed", str(exc)

    if status != "oracle_unavailable" and (not result.curve or result.curve[-1].examples != examples):
        try:
            evaluate()
        except OracleUnavailable as exc:
            status, message = "oracle_unavailable", str(exc)
    result.status = status
    result.message = message
    result.weights = [float(w) for w in algorithm.weights]
    result.bias = float(algorithm.bias)
    result.final = result.curve[-1] if result.curve else None
    result.examples = examples
    result.attributes = oracle.attributes
    result.cost = oracle.spent
    result.cumulative_loss = cumulative_loss if online else None
    result.wall_time = time.perf_counter() - started
    # Read at the end: some algorithms resolve a parameter only once they have seen data (a two-phase step size).
    result.resolved_params = {name: value.item() if isinstance(value, np.generic) else value
                              for name, value in algorithm.get_params().items()}
    result.diagnosis = diagnose(result, algorithm.tuning_hint(), python=python_advice)
    return result
