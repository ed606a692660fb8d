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
# Which values fill the parameters a run does not give: "practical" (defaults that adapt to the data, see each
# algorithm's docstring) or "theory" (the theorems' constants, as the papers state them for the data's declared scale).
Defaults = Literal["practical", "theory"]
DEFAULTS_DESCRIPTION = ("which values fill the parameters not given: 'practical' (data-adaptive defaults that learn "
                        "on real data) or 'theory' (the theorems' constants)")

MAX_ATTRIBUTES_PER_REQUEST = 100_000

# Examples of the models that other models hold, for the fields that hold them: the OpenAPI documents show an
# example of every field (tests/test_openapi.py checks each against its schema).
SESSION_ID_EXAMPLE = "f396ed88b0c0e8e3d6b3b937b222247e"
HASH_EXAMPLE = "9c5ef082f04c2d4ab82b42566791accdbb2928a2df3cadaa5608a74301181c5f"
PART_EXAMPLE = {"start": 0, "stop": 1000, "complement": True}
BUDGET_EXAMPLE = {"per_example": 4, "total": 20000}
SPENT_EXAMPLE = {"cost": 812.0, "attributes": 800, "labels": 200, "examples_issued": 200}
REMAINING_EXAMPLE = {"total": 19188.0, "per_example": 4, "example": 199, "example_attributes": 1}
RECEIPT_EXAMPLE = {"rows": 5, "head": HASH_EXAMPLE}
SESSION_INFO_EXAMPLE = {
    "id": SESSION_ID_EXAMPLE, "dataset": "powerlaw", "dataset_params": {"alpha": -1.0, "scenario": "ridge", "d": 100},
    "split": "train", "protocol": "batch", "order": "stream", "budget": BUDGET_EXAMPLE, "seed": 0,
    "n_examples": 20000, "d": 100, "status": "open", "spent": SPENT_EXAMPLE, "remaining": REMAINING_EXAMPLE,
    "predictions": 0, "cumulative_loss": 0.0, "ledger_rows": 1001,
    "head_hash": "10da1aa5a5187019109e301fa5fba5d5f03c2eb203906ac3d2d91a43b2fe0c6e",
    "created_at": "2026-11-23T15:32:02.148551Z"}
DATASET_PARAM_EXAMPLE = {"name": "alpha", "default": -1.0,
                         "description": "power-law exponent: u_i = i^alpha (the paper uses 0, -0.5, -1, -2)"}
DATASET_INFO_EXAMPLE = {
    "name": "powerlaw", "description": "Power-law Bernoulli attributes (alpha=-1, ridge scenario) with "
                                       "y = <w*, x> + noise (Kukliansky & Shamir 2015, section 5.1)",
    "task": "regression", "n_train": 20000, "n_test": 2000, "d": 500, "costs": None,
    "params": {"alpha": -1.0, "scenario": "ridge", "d": 500}, "accepted_params": [DATASET_PARAM_EXAMPLE],
    "source": "synthetic: Kukliansky & Shamir (2015), section 5.1"}
OBSERVED_EXAMPLE = {"example": 1, "attributes": [5, 9], "values": [0.0, 1.0]}
LEDGER_ROW_EXAMPLE = {"session_id": SESSION_ID_EXAMPLE, "seq": 2, "kind": "observe", "example": 0, "attribute": 3,
                      "value": 1.0, "cost": 1.0, "payload": {}, "link": 2, "n": 3, "hash": HASH_EXAMPLE,
                      "tag": -1284593021}
# (FastAPI leaves null values out of the document's examples: a required field's example is never null here.)
PARAM_SPEC_EXAMPLE = {"name": "phase1", "default": 0.1,
                      "description": "share m_1/m of the examples spent estimating the moments (the experiments' "
                                     "1/10)"}
ALGORITHM_INFO_EXAMPLE = {
    "id": "ddaerr-2phase", "name": "Two-Phased DDAERR",
    "paper": "Kukliansky & Shamir 2015, Attribute Efficient Linear Regression with Data-Dependent Sampling",
    "algorithm": "Algorithm 2", "protocol": "batch", "budget_kind": "local", "params": [PARAM_SPEC_EXAMPLE],
    "description": "Two-Phased DDAERR: AERR on m/10 examples while estimating E x², then DDAERR with the estimates."}
CURVE_POINT_EXAMPLE = {"examples": 500, "attributes": 2000, "cost": 2000.0, "test_mse": 0.8412,
                       "normalized_mse": 0.4396, "zero_one": 0.213, "cumulative_loss": None}
TEST_SCORE_EXAMPLE = {"per_example": 4, "mse": 1.2034, "normalized_mse": 0.6289, "zero_one": 0.301,
                      "session": "9a1c0d7e5b4f4c2e8d6a3b1f0e9c7d5a"}
RUN_CREATE_EXAMPLE = {"dataset": "powerlaw", "dataset_params": {"d": 100}, "algorithm": "aerr", "params": {"eta": 0.01},
                      "budget": {"per_example": 4}, "seed": 0, "max_examples": 2000, "test_budget": 4}
RUN_RESULT_EXAMPLE = {
    "algorithm": "aerr", "dataset": "powerlaw", "dataset_params": {"alpha": -1.0, "scenario": "ridge", "d": 100},
    "params": {"eta": 0.01}, "resolved_params": {"B": 2.236, "eta": 0.01}, "seed": 0, "status": "finished",
    "message": "", "weights": [0.98, -1.02, 0.0, 0.47], "bias": 0.0, "curve": [CURVE_POINT_EXAMPLE],
    "final": CURVE_POINT_EXAMPLE, "test_budget": TEST_SCORE_EXAMPLE, "session": SESSION_ID_EXAMPLE, "examples": 500,
    "attributes": 2000, "cost": 2000.0, "cumulative_loss": None, "wall_time": 1.3}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- errors ---------------------------------------------------------------------------------------


class ErrorBody(BaseModel):
    """Every 4xx answer of both services."""

    error: str = Field(description="a stable machine-readable code, e.g. 'budget_exceeded' or 'not_found'",
                       examples=["budget_exceeded"])
    detail: str | list[Any] = Field(
        description="human text; for a request that does not validate, pydantic's errors (loc, msg, type)",
        examples=["example 0 would have 5 distinct attributes observed; the local budget is 4 per example "
                  "(2 already observed)"],
    )
    remaining: Remaining | None = Field(None, description="what is left of the budgets (with budget_exceeded)",
                                        examples=[REMAINING_EXAMPLE])


class Health(BaseModel):
    """A service that answers (``GET /healthz`` of the oracle and of the learner)."""

    status: str = Field("ok", description="'ok' while the service answers", examples=["ok"])


# --- datasets -------------------------------------------------------------------------------------


class DatasetParam(BaseModel):
    """A parameter a dataset accepts (``dataset_params`` of a session or a run)."""

    name: str = Field(description="the parameter's name", examples=["alpha"])
    default: ParamValue = Field(description="its value when not given", examples=[-1.0])
    description: str = Field("", description="what it sets",
                             examples=["power-law exponent: u_i = i^alpha (the paper uses 0, -0.5, -1, -2)"])


class DatasetInfo(BaseModel):
    """What a dataset is; never any of its values."""

    name: str = Field(description="the dataset's name, as sessions and runs name it", examples=["powerlaw"])
    description: str = Field(description="what the data is, and the paper it comes from",
                             examples=["Power-law Bernoulli attributes (alpha=-1, ridge scenario) with "
                                       "y = <w*, x> + noise (Kukliansky & Shamir 2015, section 5.1)"])
    task: Task = Field(description="regression (real labels) or classification (labels ±1)", examples=["regression"])
    n_train: int = Field(description="examples in the training split", examples=[20000])
    n_test: int = Field(description="examples in the test split", examples=[2000])
    d: int = Field(description="the dimension d: attributes per example, numbered 0..d-1", examples=[500])
    costs: list[float] | None = Field(None, description="per-attribute costs declared by the dataset",
                                      examples=[[1.0, 1.0, 2.5]])
    params: dict[str, ParamValue] = Field(default_factory=dict, description="parameters in effect",
                                          examples=[{"alpha": -1.0, "scenario": "ridge", "d": 500}])
    accepted_params: list[DatasetParam] = Field(default_factory=list,
                                                description="the parameters this dataset accepts, with defaults",
                                                examples=[[DATASET_PARAM_EXAMPLE]])
    source: str = Field("", description="where the data comes from",
                        examples=["synthetic: Kukliansky & Shamir (2015), section 5.1"])


class DatasetList(BaseModel):
    """Every dataset the oracle serves; never a value."""

    datasets: list[DatasetInfo] = Field(description="built-in and user datasets, with their default parameters",
                                        examples=[[DATASET_INFO_EXAMPLE]])
    families: list[str] = Field(
        default_factory=list, description="parameterised names, e.g. 'mnist-AvB' for any two digits",
        examples=[["mnist-AvB", "fashion-AvB", "digits-AvB"]],
    )


class DatasetAdd(BaseModel):
    """Add a dataset from a file on the oracle's machine (CSV, NPY or NPZ)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"path": "/data/housing.csv", "name": "housing", "target": "price", "test_fraction": 0.2},
    ]})
    path: str = Field(..., min_length=1, description="the file on the oracle's machine: .csv, .npy or .npz",
                      examples=["/data/housing.csv"])
    name: str | None = Field(None, min_length=1, max_length=100, examples=["housing"],
                             description="the dataset's name (letters, digits, '_', '-', '.'); default the file's stem")
    target: str | int | None = Field(None, examples=["price", -1],
                                     description="the label column, by name (CSV header) or index; default the last")
    test_fraction: float = Field(0.2, gt=0, lt=1, examples=[0.2],
                                 description="fraction of the rows held out as the test split")


# --- sessions -------------------------------------------------------------------------------------


class ExamplePart(Strict):
    """Positions ``start``..``stop - 1`` of a split's seeded stream order (a validation fold), or, with
    ``complement``, all the other positions in the same order (the training folds beside it)."""

    model_config = ConfigDict(json_schema_extra={"examples": [PART_EXAMPLE]})

    start: NonNegativeInt = Field(description="first position of the part in the split's stream order",
                                  examples=[0])
    stop: NonNegativeInt = Field(description="one past the last position (start < stop <= the split's size)",
                                 examples=[1000])
    complement: bool = Field(False, description="serve every position but start..stop - 1, in the same order",
                             examples=[True])

    @model_validator(mode="after")
    def _non_empty(self) -> ExamplePart:
        if self.stop <= self.start:
            raise ValueError(f"a part needs start < stop, got {self.start}..{self.stop}")
        return self


class Budget(Strict):
    """Local (per example), global (total cost) and price settings of a session, and which examples it may use."""

    model_config = ConfigDict(json_schema_extra={"examples": [BUDGET_EXAMPLE]})

    per_example: NonNegativeInt | None = Field(
        None, description="the local budget k: at most this many distinct attributes of any one example "
                          "(None: no local limit)", examples=[4],
    )
    total: NonNegativeFloat | None = Field(
        None, description="the global budget K: at most this many cost units over the session (None: no global "
                          "limit)", examples=[20000],
    )
    costs: list[NonNegativeFloat] | None = Field(
        None, description="cost of each attribute (length d); default the dataset's, else 1 each",
        examples=[[1.0, 1.0, 2.5]],
    )
    label_cost: NonNegativeFloat = Field(0.0, description="cost of revealing a training label", examples=[0.0])
    part: ExamplePart | None = Field(
        None, description="a stream session that may use only this part of its split (tuning: fit and validation "
                          "folds); None: the whole split", examples=[PART_EXAMPLE],
    )


class SessionCreate(Strict):
    """Open a session: a dataset's split, the protocol, the order examples come in, the budgets and the seed."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"dataset": "powerlaw", "dataset_params": {"d": 100}, "split": "train", "protocol": "batch",
         "order": "stream", "budget": {"per_example": 4, "total": 20000}, "seed": 0},
        {"dataset": "online-sparse", "split": "test", "protocol": "online", "budget": {"per_example": 2}, "seed": 1},
    ]})

    dataset: str = Field(..., min_length=1, max_length=200, description="a dataset's name (GET /v1/datasets)",
                         examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict, examples=[{"d": 100}],
                                                  description="the dataset's parameters; the others take defaults")
    split: Split = Field("train", examples=["train"],
                         description="train, or test: a test session predicts on a budget (protocol online)")
    protocol: Protocol = Field("batch", examples=["batch"],
                               description="batch: next reveals each training label; online: predict commits a "
                                           "prediction before the label is revealed (regret)")
    order: Order = Field("stream", examples=["stream"],
                         description="stream: next issues examples in a seeded order; pool: any example by its id")
    budget: Budget = Field(default_factory=Budget, description="the local budget k, the global budget K, the costs",
                           examples=[BUDGET_EXAMPLE])
    seed: int = Field(0, ge=0, le=2**32 - 1, examples=[0],
                      description="seeds the data of synthetic datasets and the stream order")

    @model_validator(mode="after")
    def _test_sessions_predict(self) -> SessionCreate:
        if self.split == "test" and self.protocol != "online":
            raise ValueError("a test session commits predictions before labels: use protocol 'online'")
        return self


class Spent(BaseModel):
    """What a session has spent so far, as its ledger adds it up."""

    cost: float = Field(0.0, description="cost units charged against the global budget K", examples=[812.0])
    attributes: int = Field(0, description="distinct (example, attribute) values paid for", examples=[800])
    labels: int = Field(0, description="training labels revealed", examples=[200])
    examples_issued: int = Field(0, description="examples issued by next (stream order)", examples=[200])


class Remaining(BaseModel):
    """What is left of the budgets, after this answer."""

    total: float | None = Field(None, description="what is left of the global budget K, in cost units "
                                                  "(None: unlimited)", examples=[19188.0])
    per_example: int | None = Field(None, description="the local budget k of each example (None: unlimited)",
                                    examples=[4])
    example: int | None = Field(None, description="the example this answer concerns, if any", examples=[199])
    example_attributes: int | None = Field(None, description="what is left of that example's local budget k",
                                           examples=[1])


class SessionBasics(BaseModel):
    """What a session is and what it used, as anyone allowed to list it sees it: never a value, never a token,
    nor what its seed, its losses or its chain head would tell (``SessionInfo`` adds those for its owner)."""

    id: str = Field(description="the session's id", examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    dataset: str = Field(description="the dataset's name", examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(description="every parameter of the dataset in effect",
                                                  examples=[{"alpha": -1.0, "scenario": "ridge", "d": 100}])
    split: Split = Field(description="the split the session serves", examples=["train"])
    protocol: Protocol = Field(description="batch (labels with next) or online (predict, then the label)",
                               examples=["batch"])
    order: Order = Field(description="stream (next, in a seeded order) or pool (by id)", examples=["stream"])
    budget: Budget = Field(description="the budgets the session was opened with", examples=[BUDGET_EXAMPLE])
    n_examples: int = Field(description="examples the session may use (its split, or its part)", examples=[20000])
    d: int = Field(description="the dimension d: attributes per example", examples=[100])
    status: Literal["open", "closed"] = Field(description="closed: nothing more is charged or served",
                                              examples=["open"])
    spent: Spent = Field(description="what the session has spent", examples=[SPENT_EXAMPLE])
    remaining: Remaining = Field(description="what is left of its budgets", examples=[REMAINING_EXAMPLE])
    predictions: int = Field(0, description="predictions committed (online protocol)", examples=[0])
    ledger_rows: int = Field(0, description="rows in the session's ledger", examples=[1001])
    created_at: datetime = Field(description="when the session was opened (UTC)",
                                 examples=["2026-11-23T15:32:02.148551Z"])


class SessionInfo(SessionBasics):
    """A session's configuration, what it spent and what remains; never a value."""

    seed: int = Field(description="the seed of the data and the stream order", examples=[0])
    cumulative_loss: float = Field(0.0, description="sum of the squared losses of the predictions (the regret's "
                                                    "first term)", examples=[0.0])
    head_hash: str = Field("", description="sha256 digest (hex) of the last chain link of the ledger",
                           examples=["10da1aa5a5187019109e301fa5fba5d5f03c2eb203906ac3d2d91a43b2fe0c6e"])


class SessionCreated(BaseModel):
    """A new session: its token is in this answer only."""

    id: str = Field(description="the session's id, in every path of its endpoints",
                    examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    token: str = Field(..., description="bearer token of this session; shown once, only its hash is stored",
                       examples=["ooWeI9VTBriWh9YWBQ5fUodVhj8An17IMVs9rqljPmU"])
    session: SessionInfo = Field(description="the session as GET /v1/sessions/{id} answers it",
                                 examples=[SESSION_INFO_EXAMPLE])


class Receipt(BaseModel):
    """The session's chain head after a charging request: keep it, and an exported ledger must contain it."""

    rows: int = Field(..., description="ledger rows up to and including this request's", examples=[5])
    head: str = Field(..., description="sha256 digest (hex) of the chain link that ends at row rows - 1",
                      examples=["9c5ef082f04c2d4ab82b42566791accdbb2928a2df3cadaa5608a74301181c5f"])


RECEIPT = Field(None, description="the chain head after this request, when it recorded anything (oracle only)",
                examples=[RECEIPT_EXAMPLE])


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

        if not all(math.isfinite(w) for w in self.weights):
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


# --- ledger and audit -----------------------------------------------------------------------------

LedgerKind = Literal["open", "observe", "label", "predict", "evaluate", "prior", "close"]


class LedgerRow(BaseModel):
    """One row of a session's ledger: an event, or one observed value (format 2, see ``budgetlab.ledger``)."""

    session_id: str = Field(description="the session", examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    seq: int = Field(description="the row's number in the ledger, from 0", examples=[2])
    kind: LedgerKind = Field(description="what happened: open, observe (one value), label, predict, evaluate, "
                                         "prior (moments), close", examples=["observe"])
    example: int | None = Field(None, description="the example concerned, if any", examples=[0])
    attribute: int | None = Field(None, description="the attribute observed (observe rows)", examples=[3])
    value: float | None = Field(None, description="the value sent: x_i (observe), y (label), ŷ (predict)",
                                examples=[1.0])
    cost: float = Field(0.0, description="what the row charged against the global budget K", examples=[1.0])
    payload: dict[str, Any] = Field(default_factory=dict, examples=[{"label": 0.2617, "loss": 0.000137}],
                                    description="the event's details: the configuration (open), the loss "
                                                "(predict), the test error (evaluate), ...")
    link: int = Field(..., description="seq of the first row of the chain link this row belongs to", examples=[2])
    n: int | None = Field(None, description="rows in the link (on a link's first row)", examples=[3])
    hash: str | None = Field(None, description="sha256 digest (hex) of the link (on a link's first row)",
                             examples=["9c5ef082f04c2d4ab82b42566791accdbb2928a2df3cadaa5608a74301181c5f"])
    tag: int | None = Field(None, description="check of an observed value: names it if it is altered",
                            examples=[-1284593021])


class LedgerQuery(BaseModel):
    """Which rows of a session's ledger to read, and how: a page (json), or the export of all of them."""

    after: int = Field(-1, ge=-1, le=2**62, description="rows after this seq (-1: from the first row)",
                       examples=[-1])
    limit: int = Field(1000, ge=1, le=10_000, description="rows per page (json only)", examples=[1000])
    format: Literal["json", "ndjson", "csv"] = Field("json", description="a page, or the whole export",
                                                     examples=["json"])


class LedgerPage(BaseModel):
    """Rows of a session's ledger in seq order."""

    rows: list[LedgerRow] = Field(description="at most ?limit= rows after ?after=", examples=[[LEDGER_ROW_EXAMPLE]])
    next_after: int | None = Field(None, description="pass as ?after= for the next page; None at the end",
                                   examples=[999])


class AuditReport(BaseModel):
    """The audit of a session's ledger: every budget recomputed from its rows, and the hash chain checked."""

    session_id: str = Field(description="the session audited", examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    compliant: bool = Field(description="the chain is intact and no budget was broken", examples=[True])
    reasons: list[str] = Field(default_factory=list, description="why not compliant; empty when compliant",
                               examples=[[]])
    rows: int = Field(description="ledger rows read", examples=[12])
    chain_ok: bool = Field(description="every link's hash matches its rows and the link before", examples=[True])
    first_bad_seq: int | None = Field(None, description="the first row where the chain breaks (None: intact)",
                                      examples=[None])
    spent_recomputed: float = Field(description="cost units the rows add up to", examples=[7.0])
    spent_recorded: float | None = Field(None, description="cost units the session records as spent",
                                         examples=[7.0])
    attributes_recomputed: int = Field(description="distinct (example, attribute) values the rows paid for",
                                       examples=[7])
    max_attributes_per_example: int = Field(description="the most distinct attributes observed of any one "
                                                        "example (at most the local budget k)", examples=[4])
    per_example_limit: int | None = Field(description="the local budget k (None: no local limit)", examples=[4])
    total_limit: float | None = Field(description="the global budget K (None: no global limit)", examples=[1000.0])
    labels_recomputed: int = Field(0, description="label rows", examples=[2])
    predictions_recomputed: int = Field(0, description="examples with a prediction", examples=[0])


# --- learner service ------------------------------------------------------------------------------


class ParamSpec(BaseModel):
    """A parameter an algorithm accepts (``params`` of a run)."""

    name: str = Field(description="the parameter's name, in the paper's notation", examples=["eta"])
    default: ParamValue | None = Field(description="its default; None: resolved from the theorem and the data",
                                       examples=[None])
    description: str = Field("", description="what it is, and how its default is chosen",
                             examples=["step size η; default Theorem 3.1's sqrt(k/(2dm)) / max||x||_2² with "
                                       "k = budget - 1"])


class AlgorithmInfo(BaseModel):
    """One of the papers' algorithms, as the learner runs it."""

    id: str = Field(description="the id a run names it by", examples=["aerr"])
    name: str = Field(description="its name in the paper", examples=["AERR (Attribute Efficient Ridge Regression)"])
    paper: str = Field(description="the paper", examples=["Hazan & Koren 2012, Linear Regression with Limited "
                                                           "Observation"])
    algorithm: str = Field(..., description="where in the paper, e.g. 'Algorithm 1'", examples=["Algorithm 1"])
    protocol: Protocol = Field(description="batch (statistical learning) or online (regret)", examples=["batch"])
    budget_kind: Literal["local", "global", "full"] = Field(
        description="local: at most k attributes of each example; global: K attributes in all; full: a "
                    "full-information reference", examples=["local"])
    params: list[ParamSpec] = Field(description="the parameters it accepts", examples=[[PARAM_SPEC_EXAMPLE]])
    description: str = Field("", description="what it does", examples=["Attribute Efficient Ridge Regression: OGD on "
                                                                       "the L2 ball with uniform and w²-weighted "
                                                                       "attribute draws."])


class AlgorithmList(BaseModel):
    """Every algorithm the learner runs."""

    algorithms: list[AlgorithmInfo] = Field(description="the algorithms, by id", examples=[[ALGORITHM_INFO_EXAMPLE]])


class CurvePoint(BaseModel):
    """One point of a learning curve: the test error of the current predictor after so many examples."""

    examples: int = Field(description="training examples seen", examples=[500])
    attributes: int = Field(description="attributes paid for", examples=[2000])
    cost: float = Field(0.0, description="cost units spent", examples=[2000.0])
    test_mse: float = Field(description="full-information test MSE", examples=[0.8412])
    normalized_mse: float = Field(description="test MSE / the zero predictor's", examples=[0.4396])
    zero_one: float = Field(description="fraction of test examples with the wrong sign", examples=[0.213])
    cumulative_loss: float | None = Field(None, description="sum of the online losses so far (online protocol)",
                                          examples=[None])


RunStatus = Literal["pending", "queued", "running", "finished", "budget_exhausted", "oracle_unavailable", "failed",
                    "cancelled", "interrupted"]
# A run in one of these statuses has ended and will not change again ('interrupted': the learner stopped first).
FINAL_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted", "oracle_unavailable", "failed",
                                                "cancelled", "interrupted"})
# A run that ended in one of these completed: its weights are the algorithm's answer (its budget running out is
# the setting of the papers, not a failure).
COMPLETED_RUN_STATUSES: frozenset[str] = frozenset({"finished", "budget_exhausted"})


class RunCreate(Strict):
    """Run one algorithm on a training session of an oracle, under a budget."""

    model_config = ConfigDict(json_schema_extra={"examples": [RUN_CREATE_EXAMPLE]})

    oracle_url: str | None = Field(None, min_length=1, description="default: the learner's ORACLE_URL",
                                   examples=["http://127.0.0.1:8000"])
    dataset: str = Field(..., min_length=1, description="a dataset of the oracle (GET /v1/datasets)",
                         examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict, examples=[{"d": 100}],
                                                  description="the dataset's parameters; the others take defaults")
    algorithm: str = Field(description="an algorithm's id (GET /v1/algorithms)", examples=["aerr"])
    params: dict[str, ParamValue] = Field(default_factory=dict, examples=[{"eta": 0.01}],
                                          description="the algorithm's parameters; the others take the defaults "
                                                      "`defaults` names")
    defaults: Defaults = Field("practical", description=DEFAULTS_DESCRIPTION, examples=["theory"])
    budget: Budget = Field(default_factory=Budget, description="the training session's budgets: the local budget k "
                                                               "(per_example), the global budget K (total)",
                           examples=[{"per_example": 4}])
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seeds the data, the stream order and the algorithm",
                      examples=[0])
    max_examples: int | None = Field(None, ge=1, description="stop after this many training examples (default: "
                                                             "the whole split)", examples=[2000])
    eval_every: int | None = Field(None, ge=1, description="examples between points of the learning curve "
                                                           "(default: about 20 points)", examples=[100])
    test_budget: int | None = Field(None, ge=1, description="also score through a test session with this k",
                                    examples=[4])


class TestScore(BaseModel):
    """The run's predictor scored on a budget: a test session that observes at most k attributes of each example."""

    per_example: int = Field(description="the test-time budget k: attributes observed of each test example",
                             examples=[4])
    mse: float = Field(description="MSE of the predictions made on that budget", examples=[1.2034])
    normalized_mse: float = Field(description="mse / the zero predictor's MSE", examples=[0.6289])
    zero_one: float = Field(description="fraction of test examples with the wrong sign", examples=[0.301])
    session: str = Field(description="the test session's id on the oracle",
                         examples=["9a1c0d7e5b4f4c2e8d6a3b1f0e9c7d5a"])


class RunResult(BaseModel):
    """What one run produced; `budgetlab run --json` prints exactly this."""

    algorithm: str = Field(description="the algorithm's id", examples=["aerr"])
    dataset: str = Field(description="the dataset's name", examples=["powerlaw"])
    dataset_params: dict[str, ParamValue] = Field(
        default_factory=dict, description="as the oracle resolved them: typed, every parameter, defaults included",
        examples=[{"alpha": -1.0, "scenario": "ridge", "d": 100}])
    params: dict[str, ParamValue] = Field(default_factory=dict, description="the parameters the run was given",
                                          examples=[{"eta": 0.01}])
    defaults: Defaults = Field("practical", description=DEFAULTS_DESCRIPTION, examples=["theory"])
    resolved_params: dict[str, ParamValue | None] = Field(
        default_factory=dict, description="every parameter's value in effect (step size, radius, ...: the given ones "
                                          "and the theoretical defaults the algorithm resolved; a cross-validated "
                                          "α as last chosen); where a parameter has no one value over the run, the "
                                          "name of its rule ('adaptive', 'running'), which the algorithm accepts "
                                          "back: running again with these parameters and seed gives the same run",
        examples=[{"B": 2.236, "eta": 0.00042, "lambda_scale": "adaptive"}])
    seed: int = Field(description="the run's seed", examples=[0])
    status: RunStatus = Field(description="how the run ended; finished and budget_exhausted completed",
                              examples=["budget_exhausted"])
    message: str = Field("", description="why it ended so, in words (the oracle's refusal, ...)",
                         examples=["this request costs 4; 2 of the global budget of 20000 remains"])
    weights: list[float] = Field(default_factory=list, description="the predictor's weights w (length d)",
                                 examples=[[0.98, -1.02, 0.0, 0.47]])
    bias: float = Field(0.0, description="the predictor's bias b", examples=[0.0])
    curve: list[CurvePoint] = Field(default_factory=list, description="the learning curve, in examples seen",
                                    examples=[[CURVE_POINT_EXAMPLE]])
    final: CurvePoint | None = Field(None, description="the test error of the final predictor",
                                     examples=[CURVE_POINT_EXAMPLE])
    test_budget: TestScore | None = Field(None, description="its score on a test-time budget, if one was asked",
                                          examples=[TEST_SCORE_EXAMPLE])
    session: str | None = Field(None, description="the training session's id on the oracle",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    examples: int = Field(0, description="training examples seen", examples=[5000])
    attributes: int = Field(0, description="attributes paid for", examples=[20000])
    cost: float = Field(0.0, description="cost units spent", examples=[20000.0])
    cumulative_loss: float | None = Field(None, description="sum of the online losses (online protocol)",
                                          examples=[None])
    wall_time: float = Field(0.0, description="seconds the run took", examples=[12.7])


class RunInfo(BaseModel):
    """A run of the learner: where it stands, its learning curve so far, and its result once it ended."""

    id: str = Field(description="the run's id", examples=["3f0b1c9e2d7a4e58"])
    status: RunStatus = Field(description="pending, queued or running until it ends (see RunResult.status)",
                              examples=["running"])
    request: RunCreate = Field(description="the request that started it", examples=[RUN_CREATE_EXAMPLE])
    progress_examples: int = Field(0, description="training examples seen so far", examples=[1200])
    progress_attributes: int = Field(0, description="attributes paid for so far", examples=[4800])
    max_examples: int | None = Field(None, description="examples it will see at most", examples=[2000])
    session: str | None = Field(None, description="its training session's id on the oracle",
                                examples=["f396ed88b0c0e8e3d6b3b937b222247e"])
    result: RunResult | None = Field(None, description="what it produced, once it ended",
                                     examples=[RUN_RESULT_EXAMPLE])
    curve: list[CurvePoint] = Field(default_factory=list, description="the learning curve so far",
                                    examples=[[CURVE_POINT_EXAMPLE]])
    message: str = Field("", description="why it ended so, in words", examples=[""])


ErrorBody.model_rebuild()
