"""What the oracle's live dashboard asks of it: its sessions, and the tail of one session's ledger as it grows (the page
itself is the top floor's, ``client.dashboards``).

Who sees what (``server.session_overview`` says what a session shows without its token):

- anyone: how many sessions there are (open, closed) and their ledger rows in all; and the sessions whose tokens
  the page sends (``X-Session-Tokens: ID:TOKEN, ...``), with everything ``GET /v1/sessions/{id}`` answers and
  their ledger rows with values;
- the admin (``Authorization: Bearer <BUDGETLAB_ADMIN_TOKEN>``): every session, newest first, without its values
  (``?account=ID``: that account's), any session's ledger as links (kind, row count, cost), and the accounts with
  their allowances and what their sessions drew (a teacher's view of a class).

``GET /v1/events`` streams it (server-sent events, ``web.events``): ``sessions`` (the
``GET /v1/dashboard/sessions`` answer, whenever it changes) and, with ``?follow=ID``, ``ledger`` (that session's
new rows: ``{"session", "values", "first", "rows"}``; with ``"refused"`` instead when the viewer may not see it).
The page links to the learner's dashboard at ``BUDGETLAB_LEARNER_URL`` (or the page's ``?learner=URL``).
"""

from __future__ import annotations

import hmac
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from budgetlab.bearer import B64TOKEN, bearer_token
from budgetlab.contract.accounts import ACCOUNT_INFO_EXAMPLE, AccountInfo
from budgetlab.contract.base import SESSION_ID_EXAMPLE
from budgetlab.contract.sessions import SESSION_INFO_EXAMPLE, SessionInfo
from budgetlab.errors import Code, OracleError, refusal, responses
from server.config import Settings
from server.deps import ADMIN_REFUSALS, ADMIN_SCHEME, Credentials
from server.session_overview import (
    COUNTS_EXAMPLE,
    SUMMARY_EXAMPLE,
    LinkSummary,
    Overview,
    SessionCounts,
    SessionSummary,
)
from server.sessions import SessionService
from web.events import Events, event_stream

LEARNER_URL_ENV = "BUDGETLAB_LEARNER_URL"
POLL_SECONDS = 0.5
# A followed ledger starts with its last TAIL rows (links without the token); a viewer more than BATCH behind
# skips ahead to the tail again.
TAIL = 50
BATCH = 500
MAX_HELD = 50
# Accounts listed to the admin (a class or two): the listing is two queries whatever their number.
ACCOUNTS_SHOWN = 500
PAIR = re.compile(rf"([A-Za-z0-9_-]{{1,64}}):({B64TOKEN.pattern})")
_overview_lock = threading.Lock()

router = APIRouter(tags=["dashboard"])
Limit = Annotated[int, Query(ge=1, le=500, description="sessions listed to the admin, newest first")]
OfAccount = Annotated[str | None, Query(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$",
                                        description="the admin's: list this account's sessions")]


class DashboardConfig(BaseModel):
    learner_url: str | None = Field(None, description=f"the learner's dashboard ({LEARNER_URL_ENV})",
                                    examples=["http://127.0.0.1:8001"])
    admin_enabled: bool = Field(..., description="whether the oracle has an admin token (BUDGETLAB_ADMIN_TOKEN)",
                                examples=[True])


class LedgerState(BaseModel):
    """Whether the ledger would take a write now: what ``GET /readyz`` says (looked at once a second at most)."""

    ready: bool = Field(description="whether the ledger would take a write now", examples=[False])
    error: str | None = Field(None, description="why not: database_unavailable, storage_full or read_only "
                                                "(what /readyz answers, and every write meanwhile)",
                              examples=["storage_full"])
    detail: str | None = Field(None, description="the refusal's text", examples=[
        "the oracle's database has no space left (1,003,520 bytes free on the file system of /srv/budgetlab, within "
        "the ledger's reserve of 16,777,216 bytes (BUDGETLAB_LEDGER_RESERVE_BYTES)); nothing was done or charged"])


class SessionsView(BaseModel):
    """The dashboard's list: counts for anyone, every session for the admin, the sessions whose tokens were sent."""

    admin: bool = Field(..., description="whether the request carried the admin token", examples=[False])
    counts: SessionCounts = Field(description="how many sessions the oracle holds (those of ``account`` when the admin "
                                  "lists one)", examples=[COUNTS_EXAMPLE])
    sessions: list[SessionSummary] = Field(..., description="the admin's newest sessions and the held ones; no value",
                                           examples=[[SUMMARY_EXAMPLE]])
    held: dict[str, SessionInfo] = Field(..., description="the sessions whose tokens were sent, by id, in full",
                                         examples=[{SESSION_ID_EXAMPLE: SESSION_INFO_EXAMPLE}])
    unknown: dict[str, str] = Field(..., description="ids sent with a token that is not theirs, and why",
                                    examples=[{"5b0e43c1d2a94f6e8b7c9d0a1f2e3d4c": "not this session's token"}])
    accounts: list[AccountInfo] = Field(default_factory=list, description="the admin's: every account (the first "
                                        f"{ACCOUNTS_SHOWN}), its allowance and what its sessions drew",
                                        examples=[[ACCOUNT_INFO_EXAMPLE]])
    account: str | None = Field(None, description="the account whose sessions are listed (the admin's ?account=)",
                                examples=[None])
    ledger: LedgerState = Field(description="whether the ledger takes writes now, as /readyz says",
                                examples=[{"ready": True, "error": None, "detail": None}])


@dataclass(frozen=True)
class Viewer:
    admin: bool
    tokens: dict[str, str] = field(default_factory=dict)


def viewer(
    request: Request,
    _: Annotated[Credentials, Depends(ADMIN_SCHEME)],  # optional: the admin token lists every session
    x_session_tokens: Annotated[str | None, Header(
        max_length=20_000, description="ID:TOKEN pairs, comma separated: sessions whose values may be shown")] = None,
) -> Viewer:
    admin = False
    authorization = request.headers.get("authorization")
    if authorization is not None:
        token = bearer_token(authorization)
        if token is None:
            raise refusal(Code.UNAUTHORIZED, "send the admin token as 'Authorization: Bearer <token>'")
        expected = request.app.state.settings.admin_token
        if expected is None:
            raise refusal(Code.ADMIN_DISABLED, "set BUDGETLAB_ADMIN_TOKEN on the oracle to list every session")
        if not hmac.compare_digest(token.encode(), expected.encode()):
            raise refusal(Code.FORBIDDEN, "this token is not the admin token")
        admin = True
    return Viewer(admin, held_tokens(x_session_tokens))


def held_tokens(header: str | None) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (header or "").split(","))):
        match = PAIR.fullmatch(part)
        if match is None:
            raise refusal(Code.INVALID_REQUEST, "X-Session-Tokens holds 'SESSION_ID:TOKEN' pairs separated by commas")
        tokens[match[1]] = match[2]
    if len(tokens) > MAX_HELD:
        raise refusal(Code.INVALID_REQUEST, f"at most {MAX_HELD} sessions in X-Session-Tokens")
    return tokens


Viewing = Annotated[Viewer, Depends(viewer)]


def overview_of(app: FastAPI) -> Overview:
    """The app's one overview (its audit verdicts are shared by every viewer)."""
    with _overview_lock:
        if getattr(app.state, "dashboard_overview", None) is None:
            app.state.dashboard_overview = Overview(app.state.sessions)
        overview: Overview = app.state.dashboard_overview
        return overview


def sessions_view(overview: Overview, service: SessionService, who: Viewer, limit: int,
                  account: str | None = None) -> SessionsView:
    held: dict[str, SessionInfo] = {}
    unknown: dict[str, str] = {}
    for session_id, token in who.tokens.items():
        try:
            held[session_id] = service.info(session_id, token)
        except OracleError as exc:
            unknown[session_id] = exc.detail
    account = account if who.admin else None
    listed = overview.newest(limit, account) if who.admin else []
    seen = {s.id for s in listed}
    listed += overview.of([i for i in held if i not in seen])
    accounts = overview.accounts(ACCOUNTS_SHOWN) if who.admin else []
    refused = service.readiness()
    ledger = LedgerState(ready=True) if refused is None else LedgerState(ready=False, error=refused.error,
                                                                         detail=refused.detail)
    return SessionsView(admin=who.admin, counts=overview.counts(account), sessions=overview.with_verdicts(listed),
                        held=held, unknown=unknown, accounts=accounts, account=account, ledger=ledger)


class Feed:
    """One viewer's stream: the list when it changes, and the followed session's new rows."""

    def __init__(self, overview: Overview, service: SessionService, who: Viewer, follow: str | None,
                 limit: int, account: str | None = None) -> None:
        self.overview, self.service, self.who, self.follow, self.limit = overview, service, who, follow, limit
        self.account = account
        self.listed: dict[str, Any] | None = None
        self.after: int | None = None  # seq of the last row (or link) sent

    def poll(self) -> Events:
        events: Events = []
        listed = sessions_view(self.overview, self.service, self.who, self.limit, self.account).model_dump(mode="json")
        if listed != self.listed:
            self.listed = listed
            events.append(("sessions", listed))
        if self.follow is not None:
            events += self._tail(self.follow)
        return events

    def _tail(self, session_id: str) -> Events:
        first = self.after is None
        try:
            if session_id in self.who.tokens:
                values, rows = True, self._rows(session_id, self.who.tokens[session_id])
            elif self.who.admin:
                values, rows = False, [link.model_dump() for link in self._links(session_id)]
            else:
                raise refusal(Code.NOT_FOUND, "send this session's token (or sign in as the admin) to follow its "
                                              "ledger")
        except OracleError as exc:
            self.follow = None
            return [("ledger", {"session": session_id, "refused": {"error": exc.error, "detail": exc.detail}})]
        if not rows and not first:
            return []
        return [("ledger", {"session": session_id, "values": values, "first": first, "rows": rows})]

    def _rows(self, session_id: str, token: str) -> list[dict[str, Any]]:
        head = self.service.info(session_id, token).ledger_rows
        tail_start = max(-1, head - TAIL - 1)
        if self.after is None or head - 1 - self.after > BATCH:
            self.after = tail_start
        rows, _ = self.service.ledger_page(session_id, token, self.after, BATCH)
        if rows:
            self.after = rows[-1].seq
        return [row.model_dump(mode="json") for row in rows]

    def _links(self, session_id: str) -> list[LinkSummary]:
        links = self.overview.links(session_id, self.after, BATCH + 1)
        if self.after is None or len(links) > BATCH:
            links = self.overview.links(session_id, None, TAIL)
        if links:
            self.after = links[-1].seq
        elif self.after is None:
            self.after = -1
        return links


@router.get("/v1/dashboard/config", response_model=DashboardConfig)
def dashboard_config(request: Request) -> DashboardConfig:
    """Where the learner's dashboard is, and whether admins may sign in."""
    settings: Settings = request.app.state.settings
    return DashboardConfig(learner_url=os.environ.get(LEARNER_URL_ENV) or None,
                           admin_enabled=settings.admin_token is not None)


@router.get("/v1/dashboard/sessions", response_model=SessionsView,
            responses=responses(*ADMIN_REFUSALS))
def dashboard_sessions(request: Request, who: Viewing, limit: Limit = 50, account: OfAccount = None) -> SessionsView:
    """The sessions this viewer may list (never a value, never a token; values only of the sessions whose tokens
    were sent), with their audit verdicts; to the admin, the accounts too."""
    return sessions_view(overview_of(request.app), request.app.state.sessions, who, limit, account)


# Not in the OpenAPI document: an event stream never ends, which no schema-driven client (or fuzzer) expects.
@router.get("/v1/events", include_in_schema=False)
async def events(request: Request, who: Viewing, limit: Limit = 50,
                 follow: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
                 account: OfAccount = None) -> StreamingResponse:
    """Server-sent events: ``sessions`` when the list changes, ``ledger`` with the followed session's new rows."""
    feed = Feed(overview_of(request.app), request.app.state.sessions, who, follow, limit, account)
    return event_stream(request, lambda: run_in_threadpool(feed.poll), POLL_SECONDS)
