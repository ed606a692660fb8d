"""The oracle a runner talks to: one session, reached over HTTP or in memory, through the same adapter.

``SessionOracle`` turns any session object with the SDK's methods (``budgetlab.oracle_client.OracleSession``
over HTTP, ``budgetlab.local_session.LocalSession`` in memory) into what the runner needs: ids, arrays and
labels. Both sessions run the one session engine, so the same algorithm with the same seed learns the same
weights through ``LocalOracle`` as through ``HttpOracle``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Protocol as TypingProtocol

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.calls import EvaluateResponse, MomentsResponse
from budgetlab.contract.sessions import Order, Protocol, Split
from budgetlab.datasets.base import Dataset
from budgetlab.engine import Round
from budgetlab.local_session import LocalSession
from learner.algorithms.base import PaidRow

# A step in plain values: the example, its label, the attributes paid for (ints) and their values (floats).
PaidStep = tuple[int, float | None, list[int], list[float]]

if TYPE_CHECKING:  # a LocalOracle's process need not import the HTTP client
    from budgetlab.oracle_client import OracleSession


class Oracle(TypingProtocol):
    """One oracle session, as the runner sees it."""

    session_id: str | None
    # The dataset's parameters as the oracle resolved them: typed, defaults included, whatever form the caller used.
    dataset_params: dict[str, ParamValue]
    d: int
    n_examples: int
    budget: Budget
    protocol: Protocol
    spent: float
    attributes: int

    def next(self) -> tuple[int, float | None]:
        """The next example of the stream and its label (None in the online protocol)."""

    def step(self, attributes: Sequence[int]) -> tuple[int, float | None, np.ndarray]:
        """``next`` and the values of these attributes of the issued example, in one request."""

    def step_observed(self, attributes: Sequence[int]) -> tuple[int, float | None, dict[int, float]]:
        """``step``, its values as an algorithm takes them: attribute (an int) -> value (a float)."""

    def step_row(self, attributes: Sequence[int]) -> tuple[int, float | None, PaidRow]:
        """``step_observed``, its values as a ``PaidRow`` (for an algorithm that ``takes_paid_row``)."""

    def steps_observed(self, selections: Sequence[Sequence[int]]) -> list[tuple[int, float | None, dict[int, float]]]:
        """``step_observed`` of each selection in turn, in one all-or-nothing request (a refusal of any round refuses
        them all and changes nothing: ``BudgetExhausted``, ``StreamExhausted``)."""

    def steps_row(self, selections: Sequence[Sequence[int]]) -> list[tuple[int, float | None, PaidRow]]:
        """``steps_observed``, each round's values as a ``PaidRow``."""

    def observe(self, example: int, attributes: Sequence[int]) -> np.ndarray: ...

    def label(self, example: int) -> float: ...

    def predict(self, example: int, prediction: float) -> float:
        """Commit a prediction; returns the revealed label."""

    def evaluate(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse: ...

    def second_moments(self) -> np.ndarray: ...

    def prior(self) -> MomentsResponse:
        """The declared prior knowledge: E[x_i^2] and the data's scale bounds (free, recorded in the ledger)."""

    def close(self) -> None: ...


class SessionOracle:
    """The runner's ``Oracle`` over one session object (remote or local); tracks what it paid."""

    def __init__(self, session: LocalSession | OracleSession, session_id: str | None) -> None:
        info = session.info
        assert info is not None, "a session's oracle is made once its session's configuration is known"
        self.session = session
        self.session_id = session_id
        self.dataset_params: dict[str, ParamValue] = dict(info.dataset_params)
        self.d: int = info.n_attributes
        self.n_examples: int = info.n_examples
        self.budget: Budget = info.budget
        self.protocol: Protocol = info.protocol
        self.spent = 0.0
        self.attributes = 0

    def next(self) -> tuple[int, float | None]:
        answer = self.session.next()
        return answer.example, answer.label

    def paid_step(self, attributes: Sequence[int]) -> PaidStep:
        """``step`` in plain values, what it paid tracked: the example, its label, the attributes (the request's, made
        ints by the session) and their values (floats)."""
        answer = self.session.step(attributes)
        self.attributes += answer.fresh
        self.spent = answer.spent
        return answer.example, answer.label, answer.attributes, answer.values

    def paid_steps(self, selections: Sequence[Sequence[int]]) -> list[PaidStep]:
        """``paid_step`` of each selection in turn, in one all-or-nothing ``steps`` request, what it paid tracked."""
        answer = self.session.steps(selections)
        for done in answer.rounds:
            self.attributes += done.fresh
        self.spent = answer.rounds[-1].spent
        return [(done.example, done.label, done.attributes, done.values) for done in answer.rounds]

    def steps_observed(self, selections: Sequence[Sequence[int]]) -> list[tuple[int, float | None, dict[int, float]]]:
        return [(example, label, dict(zip(paid, values, strict=True)))
                for example, label, paid, values in self.paid_steps(selections)]

    def steps_row(self, selections: Sequence[Sequence[int]]) -> list[tuple[int, float | None, PaidRow]]:
        return [(example, label, PaidRow(paid, values)) for example, label, paid, values in self.paid_steps(selections)]

    def step(self, attributes: Sequence[int]) -> tuple[int, float | None, np.ndarray]:
        example, label, _, values = self.paid_step(attributes)
        return example, label, np.asarray(values, dtype=np.float64)

    def step_observed(self, attributes: Sequence[int]) -> tuple[int, float | None, dict[int, float]]:
        example, label, paid, values = self.paid_step(attributes)
        return example, label, dict(zip(paid, values, strict=True))

    def step_row(self, attributes: Sequence[int]) -> tuple[int, float | None, PaidRow]:
        example, label, paid, values = self.paid_step(attributes)
        return example, label, PaidRow(paid, values)

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
        weights_list: list[float] = np.asarray(weights, dtype=np.float64).tolist()
        return self.session.evaluate(weights_list, bias)

    def second_moments(self) -> np.ndarray:
        return np.asarray(self.session.moments().second_moments, dtype=np.float64)

    def prior(self) -> MomentsResponse:
        return self.session.moments()

    def close(self) -> None:
        """Nothing to release: a session's ledger outlives its oracle object."""


class LocalOracle(SessionOracle):
    """An in-process oracle session over a ``Dataset`` (or a registered dataset name), with no ledger."""

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
        session = LocalSession.open(dataset, dataset_params=dataset_params, split=split, protocol=protocol,
                                    order=order, budget=budget, seed=seed)
        # No oracle session exists for a run in memory: results and scores say so with None.
        super().__init__(session, None)
        self.local = session
        self.dataset = session.runtime.dataset

    def paid_step(self, attributes: Sequence[int]) -> PaidStep:
        """A run's steps in plain values (``LocalSession.step_round``): the session's own step, without the request and
        answer models, which cost an in-process run as much as the step's rules."""
        done = self._step_round(attributes)
        return done.example, done.label, done.attributes, done.values

    def step_row(self, attributes: Sequence[int]) -> tuple[int, float | None, PaidRow]:
        done = self._step_round(attributes)  # ``paid_step``'s, without its tuple made and read again
        return done.example, done.label, PaidRow(done.attributes, done.values)

    def _step_round(self, attributes: Sequence[int]) -> Round:
        """The session's step, what it paid tracked."""
        done = self.local.step_round(attributes)
        self.attributes += len(done.values)  # what the answer's fresh says: every value of a step is fresh
        self.spent = done.counters.spent_cost
        return done

    def paid_steps(self, selections: Sequence[Sequence[int]]) -> list[PaidStep]:
        """``paid_step`` of each selection, applied at once, all or nothing (``LocalSession.step_rounds``)."""
        rounds = self.local.step_rounds(selections)
        for done in rounds:
            self.attributes += len(done.values)
        self.spent = rounds[-1].counters.spent_cost
        return [(done.example, done.label, done.attributes, done.values) for done in rounds]

    def evaluate(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse:
        # The session's evaluate of the array the request's list would be made of (``SessionOracle.evaluate``).
        return self.local.evaluate_array(np.asarray(weights, dtype=np.float64), bias)
