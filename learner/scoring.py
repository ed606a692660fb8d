"""A run, then its score under a test-time budget: the one place that says how a run's predictor is scored.

The learner service, ``budgetlab run`` and ``budgetlab compare`` all run an algorithm on a training session and,
when the run asks for it (``test_budget`` = K), predict every example of a test session that may observe only K
attributes of each (Cesa-Bianchi et al. §4, Murata & Suzuki). Only how a session is opened differs between them
(over HTTP or in-process), so the caller passes that in as ``open_oracle``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Protocol as TypingProtocol

import numpy as np

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunCreate, RunResult
from budgetlab.contract.sessions import Protocol, Split
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle, Oracle
from learner.prediction_budget import score_with_test_budget
from learner.runner import Progress, run_algorithm


class OpenOracle(TypingProtocol):
    """Opens a session of the run's dataset and seed (``HttpOracle`` or ``LocalOracle`` with those bound)."""

    def __call__(self, *, split: Split, protocol: Protocol, budget: Budget) -> Oracle: ...


def session_opener(request: RunCreate, oracle_url: str | None) -> OpenOracle:
    """Sessions of the run's dataset, dataset parameters and seed: over HTTP on the oracle at ``oracle_url`` (under
    the run's API key, if it has one), or
    in-process on a ``LocalOracle`` when it is None."""
    if oracle_url:
        return partial(HttpOracle, oracle_url, request.dataset, dataset_params=request.dataset_params,
                       seed=request.seed, api_key=request.key())
    return partial(LocalOracle, request.dataset, dataset_params=request.dataset_params, seed=request.seed)


def run_and_score(request: RunCreate, oracle: Oracle, open_oracle: OpenOracle, *,
                  progress: Callable[[Progress], None] | None = None,
                  cancel: threading.Event | None = None,
                  announce: Callable[[str], None] | None = None) -> RunResult:
    """Run ``request`` on the training session ``oracle`` (the caller opened it and closes it).

    If ``request.test_budget`` is K and the run completed (finished, or its budget ran out), the final weights
    are also scored through a test session in the online protocol with at most K attributes per example,
    opened by ``open_oracle`` and closed here; the score is ``result.test_budget``. ``announce`` is told when that
    scoring starts (a command line says so: it is a pass over the test split).
    """
    result = run_algorithm(request.algorithm, oracle, params=request.params, seed=request.seed,
                           max_examples=request.max_examples, eval_every=request.eval_every, progress=progress,
                           cancel=cancel, dataset=request.dataset, defaults=request.defaults)
    k = request.test_budget
    if k and result.status in COMPLETED_RUN_STATUSES:
        if announce is not None:
            announce(f"scoring the predictor on the test split with {k} attributes per example ...")
        test = open_oracle(split="test", protocol="online", budget=Budget(per_example=k))
        try:
            result.test_budget = score_with_test_budget(test, np.asarray(result.weights), result.bias, k)
        finally:
            test.close()
    return result
