"""The runner: drives one algorithm against any oracle and records its learning curve.

Per example it asks the algorithm which attributes to observe, pays for them at the oracle and hands
back only those values; an algorithm that knows the attributes of several examples ahead (``select_ahead``) is
asked for up to ``ROUNDS_PER_REQUEST`` of them, paid for in one request. It is the only part of the learner that
talks to an oracle. A budget that runs out, an exhausted stream, a cancel or an unreachable oracle end the run with
a status and the curve so far; they are outcomes, not crashes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.calls import MAX_ATTRIBUTES_PER_REQUEST
from budgetlab.contract.runs import CurvePoint, RunResult, RunStatus
from budgetlab.errors import BudgetExhausted, Code, OracleError, OracleUnavailable, StreamExhausted
from learner.algorithms import Algorithm, DataScale, Observed, Problem, get_algorithm
from learner.diagnosis import diagnose
from learner.oracle import Oracle

DEFAULT_EVAL_POINTS = 20
TOO_MANY_CELLS = Code.TOO_MANY_CELLS.value
# The most examples whose attributes an algorithm that chooses ahead (``Algorithm.select_ahead``) is asked for at once,
# and the runner pays for in one request: a hundred requests' overhead become one (1: one example a request).
ROUNDS_PER_REQUEST = 100
# At most about this many progress reports a run, curve points aside.
PROGRESS_UPDATES = 1000


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
    algorithm = build_algorithm(algorithm_id, oracle, params=params, seed=seed, max_examples=horizon,
                                defaults=defaults)
    result = RunResult(algorithm=algorithm_id, dataset=dataset, dataset_params=dict(oracle.dataset_params),
                       params=params, defaults=defaults, seed=seed, status="running", session=oracle.session_id)
    run = Learning(algorithm, oracle, result)
    status, message = run.learn(horizon, eval_every or default_eval_every(horizon), progress, cancel)
    run.end(status, message)
    result.wall_time = time.perf_counter() - started
    result.diagnosis = diagnose(result, algorithm.tuning_hint(), python=python_advice)
    return result


@dataclass
class Learning:
    """One run under way: the algorithm, its oracle session, the result it fills in, and how far it got."""

    algorithm: Algorithm
    oracle: Oracle
    result: RunResult
    examples: int = 0
    cumulative_loss: float = 0.0
    # The rounds a request of an algorithm that chooses ahead holds at most (``steps_ahead``; None: not yet sized).
    rounds: int | None = None

    @property
    def online(self) -> bool:
        return self.algorithm.protocol == "online"

    def learn(self, horizon: int, every: int, progress: Callable[[Progress], None] | None,
              cancel: threading.Event | None) -> tuple[RunStatus, str]:
        """Step through examples up to ``horizon``, a curve point every ``every``; how the run ended. A budget that
        runs out, an exhausted stream, a cancel or an unreachable oracle are outcomes, not crashes."""
        oracle = self.oracle
        # Progress is told of every curve point, of the last example, and of every ``told``-th between: a console's
        # bar redrawn at each example cost more than a small algorithm's step.
        told = max(1, horizon // PROGRESS_UPDATES) if progress is not None else horizon
        try:
            while self.examples < horizon:
                # The examples up to the next curve point or report in one loop (``steps``), the schedule's
                # arithmetic once for them all (at least one example: an eval_every below 1, which RunCreate refuses
                # but a caller of run_algorithm may give, checks after each as it did).
                done = self.examples
                stop = max(done + 1, min(horizon, (done // every + 1) * every, (done // told + 1) * told))
                if not self.steps(stop, cancel):
                    return "cancelled", "cancelled before the horizon"
                point = self.evaluate() if self.examples % every == 0 or self.examples == horizon else None
                if progress is not None and (point is not None or self.examples % told == 0):
                    progress(Progress(self.examples, oracle.attributes, oracle.spent, horizon, point))
        except BudgetExhausted as exc:
            return "budget_exhausted", exc.detail
        except StreamExhausted as exc:
            return "finished", exc.detail
        except OracleUnavailable as exc:
            return "oracle_unavailable", str(exc)
        except OracleError as exc:
            return "failed", str(exc)
        return "finished", ""

    @property
    def chooses_ahead(self) -> bool:
        """The algorithm offers ``select_ahead`` and the run may use it: not online, whose rounds each wait for a
        prediction, and not with ``ROUNDS_PER_REQUEST`` at 1."""
        return self.algorithm.chooses_ahead() and not self.online and ROUNDS_PER_REQUEST > 1

    def steps(self, stop: int, cancel: threading.Event | None) -> bool:
        """Examples until ``stop`` have been seen (False: cancelled first). For each, the algorithm chooses its
        attributes, pays for them and learns from what they showed: it chooses before it sees the example, so one
        step request issues and observes it (the session makes the attributes ints, and the answer's values are
        floats: the algorithm takes them as they come, as a dict or, if it ``takes_paid_row``, a ``PaidRow``). An
        algorithm that chooses ahead pays for many examples a request (``steps_ahead``)."""
        if self.chooses_ahead:
            return self.steps_ahead(stop, cancel)
        algorithm, online = self.algorithm, self.online
        oracle = self.oracle
        step: Callable[[Sequence[int]], tuple[int, float | None, Observed]] = (
            oracle.step_row if algorithm.takes_paid_row else oracle.step_observed)
        select, update = algorithm.select, algorithm.update
        examples = self.examples
        try:
            while examples < stop:
                if cancel is not None and cancel.is_set():
                    return False
                example, y, observed = step(select())
                if online:
                    y = self.predict(example, observed)
                assert y is not None
                update(observed, y)
                examples += 1
        finally:
            self.examples = examples  # also when a step is refused: the examples seen before it
        return True

    def steps_ahead(self, stop: int, cancel: threading.Event | None) -> bool:
        """``steps`` for an algorithm that chooses ahead: the attributes of up to ``ROUNDS_PER_REQUEST`` examples
        (never past ``stop``, nor past ``MAX_ATTRIBUTES_PER_REQUEST`` attributes) chosen at once, paid for in one
        ``steps`` request, then learnt from in order. A refused request (a budget or the stream running out inside
        it) changed nothing: its rounds are paid for again one step each, as chosen (their draws are spent), so
        the run ends at the example, and with the weights and the refusal, of a run that chooses one example at a
        time."""
        algorithm, oracle = self.algorithm, self.oracle
        pay = oracle.steps_row if algorithm.takes_paid_row else oracle.steps_observed
        update = algorithm.update
        if self.rounds is None:
            self.rounds = min(ROUNDS_PER_REQUEST, max(1, MAX_ATTRIBUTES_PER_REQUEST // algorithm.problem.budget))
        while self.examples < stop:
            if cancel is not None and cancel.is_set():
                return False
            limit = min(stop - self.examples, self.rounds)
            selections = algorithm.select_ahead(limit) or [algorithm.select()]
            if len(selections) > limit:
                raise RuntimeError(f"{algorithm.id}: select_ahead({limit}) chose {len(selections)} examples")
            try:
                answers = pay(selections)
            except OracleError as exc:
                # Refused whole, nothing recorded (a budget or the stream running out, a round refused): its rounds
                # one step each end the run where, and as, one step a request would.
                if exc.error == TOO_MANY_CELLS:  # an oracle serving fewer cells a request (its BUDGETLAB_MAX_CELLS)
                    self.rounds = max(1, len(selections) // 2)
                self.replay(selections)
                continue
            for _, y, observed in answers:
                assert y is not None
                update(observed, y)
                self.examples += 1
        return True

    def replay(self, selections: Sequence[Sequence[int]]) -> None:
        """The rounds of a refused request, one step each: the refusal is raised again at the round it concerns."""
        algorithm, oracle = self.algorithm, self.oracle
        step = oracle.step_row if algorithm.takes_paid_row else oracle.step_observed
        for attributes in selections:
            _, y, observed = step(attributes)
            assert y is not None
            algorithm.update(observed, y)
            self.examples += 1

    def predict(self, example: int, observed: Observed) -> float:
        """The online protocol's second request of a round: the algorithm's prediction, committed; the label."""
        y_hat = self.algorithm.predict_one(observed)
        y = self.oracle.predict(example, y_hat)
        self.cumulative_loss += (y_hat - y) ** 2
        return y

    def evaluate(self) -> CurvePoint:
        """The curve's next point: the test error of the weights now, and what the run paid so far."""
        oracle = self.oracle
        scores = oracle.evaluate(self.algorithm.weights, self.algorithm.bias)
        point = CurvePoint(examples=self.examples, attributes=oracle.attributes, cost=oracle.spent,
                           test_mse=scores.mse, normalized_mse=scores.normalized_mse, zero_one=scores.zero_one,
                           cumulative_loss=self.cumulative_loss if self.online else None)
        self.result.curve.append(point)
        return point

    def end(self, status: RunStatus, message: str) -> None:
        """The result as the run ended: a last curve point where the examples seen have none, the weights."""
        result, oracle, algorithm = self.result, self.oracle, self.algorithm
        if status != "oracle_unavailable" and (not result.curve or result.curve[-1].examples != self.examples):
            try:
                self.evaluate()
            except OracleUnavailable as exc:
                status, message = "oracle_unavailable", str(exc)
        result.status = status
        result.message = message
        result.weights = [float(w) for w in algorithm.weights]
        result.bias = float(algorithm.bias)
        result.final = result.curve[-1] if result.curve else None
        result.examples = self.examples
        result.attributes = oracle.attributes
        result.cost = oracle.spent
        result.cumulative_loss = self.cumulative_loss if self.online else None
        # Read at the end: some algorithms resolve a parameter only once they have seen data (a two-phase step size).
        result.resolved_params = {name: value.item() if isinstance(value, np.generic) else value
                                  for name, value in algorithm.get_params().items()}
