"""The CPU of the full-information references' runs as cesa-bianchi-mnist runs them, here and at another commit.

Issue 36: cesa-bianchi-mnist must run in 15 minutes on 2 cores, and ridge and lasso refit at each of a run's 20 curve
points and cross-validate their α whenever the examples seen have doubled, where ``algorithm_profile.py`` times one
``weights`` read at the end. Each run here is a preset's run: ``learner.runner.run_algorithm`` over a ``LocalOracle``,
theory defaults, the whole training split, the default 20 curve points, on a design of the preset (the 900-image MNIST
pairs, the 12,000-image Fashion-MNIST pair). Each side runs in a process of its own with BLAS on one thread, as in the
Dask worker processes of ``compare --local`` (Dask sets ``OPENBLAS_NUM_THREADS=1`` there); the CPU time
(``time.process_time``) is each run's, the dataset built before the clock starts. ``--baseline REV`` runs the
algorithms of that commit too (its ``learner/algorithms`` extracted as ``algorithm_profile.py --baseline`` does), the
two sides alternating round by round, and says whether every run's final weights are the same bit for bit; the
preset's saving is the median saving per run times the preset's runs of each id on that design.

``--files`` narrows the baseline to some files: the working tree's ``learner/algorithms`` with those files as they
were at REV (when the rest of ``learner/algorithms`` at REV no longer fits this tree's runner).

    python benchmarks/reference_runs.py --baseline 320a78b             # ridge and lasso, both designs
    python benchmarks/reference_runs.py --baseline 320a78b --files learner/algorithms/references/ridge.py
    python benchmarks/reference_runs.py --ids ridge --datasets mnist-0v1,mnist-3v5 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.algorithm_profile import extract  # noqa: E402  (after the path, as a script)

# The preset's runs of each algorithm on a dataset like it: 45 pairs and Fig. 4's 3 vs 5, 10 seeds; one Fashion pair.
PRESET_RUNS = {"mnist": 460, "fashion": 10}


def worker(ids: list[str], datasets: list[str], seeds: list[int], tree: str | None) -> None:
    """One process's runs, one JSON object on stdout: id -> dataset -> [[cpu seconds, weights], ...]."""
    if tree:
        import learner

        learner.__path__.insert(0, str(Path(tree) / "learner"))
    # Imported before the clock: a worker process has them loaded after its first run.
    import scipy.linalg  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.model_selection  # noqa: F401

    from budgetlab.contract.budgets import Budget
    from learner.algorithms import get_algorithm
    from learner.oracle import LocalOracle
    from learner.runner import run_algorithm

    found: dict[str, Any] = {}
    for algorithm_id in ids:
        protocol = get_algorithm(algorithm_id).protocol
        for dataset in datasets:
            for seed in seeds:
                oracle = LocalOracle(dataset, dataset_params={}, seed=seed, protocol=protocol,
                                     budget=Budget(per_example=None))
                started = time.process_time()
                result = run_algorithm(algorithm_id, oracle, seed=seed, defaults="theory")
                spent = time.process_time() - started
                found.setdefault(algorithm_id, {}).setdefault(dataset, []).append([spent, result.weights])
    sys.stdout.write(json.dumps(found) + "\n")


def baseline_tree(revision: str, files: list[str], into: Path) -> None:
    """``learner/algorithms`` of ``revision`` under ``into``, or with ``files``: the working tree's, those files as
    they were at ``revision``."""
    if not files:
        extract(revision, into)
        return
    shutil.copytree(ROOT / "learner" / "algorithms", into / "learner" / "algorithms",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in files:
        (into / name).write_bytes(subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{name}"], check=True,
                                                 capture_output=True).stdout)


def run_side(args: argparse.Namespace, tree: Path | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", "--ids", args.ids, "--datasets", args.datasets,
               "--seeds", args.seeds]
    command += ["--tree", str(tree)] if tree is not None else []
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def family(dataset: str) -> str:
    return "fashion" if dataset.startswith("fashion") else "mnist"


def report(sides: dict[str, list[dict[str, Any]]], ids: list[str], datasets: list[str], revision: str | None) -> str:
    """One line per id and dataset: median CPU s per run on each side, the saving, the same weights or not; then
    the preset's saving estimated from the medians."""
    lines = ["CPU seconds per run (median over seeds and rounds), BLAS on one thread"]
    savings: dict[tuple[str, str], list[float]] = {}  # (id, mnist or fashion) -> the saving per run of each dataset
    for algorithm_id in ids:
        for dataset in datasets:
            runs = {side: [run for answer in answers for run in answer[algorithm_id][dataset]]
                    for side, answers in sides.items()}
            now = statistics.median(cpu for cpu, _ in runs["after"])
            line = f"{algorithm_id:6} {dataset:12} after {now:6.3f}"
            if "before" in runs:
                then = statistics.median(cpu for cpu, _ in runs["before"])
                same = all(a[1] == b[1] for a, b in zip(runs["after"], runs["before"], strict=True))
                saved = then - now
                savings.setdefault((algorithm_id, family(dataset)), []).append(saved)
                line += (f"  before ({revision}) {then:6.3f}  saved {saved:6.3f} ({saved / then:5.1%})"
                         f"  weights {'the same bit for bit' if same else 'DIFFER'}")
            lines.append(line)
    if savings:
        preset_saved = sum(statistics.mean(saved) * PRESET_RUNS[kind] for (_, kind), saved in savings.items())
        lines.append(f"preset estimate (mean saving per run over the datasets measured x the preset's runs of the "
                     f"id on such data, {PRESET_RUNS}): {preset_saved:.0f} CPU-s = {preset_saved / 60:.2f} CPU-min")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", default="ridge,lasso", help="comma-separated algorithm ids (default ridge,lasso)")
    parser.add_argument("--datasets", default="mnist-3v5,fashion-1v9", help="comma-separated datasets")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--baseline", metavar="REV", help="also run the algorithms of this git revision")
    parser.add_argument("--files", default="", help="with --baseline: only these files (comma-separated) from REV")
    parser.add_argument("--rounds", type=int, default=2, help="processes per side, alternating (default 2)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    ids, datasets = args.ids.split(","), args.datasets.split(",")
    if args.worker:
        worker(ids, datasets, [int(s) for s in args.seeds.split(",")], args.tree)
        return
    with tempfile.TemporaryDirectory(prefix="reference-runs-") as scratch:
        tree = None
        if args.baseline:
            tree = Path(scratch)
            baseline_tree(args.baseline, [name for name in args.files.split(",") if name], tree)
        sides: dict[str, list[dict[str, Any]]] = {"after": []} if tree is None else {"before": [], "after": []}
        for round_number in range(args.rounds):
            for side in sides:
                print(f"round {round_number + 1}/{args.rounds}: {side}", file=sys.stderr, flush=True)
                sides[side].append(run_side(args, tree if side == "before" else None))
    sys.stdout.write(report(sides, ids, datasets, args.baseline))


if __name__ == "__main__":
    main()
