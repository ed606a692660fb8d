"""The training split read honestly: a session of the training split pays for every attribute of its first examples
(a ``step`` of all of them, the batch protocol revealing each label), so what the policies were fitted on is what a
ledger shows was paid for, and what that cost."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from budgetlab.errors import StreamExhausted
from budgetlab.local_session import LocalSession
from budgetlab.oracle_client import OracleSession


@dataclass(frozen=True)
class TrainingRead:
    """The values and labels paid for, and what the session charged."""

    X: np.ndarray
    y: np.ndarray
    cost: float
    attributes: int
    session: str


def read_training_split(session: LocalSession | OracleSession, examples: int) -> TrainingRead:
    """Every attribute of up to ``examples`` examples of an open training session (batch protocol, stream order):
    a ``LocalSession`` or the SDK's ``OracleSession``."""
    d = session.get().n_attributes
    everything = list(range(d))
    rows: list[list[float]] = []
    labels: list[float] = []
    cost = 0.0
    for _ in range(examples):
        try:
            answer = session.step(everything)
        except StreamExhausted:
            break
        rows.append(answer.values)
        if answer.label is None:
            raise ValueError("a training session of the batch protocol reveals each label with its step")
        labels.append(answer.label)
        cost += answer.charged
    return TrainingRead(X=np.array(rows, dtype=np.float64).reshape(len(rows), d), y=np.array(labels),
                        cost=cost, attributes=len(rows) * d, session=str(session.id))
