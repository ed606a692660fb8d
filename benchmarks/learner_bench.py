"""Learner benchmarks (issue 3): examples per second of AERR and AELR, in-process and over HTTP.

- In-process (runner + ``LocalOracle``), 5 attributes per example, at d = 1,000 and d = 100,000. The
  data is a sliding-window Gaussian design: row i is the window ``buffer[i*7 : i*7 + d]`` of one
  N(0, 1/d) buffer (a strided view, so n x 100,000 costs a few MB and nothing is generated in the
  timed loop), y = <w*, x> with w* = ±sqrt(d/25) on 25 coordinates, so ||x||_2 ≈ 1 and Var(y) ≈ 1, as
  Hazan & Koren's theorems assume. Only the learning loop is timed: the runner evaluates once, at the
  horizon (``eval_every`` = the horizon); that one evaluation of a 200-row test split is included.
- AERR with 57 attributes per example on ``mnist-3v5`` (900 examples): through ``HttpOracle`` against a real
  ``budgetlab serve oracle`` process, with the SDK's default transport (one ``step`` per example over the
  session's WebSocket) and with plain HTTP (one ``POST .../step`` per example), against the same run
  in-process: the wall time the oracle adds per example (target <= 0.8 ms with the default transport), and
  whether both learned the same weights (they must: same seed).
- The online protocol: ito1 on ``online-sparse`` (d = 10, k' = 4), two requests per round (``step``, then
  ``predict``), added time per round over the stream.
- Several runs at once: 4 AERR runs on one oracle from 4 threads, total examples per second.

Usage: ``python benchmarks/learner_bench.py [--json] [--smoke]``.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _harness import Report, arguments, oracle_process, progress

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunResult
from budgetlab.contract.sessions import Protocol
from budgetlab.datasets.base import Dataset
from budgetlab.oracle_client import OracleClient
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle
from learner.runner import run_algorithm

WIDTHS = (1_000, 100_000)
SUPPORT = 25
WINDOW_STEP = 7
TEST_ROWS = 200
ADDED_TARGET_MS = 0.8
CONCURRENT_RUNS = 4


@dataclass(frozen=True)
class Sizes:
    synthetic_examples: int
    mnist_examples: int | None  # None: the whole training split
    in_process_repeats: int
    online_rounds: int


FULL = Sizes(synthetic_examples=20_000, mnist_examples=None, in_process_repeats=3, online_rounds=2000)
SMOKE = Sizes(synthetic_examples=200, mnist_examples=20, in_process_repeats=1, online_rounds=20)


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


def remote_run(url: str, algorithm: str, dataset: str, budget: Budget, horizon: int | None, stream: bool,
               protocol: Protocol = "batch", dataset_params: dict | None = None, params: dict | None = None,
               ) -> RunResult:
    """One run through ``HttpOracle`` (the SDK's default transport with ``stream``, else plain HTTP)."""
    with OracleClient(url, stream=stream) as client:
        remote = HttpOracle(url, dataset, budget=budget, seed=0, protocol=protocol,
                            dataset_params=dataset_params, client=client)
        steps = min(horizon or remote.n_examples, remote.n_examples)
        result = run_algorithm(algorithm, remote, seed=0, params=params, max_examples=steps, eval_every=steps)
        if stream and remote.session.transport != "websocket":
            raise RuntimeError("the SDK did not use the oracle's stream")
        return result


def added_ms(remote: RunResult, local: RunResult) -> float:
    """Wall time per example the oracle added over the in-process run of the same learner."""
    return 1e3 * (1 / examples_per_second(remote) - 1 / examples_per_second(local))


def mnist_remote_vs_in_process(workdir: Path, sizes: Sizes, report: Report) -> None:
    budget = Budget(per_example=57)
    horizon = sizes.mnist_examples
    progress("aerr in-process on mnist-3v5 ...")
    local = in_process("aerr", "mnist-3v5", 57, horizon, sizes.in_process_repeats)
    report.add("aerr_mnist_in_process_examples_per_s", examples_per_second(local), "examples/s")
    # The "weights equal" figures ask for every bit on any machine: both runs do their arithmetic in this process,
    # with the same BLAS kernel (the oracle only serves values), unlike weights pinned on another machine
    # (learner/reproducibility.py).
    with oracle_process(workdir / "oracle") as oracle:
        for name, stream in (("stream", True), ("http", False)):
            progress(f"aerr on mnist-3v5 over the oracle ({name}) ...")
            runs = [remote_run(oracle.url, "aerr", "mnist-3v5", budget, horizon, stream)
                    for _ in range(sizes.in_process_repeats)]
            run = sorted(runs, key=examples_per_second)[len(runs) // 2]
            added = added_ms(run, local)
            target = (f"<= {ADDED_TARGET_MS}", added <= ADDED_TARGET_MS) if stream else ("", None)
            report.add(f"aerr_mnist_{name}_examples_per_s", examples_per_second(run), "examples/s")
            report.add(f"aerr_mnist_{name}_added_ms_per_example", added, "ms", *target)
            report.add(f"aerr_mnist_{name}_weights_equal_in_process", bool(np.array_equal(run.weights, local.weights)))

        progress("ito1 on online-sparse, in-process and over the stream ...")
        online = {"dataset_params": {"d": 10, "k": 2}, "params": {"k": 2}}
        steps = sizes.online_rounds
        local_online = run_algorithm("ito1", LocalOracle("online-sparse", protocol="online",
                                                         budget=Budget(per_example=4), seed=0,
                                                         dataset_params=online["dataset_params"]),
                                     seed=0, params=online["params"], max_examples=steps, eval_every=steps)
        remote_online = remote_run(oracle.url, "ito1", "online-sparse", Budget(per_example=4), steps, True,
                                   protocol="online", **online)
        report.add("ito1_online_stream_added_ms_per_round", added_ms(remote_online, local_online), "ms")
        report.add("ito1_online_weights_equal_in_process",
                   bool(np.array_equal(remote_online.weights, local_online.weights)))

        progress(f"{CONCURRENT_RUNS} aerr runs at once over the stream ...")
        start = time.perf_counter()
        with ThreadPoolExecutor(CONCURRENT_RUNS) as pool:
            together = list(pool.map(lambda _: remote_run(oracle.url, "aerr", "mnist-3v5", budget, horizon, True),
                                     range(CONCURRENT_RUNS)))
        seconds = time.perf_counter() - start
        report.add(f"aerr_mnist_{CONCURRENT_RUNS}_runs_at_once_examples_per_s",
                   sum(r.examples for r in together) / seconds, "examples/s")


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    sizes = SMOKE if args.smoke else FULL
    report = Report("learner_bench", "smoke" if args.smoke else "full")
    synthetic(sizes, report)
    with tempfile.TemporaryDirectory(prefix="budgetlab-bench-") as tmp:
        mnist_remote_vs_in_process(Path(tmp), sizes, report)
    report.emit(args.json)


if __name__ == "__main__":
    main()
