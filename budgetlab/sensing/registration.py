"""The environment's ids in gymnasium's registry, ``budgetlab/<dataset>-v0`` for every built-in dataset (the example
``budgetlab datasets`` lists of a family) and ``budgetlab/sensing-v0`` for any dataset (``dataset=`` a user's own),
and its vector form: ``gymnasium.make_vec`` runs ``num_envs`` environments on one seed's session order, each on its
own part of the split, so that together they read every example once and no two of them the same one.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import SyncVectorEnv

from budgetlab.datasets.registry import BUILTINS
from budgetlab.sensing.env import Observation, SensingEnv

NAMESPACE = "budgetlab"
ANY_DATASET = f"{NAMESPACE}/sensing-v0"
ENTRY_POINT = "budgetlab.sensing.env:SensingEnv"
VECTOR_ENTRY_POINT = "budgetlab.sensing.registration:make_vector"


def env_id(dataset: str) -> str:
    """The registered id of a built-in dataset's environment."""
    return f"{NAMESPACE}/{dataset}-v0"


def registered_ids() -> list[str]:
    """Every id this module registers, the one for any dataset first."""
    return [ANY_DATASET, *(env_id(family.example) for family in BUILTINS)]


def register_envs() -> None:
    """Register the ids (again: a module reloaded finds them there, and gymnasium warns on a second registration)."""
    datasets = [None, *(family.example for family in BUILTINS)]
    for name, dataset in zip(registered_ids(), datasets, strict=True):
        if name not in gym.registry:
            gym.register(name, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT,
                         kwargs={} if dataset is None else {"dataset": dataset})


class SensingVectorEnv(SyncVectorEnv):
    """``num_envs`` environments on parts of one session order; ``reset(seed=s)`` reopens every one on seed s (where
    gymnasium's own vector environments would give the i-th s + i: here that would be other data, not other parts of
    the same)."""

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        return super().reset(seed=[seed] * self.num_envs if isinstance(seed, int) else seed, options=options)


def make_vector(num_envs: int = 1, **kwargs: Any) -> SensingVectorEnv:
    """``num_envs`` ``SensingEnv(**kwargs)``, the i-th on the i-th of ``num_envs`` parts of the split."""
    if num_envs < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs}")
    kwargs.pop("max_episode_steps", None)  # an episode ends by itself: within d + 1 steps

    def one(index: int) -> Any:
        return lambda: SensingEnv(**kwargs, shard=(index, num_envs))

    return SensingVectorEnv([one(i) for i in range(num_envs)])
