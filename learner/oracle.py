"""The oracle a runner talks to, and ``LocalOracle``: the same budget rules, in-process.

``LocalOracle`` follows the server's semantics exactly (stream order from the same seed, local and
global budgets via ``budgetlab.budget``, free re-observation, one prediction per example), so the same
algorithm with the same seed learns the same weights through it as through ``HttpOracle``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol as TypingProtocol

import numpy as np

from budgetlab import budget as rules
from budgetlab.datasets.base import Dataset, stream_order
from budgetlab.errors import BudgetExhausted, OracleError, StreamExhausted
from budgetlab.evaluation import evaluate_weights
from budgetlab.models import Budget, EvaluateResponse, Order, ParamValue, Protocol, Split


class Oracle(TypingProtocol):
    """One oracle session, as the runner sees it."""

    session_id: str | None
    d: int
    n_examples: int
    budget: Budget
    protocol: Protocol
    spent: float
    attributes: int

    def next(self) -> tuple[int, float | None]:
        """The next example of the stream and its label (None in the online protocol)."""

    def observe(self, example: int, attributes: Sequence[int]) -> np.ndarray: ...

    def label(self, example: int) -> float: ...

    def predict(self, example: int, prediction: float) -> float:
        """Commit a prediction; returns the revealed label."""

    def evaluate(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse: ...

    def second_moments(self) -> np.ndarray: ...

    def close(self) -> None: ...


class LocalOracle:
    """An in-process oracle session over a ``Dataset`` (or a registered dataset name)."""

    def __init__(
        self,
        dataset: Dataset | str,
        *,
        dataset_params: dict[str, ParamValue] | None = None,
        split: Split = "train",
        protocol: Protocol = "batch",
        order: Order = "stream",
        budget: Budget | None = None,
        seed: int = 0,
    ) -> None:
        if isinstance(dataset, str):
            from budgetlab.datasets import load_dataset

            dataset = load_dataset(dataset, dataset_params or {}, seed)
        if split == "test" and protocol != "online":
            raise OracleError(422, "invalid_session", "a test session must use the online protocol")
        self.dataset = dataset
        self.split: Split = split
        self.protocol: Protocol = protocol
        self.order: Order = order
        self.budget = budget or Budget()
        self.seed = seed
        self.session_id: str | None = None
        self.d = dataset.d
        self.n_examples = dataset.n(split)
        self.costs = rules.attribute_costs(self.budget, dataset.costs, self.d)
        self._order = stream_order(self.n_examples, seed) if order == "stream" else None
        self._issued = 0
        self._observed: dict[int, set[int]] = {}
        self._predicted: set[int] = set()
        self.spent = 0.0
        self.attributes = 0
        self.labels = 0
        self.cumulative_loss = 0.0
        self.predictions = 0

    def _row(self, example: int) -> int:
        if self._order is None:
            if not 0 <= example < self.n_examples:
                raise OracleError(404, "unknown_example", f"example {example} is not in 0..{self.n_examples - 1}")
            return example
        if not 0 <= example < self._issued:
            raise OracleError(409, "example_not_issued", f"example {example} has not been issued by next")
        return int(self._order[example])

    def _reveal_label(self, example: int) -> float:
        rules.enforce_label(self.budget, self.spent)
        self.spent += self.budget.label_cost
        self.labels += 1
        return float(self.dataset.labels(self.split, np.array([self._row(example)]))[0])

    def next(self) -> tuple[int, float | None]:
        if self._order is None:
            raise OracleError(409, "pool_order", "a pool session addresses examples by id; there is no next")
        if self._issued >= self.n_examples:
            raise StreamExhausted()
        example = self._issued
        self._issued += 1
        if self.protocol == "online":
            return example, None
        try:
            return example, self._reveal_label(example)
        except rules.BudgetExceeded as exc:
            self._issued -= 1
            raise BudgetExhausted(exc.detail, exc.remaining) from None

    def observe(self, example: int, attributes: Sequence[int]) -> np.ndarray:
        attrs = np.asarray(list(attributes), dtype=np.int64)
        if attrs.size == 0:
            raise OracleError(422, "invalid_request", "attributes must not be empty")
        if len(set(attrs.tolist())) != attrs.size:
            raise OracleError(422, "duplicate_attributes", "an attribute is listed twice")
        if attrs.min() < 0 or attrs.max() >= self.d:
            raise OracleError(404, "unknown_attribute", f"attributes must be in 0..{self.d - 1}")
        row = self._row(example)
        seen = self._observed.get(example, set())
        fresh = [int(a) for a in attrs if int(a) not in seen]
        charge = float(self.costs[fresh].sum()) if fresh else 0.0
        try:
            rules.enforce(self.budget, self.spent, charge, {example: len(seen)}, {example: len(fresh)})
        except rules.BudgetExceeded as exc:
            raise BudgetExhausted(exc.detail, exc.remaining) from None
        self._observed.setdefault(example, set()).update(fresh)
        self.spent += charge
        self.attributes += len(fresh)
        return self.dataset.values(self.split, np.full(attrs.size, row), attrs)

    def label(self, example: int) -> float:
        if self.protocol == "online":
            raise OracleError(409, "online_protocol", "labels are revealed by predict in the online protocol")
        try:
            return self._reveal_label(example)
        except rules.BudgetExceeded as exc:
            raise BudgetExhausted(exc.detail, exc.remaining) from None

    def predict(self, example: int, prediction: float) -> float:
        if self.protocol != "online":
            raise OracleError(409, "batch_protocol", "predict belongs to the online protocol and test sessions")
        row = self._row(example)
        if example in self._predicted:
            raise OracleError(409, "already_predicted", f"a prediction for example {example} was already committed")
        self._predicted.add(example)
        y = float(self.dataset.labels(self.split, np.array([row]))[0])
        self.cumulative_loss += (prediction - y) ** 2
        self.predictions += 1
        return y

    def evaluate(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse:
        return evaluate_weights(self.dataset, weights, bias)

    def second_moments(self) -> np.ndarray:
        return self.dataset.second_moments().copy()

    def close(self) -> None:
        """Nothing to release in-process."""
