"""``SensingEnv``: active feature acquisition at prediction time as a Gymnasium environment over an oracle session.

One episode is one example of the session's stream: each step either pays for one attribute of it (the reward is
minus its cost, times ``cost_weight``) or ends the episode with a prediction (the reward is minus its loss), as in
Janisch et al. (2019), "classification with costly features". Every read and prediction is a request of the session
(``observe`` and ``predict`` of the online protocol, as a test session predicts on a budget), so the session's
budgets hold (a read they refuse truncates the episode, charging nothing) and, on a real oracle, its ledger records
the whole evaluation: what was paid for, each value once, and every prediction's loss.
"""

from __future__ import annotations

from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget, ExamplePart, Remaining
from budgetlab.contract.sessions import Split
from budgetlab.datasets.registry import label_classes
from budgetlab.errors import Refused, StreamExhausted
from budgetlab.sensing.sessions import Session, SessionSpec, source

Observation = dict[str, np.ndarray]
# The reason a read of an attribute already read ends the episode: the oracle would serve it again for free, so it
# is no refusal of its, but it is a step that learns nothing (Janisch et al. mask such actions).
ALREADY_READ = "already_read"


def shard_part(shard: tuple[int, int], n_examples: int) -> ExamplePart:
    """The i-th of n equal parts (their sizes differ by one at most) of a split of ``n_examples``."""
    index, count = shard
    if not 0 <= index < count <= n_examples:
        raise ValueError(f"shard {shard} is not the i-th of n <= {n_examples} parts (0 <= i < n)")
    return ExamplePart(start=index * n_examples // count, stop=(index + 1) * n_examples // count)


class SensingEnv(gym.Env[Observation, Any]):
    """Read attributes of one example at a time, paying for each, then predict its label (see the module).

    ``oracle`` None runs an in-memory ``LocalSession`` (fast, for training); a URL runs a session of that oracle,
    over HTTP or (``stream``) its session stream, with the same observations and rewards. ``reads`` is the session's
    local budget k (default d), ``total`` its global budget K (default none), ``costs`` the attributes' prices
    (default the dataset's, else 1 each). ``shard`` (i, n) serves only the i-th of n equal parts of the split's
    seeded order (the vector form gives each of its environments one). ``reset(seed=s)`` opens a new session on seed
    s: the same seed reproduces the same episodes; when a session's split is used up, the next reset starts it again
    (a new session on the same seed: an epoch)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, dataset: str = "cube", dataset_params: dict[str, ParamValue] | None = None,
                 split: Split = "test", seed: int = 0, reads: int | None = None, costs: list[float] | None = None,
                 cost_weight: float = 1.0, oracle: str | None = None, stream: bool = False,
                 api_key: str | None = None, total: float | None = None, shard: tuple[int, int] | None = None) -> None:
        self._source = source(oracle, stream=stream, api_key=api_key)
        params = dict(dataset_params or {})
        info = self._source.describe(SessionSpec(dataset, params, split, Budget()), seed)
        d = info.n_attributes
        if costs is not None and len(costs) != d:
            raise ValueError(f"costs must have d={d} entries, got {len(costs)}")
        self.n_attributes = d
        self.task = info.task
        self.classes: tuple[float, ...] = label_classes(dataset) if info.task == "classification" else ()
        self.costs = np.asarray(costs if costs is not None else info.costs or [1.0] * d, dtype=np.float64)
        self.cost_weight = float(cost_weight)
        part = None if shard is None else shard_part(shard, info.n_train if split == "train" else info.n_test)
        budget = Budget(per_example=d if reads is None else reads, total=total, costs=costs, part=part)
        self._spec = SessionSpec(dataset, params, split, budget)
        # gymnasium types a Dict space's observations as objects: they are this environment's arrays.
        self.observation_space = cast(spaces.Space[Observation], spaces.Dict({
            "values": spaces.Box(-np.inf, np.inf, shape=(d,), dtype=np.float64),
            "mask": spaces.MultiBinary(d),
            "budget_left": spaces.Box(0.0, float(self.costs.sum()), shape=(1,), dtype=np.float64),
        }))
        self.action_space: spaces.Space[Any] = (
            spaces.Discrete(d + len(self.classes)) if self.classes
            else spaces.Tuple((spaces.Discrete(d + 1), spaces.Box(-np.inf, np.inf, shape=(), dtype=np.float64))))
        self._seed = seed
        self.session: Session = self._source.open(self._spec, seed)
        self._fresh = True  # nothing issued yet by this session: a reset on its own seed need not open another
        self._example = -1
        self._done = True
        self._values = np.zeros(d, dtype=np.float64)
        self._mask = np.zeros(d, dtype=np.int8)
        self._cost = 0.0
        self._left: Remaining = Remaining()

    # --- actions --------------------------------------------------------------------------------------------

    def read_action(self, attribute: int) -> Any:
        """The action that reads ``attribute``."""
        if not 0 <= attribute < self.n_attributes:
            raise ValueError(f"attribute {attribute} is not in 0..{self.n_attributes - 1}")
        return attribute if self.classes else (attribute, np.array(0.0))

    def predict_action(self, prediction: float) -> Any:
        """The action that ends the episode predicting ``prediction`` (a class value, or a number)."""
        if not self.classes:
            return (self.n_attributes, np.array(float(prediction)))
        if float(prediction) not in self.classes:
            raise ValueError(f"{prediction!r} is not a class of {self._spec.dataset}: {self.classes}")
        return self.n_attributes + self.classes.index(float(prediction))

    def _decode(self, action: Any) -> tuple[int | None, float]:
        """(the attribute to read, 0) or (None, the prediction)."""
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not an action of {self.action_space}")
        if self.classes:
            choice = int(action)
            return (choice, 0.0) if choice < self.n_attributes else (None, self.classes[choice - self.n_attributes])
        choice, value = int(action[0]), float(action[1])
        return (choice, 0.0) if choice < self.n_attributes else (None, value)

    # --- the episode ----------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation,
                                                                                                 dict[str, Any]]:
        """The session's next example (``seed``: of a new session on that seed)."""
        super().reset(seed=seed)
        if seed is not None and not (seed == self._seed and self._fresh):
            self._reopen(seed)
        try:
            issued = self.session.next()
        except StreamExhausted:
            self._reopen(self._seed)
            issued = self.session.next()
        self._fresh = False
        self._example, self._left, self._done = issued.example, issued.remaining, False
        self._values = np.zeros(self.n_attributes, dtype=np.float64)
        self._mask = np.zeros(self.n_attributes, dtype=np.int8)
        self._cost = 0.0
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("the episode is over: call reset() for the next example")
        attribute, prediction = self._decode(action)
        return self._predict(prediction) if attribute is None else self._read(attribute)

    def _read(self, attribute: int) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self._mask[attribute]:
            return self._truncate(ALREADY_READ)
        try:
            answer = self.session.observe(self._example, [attribute])
        except Refused as exc:
            return self._truncate(exc.error)
        self._values[attribute] = answer.values[0]
        self._mask[attribute] = 1
        self._cost += answer.charged
        self._left = answer.remaining
        return self._observation(), -self.cost_weight * answer.charged, False, False, self._info()

    def _predict(self, prediction: float) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        try:
            answer = self.session.predict(self._example, prediction)
        except Refused as exc:
            return self._truncate(exc.error)
        self._done = True
        loss = float(answer.prediction != answer.label) if self.classes else answer.loss
        info = {**self._info(), "prediction": answer.prediction, "label": answer.label, "loss": loss}
        return self._observation(), -loss, True, False, info

    def _truncate(self, reason: str) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """The episode ends on a step that was refused (or learns nothing): nothing charged, no reward."""
        self._done = True
        return self._observation(), 0.0, False, True, {**self._info(), "truncated_reason": reason}

    def _observation(self) -> Observation:
        return {"values": self._values.copy(), "mask": self._mask.copy(),
                "budget_left": np.array([self._budget_left()], dtype=np.float64)}

    def _budget_left(self) -> float:
        """The most the episode may still pay: its most expensive unread attributes within what is left of the
        local budget k, and no more than what is left of the global budget K."""
        reads_left = self._left.example_attributes
        unread = np.sort(self.costs[self._mask == 0])[::-1]
        most = float(unread[: len(unread) if reads_left is None else reads_left].sum())
        return most if self._left.total is None else min(most, self._left.total)

    def _info(self) -> dict[str, Any]:
        return {"example": self._example, "reads": int(self._mask.sum()), "cost": self._cost}

    # --- sessions -------------------------------------------------------------------------------------------

    def _reopen(self, seed: int) -> None:
        """A new session on ``seed``; the old one is closed (on an oracle its ledger stays readable and auditable)."""
        self.session.close()
        self._seed = seed
        self.session = self._source.open(self._spec, seed)
        self._fresh = True

    def close(self) -> None:
        self.session.close()
        self._source.close()
