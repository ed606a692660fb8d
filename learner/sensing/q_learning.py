"""``q-learning``: a policy trained by reinforcement learning on the environment itself, with numpy alone: Watkins'
Q-learning (Sutton & Barto 2018, §6.5) with a linear action-value function, as Janisch et al. (2019) frame costly
feature acquisition (their Q-network made linear). The state's features are what the shared Gaussian model believes
of the example (the posterior over the classes; for regression the standardised read values), the mask and a
constant, so that a linear Q can learn "this class is likely, so read that attribute" on a set such as CUBE whose
informative attributes vary from example to example. The actions are the affordable reads and the prediction, whose
reward is minus the loss of the model's prediction; a read's reward is minus lambda times its cost. The worked
example that the environment trains something: ``train`` runs its episodes on a ``SensingEnv``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from learner.sensing.gaussian import ClassGaussian
from learner.sensing.policy import ModelPolicy, affordable

if TYPE_CHECKING:
    from budgetlab.sensing import SensingEnv


class QLearningPolicy(ModelPolicy):
    """A linear Q over (belief, mask, 1) for each read and for the prediction; greedy in it once trained."""

    name = "q-learning"

    def __init__(self, seed: int = 0, learning_rate: float = 0.1, epsilon: float = 0.5) -> None:
        self.rng = np.random.default_rng(seed)
        self.learning_rate = learning_rate
        self.epsilon = epsilon
        self.exploring = False

    def fitted(self, X: np.ndarray, y: np.ndarray) -> None:
        self.d = X.shape[1]
        belief = len(self.model.classes) if isinstance(self.model, ClassGaussian) else self.d
        # One row per action: the d reads, then the prediction (the last row).
        self.theta = np.zeros((self.d + 1, belief + self.d + 1))

    def features(self, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        model = self.model
        if isinstance(model, ClassGaussian):
            belief = model.posterior(values, mask)
        else:
            belief = np.where(mask == 1, (values - model.center[:-1]) / model.scale[:-1], 0.0)
        return np.concatenate([belief, mask, [1.0]])

    def _allowed(self, mask: np.ndarray, budget_left: float) -> np.ndarray:
        """The actions allowed: the affordable reads, else the prediction. The policy reads all its budget allows
        (the evaluation's budgets are what it may read), so it learns which attribute to read, not when to stop:
        a learned stop, whose value bootstraps from noisy 0-1 losses, stopped some seeds after one read."""
        reads = affordable(mask, self.costs, budget_left)
        return np.append(reads, not reads.any())

    def _choose(self, phi: np.ndarray, allowed: np.ndarray) -> int:
        if self.exploring and self.rng.random() < self.epsilon:
            return int(self.rng.choice(np.flatnonzero(allowed)))
        return int(np.argmax(np.where(allowed, self.theta @ phi, -np.inf)))

    def act(self, values: np.ndarray, mask: np.ndarray, budget_left: float) -> int | None:
        action = self._choose(self.features(values, mask), self._allowed(mask, budget_left))
        return None if action == self.d else action

    def update(self, phi: np.ndarray, action: int, reward: float, after: np.ndarray | None,
               allowed: np.ndarray | None) -> None:
        """One Q-learning step: Q(s, a) toward r + max over the next state's allowed actions (r alone at the end),
        the step normalised by |phi|^2 (normalised LMS), so that the rate does not depend on the features' scale."""
        target = reward
        if after is not None and allowed is not None:
            target += float(np.max(np.where(allowed, self.theta @ after, -np.inf)))
        error = target - float(self.theta[action] @ phi)
        self.theta[action] += self.learning_rate * error * phi / float(phi @ phi)


def train(policy: QLearningPolicy, env: SensingEnv, episodes: int, seed: int) -> list[tuple[float, float]]:
    """Q-learning on ``episodes`` episodes of ``env`` (its sessions on ``seed``, epoch after epoch), exploring
    epsilon-greedily; each episode's return and the cost it paid, in order. The policy must be fitted first (its
    model gives the features and the predictions)."""
    policy.exploring = True
    start = policy.epsilon
    found = []
    try:
        for i in range(episodes):
            # Exploration decays linearly to a tenth of its start over the episodes.
            policy.epsilon = start * (1.0 - 0.9 * i / max(episodes, 1))
            found.append(_episode(policy, env, seed if i == 0 else None))
    finally:
        policy.exploring, policy.epsilon = False, start
    return found


def _episode(policy: QLearningPolicy, env: SensingEnv, seed: int | None) -> tuple[float, float]:
    observation, _ = env.reset(seed=seed)
    total = 0.0
    while True:
        values, mask = observation["values"], observation["mask"]
        phi, allowed = policy.features(values, mask), policy._allowed(mask, float(observation["budget_left"][0]))
        action = policy._choose(phi, allowed)
        step: Any = env.predict_action(policy.predict(values, mask)) if action == policy.d else env.read_action(action)
        observation, reward, terminated, truncated, info = env.step(step)
        total += float(reward)
        if terminated or truncated:
            policy.update(phi, action, float(reward), None, None)
            return total, float(info["cost"])
        after = observation["mask"]
        policy.update(phi, action, float(reward), policy.features(observation["values"], after),
                      policy._allowed(after, float(observation["budget_left"][0])))
