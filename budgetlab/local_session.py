"""``LocalSession``: an oracle session in memory, the session engine without its database.

It answers with the same models and refuses with the same errors as the SDK's ``OracleSession`` over HTTP,
because both run the one engine (``budgetlab.engine``) on requests validated by the same wire models. It keeps
no hash chain and no ledger rows, only what the rules need: which cells, labels and predictions were paid for.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from budgetlab import engine
from budgetlab.datasets.base import Dataset
from budgetlab.engine import Counters, Observations, Outcome, Runtime
from budgetlab.http_errors import invalid_request
from budgetlab.models import (
    Budget,
    EvaluateRequest,
    EvaluateResponse,
    LabelRequest,
    LabelResponse,
    MomentsResponse,
    NextResponse,
    ObserveBatchRequest,
    ObserveBatchResponse,
    ObserveRequest,
    ObserveResponse,
    ParamValue,
    PredictRequest,
    PredictResponse,
    SessionCreate,
    SessionInfo,
    StepRequest,
    StepResponse,
)

M = TypeVar("M", bound=BaseModel)
A = TypeVar("A")


def _validated(model: type[M], body: dict[str, Any]) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise invalid_request(exc) from None


class MemoryPaid:
    """What a session paid for, in memory: the attributes of each example, revealed labels, predictions.

    Values are not kept: a paid cell is read again from the dataset, which is what the oracle served.
    """

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self.observed: dict[int, set[int]] = {}
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

    def predicted(self, example: int) -> bool:
        return example in self.predictions

    def record(self, outcome: Outcome[Any]) -> None:
        for event in outcome.events:
            if isinstance(event, Observations):
                for example, attribute in zip(event.examples, event.attributes, strict=True):
                    self.observed.setdefault(example, set()).add(attribute)
            elif event.kind == "label" and event.example is not None and event.value is not None:
                self.labels[event.example] = event.value
            elif event.kind == "predict" and event.example is not None:
                self.predictions.add(event.example)


class LocalSession:
    """One in-process oracle session; the same methods and answers as ``budgetlab.oracle_client.OracleSession``."""

    def __init__(self, rt: Runtime, opened: Outcome[None]) -> None:
        self.id = f"local-{secrets.token_hex(8)}"
        self.token = ""
        self.runtime = rt
        self.counters: Counters = opened.counters
        self.ledger_rows = opened.rows
        self.created_at = datetime.now(UTC)
        self.paid = MemoryPaid(rt)
        self.info: SessionInfo = self.get()

    @classmethod
    def open(cls, dataset: str | Dataset, *, dataset_params: dict[str, ParamValue] | None = None,
             split: str = "train", protocol: str = "batch", order: str = "stream",
             budget: Budget | dict[str, Any] | None = None, seed: int = 0) -> LocalSession:
        """Open a session on a registered dataset (by name) or on a ``Dataset`` of your own."""
        if isinstance(budget, Budget):
            budget = budget.model_dump()
        name = dataset.name if isinstance(dataset, Dataset) else dataset
        request = _validated(SessionCreate, {"dataset": name, "dataset_params": dataset_params or {}, "split": split,
                                             "protocol": protocol, "order": order, "budget": budget or {},
                                             "seed": seed})
        rt, opened = engine.open_session(request, dataset if isinstance(dataset, Dataset) else None)
        return cls(rt, opened)

    def _apply(self, outcome: Outcome[A]) -> A:
        self.paid.record(outcome)
        self.counters = outcome.counters
        self.ledger_rows += outcome.rows
        return outcome.answer

    def get(self) -> SessionInfo:
        return engine.session_info(self.runtime.config, self.counters, session_id=self.id,
                                   ledger_rows=self.ledger_rows, head_hash="", created_at=self.created_at)

    def next(self) -> NextResponse:
        return self._apply(engine.next_example(self.runtime, self.counters))

    def step(self, attributes: Sequence[int]) -> StepResponse:
        request = _validated(StepRequest, {"attributes": [int(a) for a in attributes]})
        return self._apply(engine.step(self.runtime, self.counters, request))

    def observe(self, example: int, attributes: Sequence[int]) -> ObserveResponse:
        request = _validated(ObserveRequest, {"example": int(example), "attributes": [int(a) for a in attributes]})
        return self._apply(engine.observe_one(self.runtime, self.counters, self.paid, request))

    def observe_batch(self, items: Sequence[tuple[int, Sequence[int]]]) -> ObserveBatchResponse:
        body = {"items": [{"example": int(e), "attributes": [int(a) for a in attrs]} for e, attrs in items]}
        request = _validated(ObserveBatchRequest, body)
        return self._apply(engine.observe(self.runtime, self.counters, self.paid, request.items))

    def label(self, example: int) -> LabelResponse:
        request = _validated(LabelRequest, {"example": int(example)})
        return self._apply(engine.reveal_label(self.runtime, self.counters, self.paid, request))

    def predict(self, example: int, prediction: float) -> PredictResponse:
        request = _validated(PredictRequest, {"example": int(example), "prediction": float(prediction)})
        return self._apply(engine.predict(self.runtime, self.counters, self.paid, request))

    def evaluate(self, weights: Sequence[float], bias: float = 0.0) -> EvaluateResponse:
        request = _validated(EvaluateRequest, {"weights": [float(w) for w in weights], "bias": float(bias)})
        return self._apply(engine.evaluate(self.runtime, self.counters, request))

    def moments(self) -> MomentsResponse:
        return self._apply(engine.moments(self.runtime, self.counters))

    def close(self) -> SessionInfo:
        self._apply(engine.close(self.counters))
        return self.get()
