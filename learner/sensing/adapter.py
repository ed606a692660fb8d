"""Drive any acquisition policy (``learner.sensing.policy.Policy``) on a ``budgetlab.sensing.SensingEnv``: at each
step the policy sees the observation's values, mask and budget left, and its choice becomes the environment's action
(a read, or the prediction that ends the episode). The policy sees nothing but what the environment served, so what
it read is what the session paid for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from learner.sensing.policy import Policy

if TYPE_CHECKING:
    from budgetlab.sensing import SensingEnv


@dataclass(frozen=True)
class Episode:
    """One example's episode: what was read in order, what it cost, the prediction and its loss (None when the
    environment truncated the episode, with its reason)."""

    example: int
    reads: tuple[int, ...]
    cost: float
    reward: float
    prediction: float | None
    label: float | None
    loss: float | None
    truncated: str | None


def play(env: SensingEnv, policy: Policy, seed: int | None = None) -> Episode:
    """One episode of ``policy`` on the environment's next example (``seed``: of a new session on that seed)."""
    observation, info = env.reset(seed=seed)
    reads: list[int] = []
    total = 0.0
    while True:
        values, mask = observation["values"], observation["mask"]
        choice = policy.act(values, mask, float(observation["budget_left"][0]))
        action: Any = env.predict_action(policy.predict(values, mask)) if choice is None else env.read_action(choice)
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        if choice is not None and not truncated:
            reads.append(choice)
        if terminated or truncated:
            break
    return Episode(example=int(info["example"]), reads=tuple(reads), cost=float(info["cost"]), reward=total,
                   prediction=info.get("prediction"), label=info.get("label"), loss=info.get("loss"),
                   truncated=info.get("truncated_reason"))


def play_many(env: SensingEnv, policy: Policy, episodes: int, seed: int) -> list[Episode]:
    """``episodes`` episodes of a session on ``seed``: its first examples in the seed's order."""
    return [play(env, policy, seed=seed if i == 0 else None) for i in range(episodes)]

