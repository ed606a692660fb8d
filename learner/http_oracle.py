"""``HttpOracle``: the runner's oracle over HTTP, through the SDK (the learner's only way to the server)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from budgetlab.models import Budget, EvaluateResponse, ParamValue, Protocol, Split
from budgetlab.oracle_client import OracleClient, OracleSession


class HttpOracle:
    """One oracle session on a remote oracle, opened on construction."""

    def __init__(
        self,
        url: str,
        dataset: str,
        *,
        dataset_params: dict[str, ParamValue] | None = None,
        split: Split = "train",
        protocol: Protocol = "batch",
        budget: Budget | None = None,
        seed: int = 0,
        client: OracleClient | None = None,
    ) -> None:
        self._owns_client = client is None
        self.client = client or OracleClient(url)
        self.budget = budget or Budget()
        self.session: OracleSession = self.client.open_session(
            dataset, dataset_params=dataset_params, split=split, protocol=protocol, budget=self.budget, seed=seed
        )
        info = self.session.info
        assert info is not None
        self.session_id: str | None = self.session.id
        self.protocol: Protocol = protocol
        self.d = info.d
        self.n_examples = info.n_examples
        self.spent = 0.0
        self.attributes = 0

    def next(self) -> tuple[int, float | None]:
        answer = self.session.next()
        return answer.example, answer.label

    def observe(self, example: int, attributes: Sequence[int]) -> np.ndarray:
        answer = self.session.observe(example, attributes)
        self.attributes += answer.fresh
        self.spent = answer.spent
        return np.asarray(answer.values, dtype=np.float64)

    def label(self, example: int) -> float:
        return self.session.label(example).label

    def predict(self, example: int, prediction: float) -> float:
        return self.session.predict(example, prediction).label

    def evaluate(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse:
        return self.session.evaluate(np.asarray(weights, dtype=np.float64).tolist(), bias)

    def second_moments(self) -> np.ndarray:
        return np.asarray(self.session.moments().second_moments, dtype=np.float64)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()
