"""A session's ledger as the oracle serves it: the receipt of a charging call, the rows, their pages, the audit."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from budgetlab.contract.base import HASH_EXAMPLE, SESSION_ID_EXAMPLE

RECEIPT_EXAMPLE = {"rows": 5, "head": HASH_EXAMPLE}
LEDGER_ROW_EXAMPLE = {"session_id": SESSION_ID_EXAMPLE, "seq": 2, "kind": "observe", "example": 0, "attribute": 3,
                      "value": 1.0, "cost": 1.0, "payload": {}, "link": 2, "n": 3, "hash": HASH_EXAMPLE,
                      "tag": -1284593021}


class Receipt(BaseModel):
    """The session's chain head after a charging request: keep it, and an exported ledger must contain it."""

    rows: int = Field(..., description="ledger rows up to and including this request's", examples=[5])
    head: str = Field(..., description="sha256 digest (hex) of the chain link that ends at row rows - 1",
                      examples=["9c5ef082f04c2d4ab82b42566791accdbb2928a2df3cadaa5608a74301181c5f"])


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
