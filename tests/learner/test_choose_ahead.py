"""Choosing ahead (``Algorithm.select_ahead``): an algorithm that offers it chooses exactly what ``select()`` would
have chosen example by example, and a run that pays for its choices many examples a request (``Learning.steps_ahead``)
ends exactly where, and with exactly the weights, curve and payments of, the same run one step a request: when it
finishes, when a global budget runs out inside a request (refused whole, replayed one step each) and when the stream
does. Every registered algorithm that offers it is checked, so a new one is covered by being registered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunResult
from learner import runner
from learner.algorithm_contract import AHEAD as AHEAD_POINT
from learner.algorithm_contract import POINTS, check
from learner.algorithms import Algorithm, Observed, Problem, algorithms
from learner.algorithms.shared.lookahead import Ahead
from learner.oracle import LocalOracle, PaidStep
from learner.runner import Learning, Progress, run_algorithm

N_TRAIN = 120
DATA: dict[str, ParamValue] = {"d": 20, "n_train": N_TRAIN, "n_test": 30, "s_plus": 3, "s_minus": 2}
K = 5
EVERY = 50  # curve points 50 examples apart: requests of up to 50 rounds
# Small mini-batches, so that 120 examples cross the boundaries where the choices change (updates, phases).
PARAMS: dict[str, dict[str, ParamValue]] = {"exploration": {"batch": 2}, "exploitation": {"batch": 2, "warmup": 2},
                                            "hybrid": {"batch": 1, "exploitation_updates": 2}}
# The algorithms known to choose ahead: a change that loses the offer of one fails here, not just runs slower.
EXPECTED = {"ridge", "lasso", "ogd-ridge", "eg-lasso", "exploration", "exploitation", "hybrid", "aer-baseline",
            "screening"}
AHEAD = sorted(name for name, cls in algorithms().items() if cls.chooses_ahead())


def full(name: str) -> bool:
    return algorithms()[name].budget_kind == "full"


def oracle(name: str, total: float | None = None) -> LocalOracle:
    per_example = None if full(name) else K
    return LocalOracle("sparse-gaussian", dataset_params=DATA, budget=Budget(per_example=per_example, total=total),
                       seed=5)


def paired_runs(name: str, monkeypatch: pytest.MonkeyPatch, total: float | None = None,
                issued: int = 0) -> tuple[RunResult, RunResult, list[int], int]:
    """The run one step a request and the same run choosing ahead (``issued`` examples of the stream issued to someone
    else first), the sizes of the ahead run's requests, and how many of them were refused and replayed."""
    sizes: list[int] = []
    replays: list[int] = []
    results = []
    monkeypatch.setattr(Learning, "replay", counted(Learning.replay, replays, at=1))
    for rounds in (1, runner.ROUNDS_PER_REQUEST):
        monkeypatch.setattr(runner, "ROUNDS_PER_REQUEST", rounds)
        session = oracle(name, total)
        for _ in range(issued):
            session.next()
        session.paid_steps = counted(session.paid_steps, sizes)  # type: ignore[method-assign]
        results.append(run_algorithm(name, session, params=PARAMS.get(name, {}), seed=3, eval_every=EVERY))
    return results[0], results[1], sizes, len(replays)


def counted(method: Callable[..., Any], sizes: list[int], at: int = 0) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        sizes.append(len(args[at]))
        return method(*args)

    return wrapper


def same(one: RunResult, other: RunResult) -> None:
    assert (one.status, one.message, one.examples) == (other.status, other.message, other.examples)
    assert [w.hex() for w in one.weights] == [w.hex() for w in other.weights]
    assert one.bias == other.bias and (one.attributes, one.cost) == (other.attributes, other.cost)
    assert [p.model_dump() for p in one.curve] == [p.model_dump() for p in other.curve]


def test_the_algorithms_that_choose_ahead_are_the_expected_ones() -> None:
    assert set(AHEAD) == EXPECTED
    assert all(algorithms()[name].protocol == "batch" for name in AHEAD)


@pytest.mark.parametrize("name", AHEAD)
def test_a_run_that_chooses_ahead_is_the_run_one_step_a_request(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sequential, ahead, sizes, replays = paired_runs(name, monkeypatch)
    same(sequential, ahead)
    assert ahead.status == "finished" and ahead.examples == N_TRAIN and replays == 0
    assert np.any(np.asarray(ahead.weights) != 0), "a run that never moves proves nothing"
    # Fewer requests than examples: the run paid for several examples a request, never past a curve point.
    assert sum(sizes) == N_TRAIN and len(sizes) < N_TRAIN / 2 and max(sizes) <= EVERY


@pytest.mark.parametrize("name", AHEAD)
def test_a_budget_running_out_inside_a_request_ends_where_one_step_a_request_does(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Enough for 73 examples and part of the 74th: the request of examples 51..100 is refused, then replayed.
    paid: dict[int, int] = {}

    def note(told: Progress) -> None:  # told of every example of a run this short
        paid[told.examples] = told.attributes

    run_algorithm(name, oracle(name), params=PARAMS.get(name, {}), seed=3, eval_every=EVERY, progress=note)
    sequential, ahead, _, replays = paired_runs(name, monkeypatch, total=paid[73] + 1)
    same(sequential, ahead)
    assert ahead.status == "budget_exhausted" and ahead.examples == 73 and replays == 1


@pytest.mark.parametrize("name", AHEAD)
def test_a_stream_running_out_inside_a_request_ends_where_one_step_a_request_does(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sequential, ahead, _, replays = paired_runs(name, monkeypatch, issued=17)  # 103 examples left for 120
    same(sequential, ahead)
    assert ahead.status == "finished" and ahead.examples == N_TRAIN - 17 and replays == 1


def observe(selection: Sequence[int], x: np.ndarray) -> Observed:
    return {int(j): float(x[j]) for j in selection}


@pytest.mark.parametrize("name", AHEAD)
def test_select_ahead_chooses_what_select_would_example_by_example(name: str) -> None:
    """Two twins of the algorithm learn from the same examples, one choosing with ``select()`` before each, the other
    ``select_ahead`` of 1 to 7 examples at a time: each of its selections is the other's, at most as many as asked."""
    cls = algorithms()[name]
    d = int(DATA["d"])
    problem = Problem(d=d, k=None if full(name) else K, n_examples=N_TRAIN)
    one, other = cls(problem, seed=2, **PARAMS.get(name, {})), cls(problem, seed=2, **PARAMS.get(name, {}))
    data = np.random.default_rng(0)
    X, y = data.normal(size=(N_TRAIN, d)), data.normal(size=N_TRAIN)
    t, limits = 0, [1, 7, 3, 1, 5]
    while t < N_TRAIN:
        limit = min(limits[t % len(limits)], N_TRAIN - t)
        chosen = other.select_ahead(limit)
        assert chosen is not None and 1 <= len(chosen) <= limit
        for selection in chosen:
            assert list(selection) == list(one.select())
            one.update(observe(selection, X[t]), float(y[t]))
            other.update(observe(selection, X[t]), float(y[t]))
            t += 1
    assert [w.hex() for w in one.weights] == [w.hex() for w in other.weights]
    first = cls(problem, seed=4, **PARAMS.get(name, {}))
    assert [list(s) for s in (first.select_ahead(1) or [])] == [list(cls(problem, seed=4, **PARAMS.get(name, {}))
                                                                     .select())]


def test_an_oracle_serving_fewer_cells_a_request_gets_smaller_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """An oracle whose cap on cells a request (its BUDGETLAB_MAX_CELLS) is below the contract's refuses a large
    request whole: its rounds are paid one step each and the next requests are smaller, the run unchanged."""
    sequential, _, _, _ = paired_runs("ridge", monkeypatch)
    session = oracle("ridge")
    session.local.runtime = replace(session.local.runtime, max_cells=10 * int(DATA["d"]))  # 10 rounds of them all
    sizes: list[int] = []
    session.paid_steps = counted(session.paid_steps, sizes)  # type: ignore[method-assign]
    again = run_algorithm("ridge", session, seed=3, eval_every=EVERY)
    same(sequential, again)
    assert sizes[:3] == [EVERY, EVERY // 2, EVERY // 4] and max(sizes[3:]) <= 10


class UnknownAtSeven(Algorithm):
    """Chooses ahead, and asks for an attribute the data does not have on its eighth example."""

    id, name, paper, algorithm = "unknown-at-seven", "unknown at seven", "none", "none"

    def __init__(self, problem: Problem, seed: int = 0) -> None:
        super().__init__(problem, seed)
        self.seen = 0
        self.w = np.zeros(problem.d)

    def choice(self, t: int) -> list[int]:
        return [self.problem.d] if t == 7 else [t % self.problem.d]

    def select(self) -> Sequence[int]:
        return self.choice(self.seen)

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        return [self.choice(t) for t in range(self.seen, self.seen + limit)]

    def update(self, observed: Observed, y: float) -> None:
        for j, value in observed.items():
            self.w[j] += value * y
        self.seen += 1

    @property
    def weights(self) -> np.ndarray:
        return self.w.copy()


def test_a_round_refused_for_its_attributes_ends_the_run_where_one_step_a_request_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ends = []
    for rounds in (1, runner.ROUNDS_PER_REQUEST):
        monkeypatch.setattr(runner, "ROUNDS_PER_REQUEST", rounds)
        ends.append(run_algorithm(f"{__name__}:UnknownAtSeven", oracle("exploration"), seed=3, eval_every=EVERY))
    same(*ends)
    assert ends[1].status == "failed" and ends[1].examples == 7 and "attribute" in ends[1].message


class KeepsItsDraws(Algorithm):
    """Chooses ahead as the contract asks: uniform draws, each kept for its example's update."""

    id, name, paper, algorithm = "keeps-its-draws", "keeps its draws", "none", "none"

    def __init__(self, problem: Problem, seed: int = 0) -> None:
        super().__init__(problem, seed)
        self.drawn: list[int] = []
        self.ahead: Ahead[list[int]] = Ahead()
        self.w = np.zeros(problem.d)

    def draw(self) -> list[int]:
        drawn: list[int] = self.rng.choice(self.problem.d, size=self.problem.budget, replace=False).tolist()
        return drawn

    def select(self) -> Sequence[int]:
        self.drawn = self.draw()
        return self.drawn

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        return list(self.ahead.keep([self.draw() for _ in range(limit)]))

    def update(self, observed: Observed, y: float) -> None:
        self.drawn = self.ahead.take(self.drawn)
        self.w[self.drawn[0]] += y  # the first attribute drawn: an order only the draws know

    @property
    def weights(self) -> np.ndarray:
        return self.w.copy()


class ForgetsItsDraws(KeepsItsDraws):
    """Chooses the same attributes ahead, but its update reads the last draws made, not its example's."""

    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        return [self.select() for _ in range(limit)]


class DrawsInUpdate(KeepsItsDraws):
    """Its update draws from the generator its choices draw from: chosen ahead, the draws come in another order."""

    def update(self, observed: Observed, y: float) -> None:
        super().update(observed, y + self.rng.random())


class ChoosesTooMany(KeepsItsDraws):
    def select_ahead(self, limit: int) -> list[Sequence[int]]:
        return super().select_ahead(limit + 1)


def test_the_contract_check_judges_choosing_ahead_where_it_is_offered() -> None:
    """``budgetlab algorithms check`` adds a point for an algorithm that offers ``select_ahead``: it passes where the
    choices and the weights are those of the run one by one, and names what breaks it."""
    assert [v.point for v in check("aerr")] == list(POINTS)  # not offered: not judged
    for name in ("exploration", f"{__name__}:KeepsItsDraws"):
        verdicts = check(name)
        assert [v.point for v in verdicts] == [*POINTS, AHEAD_POINT] and all(v.passed for v in verdicts), verdicts
    for broken, reason in [("ForgetsItsDraws", "the same choices ended with other weights"),
                           ("DrawsInUpdate", "example 2: select_ahead chose"),
                           ("ChoosesTooMany", "select_ahead(1) at example 0 chose 2 examples")]:
        verdicts = check(f"{__name__}:{broken}")
        assert [v.passed for v in verdicts] == [True] * len(POINTS) + [False], verdicts
        assert verdicts[-1].point == AHEAD_POINT and verdicts[-1].reason.startswith(reason), verdicts[-1]


class OnlineAhead(Algorithm):
    """An online learner that offers to choose ahead: its rounds each wait for a prediction, so it is never asked."""

    id, name, paper, algorithm = "online-ahead", "online ahead", "none", "none"
    protocol = "online"

    def select(self) -> Sequence[int]:
        return [0]

    def select_ahead(self, limit: int) -> list[Sequence[int]] | None:
        raise AssertionError("an online run chose ahead")

    def update(self, observed: Observed, y: float) -> None:
        pass

    @property
    def weights(self) -> np.ndarray:
        return np.zeros(self.problem.d)


def test_an_online_run_never_chooses_ahead() -> None:
    session = LocalOracle("sparse-gaussian", dataset_params=DATA, budget=Budget(per_example=K), protocol="online")
    run = Learning(OnlineAhead(Problem(d=20, k=K, n_examples=10)), session, RunResult(
        algorithm="online-ahead", dataset="sparse-gaussian", seed=0, status="running"))
    assert not run.chooses_ahead
    assert run.learn(10, 5, None, None) == ("finished", "")
    assert run.examples == 10


def test_each_request_names_the_step_it_pays_for_as_a_step_would() -> None:
    """``paid_steps`` answers what ``paid_step`` of each selection in turn answers, and tracks the same payments."""
    one, other = oracle("exploration"), oracle("exploration")
    selections = [[3, 0, 7], [5, 1], [19]]
    in_turn: list[PaidStep] = [one.paid_step(s) for s in selections]
    assert other.paid_steps(selections) == in_turn
    assert (one.spent, one.attributes) == (other.spent, other.attributes) == (6.0, 6)


def test_the_listing_says_which_algorithms_choose_ahead() -> None:
    """``budgetlab algorithms`` (its JSON and its table) and the learner's listing (``info()``) say which algorithms
    choose ahead: exactly those the runner lets choose ahead."""
    import json

    from typer.testing import CliRunner

    from client.cli import app

    assert {"ridge", "exploration", "hybrid"} <= set(AHEAD) and not {"aerr", "aelr", "aer"} & set(AHEAD)
    listed = CliRunner().invoke(app, ["algorithms", "--json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(a["id"] for a in json.loads(listed.output) if a["chooses_ahead"]) == AHEAD
    table = CliRunner().invoke(app, ["algorithms"], env={"COLUMNS": "80"})
    # Each algorithm's first two lines of the table: its id in the first cell, its protocol in the third.
    lines = [cells for line in table.output.splitlines() if len(cells := line.split("│")) == 6]
    protocols = {cells[1].strip(): " ".join(f"{cells[3]} {'' if after[1].strip() else after[3]}".split())
                 for cells, after in zip(lines, [*lines[1:], ["", "-", "", ""]], strict=True) if cells[1].strip()}
    assert {name for name, protocol in protocols.items() if protocol == "batch, ahead"} == set(AHEAD)
    assert protocols["aerr"] == "batch" and protocols["uniform"] == "online"
