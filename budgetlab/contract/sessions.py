"""A session of the oracle: how it is opened, and what it is and used as its owner and a listing see it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from budgetlab.contract.base import N_ATTRIBUTES_READ_AS, SESSION_ID_EXAMPLE, ParamValue, Strict, UtcTime
from budgetlab.contract.budgets import BUDGET_EXAMPLE, REMAINING_EXAMPLE, SPENT_EXAMPLE, Budget, Remaining, Spent

Split = Literal["train", "test"]
Protocol = Literal["batch", "online"]
Order = Literal["stream", "pool"]

SESSION_INFO_EXAMPLE = {
    "id": SESSION_ID_EXAMPLE, "dataset": "powerlaw", "dataset_params": {"alpha": -1.0, "scenario": "ridge", "d": 100},
    "split": "train", "protocol": "batch", "order": "stream", "budget": BUDGET_EXAMPLE, "seed": 0,
    "n_examples": 20000, "n_attributes": 100, "status": "open", "spent": SPENT_EXAMPLE, "remaining": REMAINING_EXAMPLE,
    "predictions": 0, "cumulative_loss": 0.0, "ledger_rows": 1001,
    "head_hash": "10da1aa5a5187019109e301fa5fba5d5f03c2eb203906ac3d2d91a43b2fe0c6e",
    "created_at": "2026-11-23T15:32:02.148551Z"}


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
    n_attributes: int = Field(validation_alias=N_ATTRIBUTES_READ_AS, examples=[100],
                              description="attributes per example (the dimension d), numbered 0..d-1")
    status: Literal["open", "closed"] = Field(description="closed: nothing more is charged or served",
                                              examples=["open"])
    spent: Spent = Field(description="what the session has spent", examples=[SPENT_EXAMPLE])
    remaining: Remaining = Field(description="what is left of its budgets", examples=[REMAINING_EXAMPLE])
    predictions: int = Field(0, description="predictions committed (online protocol)", examples=[0])
    ledger_rows: int = Field(0, description="rows in the session's ledger", examples=[1001])
    created_at: UtcTime = Field(description="when the session was opened (UTC)",
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
