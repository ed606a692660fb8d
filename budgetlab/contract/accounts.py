"""Accounts of the oracle: who may open sessions, within which allowance, and what they drew on it.

An admin creates an account with an ``Allowance``; its API key is shown once (``AccountCreated``) and kept as a
digest. Every session opened with the key draws on the allowance together with the account's other sessions (the
rules: ``budgetlab.allowance``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveInt
from pydantic.config import JsonDict

from budgetlab.contract.base import Strict, UtcTime
from budgetlab.contract.sessions import SessionBasics, Split

ACCOUNT_ID_EXAMPLE = "7c1e5a0f93d24b6e"
# How many sessions of an account may be open at once unless its allowance says otherwise: a class's comparison
# opens a training and a test session per run, a few dozen runs at a time.
SESSIONS_DEFAULT = 50
ALLOWANCE_EXAMPLE: JsonDict = {"total": 20000.0, "per_example": 5, "datasets": ["mnist-3v5"], "splits": ["train"],
                               "sessions": 20, "evaluations": 200}
ACCOUNT_SPENT_EXAMPLE = {"cost": 812.0, "evaluations": 12, "sessions": 9, "open": 2}
ACCOUNT_INFO_EXAMPLE = {
    "id": ACCOUNT_ID_EXAMPLE, "name": "student-07", "status": "active", "allowance": ALLOWANCE_EXAMPLE,
    "spent": ACCOUNT_SPENT_EXAMPLE, "remaining": {"total": 19188.0, "evaluations": 188},
    "created_at": "2026-11-23T15:32:02.148551Z", "revoked_at": None}
KEY_EXAMPLE = f"{ACCOUNT_ID_EXAMPLE}.ooWeI9VTBriWh9YWBQ5fUodVhj8An17IMVs9rqljPmU"
AccountStatus = Literal["active", "revoked"]


class Allowance(Strict):
    """What an account's sessions may do, together: the oracle enforces it, whatever budget a session asks for."""

    model_config = ConfigDict(json_schema_extra={"examples": [ALLOWANCE_EXAMPLE]})

    total: NonNegativeFloat | None = Field(
        None, description="cost units all the account's sessions may spend together (None: no limit)",
        examples=[20000.0])
    per_example: NonNegativeInt | None = Field(
        None, description="the largest local budget k a session may have; a session that asks for none gets this "
                          "one (None: no limit)", examples=[5])
    datasets: list[str] | None = Field(
        None, description="the datasets its sessions may use (None: every dataset)", examples=[["mnist-3v5"]])
    splits: list[Split] = Field(
        ["train", "test"], min_length=1, description="the splits its sessions may use: without 'test', the test "
                                                     "splits are shielded (only evaluation results leave them)",
        examples=[["train"]])
    sessions: PositiveInt | None = Field(
        SESSIONS_DEFAULT, description="sessions open at once (None: no limit)", examples=[20])
    evaluations: NonNegativeInt | None = Field(
        None, description="evaluate requests all its sessions may make together: each is a look at the test split "
                          "(None: no limit)", examples=[200])


class AccountCreate(Strict):
    """A new account: a name for people, and its allowance."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "student-07", "allowance": ALLOWANCE_EXAMPLE}]})

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._@+-]*$",
                      description="unique among the oracle's accounts", examples=["student-07"])
    allowance: Allowance = Field(default_factory=Allowance, description="what its sessions may do together",
                                 examples=[ALLOWANCE_EXAMPLE])


class AccountSpent(BaseModel):
    """What an account's sessions drew on its allowance, together."""

    cost: float = Field(0.0, description="cost units its sessions spent", examples=[812.0])
    evaluations: int = Field(0, description="evaluate requests its sessions made", examples=[12])
    sessions: int = Field(0, description="sessions it opened", examples=[9])
    open: int = Field(0, description="of those, sessions open now", examples=[2])


class AccountRemaining(BaseModel):
    """What is left of an account's allowance."""

    total: float | None = Field(None, description="cost units left (None: no limit)", examples=[19188.0])
    evaluations: int | None = Field(None, description="evaluate requests left (None: no limit)", examples=[188])


class AccountInfo(BaseModel):
    """An account, its allowance and what it drew on it; never its key."""

    id: str = Field(description="the account's id: the first part of its key", examples=[ACCOUNT_ID_EXAMPLE])
    name: str = Field(description="its name", examples=["student-07"])
    status: AccountStatus = Field(description="revoked: its key opens nothing more and its sessions were closed",
                                  examples=["active"])
    allowance: Allowance = Field(description="what its sessions may do together", examples=[ALLOWANCE_EXAMPLE])
    spent: AccountSpent = Field(description="what its sessions drew", examples=[ACCOUNT_SPENT_EXAMPLE])
    remaining: AccountRemaining = Field(description="what is left of the allowance",
                                        examples=[{"total": 19188.0, "evaluations": 188}])
    created_at: UtcTime = Field(description="when the admin created it (UTC)", examples=["2026-11-23T15:32:02Z"])
    revoked_at: UtcTime | None = Field(None, description="when the admin revoked it (UTC)", examples=[None])


class AccountCreated(BaseModel):
    """A new account: its key is in this answer only."""

    key: str = Field(description="the account's API key (ID.SECRET): send it as 'Authorization: Bearer <key>' to "
                                 "open sessions; shown once, only its secret's hash is stored",
                     examples=[KEY_EXAMPLE])
    account: AccountInfo = Field(description="the account", examples=[ACCOUNT_INFO_EXAMPLE])


class AccountList(BaseModel):
    """Every account of the oracle, oldest first."""

    accounts: list[AccountInfo] = Field(description="the accounts", examples=[[ACCOUNT_INFO_EXAMPLE]])


class AccountView(BaseModel):
    """An account with its sessions (never a value or a token)."""

    account: AccountInfo = Field(description="the account", examples=[ACCOUNT_INFO_EXAMPLE])
    sessions: list[SessionBasics] = Field(description="its newest sessions first (at most ?limit=)", examples=[[]])


class AccountAudit(BaseModel):
    """The audit of an account: every session's ledger audited, and the allowance recomputed from their rows."""

    account: str = Field(description="the account audited", examples=[ACCOUNT_ID_EXAMPLE])
    compliant: bool = Field(description="every session is compliant, names the account in its ledger and kept to "
                                        "the allowance, and the account's recorded spend is what the rows add up to",
                            examples=[True])
    reasons: list[str] = Field(default_factory=list, description="why not compliant; empty when compliant",
                               examples=[[]])
    sessions: int = Field(description="sessions audited", examples=[9])
    rows: int = Field(description="ledger rows read, all sessions together", examples=[4410])
    spent_recomputed: float = Field(description="cost units the sessions' rows add up to", examples=[812.0])
    spent_recorded: float = Field(description="cost units the account records as spent", examples=[812.0])
    evaluations_recomputed: int = Field(description="evaluate rows of its sessions", examples=[12])
    evaluations_recorded: int = Field(description="evaluate requests the account records", examples=[12])
    allowance: Allowance = Field(description="the allowance checked", examples=[ALLOWANCE_EXAMPLE])
