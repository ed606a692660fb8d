"""The request and answer bodies of a session's calls (next, observe, step, steps, label, predict, evaluate,
moments);
which call takes which is the table of operations' (``budgetlab.operations``).
"""

from __future__ import annotations

from typing import Protocol, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, model_validator

from budgetlab.contract.base import Strict
from budgetlab.contract.budgets import REMAINING_EXAMPLE, Remaining
from budgetlab.contract.ledger import RECEIPT_EXAMPLE, Receipt

MAX_ATTRIBUTES_PER_REQUEST = 100_000
# The most rounds one ``steps`` request may hold: a request this size records a few thousand ledger rows at most.
MAX_ROUNDS_PER_REQUEST = 1000
OBSERVED_EXAMPLE = {"example": 1, "attributes": [5, 9], "values": [0.0, 1.0]}

# Every answer of a charging call holds the session's chain head after it (the oracle fills it in; None in memory).
RECEIPT = Field(None, description="the chain head after this request, when it recorded anything (oracle only)",
                examples=[RECEIPT_EXAMPLE])


class Receipted(Protocol):
    """An answer that carries a ``receipt`` (``RECEIPT``)."""

    receipt: Receipt | None


def carries_receipt(answer: object) -> TypeGuard[Receipted]:
    """Whether ``answer`` is a model with a ``receipt`` field. Decided once per class: ``isinstance`` against a
    runtime-checkable protocol inspects the class at every call, a sizeable part of an oracle's per-example step."""
    model = type(answer)
    known = _RECEIPTED.get(model)
    if known is None:
        known = _RECEIPTED[model] = issubclass(model, BaseModel) and "receipt" in model.model_fields
    return known


_RECEIPTED: dict[type, bool] = {}


class NextResponse(BaseModel):
    """The next example of the stream: its id, and in the batch protocol its label."""

    example: int = Field(description="the example's id, to observe it by", examples=[0])
    label: float | None = Field(None, description="null in the online protocol and in test sessions",
                                examples=[-2.0])
    position: int = Field(..., description="how many examples were issued before this one", examples=[0])
    remaining: Remaining = Field(description="what is left of the budgets, and of this example's local budget k",
                                 examples=[REMAINING_EXAMPLE])
    receipt: Receipt | None = RECEIPT


class ObserveRequest(Strict):
    """Pay for attributes of one example; at most the local budget k distinct ones of it, ever."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"example": 0, "attributes": [0, 3, 7]}]})

    example: int = Field(..., ge=0, description="an issued example (stream) or any example's id (pool)",
                         examples=[0])
    attributes: list[int] = Field(..., min_length=1, max_length=MAX_ATTRIBUTES_PER_REQUEST,
                                  description="distinct attribute indices in 0..d-1; already-paid ones are free",
                                  examples=[[0, 3, 7]])


class ObserveResponse(BaseModel):
    """The values paid for, in the order asked, and what they cost."""

    example: int = Field(description="the example observed", examples=[0])
    attributes: list[int] = Field(description="the attributes asked for", examples=[[0, 3, 7]])
    values: list[float] = Field(description="their values x_i, in the same order", examples=[[1.0, 0.0, 1.0]])
    charged: float = Field(description="what this request cost (re-observations are free)", examples=[3.0])
    fresh: int = Field(0, description="attributes newly paid for by this request (re-observations are free)",
                       examples=[3])
    spent: float = Field(description="cost units spent by the session, this request included", examples=[3.0])
    remaining: Remaining = Field(description="what is left of the budgets, and of this example's local budget k",
                                 examples=[REMAINING_EXAMPLE])
    receipt: Receipt | None = RECEIPT


class ObserveBatchRequest(Strict):
    """Pay for attributes of many examples at once: all or nothing."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"items": [{"example": 0, "attributes": [1]}, {"example": 1, "attributes": [5, 9]}]},
    ]})

    items: list[ObserveRequest] = Field(..., min_length=1, max_length=MAX_ATTRIBUTES_PER_REQUEST,
                                        description="one entry per example; an example appears at most once",
                                        examples=[[{"example": 0, "attributes": [1]},
                                                   {"example": 1, "attributes": [5, 9]}]])


class ObservedValues(BaseModel):
    """The values of one example of a batch."""

    example: int = Field(description="the example observed", examples=[1])
    attributes: list[int] = Field(description="the attributes asked for", examples=[[5, 9]])
    values: list[float] = Field(description="their values x_i, in the same order", examples=[[0.0, 1.0]])


class ObserveBatchResponse(BaseModel):
    """The values of every example of the batch, and what they cost together."""

    items: list[ObservedValues] = Field(description="one entry per requested example, in request order",
                                        examples=[[OBSERVED_EXAMPLE]])
    charged: float = Field(description="what this request cost (re-observations are free)", examples=[3.0])
    fresh: int = Field(0, description="attributes newly paid for by this request", examples=[3])
    spent: float = Field(description="cost units spent by the session, this request included", examples=[6.0])
    remaining: Remaining = Field(description="what is left of the budgets, and of the last example's local "
                                             "budget k", examples=[REMAINING_EXAMPLE])
    receipt: Receipt | None = RECEIPT


class StepRequest(Strict):
    """One round of a stream session in one request: ``next``, then ``observe`` of these attributes of it."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"attributes": [1, 2]}]})

    attributes: list[int] = Field(default_factory=list, max_length=MAX_ATTRIBUTES_PER_REQUEST,
                                  description="attributes of the next example to pay for (may be empty)",
                                  examples=[[1, 2]])


class StepResponse(BaseModel):
    """The example issued, its label (batch protocol) and the values paid for."""

    example: int = Field(description="the example issued", examples=[1])
    label: float | None = Field(None, description="null in the online protocol and in test sessions",
                                examples=[-2.0])
    position: int = Field(..., description="how many examples were issued before this one", examples=[1])
    attributes: list[int] = Field(description="the attributes asked for", examples=[[1, 2]])
    values: list[float] = Field(description="their values x_i, in the same order", examples=[[0.0, 1.0]])
    charged: float = Field(..., description="what the label and the attributes cost together", examples=[2.0])
    fresh: int = Field(0, description="attributes newly paid for by this request", examples=[2])
    spent: float = Field(description="cost units spent by the session, this request included", examples=[5.0])
    remaining: Remaining = Field(description="what is left of the budgets, and of this example's local budget k",
                                 examples=[REMAINING_EXAMPLE])
    receipt: Receipt | None = RECEIPT


class StepsRequest(Strict):
    """Several rounds of a stream session in one all-or-nothing request: each round is a ``step`` of the next example,
    in order; any refusal refuses them all."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"rounds": [{"attributes": [1, 2]},
                                                                          {"attributes": [0]}]}]})

    rounds: list[StepRequest] = Field(
        ..., min_length=1, max_length=MAX_ROUNDS_PER_REQUEST,
        description="one step a round, in order: the attributes of each next example to pay for",
        examples=[[{"attributes": [1, 2]}, {"attributes": [0]}]])

    @model_validator(mode="after")
    def _attributes(self) -> StepsRequest:
        total = 0
        for round_ in self.rounds:
            total += len(round_.attributes)
        if total > MAX_ATTRIBUTES_PER_REQUEST:
            raise ValueError(f"the rounds ask for {total} attributes in all; at most {MAX_ATTRIBUTES_PER_REQUEST} "
                             "per request: split them")
        return self


class StepsResponse(BaseModel):
    """Each round's answer, in order: exactly what its ``step`` would have answered (without a receipt of its
    own), and the chain head after the whole request."""

    rounds: list[StepResponse] = Field(description="one answer a round, in request order", examples=[[
        {"example": 1, "label": -2.0, "position": 1, "attributes": [1, 2], "values": [0.0, 1.0], "charged": 2.0,
         "fresh": 2, "spent": 5.0, "remaining": REMAINING_EXAMPLE}]])
    receipt: Receipt | None = RECEIPT


class LabelRequest(Strict):
    """Reveal the label y of a training example (batch protocol)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"example": 0}]})

    example: int = Field(..., ge=0, description="an issued example (stream) or any example's id (pool)",
                         examples=[0])


class LabelResponse(BaseModel):
    """A training example's label."""

    example: int = Field(description="the example", examples=[0])
    label: float = Field(description="its label y", examples=[-2.0])
    charged: float = Field(description="the label cost, or 0 for a label revealed before", examples=[0.0])
    receipt: Receipt | None = RECEIPT


class PredictRequest(Strict):
    """Commit a prediction ŷ_t for an example before its label y_t is revealed (online protocol)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"example": 0, "prediction": 0.25}]})

    example: int = Field(..., ge=0, description="an issued example (stream) or any example's id (pool)",
                         examples=[0])
    prediction: float = Field(..., allow_inf_nan=False, description="the prediction ŷ_t, a finite number",
                              examples=[0.25])


class PredictResponse(BaseModel):
    """The label revealed after the prediction, and the loss it incurs."""

    example: int = Field(description="the example", examples=[0])
    prediction: float = Field(description="the prediction ŷ_t committed", examples=[0.25])
    label: float = Field(description="its label y_t, revealed now", examples=[0.2617])
    loss: float = Field(..., description="squared loss (prediction - label)^2", examples=[0.000137])
    cumulative_loss: float = Field(description="the sum of the losses so far (what the regret compares)",
                                   examples=[0.000137])
    predictions: int = Field(description="predictions committed so far in the session", examples=[1])
    receipt: Receipt | None = RECEIPT


class EvaluateRequest(Strict):
    """A linear predictor x -> <w, x> + b, to score on the whole test split."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"weights": [0.5, -1.0, 0.0, 2.0], "bias": 0.0}]})

    weights: list[float] = Field(..., min_length=1, description="the weight vector w: d finite numbers",
                                 examples=[[0.5, -1.0, 0.0, 2.0]])
    bias: float = Field(0.0, allow_inf_nan=False, description="the bias b", examples=[0.0])

    @model_validator(mode="after")
    def _finite(self) -> EvaluateRequest:
        import math

        if not all(map(math.isfinite, self.weights)):
            raise ValueError("weights must be finite numbers")
        return self


class EvaluateResponse(BaseModel):
    """The full-information test error of a linear predictor."""

    n_test: int = Field(description="test examples scored (the whole test split)", examples=[2000])
    mse: float = Field(description="mean squared error (<w, x> + b - y)^2 over the test split", examples=[0.8412])
    zero_mse: float = Field(..., description="MSE of the zero predictor on the same test set", examples=[1.9135])
    normalized_mse: float = Field(..., description="mse / zero_mse", examples=[0.4396])
    zero_one: float = Field(..., description="fraction of test examples where sign(prediction) != sign(label)",
                            examples=[0.213])


class MomentsResponse(BaseModel):
    """Prior knowledge the learner may declare it uses, over the training split: E[x_i^2] and the data's scale
    (the bounds the papers' theorems assume: max ||x||_2, max |x_i|, max |y|, and a bound on ||w*||)."""

    second_moments: list[float] = Field(description="E[x_i^2] of each attribute i over the training split "
                                                    "(length d)", examples=[[0.7896, 0.39285, 0.26795]])
    max_norm2: float = Field(0.0, description="max ||x||_2 over the training split", examples=[3.1623])
    max_abs: float = Field(0.0, description="max |x_i| (max ||x||_inf) over the training split", examples=[1.0])
    max_label: float = Field(0.0, description="max |y| over the training split", examples=[6.0])
    mean_sq_norm: float = Field(0.0, description="E||x||^2 over the training split", examples=[2.8571])
    max_second_moment: float = Field(0.0, description="max_i E[x_i^2] over the training split", examples=[0.7896])
    weight_norm2: float = Field(0.0, description="bound on ||w*||_2 (generating w*, or the stand-in)",
                                examples=[4.4721])
    weight_norm1: float = Field(0.0, description="bound on ||w*||_1 (generating w*, or the stand-in)",
                                examples=[20.0])
    weight_source: str = Field("", description="where the w* bounds come from: the generating w* or the stand-in",
                               examples=["generating w*"])
    costs: list[float] = Field(default_factory=list, description="the price of each attribute in this session (its "
                               "budget's, else the dataset's, else 1; length d): public, for cost-aware learners",
                               examples=[[1.0, 1.0, 2.5]])
