"""Runs of Ito et al.'s (2017) learners on the online-sparse instances, shared by
tests/learner/algorithms/test_alg_ito.py and the paper's tables (tests/papers/test_claim_ito_table2.py and
test_claim_ito_table3.py); the 5,000-round runs are computed once per test session (the ``ito_long_run`` fixture of
tests/conftest.py)."""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunResult
from budgetlab.datasets import load_dataset
from learner.oracle import LocalOracle
from learner.regret import regret, stream_arrays
from learner.runner import run_algorithm
from tests.helpers import run_wide

LONG_ROUNDS = 5000


def run(algorithm: str, seed: int, rounds: int, k_prime: int = 4, params: dict | None = None,
        **instance: int) -> tuple[LocalOracle, object]:
    dataset = load_dataset("online-sparse", {"d": 10, "k": 2, **instance}, seed)
    oracle = LocalOracle(dataset, protocol="online", budget=Budget(per_example=k_prime), seed=seed)
    result = run_algorithm(algorithm, oracle, params=params or {}, seed=seed, max_examples=rounds,
                           eval_every=100)
    return oracle, result


def instance_regret(result: RunResult, seed: int, sparsity: int) -> float:
    """R_T of a run on the (d = 10, k = sparsity) instance of ``seed`` against the best ``sparsity``-sparse w with
    ||w|| <= 1 (eq. (1)), over the rounds the run played."""
    assert result.status == "finished", result.message
    X, y = stream_arrays(load_dataset("online-sparse", {"d": 10, "k": sparsity}, seed), "train", seed,
                         result.examples)
    return regret(result.cumulative_loss, X, y, k=sparsity, radius=1.0)


def table_regret(algorithm: str, params: dict, sparsity: int, seeds: range) -> np.ndarray:
    """R_T at T = 5,000, k' = 4, on each instance of ``seeds`` (Tables 2 and 3 average 5 instances)."""
    return np.array([instance_regret(run(algorithm, seed, LONG_ROUNDS, params=params, k=sparsity)[1], seed, sparsity)
                     for seed in seeds])


LongRun = Callable[[str, int, int], RunResult]


def shared_long_runs(tmp_path_factory: pytest.TempPathFactory) -> LongRun:
    """``long_run(algorithm, seed, sparsity)``: a 5,000-round run with default parameters and k' = 4 on a
    (d = 10, k = sparsity) instance, computed once per test session. At k = 2, Algorithm 1's runs serve both the
    last-rounds test and Table 2's regret claim, greedy's and uniform's both that claim and the baselines' test.

    Those tests may land on different xdist workers (an ``xdist_group`` would not keep them together: with pytest
    9.2, ``--dist loadgroup`` silently stops grouping, pytest-xdist issue 1386), so a run is stored as JSON in the
    session's shared temporary directory, under a file lock: the first worker to need it computes it, the others
    read it (exactly: floats survive the JSON round trip). The evaluations every 100 rounds do not change a run:
    they read the weights, nothing else. Tables 2 and 3 (tests/papers/) read the same runs."""
    shared = run_wide(tmp_path_factory, "ito-long-runs")
    memo: dict[tuple[str, int, int], RunResult] = {}

    def get(algorithm: str, seed: int, sparsity: int) -> RunResult:
        key = (algorithm, seed, sparsity)
        if key not in memo:
            stored = shared / f"{algorithm}-seed{seed}-k{sparsity}.json"
            with (shared / f"{stored.name}.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                if stored.exists():
                    memo[key] = RunResult.model_validate_json(stored.read_text())
                else:
                    memo[key] = run(algorithm, seed, LONG_ROUNDS, k=sparsity)[1]
                    write_atomically(stored, memo[key].model_dump_json())
        return memo[key]

    return get


def write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)
