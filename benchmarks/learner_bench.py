"""Learner benchmarks (issue 3): examples per second of AERR and AELR, in-process and over HTTP.

- In-process (runner + ``LocalOracle``), 5 attributes per example, at d = 1,000 and d = 100,000. The
  data is a sliding-window Gaussian design: row i is the window ``buffer[i*7 : i*7 + d]`` of one
  N(0, 1/d) buffer (a strided view, so n x 100,000 costs a few MB and nothing is generated in the
  timed loop), y = <w*, x> with w* = ±sqrt(d/25) on 25 coordinates, so ||x||_2 ≈ 1 and Var(y) ≈ 1, as
  Hazan & Koren's theorems assume. Only the learning loop is timed: the runner evaluates once, at the
  horizon (``eval_every`` = the horizon); that one evaluation of a 200-row test split is included.
- AERR with 57 attributes per example on ``mnist-3v5``: through ``HttpOracle`` against a real
  ``budgetlab serve oracle`` process (two requests per example: next, observe) and the same run
  in-process, their ratio, and whether both learned the same weights (they must: same seed).

Usage: ``python benchmarks/learner_bench.py [--json] [--smoke]``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _harness import Report, arguments, oracle_process, progress

from budgetlab.datasets.base import Dataset
from budgetlab.models import Budget, RunResult
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

WIDTHS = (1_000, 100_000)
SUPPORT = 25
WINDOW_STEP = 7
TEST_ROWS = 200


@dataclass(frozen=True)
class Sizes:
    synthetic_examples: int
    mnist_examples: int | None  # None: the whole training split
    in_process_repeats: int


FULL = Sizes(synthetic_examples=20_000, mnist_examples=None, in_process_repeats=3)
SMOKE = Sizes(synthetic_examples=200, mnist_examples=20, in_process_repeats=1)


def sliding_window_dataset(d: int, n_train: int, seed: int = 0) -> Dataset:
    n = n_train + TEST_ROWS
    rng = np.random.default_rng(seed)
    buffer = rng.standard_normal(n * WINDOW_STEP + d, dtype=np.float32) / np.float32(np.sqrt(d))
    X = np.lib.stride_tricks.as_strided(buffer, shape=(n, d), strides=(WINDOW_STEP * buffer.itemsize,
                                                                       buffer.itemsize), writeable=False)
    w_star = np.sqrt(d / SUPPORT) * np.where(np.arange(SUPPORT) % 2 == 0, 1.0, -1.0)
    y = X[:, :SUPPORT].astype(np.float64) @ w_star
    return Dataset(name=f"sliding-window-d{d}", description="sliding-window Gaussian design", task="regression",
                   X=X, y=y, train_rows=np.arange(n_train), test_rows=np.arange(n_train, n))


def examples_per_second(result: RunResult) -> float:
    if result.status != "finished":
        raise RuntimeError(f"{result.algorithm} ended {result.status}: {result.message}")
    return result.examples / result.wall_time


def in_process(algorithm: str, dataset: Dataset | str, k: int, horizon: int | None, repeats: int) -> RunResult:
    """The median-speed run of ``repeats`` identical in-process runs (same seed, so the same weights)."""
    runs = []
    for _ in range(repeats):
        oracle = LocalOracle(dataset, budget=Budget(per_example=k), seed=0)
        steps = min(horizon or oracle.n_examples, oracle.n_examples)
        runs.append(run_algorithm(algorithm, oracle, seed=0, max_examples=steps, eval_every=steps))
    return sorted(runs, key=examples_per_second)[len(runs) // 2]


def synthetic(sizes: Sizes, report: Report) -> None:
    for d in WIDTHS:
        dataset = sliding_window_dataset(d, sizes.synthetic_examples)
        for algorithm in ("aerr", "aelr"):
            progress(f"{algorithm} in-process at d = {d:,} ...")
            run = in_process(algorithm, dataset, 5, None, sizes.in_process_repeats)
            report.add(f"{algorithm}_d{d}_examples_per_s", examples_per_second(run), "examples/s")


def mnist_http_vs_in_process(workdir: Path, sizes: Sizes, report: Report) -> None:
    budget = Budget(per_example=57)
    with oracle_process(workdir / "oracle") as oracle:
        progress("aerr over HTTP on mnist-3v5 ...")
        remote = HttpOracle(oracle.url, "mnist-3v5", budget=budget, seed=0)
        try:
            horizon = min(sizes.mnist_examples or remote.n_examples, remote.n_examples)
            over_http = run_algorithm("aerr", remote, seed=0, max_examples=horizon, eval_every=horizon)
        finally:
            remote.close()
    progress("aerr in-process on mnist-3v5 ...")
    local = in_process("aerr", "mnist-3v5", 57, horizon, sizes.in_process_repeats)
    http_rate, local_rate = examples_per_second(over_http), examples_per_second(local)
    report.add("aerr_mnist_http_examples_per_s", http_rate, "examples/s")
    report.add("aerr_mnist_in_process_examples_per_s", local_rate, "examples/s")
    report.add("aerr_mnist_http_to_in_process", http_rate / local_rate, "x")
    report.add("aerr_mnist_http_weights_equal_in_process", bool(np.array_equal(over_http.weights, local.weights)))


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    sizes = SMOKE if args.smoke else FULL
    report = Report("learner_bench", "smoke" if args.smoke else "full")
    synthetic(sizes, report)
    with tempfile.TemporaryDirectory(prefix="budgetlab-bench-") as tmp:
        mnist_http_vs_in_process(Path(tmp), sizes, report)
    report.emit(args.json)


if __name__ == "__main__":
    main()
