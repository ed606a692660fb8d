"""``LocalSession``: an oracle session in memory, the session engine without its database.

It answers with the same models and refuses with the same errors as the SDK's ``OracleSession`` over HTTP,
because both run the one engine (``budgetlab.engine``) on requests made by the same table of operations
(``budgetlab.operations``), which gives it its methods. It keeps no hash chain and no ledger rows, only what the
rules need: which cells, labels and predictions were paid for (so it has no ``ledger`` and no ``audit``).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np

from budgetlab import engine
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.calls import EvaluateResponse
from budgetlab.contract.sessions import Order, Protocol, SessionInfo, Split
from budgetlab.datasets.base import Dataset
from budgetlab.engine import Counters, Event, Observations, Outcome, Round, Runtime, rows_of
from budgetlab.operations import (
    Kind,
    Operation,
    SessionOperations,
    SyncSession,
    session_create,
    step_attributes,
    step_selections,
)

A = TypeVar("A")

class MemoryPaid:
    """What a session paid for, in memory: the attributes of each example, revealed labels, predictions.

    Values are not kept: a paid cell is read again from the dataset, which is what the oracle served. An example's
    attributes are a tuple (the engine records fresh cells only, so none is there twice): a tuple of ints is one
    the garbage collector stops tracking, where a run of 100,000 examples' lists or sets made every full collection
    walk them all.
    """

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self.observed: dict[int, tuple[int, ...]] = {}
        self.labels: dict[int, float] = {}
        self.predictions: set[int] = set()

    def cells(self, examples: Sequence[int]) -> dict[tuple[int, int], float]:
        out: dict[tuple[int, int], float] = {}
        rt = self._rt
        for example in examples:
            attributes = self.observed.get(example)
            if attributes:
                attrs = sorted(attributes)
                row = example if rt.order is None else int(rt.order[example])
                values = rt.dataset.values(rt.config.split, np.full(len(attrs), row), np.asarray(attrs))
                out.update(zip(((example, a) for a in attrs), values.tolist(), strict=True))
        return out

    def label(self, example: int) -> float | None:
        return self.labels.get(example)

    def _add(self, example: int, attributes: list[int]) -> None:
        """These fresh attributes of ``example`` paid for."""
        before = self.observed.get(example)
        self.observed[example] = tuple(attributes) if before is None else before + tuple(attributes)

    def predicted(self, example: int) -> bool:
        return example in self.predictions

    def record(self, events: Sequence[Event | Observations]) -> None:
        """What these events of a step paid for."""
        for event in events:
            if isinstance(event, Observations):
                examples = event.examples
                if examples and examples[0] == examples[-1]:
                    # One example's cells (a step; the engine lists an example's cells together and no example
                    # twice): one tuple, no Python loop over up to d cells (a full-information run pays 784 cells an
                    # example, 9.4 million on a Fashion-MNIST pair).
                    self._add(examples[0], event.attributes)
                    continue
                start = 0
                for end in range(1, len(examples) + 1):
                    if end == len(examples) or examples[end] != examples[start]:
                        self._add(examples[start], event.attributes[start:end])
                        start = end
            elif event.kind == "label" and event.example is not None and event.value is not None:
                self.labels[event.example] = event.value
            elif event.kind == "predict" and event.example is not None:
                self.predictions.add(event.example)


class LocalSession(SyncSession, SessionOperations):
    """One in-process oracle session; the same methods and answers as ``budgetlab.oracle_client.OracleSession``."""

    def __init__(self, rt: Runtime, opened: Outcome[None]) -> None:
        self.id = f"local-{secrets.token_hex(8)}"
        self.token = ""
        self.runtime = rt
        self.counters: Counters = opened.counters
        self.ledger_rows = opened.rows
        self.created_at = datetime.now(UTC)
        self.paid = MemoryPaid(rt)
        self.info: SessionInfo = self._info()

    @classmethod
    def open(cls, dataset: str | Dataset, *, dataset_params: dict[str, ParamValue] | None = None,
             split: Split = "train", protocol: Protocol = "batch", order: Order = "stream",
             budget: Budget | dict[str, Any] | None = None, seed: int = 0) -> LocalSession:
        """Open a session on a registered dataset (by name) or on a ``Dataset`` of your own."""
        name = dataset.name if isinstance(dataset, Dataset) else dataset
        request = session_create(name, dataset_params=dataset_params, split=split, protocol=protocol, order=order,
                                 budget=budget, seed=seed)
        rt, opened = engine.open_session(request, dataset if isinstance(dataset, Dataset) else None)
        return cls(rt, opened)

    def _offers(self, op: Operation[..., Any]) -> bool:
        return op.kind is not Kind.LEDGER

    def _perform(self, op: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = op.request_of(args, kwargs)
        if op.kind is Kind.READ or op.step is None:
            return self._info()
        answer = self._apply(op.step(self.runtime, self.counters, self.paid, request))
        return self._info() if answer is None else answer

    def step_round(self, attributes: Sequence[int]) -> Round:
        """``step`` in plain values: the engine's ``step_round`` on the attributes ``step``'s request would hold, its
        outcome applied as ``step``'s, and handed back without answer models (what ``LocalOracle`` runs on). The
        same rule, refusals and record as ``step``; the answer's ``spent`` is the round's ``counters.spent_cost``."""
        done = engine.step_round(self.runtime, self.counters, step_attributes(attributes))
        self._record(done.counters, done.events)
        return done

    def step_rounds(self, selections: Sequence[Sequence[int]]) -> list[Round]:
        """``steps`` in plain values (``step_round``'s plural): the engine's ``step_rounds`` on the rounds ``steps``'
        request would hold, all or nothing, the rounds applied at once as ``steps``' outcome."""
        done = engine.step_rounds(self.runtime, self.counters, step_selections(selections))
        self._record(done[-1].counters, engine.events_of(done))
        return done

    def evaluate_array(self, weights: np.ndarray, bias: float = 0.0) -> EvaluateResponse:
        """``evaluate`` of weights as an array, without the request's list of d floats (an in-process run evaluates
        20 times, and its list cost more than the test error's math). Only weights its request takes as they are go
        this way: one vector of finite float64s, of at least one entry, and a finite bias; any other goes through
        ``evaluate``, whose request converts or refuses it."""
        w, b = np.asarray(weights), float(bias)  # float(): as the request's conversion
        if not (w.dtype == np.float64 and w.ndim == 1 and w.size and math.isfinite(b) and np.isfinite(w).all()):
            return self.evaluate(w.tolist(), bias)
        return self._apply(engine.evaluate_array(self.runtime, self.counters, w, b))

    def _apply(self, outcome: Outcome[A]) -> A:
        self._record(outcome.counters, outcome.events)
        return outcome.answer

    def _record(self, counters: Counters, events: tuple[Event | Observations, ...]) -> None:
        self.paid.record(events)
        self.counters = counters
        self.ledger_rows += rows_of(events)

    def _info(self) -> SessionInfo:
        return engine.session_info(self.runtime.config, self.counters, session_id=self.id,
                                   ledger_rows=self.ledger_rows, head_hash="", created_at=self.created_at)
