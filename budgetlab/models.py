"""The wire contract of budgetlab: every request and response body of the oracle and the learner service.

Defined once, here on the ground floor; ``server``, ``learner`` and ``client`` import these models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, model_validator

Split = Literal["train", "test"]
Protocol = Literal["batch", "online"]
Order = Literal["stream", "pool"]
Task = Literal["regression", "classification"]
ParamValue = int | float | str | bool

MAX_ATTRIBUTES_PER_REQUEST = 100_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors ---------------------------------------------------------------------------------------


class ErrorBody(BaseModel):
    """Every 4xx answer of both services."""

    error: str
    detail: str | list[Any]
    remaining: Remaining | None = None


# --- datasets -------------------------------------------------------------------------------------


class DatasetParam(BaseModel):
    name: str
    default: ParamValue
    description: str = ""


class DatasetInfo(BaseModel):
    """What a dataset is; never any of its values."""

    name: str
    description: str
    task: Task
    n_train: int
    n_test: int
    d: int
    costs: list[float] | None = Field(None, description="per-attribute costs declared by the dataset")
    params: dict[str, ParamValue] = Field(default_factory=dict, description="parameters in effect")
    accepted_params: list[DatasetParam] = Field(default_factory=list)
    source: str = ""


class DatasetList(BaseModel):
    datasets: list[DatasetInfo]
    families: list[str] = Field(
        default_factory=list, description="parameterised names, e.g. 'mnist-AvB' for any two digits"
    )


# --- sessions -------------------------------------------------------------------------------------


class ExamplePart(Strict):
    """Positions ``start``..``stop - 1`` of a split's seeded stream order (a validation fold), or, with
    ``complement``, all the other positions in the same order (the training folds beside it)."""

    start: NonNegativeInt
    stop: NonNegativeInt
    complement: bool = False

    @model_validator(mode="after")
    def _non_empty(self) -> ExamplePart:
        if self.stop <= self.start:
            raise ValueError(f"a part needs start < stop, got {self.start}..{self.stop}")
        return self


class Budget(Strict):
    """Local (per example), global (total cost) and price settings of a session, and which examples it may use."""

    per_example: NonNegativeInt | None = Field(
        None, description="at most this many distinct attributes of any one example (None: no local limit)"
    )
    total: NonNegativeFloat | None = Field(
        None, description="at most this many cost units over the session (None: no global limit)"
    )
    costs: list[NonNegativeFloat] | None = Field(
        None, description="cost of each attribute (length d); default the dataset's, else 1 each"
    )
    label_cost: NonNegativeFloat = Field(0.0, description="cost of revealing a training label")
    part: ExamplePart | None = Field(
        None, description="a stream session that may use only this part of its split (tuning: fit and validation "
                          "folds); None: the whole split"
    )


class SessionCreate(Strict):
    dataset: str = Field(..., min_length=1, max_length=200)
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict)
    split: Split = "train"
    protocol: Protocol = "batch"
    order: Order = "stream"
    budget: Budget = Field(default_factory=Budget)
    seed: int = Field(0, ge=0, le=2**32 - 1)

    @model_validator(mode="after")
    def _test_sessions_predict(self) -> SessionCreate:
        if self.split == "test" and self.protocol != "online":
            raise ValueError("a test session commits predictions before labels: use protocol 'online'")
        return self


class Spent(BaseModel):
    cost: float = 0.0
    attributes: int = 0
    labels: int = 0
    examples_issued: int = 0


class Remaining(BaseModel):
    total: float | None = Field(None, description="cost units left in the session (None: unlimited)")
    per_example: int | None = Field(None, description="local budget of each example (None: unlimited)")
    example: int | None = Field(None, description="the example this answer concerns, if any")
    example_attributes: int | None = Field(None, description="attributes left for that example")


class SessionInfo(BaseModel):
    id: str
    dataset: str
    dataset_params: dict[str, ParamValue]
    split: Split
    protocol: Protocol
    order: Order
    budget: Budget
    seed: int
    n_examples: int
    d: int
    status: Literal["open", "closed"]
    spent: Spent
    remaining: Remaining
    predictions: int = 0
    cumulative_loss: float = 0.0
    ledger_rows: int = 0
    head_hash: str = ""
    created_at: datetime


class SessionCreated(BaseModel):
    id: str
    token: str = Field(..., description="bearer token of this session; shown once, only its hash is stored")
    session: SessionInfo


class Receipt(BaseModel):
    """The session's chain head after a charging request: keep it, and an exported ledger must contain it."""

    rows: int = Field(..., description="ledger rows up to and including this request's")
    head: str = Field(..., description="sha256 digest (hex) of the chain link that ends at row rows - 1")


RECEIPT = Field(None, description="the chain head after this request, when it recorded anything (oracle only)")


class NextResponse(BaseModel):
    example: int
    label: float | None = Field(None, description="omitted in the online protocol and in test sessions")
    position: int = Field(..., description="how many examples were issued before this one")
    remaining: Remaining
    receipt: Receipt | None = RECEIPT


class ObserveRequest(Strict):
    example: int = Field(..., ge=0)
    attributes: list[int] = Field(..., min_length=1, max_length=MAX_ATTRIBUTES_PER_REQUEST)


class ObserveResponse(BaseModel):
    example: int
    attributes: list[int]
    values: list[float]
    charged: float
    fresh: int = Field(0, description="attributes newly paid for by this request (re-observations are free)")
    spent: float
    remaining: Remaining
    receipt: Receipt | None = RECEIPT


class ObserveBatchRequest(Strict):
    items: list[ObserveRequest] = Field(..., min_length=1, max_length=MAX_ATTRIBUTES_PER_REQUEST)


class ObservedValues(BaseModel):
    example: int
    attributes: list[int]
    values: list[float]


class ObserveBatchResponse(BaseModel):
    items: list[ObservedValues]
    charged: float
    fresh: int = 0
    spent: float
    remaining: Remaining
    receipt: Receipt | None = RECEIPT


class StepRequest(Strict):
    """One round of a stream session in one request: ``next``, then ``observe`` of these attributes of it."""

    attributes: list[int] = Field(default_factory=list, max_length=MAX_ATTRIBUTES_PER_REQUEST,
                                  description="attributes of the next example to pay for (may be empty)")


class StepResponse(BaseModel):
    example: int
    label: float | None = Field(None, description="omitted in the online protocol and in test sessions")
    position: int = Field(..., description="how many examples were issued before this one")
    attributes: list[int]
    values: list[float]
    charged: float = Field(..., description="what the label and the attributes cost together")
    fresh: int = 0
    spent: float
    remaining: Remaining
    receipt: Receipt | None = RECEIPT


class LabelRequest(Strict):
    example: int = Field(..., ge=0)


class LabelResponse(BaseModel):
    example: int
    label: float
    charged: float
    receipt: Receipt | None = RECEIPT


class PredictRequest(Strict):
    example: int = Field(..., ge=0)
    prediction: float = Field(..., allow_inf_nan=False)


class PredictResponse(BaseModel):
    example: int
    prediction: float
    label: float
    loss: float = Field(..., description="squared loss (prediction - label)^2")
    cumulative_loss: float
    predictions: int
    receipt: Receipt | None = RECEIPT


class EvaluateRequest(Strict):
    weights: list[float] = Field(..., min_length=1)
    bias: float = Field(0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _finite(self) -> EvaluateRequest:
        import math

        if not all(math.isfinite(w) for w in self.weights):
            raise ValueError("weights must be finite numbers")
        return self


class EvaluateResponse(BaseModel):
    n_test: int
    mse: float
    zero_mse: float = Field(..., description="MSE of the zero predictor on the same test set")
    normalized_mse: float = Field(..., description="mse / zero_mse")
    zero_one: float = Field(..., description="fraction of test examples where sign(prediction) != sign(label)")


class MomentsResponse(BaseModel):
    """Prior knowledge the learner may declare it uses, over the training split: E[x_i^2] and the data's scale
    (the bounds the papers' theorems assume: max ||x||_2, max |x_i|, max |y|, and a bound on ||w*||)."""

    second_moments: list[float]
    max_norm2: float = Field(0.0, description="max ||x||_2 over the training split")
    max_abs: float = Field(0.0, description="max |x_i| (max ||x||_inf) over the training split")
    max_label: float = Field(0.0, description="max |y| over the training split")
    mean_sq_norm: float = Field(0.0, description="E||x||^2 over the training split")
    max_second_moment: float = Field(0.0, description="max_i E[x_i^2] over the training split")
    weight_norm2: float = Field(0.0, description="bound on ||w*||_2 (generating w*, or the stand-in)")
    weight_norm1: float = Field(0.0, description="bound on ||w*||_1 (generating w*, or the stand-in)")
    weight_source: str = Field("", description="where the w* bounds come from: the generating w* or the stand-in")


# --- ledger and audit -----------------------------------------------------------------------------

LedgerKind = Literal["open", "observe", "label", "predict", "evaluate", "prior", "close"]


class LedgerRow(BaseModel):
    """One row of a session's ledger: an event, or one observed value (format 2, see ``budgetlab.ledger``)."""

    session_id: str
    seq: int
    kind: LedgerKind
    example: int | None = None
    attribute: int | None = None
    value: float | None = None
    cost: float = 0.0
    payload: dict[str, Any] = Field(default_factory=dict)
    link: int = Field(..., description="seq of the first row of the chain link this row belongs to")
    n: int | None = Field(None, description="rows in the link (on a link's first row)")
    hash: str | None = Field(None, description="sha256 digest (hex) of the link (on a link's first row)")
    tag: int | None = Field(None, description="check of an observed value: names it if it is altered")


class LedgerPage(BaseModel):
    rows: list[LedgerRow]
    next_after: int | None = Field(None, description="pass as ?after= for the next page; None at the end")


class AuditReport(BaseModel):
    session_id: str
    compliant: bool
    reasons: list[str] = Field(default_factory=list, description="why not compliant; empty when compliant")
    rows: int
    chain_ok: bool
    first_bad_seq: int | None = None
    spent_recomputed: float
    spent_recorded: float | None = None
    attributes_recomputed: int
    max_attributes_per_example: int
    per_example_limit: int | None
    total_limit: float | None
    labels_recomputed: int = 0
    predictions_recomputed: int = 0


# --- learner service ------------------------------------------------------------------------------


class ParamSpec(BaseModel):
    name: str
    default: ParamValue | None
    description: str = ""


class AlgorithmInfo(BaseModel):
    id: str
    name: str
    paper: str
    algorithm: str = Field(..., description="where in the paper, e.g. 'Algorithm 1'")
    protocol: Protocol
    budget_kind: Literal["local", "global", "full"]
    params: list[ParamSpec]
    description: str = ""


class AlgorithmList(BaseModel):
    algorithms: list[AlgorithmInfo]


class CurvePoint(BaseModel):
    examples: int
    attributes: int
    cost: float = 0.0
    test_mse: float
    normalized_mse: float
    zero_one: float
    cumulative_loss: float | None = None


RunStatus = Literal["pending", "queued", "running", "finished", "budget_exhausted", "oracle_unavailable", "failed",
                    "cancelled", "interrupted"]
# A run in one of these statuses has ended and will not change again ('interrupted': the learner stopped first).
FINAL_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted", "oracle_unavailable", "failed",
                                                "cancelled", "interrupted"})
# A run that ended in one of these completed: its weights are the algorithm's answer (its budget running out is
# the setting of the papers, not a failure).
COMPLETED_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted"})


class RunCreate(Strict):
    oracle_url: str | None = Field(None, min_length=1, description="default: the learner's ORACLE_URL")
    dataset: str = Field(..., min_length=1)
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict)
    algorithm: str
    params: dict[str, ParamValue] = Field(default_factory=dict)
    budget: Budget = Field(default_factory=Budget)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    max_examples: int | None = Field(None, ge=1)
    eval_every: int | None = Field(None, ge=1)
    test_budget: int | None = Field(None, ge=1, description="also score through a test session with this k")


class TestScore(BaseModel):
    per_example: int
    mse: float
    normalized_mse: float
    zero_one: float
    session: str


class RunResult(BaseModel):
    """What one run produced; `budgetlab run --json` prints exactly this."""

    algorithm: str
    dataset: str
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict)
    params: dict[str, ParamValue] = Field(default_factory=dict)
    seed: int
    status: RunStatus
    message: str = ""
    weights: list[float] = Field(default_factory=list)
    bias: float = 0.0
    curve: list[CurvePoint] = Field(default_factory=list)
    final: CurvePoint | None = None
    test_budget: TestScore | None = None
    session: str | None = None
    examples: int = 0
    attributes: int = 0
    cost: float = 0.0
    cumulative_loss: float | None = None
    wall_time: float = 0.0


class RunInfo(BaseModel):
    id: str
    status: RunStatus
    request: RunCreate
    progress_examples: int = 0
    progress_attributes: int = 0
    max_examples: int | None = None
    session: str | None = None
    result: RunResult | None = None
    curve: list[CurvePoint] = Field(default_factory=list)
    message: str = ""


ErrorBody.model_rebuild()
