"""In-process runs at the cost of their math (issue 36, item 1): what a run spends per example around the
algorithm, and AERR's time per example beside main at f1662c7, measured in the same run on the same machine.

- Overhead: a do-nothing algorithm (it selects its budget's first attributes and learns nothing; it reads no value,
  so it takes them as a ``PaidRow``, whose dict is never made) run in-process (``run_algorithm`` on a
  ``LocalOracle``): its CPU time per example is all the run spends outside an algorithm's own arithmetic (the
  engine's step, the answer objects, the budgets, the runner's bookkeeping and its evaluations at the default
  schedule, 20 a run). Target: at most 10 us. The same without the evaluations but the last one
  (``..._steps_only``) says how much of it the evaluations are. The same algorithm choosing ahead
  (``select_ahead``: ``..._ahead``, this tree only) is paid for ``ROUNDS_PER_REQUEST`` examples a request
  (``LocalSession.step_rounds``): what a run of an algorithm that chooses ahead spends around it.
- Where the overhead goes (``parts_...``, here only): the do-nothing step's layers, each timed alone over as many
  examples: the engine's rule (``engine.step_round``, its outcome not applied), the session's part (the attributes made
  ints, the outcome applied: ``LocalSession.step_round`` less the engine's), the oracle's (the algorithm's ``PaidRow``
  and what the oracle tracks: ``LocalOracle.step_row`` less the session's), and the runner's loop (the steps-only
  run less the oracle's steps). The evaluations are the run's figure less the steps-only one.
- AERR's CPU time per example in-process, here and at f1662c7 (a ``git worktree`` of that commit in a temporary
  directory, its code imported by a child process through PYTHONPATH), on ``mnist-3v5`` with k = 57 (the whole
  900-example split, as the issue profiled it) and on ``sparse-gaussian`` with 25 of 500 attributes. Target: here
  at most a third of f1662c7. The weights both learn must be the same, bit for bit (same seed, same parameters).

Every figure is CPU time (``time.process_time``) of a child process, so other work on the machine slows the wall
clock, not the figure; each child times its runs after a warm-up, and the two trees' children alternate, round after
round, so that a change in the machine's load falls on both. A figure is the median over the rounds.

Usage: ``python benchmarks/overhead_bench.py [--json] [--smoke]``.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# The child's tree: the code of whichever tree PYTHONPATH names (the parent's: this one).
from learner.algorithms.base import Algorithm, Problem

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "f1662c7"
OVERHEAD_TARGET_US = 10.0
RATIO_TARGET = 1 / 3


@dataclass(frozen=True)
class Scenario:
    name: str
    dataset: str
    params: dict[str, Any]
    k: int
    examples: int | None  # None: the whole training split
    runs: int  # timed runs in each child (a short run is repeated, so that it is timed long enough)


@dataclass(frozen=True)
class Sizes:
    scenarios: tuple[Scenario, ...]
    rounds: int


FULL = Sizes((Scenario("mnist", "mnist-3v5", {}, 57, None, 5),
              Scenario("sparse", "sparse-gaussian", {"n_train": 20_000, "n_test": 2_000}, 25, 20_000, 1)), rounds=5)
SMOKE = Sizes((Scenario("mnist", "mnist-3v5", {}, 57, 60, 1),
               Scenario("sparse", "sparse-gaussian", {"n_train": 600, "n_test": 100}, 25, 500, 1)), rounds=1)


# --- the child: one tree's code, one scenario ------------------------------------------------------------------


class DoNothing(Algorithm):
    """Selects the first k attributes, learns nothing: a run of it is all overhead (its values unread: a ``PaidRow``,
    whose dict an algorithm reading by key pays for, 1.7 us an example at k = 25 and 3.8 at 57)."""

    id = "do-nothing"
    name = "do nothing"
    paper = "none"
    algorithm = "none"
    takes_paid_row = True

    def __init__(self, problem: Problem, seed: int = 0) -> None:
        super().__init__(problem, seed)
        self._selected = list(range(problem.budget))
        self._weights = np.zeros(problem.d)

    def select(self) -> Sequence[int]:
        return self._selected

    def update(self, observed: Any, y: float) -> None:
        return None

    @property
    def weights(self) -> np.ndarray:
        return self._weights


class DoNothingAhead(DoNothing):
    """``DoNothing`` choosing ahead: the same first k attributes of every example, any number of examples ahead."""

    id = "do-nothing-ahead"

    def select_ahead(self, limit: int) -> list[Sequence[int]] | None:
        return [self._selected] * limit


DO_NOTHING: dict[str, type[Algorithm]] = {"do-nothing": DoNothing, "do-nothing-ahead": DoNothingAhead}


def child(algorithm: str, scenario: Scenario, eval_once: bool) -> dict[str, Any]:
    """``runs`` timed in-process runs after a warm-up: CPU microseconds per example (the median), the weights' hash."""
    import learner.runner
    from budgetlab.contract.budgets import Budget
    from learner.oracle import LocalOracle

    if algorithm in DO_NOTHING:
        from learner.algorithms import get_algorithm

        # The runner looks the id up in its own namespace: the do-nothing algorithms are there, the others as they were.
        setattr(learner.runner, "get_algorithm",  # noqa: B010
                lambda name: DO_NOTHING.get(name) or get_algorithm(name))

    def run(examples: int | None) -> tuple[float, Any]:
        oracle = LocalOracle(scenario.dataset, dataset_params=scenario.params, budget=Budget(per_example=scenario.k),
                             seed=0)
        horizon = min(examples or oracle.n_examples, oracle.n_examples)
        started = time.process_time()
        result = learner.runner.run_algorithm(algorithm, oracle, seed=0, max_examples=horizon,
                                              eval_every=horizon if eval_once else None)
        spent = time.process_time() - started
        assert result.examples == horizon, (result.status, result.message)
        return spent / horizon * 1e6, result

    run(50)  # imports, caches, the dataset's pages
    timed = [run(scenario.examples) for _ in range(scenario.runs)]
    weights = np.asarray(timed[0][1].weights, dtype=np.float64)
    return {"us_per_example": statistics.median(t for t, _ in timed),
            "weights_sha256": hashlib.sha256(weights.tobytes()).hexdigest(),
            "code": str(Path(learner.runner.__file__).resolve().parent.parent)}


def parts(scenario: Scenario) -> dict[str, Any]:
    """CPU microseconds per example of each layer of a do-nothing step (this tree's code only: f1662c7 has no
    ``step_round``), each timed over the scenario's examples on a fresh session, after a warm-up."""
    from budgetlab import engine
    from budgetlab.contract.budgets import Budget
    from learner.oracle import LocalOracle

    def fresh() -> LocalOracle:
        return LocalOracle(scenario.dataset, dataset_params=scenario.params, budget=Budget(per_example=scenario.k),
                           seed=0)

    horizon = min(scenario.examples or fresh().n_examples, fresh().n_examples)
    wanted = list(range(scenario.k))

    def per_example(step: Any) -> float:
        started = time.process_time()
        for _ in range(horizon):
            step(wanted)
        return (time.process_time() - started) / horizon * 1e6

    def rule() -> Any:
        session = fresh().local
        state = [session.counters]

        def step(attributes: list[int]) -> None:  # the counters carried on, so that each step issues the next row
            state[0] = engine.step_round(session.runtime, state[0], attributes).counters

        return step

    per_example(rule())  # imports, caches, the dataset's pages
    # Each with the layers it calls: the parent takes the differences.
    layers = {"engine": per_example(rule()), "session": per_example(fresh().local.step_round),
              "oracle": per_example(fresh().step_row)}
    return {"us": layers, "code": str(Path(engine.__file__).resolve().parent.parent)}


# --- the parent: both trees, interleaved ---------------------------------------------------------------------------


def baseline_tree(workdir: Path) -> Path | None:
    """A worktree of f1662c7 under ``workdir`` (None, and a note, where git cannot make one)."""
    tree = workdir / "f1662c7"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), BASELINE],
                          capture_output=True, text=True)
    return tree if done.returncode == 0 else None


def measure(tree: Path, algorithm: str, scenario: Scenario, eval_once: bool) -> dict[str, Any]:
    """One child process on ``tree``'s code (algorithm "parts": the do-nothing step's layers, ``parts``)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(
        {"algorithm": algorithm, "scenario": scenario.__dict__, "eval_once": eval_once})]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(tree))
    if done.returncode != 0:
        raise RuntimeError(f"{algorithm} on {scenario.name} at {tree} failed:\n{done.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(done.stdout)
    if Path(answer["code"]) != tree.resolve():
        raise RuntimeError(f"the child meant for {tree} ran the code at {answer['code']}")
    return answer


JOBS = (("do-nothing", False), ("do-nothing", True), ("aerr", False))
HERE_ONLY = (("do-nothing-ahead", False),)  # f1662c7 has no select_ahead: it would step one example a request


def rounds(trees: dict[str, Path], sizes: Sizes) -> dict[tuple[str, str, bool, str], list[dict[str, Any]]]:
    """Every job on every tree, round after round, the trees' order alternating."""
    from _harness import progress

    found: dict[tuple[str, str, bool, str], list[dict[str, Any]]] = {}
    for r in range(sizes.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for scenario in sizes.scenarios:
            for algorithm, eval_once in (*JOBS, *HERE_ONLY):
                for label in (order if (algorithm, eval_once) in JOBS else ["here"]):
                    answer = measure(trees[label], algorithm, scenario, eval_once)
                    found.setdefault((scenario.name, algorithm, eval_once, label), []).append(answer)
                    progress(f"round {r + 1}/{sizes.rounds} {scenario.name} {algorithm}"
                             f"{' (steps only)' if eval_once else ''} {label}: {answer['us_per_example']:.1f} us")
            answer = measure(trees["here"], "parts", scenario, True)
            found.setdefault((scenario.name, "parts", True, "here"), []).append(answer)
            progress(f"round {r + 1}/{sizes.rounds} {scenario.name} parts here: "
                     + ", ".join(f"{layer} {us:.1f} us" for layer, us in answer["us"].items()))
    return found


def report_figures(found: dict[tuple[str, str, bool, str], list[dict[str, Any]]], sizes: Sizes, report: Any,
                   baseline: bool) -> None:
    def median(scenario: str, algorithm: str, eval_once: bool, label: str) -> float:
        return statistics.median(a["us_per_example"] for a in found[(scenario, algorithm, eval_once, label)])

    for scenario in sizes.scenarios:
        name = scenario.name
        overhead = median(name, "do-nothing", False, "here")
        report.add(f"overhead_{name}_us_per_example", overhead, "us", f"<= {OVERHEAD_TARGET_US:g} us",
                   overhead <= OVERHEAD_TARGET_US)
        ahead = median(name, "do-nothing-ahead", False, "here")
        report.add(f"overhead_{name}_ahead_us_per_example", ahead, "us", f"<= {OVERHEAD_TARGET_US:g} us",
                   ahead <= OVERHEAD_TARGET_US)
        steps_only = median(name, "do-nothing", True, "here")
        report.add(f"overhead_{name}_steps_only_us_per_example", steps_only, "us")
        timed = [a["us"] for a in found[(name, "parts", True, "here")]]  # each layer with those it calls
        report.add(f"parts_{name}_engine_us", statistics.median(t["engine"] for t in timed), "us")
        report.add(f"parts_{name}_session_us", statistics.median(t["session"] - t["engine"] for t in timed), "us")
        report.add(f"parts_{name}_oracle_us", statistics.median(t["oracle"] - t["session"] for t in timed), "us")
        report.add(f"parts_{name}_runner_us", steps_only - statistics.median(t["oracle"] for t in timed), "us")
        if baseline:
            report.add(f"overhead_{name}_us_per_example_f1662c7", median(name, "do-nothing", False, BASELINE), "us")
            report.add(f"overhead_{name}_steps_only_us_per_example_f1662c7",
                       median(name, "do-nothing", True, BASELINE), "us")
        here = median(name, "aerr", False, "here")
        report.add(f"aerr_{name}_us_per_example", here, "us")
        if baseline:
            before = median(name, "aerr", False, BASELINE)
            report.add(f"aerr_{name}_us_per_example_f1662c7", before, "us")
            report.add(f"aerr_{name}_to_f1662c7", here / before, "x", "<= 0.333x", here / before <= RATIO_TARGET)
            hashes = {a["weights_sha256"] for label in ("here", BASELINE)
                      for a in found[(name, "aerr", False, label)]}
            report.add(f"aerr_{name}_same_weights_as_f1662c7", len(hashes) == 1, "", "yes", len(hashes) == 1)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        job = json.loads(sys.argv[2])
        scenario = Scenario(**job["scenario"])
        answer = parts(scenario) if job["algorithm"] == "parts" else child(job["algorithm"], scenario, job["eval_once"])
        print(json.dumps(answer))
        return
    from _harness import Report, arguments

    args = arguments(__doc__.split("\n\n")[0] if __doc__ else "")
    sizes = SMOKE if args.smoke else FULL
    report = Report("overhead_bench", "smoke" if args.smoke else "full")
    with tempfile.TemporaryDirectory(prefix="overhead-bench-") as workdir:
        base = baseline_tree(Path(workdir))
        trees = {"here": ROOT} if base is None else {"here": ROOT, BASELINE: base}
        if base is None:
            report.note(f"no worktree of {BASELINE} (git worktree add failed): the figures here only")
        try:
            found = rounds(trees, sizes)
        finally:
            if base is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                               capture_output=True)
    report_figures(found, sizes, report, base is not None)
    report.note(f"CPU time per example, median of {sizes.rounds} rounds, the trees' children alternating; "
                f"{', '.join(f'{s.name}: {s.dataset} k={s.k}' for s in sizes.scenarios)}")
    report.emit(args.json)


if __name__ == "__main__":
    main()
