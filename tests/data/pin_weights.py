"""Record the weights every algorithm gives for a fixed seed and parameters, under both defaults, into
``tests/data/pinned_weights.json`` (``python tests/data/pin_weights.py``).

The file is what a refactoring of the algorithms must keep: ``tests/learner/algorithms/test_pinned_weights.py`` runs
every case again and asks for the same weights. It was first written from main at the commit it names, before the
ridge/lasso twins were collapsed into one implementation per family (#21 item 6). Re-record it only when an algorithm
is meant to change, and say so in the commit. The file records the floating-point platform it was written on
(``learner.reproducibility.float_platform``): the test compares bit for bit there, within 1e-12 elsewhere.

The cases: each algorithm on the dataset of its paper's setting (the runs of ``theory_weights.json``), the cost-aware
ones on priced data (where their prices matter), and the twins again with parameters off their defaults (a given
step, radius or penalty; a non-uniform q; the pseudo-code's inner product), each under ``defaults = "practical"`` and
``"theory"``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.budgets import Budget
from learner.algorithms import algorithms
from learner.oracle import LocalOracle
from learner.reproducibility import float_platform
from learner.runner import run_algorithm

HERE = Path(__file__).parent
OUT = HERE / "pinned_weights.json"
POWERLAW = {"d": 30, "n_train": 400, "n_test": 100}
PRICED = {"d": 12, "n_train": 300, "n_test": 100, "support": 4, "price": 50.0, "expensive": 0.25}
COST_AWARE = ("ddaerr-cost", "ddaelr-cost", "ddaerr-2p-cost", "ddaelr-2p-cost")


def case(algorithm: str, dataset: str, dataset_params: dict[str, Any], per_example: int | None, max_examples: int,
         seed: int = 3, total: float | None = None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"algorithm": algorithm, "dataset": dataset, "dataset_params": dataset_params, "per_example": per_example,
            "total": total, "max_examples": max_examples, "seed": seed, "params": params or {}}


def cases() -> list[dict[str, Any]]:
    theory = json.loads((HERE / "theory_weights.json").read_text())["runs"]
    found = [case(r["algorithm"], r["dataset"], r["dataset_params"], r["per_example"], r["max_examples"], r["seed"])
             for r in theory if r["algorithm"] not in COST_AWARE]
    found += [case(a, "priced", PRICED, 4, 300, seed=2, total=3000.0) for a in COST_AWARE]
    found += [case(a, "priced", PRICED, 4, 300, seed=2, total=3000.0, params={"eta": 0.01}) for a in COST_AWARE]
    off = {
        "aerr": {"eta": 0.003, "B": 2.0}, "aelr": {"eta": 0.05, "B": 4.0},
        "gaerr": {"q": "power:-1", "inner": "pseudo-code", "x_draws": 2},
        "gaelr": {"q": "power:-1", "inner": "pseudo-code", "x_draws": 2},
        "ddaerr": {"floor": 0.1, "x_draws": 2, "eta": 0.002}, "ddaelr": {"floor": 0.1, "x_draws": 2, "eta": 0.05},
        "ddaerr-2phase": {"phase1": 0.2, "eta1": 0.002}, "ddaelr-2phase": {"phase1": 0.2, "eta1": 0.05},
        "ogd-ridge": {"eta": 0.001, "radius": 5.0}, "eg-lasso": {"eta": 0.01, "radius": 20.0},
        "ridge": {"alpha": 3.0}, "lasso": {"alpha": 0.1},
        "screening": {"screen": 0.6, "s": 3, "lam": 0.01},
    }
    for algorithm, params in off.items():
        full = algorithm in ("ogd-ridge", "eg-lasso", "ridge", "lasso")
        found.append(case(algorithm, "powerlaw", POWERLAW, None if full else 5, 300, params=params))
    return found


def run(spec: dict[str, Any], defaults: Defaults) -> dict[str, Any]:
    oracle = LocalOracle(spec["dataset"], dataset_params=spec["dataset_params"],
                         budget=Budget(per_example=spec["per_example"], total=spec["total"]), seed=spec["seed"],
                         protocol=algorithms()[spec["algorithm"]].protocol)
    result = run_algorithm(spec["algorithm"], oracle, seed=spec["seed"], max_examples=spec["max_examples"],
                           params=dict(spec["params"]), defaults=defaults)
    assert result.status in ("finished", "budget_exhausted"), (spec, result.status, result.message)
    return {**spec, "defaults": defaults, "status": result.status, "examples": result.examples,
            "weights": list(result.weights), "resolved_params": result.resolved_params}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", help="the commit whose code runs (default: git's HEAD here)")
    commit = parser.parse_args().commit or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, cwd=HERE).stdout.strip()
    both: tuple[Defaults, ...] = ("practical", "theory")
    runs = [run(spec, defaults) for spec in cases() for defaults in both]
    missing = set(algorithms()) - {r["algorithm"] for r in runs}
    assert not missing, f"no case for {sorted(missing)}"
    OUT.write_text(json.dumps({"commit": commit, "platform": float_platform(), "runs": runs}, indent=1) + "\n")
    print(f"{len(runs)} runs of {len({r['algorithm'] for r in runs})} algorithms -> {OUT}")


if __name__ == "__main__":
    main()
