"""The active-sensing environment in memory (issue #38 item 1): gymnasium's checker on every registered id, rewards
that add up to minus the weighted cost paid and the loss, budgets that truncate a read and charge nothing, seeds that
reproduce the episodes, the vector form's parts, and the cube dataset's informative attributes.

``play`` is the scripted policy the end-to-end test (tests/e2e/test_sensing_oracle.py) also runs on a real oracle."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from budgetlab.datasets import list_datasets, load_dataset
from budgetlab.datasets.cube import BITS, CLASSES, informative_attributes
from budgetlab.datasets.registry import BUILTINS
from budgetlab.sensing import ANY_DATASET, SensingEnv, env_id, registered_ids

# Small sets: a generated family at these sizes builds in milliseconds (sparse-gaussian's default takes 5 s).
SMALL: dict[str, Any] = {"n_train": 40, "n_test": 24}
COSTS = [0.5 + 0.25 * (i % 4) for i in range(20)]


def small_params(dataset: str) -> dict[str, Any]:
    family = next(f for f in BUILTINS if f.match(dataset) is not None)
    return dict(SMALL) if any(p.name == "n_train" for p in family.params) else {}


def scripted(env: SensingEnv, episode: int, obs: dict[str, np.ndarray]) -> Any:
    """A policy that reads from what it saw: 1 to 4 reads (the fourth past a local budget of 3), an attribute read
    twice on some episodes, then a prediction made from the values read."""
    values, mask = obs["values"], obs["mask"]
    reads = int(mask.sum())
    score = int(abs(float(values.sum())) * 1000)
    if episode % 5 == 2 and reads == 1:
        return env.read_action(int(np.flatnonzero(mask)[0]))
    if reads < 1 + episode % 4:
        unread = np.flatnonzero(mask == 0)
        return env.read_action(int(unread[(score + 7 * episode) % len(unread)]))
    return env.predict_action(env.classes[score % len(env.classes)] if env.classes else score / 1000)


def play(env: SensingEnv, episodes: int, seed: int | None) -> list[dict[str, Any]]:
    """Each step of ``episodes`` episodes of ``scripted``, the first reset on ``seed``: what it saw and got."""
    steps = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(scripted(env, episode, obs))
            done = terminated or truncated
            steps.append({"episode": episode, "values": obs["values"].tolist(), "mask": obs["mask"].tolist(),
                          "budget_left": float(obs["budget_left"][0]), "reward": float(reward),
                          "terminated": terminated, "truncated": truncated, "info": info})
    return steps


def episode_sums(steps: list[dict[str, Any]]) -> dict[int, tuple[float, dict[str, Any]]]:
    """Each episode's summed reward and its last step's info."""
    sums: dict[int, tuple[float, dict[str, Any]]] = {}
    for step in steps:
        total = sums.get(step["episode"], (0.0, {}))[0]
        sums[step["episode"]] = (total + step["reward"], step["info"])
    return sums


@pytest.mark.parametrize("name", registered_ids())
def test_check_env_passes_on_every_registered_id(name: str) -> None:
    dataset = gym.spec(name).kwargs.get("dataset", "cube")
    family = next(f for f in BUILTINS if f.match(dataset) is not None)
    if not family.available():
        pytest.skip(f"{dataset}'s data are not installed here")
    env = gym.make(name, dataset_params=small_params(dataset))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its advice about unbounded Box spaces: values and predictions are real
        check_env(env.unwrapped)
    assert isinstance(env.unwrapped, SensingEnv) and env.unwrapped.session.info.dataset == dataset


def test_every_built_in_dataset_has_an_id_and_any_dataset_one() -> None:
    assert registered_ids() == [ANY_DATASET, *(env_id(f.example) for f in BUILTINS)]
    assert set(registered_ids()) <= set(gym.registry)
    assert gym.spec(env_id("cube")).kwargs == {"dataset": "cube"}


def test_the_spaces_follow_the_published_conventions() -> None:
    env = SensingEnv("cube", dataset_params=SMALL)
    assert env.n_attributes == 20 and env.task == "classification" and env.classes == CLASSES
    assert env.action_space == gym.spaces.Discrete(28)
    assert env.read_action(5) == 5 and env.predict_action(3.0) == 23
    regression = SensingEnv("online-sparse", dataset_params=SMALL)
    assert regression.classes == () and isinstance(regression.action_space, gym.spaces.Tuple)
    obs, _ = regression.reset(seed=0)
    obs, reward, terminated, _, info = regression.step(regression.predict_action(0.25))
    assert terminated and reward == -info["loss"] == -((0.25 - info["label"]) ** 2)
    with pytest.raises(ValueError, match="not a class"):
        env.predict_action(0.5)
    with pytest.raises(ValueError, match="settings of a real oracle"):
        SensingEnv("cube", dataset_params=SMALL, stream=True)


def test_an_episodes_rewards_are_minus_the_weighted_cost_paid_and_the_loss() -> None:
    env = SensingEnv("cube", dataset_params=SMALL, costs=COSTS, cost_weight=0.3, reads=3)
    sums = episode_sums(play(env, 12, seed=1))
    for total, info in sums.values():
        assert total == pytest.approx(-0.3 * info["cost"] - info.get("loss", 0.0), abs=1e-12)
    assert sum(info["cost"] for _, info in sums.values()) == pytest.approx(env.session.get().spent.cost, abs=1e-12)
    assert {info.get("truncated_reason") for _, info in sums.values()} == {None, "budget_exceeded", "already_read"}


def test_a_read_past_a_budget_truncates_with_its_reason_and_charges_nothing() -> None:
    env = SensingEnv("cube", dataset_params=SMALL, reads=2, total=3.0)
    env.reset(seed=0)
    for attribute in (4, 9):
        obs, reward, _, truncated, _ = env.step(env.read_action(attribute))
        assert reward == -1.0 and not truncated
    assert obs["budget_left"][0] == 0.0
    obs, reward, terminated, truncated, info = env.step(env.read_action(11))
    assert (reward, terminated, truncated, info["truncated_reason"]) == (0.0, False, True, "budget_exceeded")
    assert obs["mask"].sum() == 2 and env.session.get().spent.cost == 2.0
    obs, _ = env.reset()  # the global budget K = 3 leaves one read
    assert obs["budget_left"][0] == 1.0
    env.step(env.read_action(0))
    _, reward, _, truncated, info = env.step(env.read_action(1))
    assert (reward, truncated, info["truncated_reason"]) == (0.0, True, "budget_exceeded")
    assert env.session.get().spent.cost == 3.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.read_action(2))


def test_the_same_seed_reproduces_the_episodes_and_another_seed_does_not() -> None:
    first = play(SensingEnv("cube", dataset_params=SMALL, reads=3), 10, seed=7)
    again = SensingEnv("cube", dataset_params=SMALL, reads=3, seed=2)
    assert play(again, 10, seed=7) == first
    assert play(again, 10, seed=7) == first  # a reset on the seed reopens the session: the same episodes again
    assert play(again, 10, seed=8) != first


def test_a_used_up_split_starts_again_in_the_same_order() -> None:
    env = SensingEnv("cube", dataset_params={"n_train": 5, "n_test": 3})
    labels = []
    for episode in range(7):
        env.reset(seed=0 if episode == 0 else None)
        labels.append(env.step(env.predict_action(0.0))[4]["label"])
    assert labels[3:6] == labels[:3] and labels[6] == labels[0]


def test_the_vector_form_gives_each_environment_its_part_of_one_order() -> None:
    whole = SensingEnv("cube", dataset_params={"n_train": 5, "n_test": 6})
    labels = []
    for episode in range(6):
        whole.reset(seed=4 if episode == 0 else None)
        labels.append(whole.step(whole.predict_action(0.0))[4]["label"])
    vector = gym.make_vec(env_id("cube"), num_envs=2, dataset_params={"n_train": 5, "n_test": 6})
    vector.reset(seed=4)
    parts: list[list[float]] = [[], []]
    for _ in range(3):
        # A prediction ends every episode; the next step resets them (gymnasium's next-step autoreset).
        _, _, terminated, _, info = vector.step(np.array([20, 20]))
        assert terminated.all()
        for i in range(2):
            parts[i].append(float(info["label"][i]))
        vector.step(np.array([20, 20]))
    assert parts[0] + parts[1] == labels


def test_the_cube_datasets_informative_attributes_are_the_bits_of_its_class() -> None:
    """Attributes c, c+1, c+2 of class c are N(bit j of c, 0.1^2); every other one is uniform on [0, 1]. Over 20,000
    examples (about 2,500 a class) a mean's standard error is 0.002 (informative) to 0.006 (uniform): the tolerances
    are 5 of them."""
    data = load_dataset("cube", seed=0)
    X, y = np.asarray(data.X), np.asarray(data.y)
    assert data.d == 20 and set(np.unique(y)) == set(CLASSES)
    for c in range(len(CLASSES)):
        rows = X[y == c]
        informative = list(informative_attributes(c))
        assert informative == [c, c + 1, c + 2]
        means = [(c >> j) & 1 for j in range(BITS)]
        assert np.abs(rows[:, informative].mean(axis=0) - means).max() < 0.01
        assert np.abs(rows[:, informative].std(axis=0) - 0.1).max() < 0.01
        noise = np.delete(rows, informative, axis=1)
        assert np.abs(noise.mean(axis=0) - 0.5).max() < 0.03 and noise.min() >= 0.0 and noise.max() <= 1.0
    listed = {d.name: d for d in list_datasets().datasets}
    assert listed["cube"].task == "classification" and "CUBE" in listed["cube"].description
