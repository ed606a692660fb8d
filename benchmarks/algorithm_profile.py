"""The algorithms' own time per example: select() + update() (+ predict_one() in the online protocol), every id.

Issue 36 item 1: a run in-process should cost little more than its algorithm's math, and the algorithm's part is what
this script measures, apart from the oracle, the engine and the runner. Each algorithm id runs on a setting of its
paper's scale (``SETTINGS``: the dataset, the per-example budget and the examples of a preset that runs it), built as
a run builds it (``learner.runner.build_algorithm`` over a ``LocalOracle``, for the prior knowledge it declares), and
then driven straight from the dataset's rows: per example ``select()``, the values of the attributes it chose, a dict
or a ``PaidRow`` as the runner makes them, ``update()``. The time is the CPU time (``time.process_time_ns``) of the
algorithm's own calls, each timed apart and less the clock's own reads, over the whole run, divided by the examples:
the median over the repeats (and the least, steadier on shared cores). ``weights_us`` is one read of ``weights`` after
the run (a run reads it at every curve point: 20 a run by default).

``--baseline REV`` measures the algorithms of another commit beside the working tree's, in the same run: its
``learner/algorithms`` is extracted with ``git archive`` and put first on the ``learner`` package's path in a
process of its own (the rest of the tree, runner and oracle, is this one's), the two processes alternating round by
round so that the machine's load falls on both alike.

    python benchmarks/algorithm_profile.py                      # the table, every id
    python benchmarks/algorithm_profile.py --baseline 974f1a2   # before and after, side by side
    python benchmarks/algorithm_profile.py --ids aerr,ito1 --rounds 5 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Setting:
    """Where an algorithm id is measured: a dataset, its parameters, the per-example budget, the examples."""

    dataset: str
    per_example: int | None
    examples: int
    dataset_params: dict[str, Any] = field(default_factory=dict)
    total: float | None = None

    def describe(self) -> str:
        budget = "all" if self.per_example is None else str(self.per_example)
        return f"{self.dataset} k={budget} n={self.examples}"


MNIST_4 = Setting("mnist-3v5", 4, 900)  # Cesa-Bianchi et al.'s figures
MNIST_57 = Setting("mnist-3v5", 57, 900)  # Hazan & Koren's Fig. 2, Kukliansky & Shamir's MNIST
MNIST_FULL = Setting("mnist-3v5", None, 900)  # the full-information references beside them
ONLINE = Setting("online-sparse", 7, 2000, {"d": 20, "k": 5, "scale": "unit-variance"})  # Ito et al.'s second design
MURATA = Setting("sparse-gaussian", 50, 2000, {"n_train": 2000, "n_test": 200})  # Murata & Suzuki's, shorter
PRICED = Setting("priced", 5, 3000, {"d": 20, "support": 4, "price": 100.0}, total=100000.0)  # cost-aware-priced

SETTINGS: dict[str, Setting] = {
    "aer": MNIST_4, "aer-baseline": MNIST_4,
    "aerr": MNIST_57, "aelr": MNIST_57, "aesvr": MNIST_57,
    "gaerr": MNIST_57, "gaelr": MNIST_57, "ddaerr": MNIST_57, "ddaelr": MNIST_57,
    "ddaerr-2phase": MNIST_57, "ddaelr-2phase": MNIST_57,
    "ito1": ONLINE, "ito2": ONLINE, "ito3": ONLINE, "greedy": ONLINE, "uniform": ONLINE,
    "exploration": MURATA, "exploitation": MURATA, "hybrid": MURATA,
    "ridge": MNIST_FULL, "lasso": MNIST_FULL, "ogd-ridge": MNIST_FULL, "eg-lasso": MNIST_FULL,
    "ddaerr-cost": PRICED, "ddaelr-cost": PRICED, "ddaerr-2p-cost": PRICED, "ddaelr-2p-cost": PRICED,
    "screening": MNIST_57,
}


def setting_for(algorithm_id: str, smoke: bool) -> Setting:
    setting = SETTINGS.get(algorithm_id, Setting("powerlaw", 5, 600, {"d": 50, "n_train": 600, "n_test": 100}))
    if smoke:
        return Setting(setting.dataset, setting.per_example, min(setting.examples, 60), setting.dataset_params,
                       setting.total)
    return setting


def drive(algorithm: Any, rows: list[list[float]], labels: list[float], online: bool) -> float:
    """The runner's step for every row, without an oracle: the CPU seconds of the algorithm's own calls (select,
    predict_one online, update), each timed apart, less the clock's own reads."""
    clock = time.process_time_ns
    spent = 0
    for row, y in zip(rows, labels, strict=True):
        started = clock()
        wanted = algorithm.select()
        chosen = clock()
        observed = paid_row(wanted, row) if algorithm.takes_paid_row else {i: row[i] for i in wanted}
        asked = clock()
        if online:
            algorithm.predict_one(observed)
        algorithm.update(observed, y)
        spent += (chosen - started) + (clock() - asked)
    return (spent - 2 * len(rows) * clock_read()) / 1e9


def paid_row(wanted: Any, row: list[float]) -> Any:
    """The ``PaidRow`` the runner gives an algorithm that ``takes_paid_row``: the attributes (made ints, as the session
    makes them) and their values, in that order."""
    from learner.algorithms.base import PaidRow

    attributes = list(map(int, wanted))
    return PaidRow(attributes, [row[i] for i in attributes])


def clock_read() -> int:
    """The ns one read of ``time.process_time_ns`` adds between two others (the least of many)."""
    clock = time.process_time_ns
    return min(-(clock() - clock()) for _ in range(2000))


def measure(algorithm_id: str, setting: Setting, repeats: int) -> dict[str, Any]:
    """µs per example of the algorithm's select + update (+ predict_one) on ``setting``, and of one ``weights`` read:
    each repeat's figure, a fresh algorithm with the same seed each time."""
    from budgetlab.contract.budgets import Budget
    from learner.algorithms import get_algorithm
    from learner.oracle import LocalOracle
    from learner.runner import build_algorithm

    cls = get_algorithm(algorithm_id)
    oracle = LocalOracle(setting.dataset, dataset_params=dict(setting.dataset_params), seed=0, protocol=cls.protocol,
                         budget=Budget(per_example=setting.per_example, total=setting.total))
    dataset = oracle.dataset
    X, y = next(dataset.iter_split("train", chunk=setting.examples))
    rows, labels = X.tolist(), y.tolist()
    n = len(rows)
    online = cls.protocol == "online"
    per_example, weights = [], []
    for _ in range(repeats):
        algorithm = build_algorithm(algorithm_id, oracle, params={}, seed=0, max_examples=n)
        gc.collect()
        per_example.append(drive(algorithm, rows, labels, online) / n * 1e6)
        started = time.process_time()
        _ = algorithm.weights
        weights.append((time.process_time() - started) * 1e6)
    return {"setting": setting.describe(), "us_per_example": per_example, "weights_us": weights}


def worker(ids: list[str], repeats: int, smoke: bool, tree: str | None) -> None:
    """One process's measurements as one JSON object on stdout; ``tree``: the algorithms of that extracted tree."""
    if tree:
        import learner

        learner.__path__.insert(0, str(Path(tree) / "learner"))
    import learner.algorithms

    found = {}
    for algorithm_id in ids:
        print(f"  {algorithm_id}", file=sys.stderr, flush=True)
        found[algorithm_id] = measure(algorithm_id, setting_for(algorithm_id, smoke), repeats)
    found["_source"] = str(Path(learner.algorithms.__file__).parent)  # type: ignore[assignment]
    sys.stdout.write(json.dumps(found) + "\n")


def extract(revision: str, into: Path) -> None:
    """``learner/algorithms`` of ``revision`` under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "learner/algorithms"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def run_worker(ids: list[str], repeats: int, smoke: bool, tree: Path | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", "--ids", ",".join(ids), "--repeats", str(repeats)]
    command += ["--smoke"] if smoke else []
    command += ["--tree", str(tree)] if tree is not None else []
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def collect(ids: list[str], args: argparse.Namespace, tree: Path | None) -> dict[str, dict[str, list[float]]]:
    """Every round's figures of the working tree ("after") and, with a baseline, of its tree ("before"), the two
    processes alternating."""
    sides: dict[str, dict[str, Any]] = {"after": {}} if tree is None else {"before": {}, "after": {}}
    for round_number in range(args.rounds):
        for side in sides:
            print(f"round {round_number + 1}/{args.rounds}: {side}", file=sys.stderr, flush=True)
            answer = run_worker(ids, args.repeats, args.smoke, tree if side == "before" else None)
            for algorithm_id in ids:
                into = sides[side].setdefault(algorithm_id, {"us_per_example": [], "weights_us": []})
                into["setting"] = answer[algorithm_id]["setting"]
                into["us_per_example"] += answer[algorithm_id]["us_per_example"]
                into["weights_us"] += answer[algorithm_id]["weights_us"]
    return sides


def table(ids: list[str], sides: dict[str, dict[str, Any]], revision: str | None) -> str:
    """One row per id: the median µs per example (the figure), the least (the run the machine's load disturbed least,
    the steadier on shared cores), and the median µs of a ``weights`` read; with a baseline, both sides and ratios."""
    header = ["id", "setting"]
    if "before" in sides:
        header += [f"before ({revision})", "after", "ratio", "min before", "min after", "ratio", "weights before",
                   "after"]
    else:
        header += ["µs/example", "min", "weights µs"]
    lines = [header]
    for algorithm_id in ids:
        after = sides["after"][algorithm_id]
        now, least = statistics.median(after["us_per_example"]), min(after["us_per_example"])
        read = statistics.median(after["weights_us"])
        row = [algorithm_id, after["setting"]]
        if "before" in sides:
            before = sides["before"][algorithm_id]
            then, least_then = statistics.median(before["us_per_example"]), min(before["us_per_example"])
            row += [f"{then:.1f}", f"{now:.1f}", ratio(now, then), f"{least_then:.1f}", f"{least:.1f}",
                    ratio(least, least_then), f"{statistics.median(before['weights_us']):,.0f}", f"{read:,.0f}"]
        else:
            row += [f"{now:.1f}", f"{least:.1f}", f"{read:,.0f}"]
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                      for i, (cell, w) in enumerate(zip(line, widths, strict=True))) for line in lines]
    return "\n".join(["µs per example of select + update (+ predict_one); weights: µs of one read after the run",
                      text[0], "-" * len(text[0]), *text[1:]]) + "\n"


def ratio(now: float, then: float) -> str:
    return f"{now / then:.2f}" if then > 0 else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", help="comma-separated algorithm ids (default: every built-in one)")
    parser.add_argument("--baseline", metavar="REV", help="also measure the algorithms of this git revision")
    parser.add_argument("--rounds", type=int, default=3, help="processes per side, alternating (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each id per process (default 3)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    parser.add_argument("--table", metavar="JSON", help="print the table of an earlier --json run's output file")
    parser.add_argument("--smoke", action="store_true", help="60 examples an id, one round: checks the script runs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # before any import of learner.algorithms, which would pin this tree's in place of ``--tree``'s
        worker(args.ids.split(","), args.repeats, args.smoke, args.tree)
        return
    from learner.algorithms import BUILT_IN

    ids = args.ids.split(",") if args.ids else list(BUILT_IN)
    if args.table:
        earlier = json.loads(Path(args.table).read_text())
        sys.stdout.write(table(list(earlier["figures"]["after"]), earlier["figures"], earlier["baseline"]))
        return
    if args.smoke:
        args.rounds, args.repeats = 1, 1
    with tempfile.TemporaryDirectory(prefix="algorithm-profile-") as scratch:
        tree = None
        if args.baseline:
            tree = Path(scratch)
            extract(args.baseline, tree)
        sides = collect(ids, args, tree)
    if args.json:
        body = {"benchmark": "algorithm_profile", "mode": "smoke" if args.smoke else "full",
                "baseline": args.baseline, "figures": sides}
        sys.stdout.write(json.dumps(body) + "\n")
    else:
        sys.stdout.write(table(ids, sides, args.baseline))


if __name__ == "__main__":
    main()
