"""The order a --local grid's runs start in: a freed worker takes a run of a dataset it already holds."""

from __future__ import annotations

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from client.comparison.placement import Placement, dataset_key

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
