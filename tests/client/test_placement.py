"""The order a --local grid's runs start in: a freed worker takes a run of a dataset it already holds; a run the grid
names twice runs once."""

from __future__ import annotations

import threading
from typing import cast

from rich.console import Console

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate, RunResult
from client.comparison.config import CompareConfig, resolve_designs
from client.comparison.grid import jobs_for, progress_bars, run_local
from client.comparison.placement import Placement, dataset_key
from learner.cluster import Ended, RunPool

# Two algorithms x four seeds in grid order (seed-major): each seed's two runs share one dataset.
JOBS = [(algorithm, seed) for seed in range(4) for algorithm in ("aerr", "ddaerr")]


def _play(placement: Placement[tuple[str, int]], workers: list[str]) -> dict[str, list[int]]:
    """Each worker in turn frees up and takes its next job, as the grid's threads do; the seeds each one ran."""
    ran: dict[str, list[int]] = {w: [] for w in workers}
    last: dict[str, str | None] = {w: None for w in workers}
    going: dict[str, int] = {}
    for w in workers:  # the first runs start before any ended
        i = placement.take(last[w])
        assert i is not None
        going[w] = i
    while going:
        for w in workers:
            if w not in going:
                continue
            i = going.pop(w)
            placement.ran(i, w)
            ran[w].append(JOBS[i][1])
            last[w] = w
            nxt = placement.take(w)
            if nxt is not None:
                going[w] = nxt
    return ran


def test_two_workers_build_each_dataset_once_between_them() -> None:
    ran = _play(Placement(JOBS, lambda job: job[1]), ["w1", "w2"])
    assert sorted(ran["w1"] + ran["w2"]) == sorted(seed for _, seed in JOBS)  # every job, once
    assert not set(ran["w1"]) & set(ran["w2"])  # no dataset built twice
    assert len(set(ran["w1"])) == len(set(ran["w2"])) == 2


def test_one_worker_takes_the_grid_in_order() -> None:
    assert _play(Placement(JOBS, lambda job: job[1]), ["w1"])["w1"] == [seed for _, seed in JOBS]


def test_a_dropped_grid_hands_out_nothing_more() -> None:
    placement = Placement(JOBS, lambda job: job[1])
    assert placement.take(None) == 0
    assert placement.drop() == list(range(1, len(JOBS)))
    assert placement.take(None) is None


def test_runs_share_a_dataset_when_name_parameters_and_seed_agree() -> None:
    def run(algorithm: str, seed: int, d: int) -> RunCreate:
        return RunCreate(dataset="powerlaw", dataset_params={"d": d, "n_train": 100}, algorithm=algorithm,
                         budget=Budget(per_example=2), seed=seed)

    assert dataset_key(run("aerr", 0, 10)) == dataset_key(run("ddaerr", 0, 10))
    assert dataset_key(run("aerr", 0, 10)) != dataset_key(run("aerr", 1, 10))
    assert dataset_key(run("aerr", 0, 10)) != dataset_key(run("aerr", 0, 11))


class CountingPool:
    """A worker pool that answers each run at once with a result carrying its seed, and keeps the requests it ran."""

    def __init__(self) -> None:
        self.ran: list[RunCreate] = []
        self._lock = threading.Lock()

    def run(self, request: RunCreate, **_: object) -> Ended:
        with self._lock:
            self.ran.append(request)
        return Ended(result=RunResult(algorithm=request.algorithm, dataset=request.dataset, seed=request.seed,
                                      status="finished", weights=[float(request.seed)]), worker="w1")


def test_a_run_two_designs_name_runs_once_and_both_cells_get_its_result() -> None:
    # As in cesa-bianchi-mnist: Fig. 4's design and the table's both run ridge on 3 vs 5 with the same seeds.
    config = CompareConfig.model_validate({
        "title": "t", "seeds": [0, 1], "budget": {"per_example": 4},
        "algorithms": [{"id": "ridge", "label": "Ridge", "per_example": 784}],
        "designs": [{"name": "Fig. 4", "dataset": {"name": "mnist-3v5"}},
                    {"name": "table", "datasets": ["mnist-0v1", "mnist-3v5"]}]})
    designs = resolve_designs(config)
    jobs = jobs_for(config, designs, "local")
    pool = CountingPool()
    with progress_bars(Console(quiet=True), False, len(jobs)) as bars:
        outcomes = run_local(jobs, designs, pool=cast(RunPool, pool), parallel=2, bars=bars)
    assert len(jobs) == 6 and len(pool.ran) == 4  # 3 vs 5's two seeds once each, 0 vs 1's two
    assert sorted((r.dataset, r.seed) for r in pool.ran) == [("mnist-0v1", 0), ("mnist-0v1", 1),
                                                               ("mnist-3v5", 0), ("mnist-3v5", 1)]
    assert [(o.design, o.seed, o.result.dataset, o.result.weights) for o in outcomes] == [
        (job.design, job.seed, job.request.dataset, [float(job.seed)]) for job in jobs]  # each cell its own, in order
    assert bars.done == 6
