"""Account endpoints: the admin's (create, list, show, revoke, audit) and the key holder's own account."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from budgetlab.contract.accounts import (
    AccountAudit,
    AccountCreate,
    AccountCreated,
    AccountInfo,
    AccountList,
    AccountView,
)
from budgetlab.errors import Code, refusal, responses
from server.accounts import AccountService
from server.deps import ADMIN_REFUSALS, Admin, ApiKey
from web.state import from_state

router = APIRouter(tags=["accounts"])
AccountId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")]
Limit = Annotated[int, Query(ge=1, le=1000, description="sessions listed, newest first")]
# What the key holder's endpoints refuse: no key, or not an account's.
KEY_REFUSALS = (Code.UNAUTHORIZED, Code.INVALID_REQUEST)


Accounts = Annotated[AccountService, Depends(from_state("accounts", AccountService))]


def _required(key: str | None) -> str:
    if key is None:
        raise refusal(Code.UNAUTHORIZED, "send the account's API key as 'Authorization: Bearer <key>'")
    return key


@router.post("/v1/accounts", status_code=201, response_model=AccountCreated, dependencies=[Admin],
             responses=responses(*ADMIN_REFUSALS, Code.NAME_TAKEN, Code.TOO_LARGE, Code.BUSY))
def create_account(body: AccountCreate, accounts: Accounts) -> AccountCreated:
    """Admin: create an account with its allowance; the API key in the answer is shown only once."""
    return accounts.create(body)


@router.get("/v1/accounts", response_model=AccountList, dependencies=[Admin], responses=responses(*ADMIN_REFUSALS))
def list_accounts(accounts: Accounts) -> AccountList:
    """Admin: every account, its allowance and what its sessions drew on it."""
    return accounts.listing()


@router.get("/v1/accounts/{account_id}", response_model=AccountView, dependencies=[Admin],
            responses=responses(*ADMIN_REFUSALS, Code.NOT_FOUND))
def show_account(account_id: AccountId, accounts: Accounts, limit: Limit = 50) -> AccountView:
    """Admin: an account and its newest sessions (never a value, never a token)."""
    return accounts.view(account_id, limit)


@router.delete("/v1/accounts/{account_id}", response_model=AccountInfo, dependencies=[Admin],
               responses=responses(*ADMIN_REFUSALS, Code.NOT_FOUND, Code.BUSY))
def revoke_account(account_id: AccountId, accounts: Accounts) -> AccountInfo:
    """Admin: revoke an account: its key opens nothing more, and its open sessions are closed (their ledgers stay
    readable with their tokens, and auditable)."""
    return accounts.revoke(account_id)


@router.get("/v1/accounts/{account_id}/audit", response_model=AccountAudit, dependencies=[Admin],
            responses=responses(*ADMIN_REFUSALS, Code.NOT_FOUND))
def audit_account(account_id: AccountId, accounts: Accounts) -> AccountAudit:
    """Admin: audit every session of the account and its allowance, recomputed from their ledger rows."""
    return accounts.audit(account_id)


@router.get("/v1/account", response_model=AccountView, responses=responses(*KEY_REFUSALS))
def own_account(key: ApiKey, accounts: Accounts, limit: Limit = 50) -> AccountView:
    """The account of the API key sent: its allowance, what its sessions drew, and its newest sessions."""
    return accounts.own(_required(key), limit)


@router.get("/v1/account/audit", response_model=AccountAudit, responses=responses(*KEY_REFUSALS))
def own_account_audit(key: ApiKey, accounts: Accounts) -> AccountAudit:
    """The audit of the API key's account (as the admin's)."""
    return accounts.own_audit(_required(key))
