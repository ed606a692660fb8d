"""One run as the CLI executes it: in-process on a LocalOracle or over HTTP on an oracle, with a progress bar.

The learner is imported here, inside the functions: the SDK itself never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from budgetlab.models import Budget, ParamValue, RunResult


@dataclass
class RunSpec:
    algorithm: str
    dataset: str
    dataset_params: dict[str, ParamValue] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    params: dict[str, ParamValue] = field(default_factory=dict)
    seed: int = 0
    max_examples: int | None = None
    eval_every: int | None = None
    test_budget: int | None = None


def open_oracle(spec: RunSpec, oracle_url: str | None, *, split: str = "train", protocol: str = "batch",
                budget: Budget | None = None):  # type: ignore[no-untyped-def]
    from learner.http_oracle import HttpOracle
    from learner.oracle import LocalOracle

    budget = budget or spec.budget
    if oracle_url:
        return HttpOracle(oracle_url, spec.dataset, dataset_params=spec.dataset_params, split=split,
                          protocol=protocol, budget=budget, seed=spec.seed)
    return LocalOracle(spec.dataset, dataset_params=spec.dataset_params, split=split, protocol=protocol,
                       budget=budget, seed=spec.seed)


def execute_run(spec: RunSpec, *, oracle_url: str | None, show_progress: bool, console: Console,
                fail: Callable[[str], None]) -> RunResult:
    """Run ``spec``; user errors (unknown algorithm, bad params, dataset, unreachable oracle) go to ``fail``."""
    import numpy as np

    from budgetlab.datasets import DatasetError
    from budgetlab.errors import OracleError, OracleUnavailable
    from learner.algorithms import ParamError, get_algorithm
    from learner.runner import run_algorithm
    from learner.test_time import score_with_test_budget

    try:
        protocol = get_algorithm(spec.algorithm).protocol
        oracle = open_oracle(spec, oracle_url, protocol=protocol)
    except (ParamError, DatasetError, OracleError, OracleUnavailable) as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    horizon = min(spec.max_examples or oracle.n_examples, oracle.n_examples)
    bar = Progress(TextColumn(f"{spec.algorithm} on {spec.dataset}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console,
                   disable=not show_progress, transient=False)
    with bar:
        task = bar.add_task("run", total=horizon, info="")

        def progress(p) -> None:  # type: ignore[no-untyped-def]
            info = f"attrs {p.attributes}" + (f"  mse {p.point.test_mse:.4g}" if p.point else "")
            bar.update(task, completed=p.examples, info=info)

        try:
            result = run_algorithm(spec.algorithm, oracle, params=spec.params, seed=spec.seed,
                                   max_examples=spec.max_examples, eval_every=spec.eval_every, progress=progress,
                                   dataset=spec.dataset, dataset_params=spec.dataset_params)
        except (ParamError, ValueError) as exc:
            fail(str(exc))
            raise AssertionError("unreachable") from None
        finally:
            oracle.close()
    if spec.test_budget and result.status in ("finished", "budget_exhausted"):
        test = open_oracle(spec, oracle_url, split="test", protocol="online",
                           budget=Budget(per_example=spec.test_budget))
        try:
            result.test_budget = score_with_test_budget(test, np.asarray(result.weights), result.bias,
                                                        spec.test_budget)
        finally:
            test.close()
    return result
