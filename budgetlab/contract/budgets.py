"""A session's budgets: what it may spend (the local budget k, the global budget K, the costs, the part of its split
it may use), what it spent, and what remains.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, model_validator
from pydantic.config import JsonDict

from budgetlab.contract.base import Strict

PART_EXAMPLE: JsonDict = {"start": 0, "stop": 1000, "complement": True}
BUDGET_EXAMPLE: JsonDict = {"per_example": 4, "total": 20000}
SPENT_EXAMPLE = {"cost": 812.0, "attributes": 800, "labels": 200, "examples_issued": 200}
REMAINING_EXAMPLE = {"total": 19188.0, "per_example": 4, "example": 199, "example_attributes": 1}


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
