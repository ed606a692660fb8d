"""What ``budgetlab bench`` runs: its grids (the full one and ``--quick``) and their cells, one run each.

A grid names problems (a dataset with its parameters, served in the batch or the online protocol), local budgets k
(each capped at the dataset's d), seeds and the examples of every run. Its cells are every algorithm that applies
to a problem at a budget (``learner.applicability``), for every seed: budgetlab's own algorithms, or the grid's
subset, and the plugins named by id. A full-information reference runs once per problem and seed, at k = d.
Every algorithm runs at its practical defaults, untuned: the benchmark compares what a user gets by naming it.

``GRID_VERSION`` is part of every run's key in the results store (``client.bench.store``): raise it when what a run
of the same request means changes (how the report scores it, say), so that no stored run of the old meaning is reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import DatasetInfo
from budgetlab.contract.runs import RunCreate
from budgetlab.contract.sessions import Protocol
from budgetlab.datasets import DatasetError, UnknownDataset
from client.bench.times import FULL_TIME, QUICK_TIME
from client.comparison.preflight import Catalog
from learner.algorithms import algorithm_modules, get_algorithm
from learner.applicability import inapplicable
from learner.runner import run_horizon

GRID_VERSION = 1


@dataclass(frozen=True)
class BenchProblem:
    """A dataset with its parameters, in a protocol; an online problem's regret is against the best ``regret_k``-sparse
    predictor in hindsight (the sparsity of the instance's w*)."""

    dataset: str
    params: dict[str, ParamValue] = field(default_factory=dict)
    protocol: Protocol = "batch"
    regret_k: int | None = None

    @property
    def name(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items() if k not in ("n_train", "n_test"))
        return f"{self.dataset} ({shown})" if shown else self.dataset


@dataclass(frozen=True)
class BenchGrid:
    name: str
    problems: tuple[BenchProblem, ...]
    budgets: tuple[int, ...]
    seeds: tuple[int, ...]
    max_examples: int
    algorithms: tuple[str, ...] | None = None  # None: every one of budgetlab's
    measured: str = ""  # how long it took, as measured (``--help`` and ``--list`` print it)


# The synthetic sets at 2,000 training examples (every run sees them once) and 1,000 test examples: their default
# sizes (20,000 to 90,000) would be built, per seed and worker, for runs that read 2,000.
SMALL = {"n_train": 2000, "n_test": 1000}
# Ito et al.'s instances (Table 2's (d, k) = (10, 2), (20, 5)) and a wider one; the comparator is found by exhaustive
# search over the C(d, k) supports, which bounds k at large d.
ONLINE = (BenchProblem("online-sparse", {"d": 10, "k": 2}, "online", 2),
          BenchProblem("online-sparse", {"d": 20, "k": 5}, "online", 5),
          BenchProblem("online-sparse", {"d": 50, "k": 3}, "online", 3))

FULL = BenchGrid(
    name="full",
    problems=(BenchProblem("mnist-3v5"), BenchProblem("mnist-4v9"), BenchProblem("fashion-0v6"),
              BenchProblem("digits-3v5"), BenchProblem("digits-1v7"), BenchProblem("diabetes"),
              BenchProblem("powerlaw", dict(SMALL)), BenchProblem("sparse-gaussian", dict(SMALL)),
              BenchProblem("priced", dict(SMALL)), *ONLINE),
    budgets=(2, 5, 10, 20, 50),
    seeds=(0, 1, 2, 3, 4),
    max_examples=2000,
    measured=FULL_TIME,
)

QUICK = BenchGrid(
    name="quick",
    problems=(BenchProblem("digits-3v5"), BenchProblem("digits-1v7"), BenchProblem("diabetes")),
    budgets=(2, 5),
    seeds=(0, 1, 2),
    max_examples=300,
    algorithms=("aerr", "ddaerr", "aer", "aelr", "ridge"),
    measured=QUICK_TIME,
)

GRIDS = {grid.name: grid for grid in (FULL, QUICK)}


@dataclass(frozen=True)
class Cell:
    """One run of the grid: an algorithm on a problem at a local budget (d for a reference), for a seed."""

    problem: int  # index in the grid's problems
    algorithm: str
    k: int
    reference: bool
    seed: int
    request: RunCreate


@dataclass
class Expanded:
    """A grid's cells, the problems they ran on (None: skipped, ``skipped`` says why) and each budgeted problem's
    budgets."""

    cells: list[Cell]
    infos: list[DatasetInfo | None]
    skipped: dict[int, str]
    budgets: dict[int, list[int]]


def budgets_for(grid: BenchGrid, d: int) -> list[int]:
    """The grid's local budgets capped at d, each once."""
    return sorted({min(k, d) for k in grid.budgets})


def algorithm_ids(grid: BenchGrid, extra: Iterable[str] = ()) -> list[str]:
    """The grid's algorithms (every one of budgetlab's unless it names some), then ``extra`` (plugins, by id)."""
    ids = list(grid.algorithms) if grid.algorithms is not None else list(algorithm_modules())
    return ids + [i for i in dict.fromkeys(extra) if i not in ids]


def expand(grid: BenchGrid, catalog: Catalog, ids: list[str], oracle_url: str | None = None) -> Expanded:
    """Every cell of ``grid`` for the algorithms ``ids`` (each built on this machine), its problems described by
    ``catalog``; a problem whose dataset is not served there (Fashion-MNIST where Debian's files are not installed) is
    skipped, saying why. ``oracle_url``: where the runs' sessions are opened (None: in-process)."""
    cells: list[Cell] = []
    infos: list[DatasetInfo | None] = []
    skipped: dict[int, str] = {}
    budgets: dict[int, list[int]] = {}
    classes = {i: get_algorithm(i) for i in ids}
    for p, problem in enumerate(grid.problems):
        try:
            info = catalog.describe(problem.dataset, problem.params)
        except (UnknownDataset, DatasetError) as exc:
            infos.append(None)
            skipped[p] = str(exc)
            continue
        infos.append(info)
        d = info.n_attributes
        n = run_horizon(grid.max_examples, info.n_train)
        budgets[p] = budgets_for(grid, d)
        for algorithm, cls in classes.items():
            reference = cls.budget_kind == "full"
            for k in [d] if reference else budgets[p]:
                if inapplicable(cls, protocol=problem.protocol, d=d, k=k, n_examples=n, costs=info.costs):
                    continue
                for seed in grid.seeds:
                    request = RunCreate(oracle_url=oracle_url, dataset=problem.dataset,
                                        dataset_params=dict(problem.params), algorithm=algorithm,
                                        budget=Budget(per_example=k), seed=seed, max_examples=grid.max_examples,
                                        eval_every=grid.max_examples)
                    cells.append(Cell(p, algorithm, k, reference, seed, request))
    return Expanded(cells, infos, skipped, budgets)
