"""The acquisition policies (learner/sensing/): each reads only unread attributes its budget affords, decides from
the read values alone, and the Cesa-Bianchi et al. policy follows learner.prediction_budget's rule; the evaluation
session's audit finds a read the session did not pay for."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from budgetlab.local_session import LocalSession
from budgetlab.sensing import SensingEnv
from learner.prediction_budget import top_k_attributes
from learner.sensing.adapter import play_many
from learner.sensing.evaluation import POLICIES, audit_session
from learner.sensing.policy import Policy
from learner.sensing.training import TrainingRead, read_training_split

D = 20


@pytest.fixture(scope="module")
def cube_train() -> TrainingRead:
    return read_training_split(LocalSession.open("cube", split="train", seed=0), 400)


@pytest.fixture(scope="module")
def diabetes_train() -> TrainingRead:
    return read_training_split(LocalSession.open("diabetes", split="train", seed=0), 200)


def fitted(name: str, read: TrainingRead, task: str = "classification", costs: np.ndarray | None = None) -> Policy:
    policy = POLICIES[name](0, 5)
    d = read.X.shape[1]
    policy.fit(read.X, read.y, np.ones(d) if costs is None else costs, task)  # type: ignore[arg-type]
    return policy


def states(read: TrainingRead, count: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(values, mask) of training rows with a few attributes read: the rest of ``values`` is 0, as the
    environment leaves it."""
    rng = np.random.default_rng(1)
    d = read.X.shape[1]
    for row in read.X[:count]:
        mask = np.zeros(d, dtype=np.int8)
        mask[rng.choice(d, size=int(rng.integers(0, 4)), replace=False)] = 1
        yield np.where(mask == 1, row, 0.0), mask


@pytest.mark.parametrize("name", list(POLICIES))
def test_a_policy_reads_an_unread_attribute_it_can_afford_and_stops_when_none_is_left(
        name: str, cube_train: TrainingRead) -> None:
    costs = np.where(np.arange(D) % 2 == 0, 1.0, 3.0)
    policy = fitted(name, cube_train, costs=costs)
    for values, mask in states(cube_train, 20):
        choice = policy.act(values, mask, 2.0)
        assert choice is None or (mask[choice] == 0 and costs[choice] <= 2.0)
        assert policy.act(values, mask, 0.5) is None  # nothing costs under 1
        assert policy.predict(values, mask) in set(cube_train.y.tolist())


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("dataset", ["cube", "diabetes"])
def test_an_unread_attribute_is_absent_whatever_its_slot_holds(name: str, dataset: str, cube_train: TrainingRead,
                                                               diabetes_train: TrainingRead) -> None:
    read, task = (cube_train, "classification") if dataset == "cube" else (diabetes_train, "regression")
    d = read.X.shape[1]
    policy = fitted(name, read, task)
    noise = np.random.default_rng(2)
    for values, mask in states(read, 15):
        garbage = np.where(mask == 1, values, noise.normal(0, 5, d))
        assert decisions(policy, garbage, mask) == decisions(policy, values, mask)


def decisions(policy: Policy, values: np.ndarray, mask: np.ndarray) -> tuple[int | None, float]:
    if hasattr(policy, "rng"):  # a policy that draws: the same draws each time
        policy.rng = np.random.default_rng(7)
    return policy.act(values, mask, 3.0), policy.predict(values, mask)


def test_the_budget_policy_reads_its_predictors_top_weights_in_order(cube_train: TrainingRead) -> None:
    policy = fitted("budget", cube_train)
    importance = policy.importance  # type: ignore[attr-defined]
    mask = np.zeros(D, dtype=np.int8)
    values = np.zeros(D)
    for k in range(1, 6):
        choice = policy.act(values, mask, 10.0)
        assert choice is not None
        mask[choice] = 1
        assert sorted(np.flatnonzero(mask).tolist()) == top_k_attributes(importance, k)


def test_the_static_policy_reads_the_same_attributes_of_every_example(cube_train: TrainingRead) -> None:
    policy = fitted("static", cube_train)
    env = SensingEnv("cube", split="test", seed=0, reads=3)
    episodes = play_many(env, policy, 20, seed=0)
    assert len({e.reads for e in episodes}) == 1
    assert episodes[0].reads == tuple(policy.order[:3].tolist())  # type: ignore[attr-defined]


def test_greedy_reads_differ_from_example_to_example_on_cube(cube_train: TrainingRead) -> None:
    env = SensingEnv("cube", split="test", seed=0, reads=3)
    episodes = play_many(env, fitted("greedy", cube_train), 30, seed=0)
    assert len({e.reads for e in episodes}) > 3
    assert len({e.reads[0] for e in episodes}) == 1  # before any value, the same first choice


def test_the_audit_names_a_read_the_session_did_not_pay_for(cube_train: TrainingRead) -> None:
    env = SensingEnv("cube", split="test", seed=0, reads=2)
    episodes = play_many(env, fitted("random", cube_train), 10, seed=0)
    honest = audit_session(env, episodes, 2)
    assert honest.compliant and honest.reads == honest.paid == 20 and honest.max_per_example == 2
    last = episodes[-1]
    unread = next(a for a in range(D) if a not in last.reads)
    claimed = [*episodes[:-1], dataclasses.replace(last, reads=(*last.reads, unread))]
    forged = audit_session(env, claimed, 2)
    assert not forged.compliant
    assert any(reason.startswith(f"example {last.example}: ") for reason in forged.reasons)
    assert "the episodes read 21 attributes, the session paid for 20" in forged.reasons
