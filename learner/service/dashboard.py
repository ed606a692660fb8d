"""What the learner's live dashboard asks of it: the caller's runs with their learning curves as they grow, and past
comparisons (``learner.service.reports``). The page itself is the top floor's (``client.dashboards``).

The page is a client of the learner's public API like any other: it gets a caller token from ``POST /v1/callers``
(or is given one, the admin's for instance), starts runs with ``POST /v1/runs`` and cancels them with
``DELETE /v1/runs/{id}``, all with that token. ``GET /v1/events`` streams the caller's runs (server-sent events,
``web.events``): ``runs`` (the first page of ``GET /v1/runs``, whenever it changes), ``curve``
(``{"run", "start", "points", "ended"}``: a run's new curve points from ``start`` on; ``start`` 0 replaces the
curve, which happens once more when the run ends) and ``oracle`` (``{"ready", "error", "detail"}``: whether the
learner's oracle takes writes, as its ``/readyz`` says, whenever that changes: its runs cannot step while it does
not). The page links to the oracle's dashboard at
``BUDGETLAB_ORACLE_PUBLIC_URL`` (default: the learner's ``ORACLE_URL``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from budgetlab.contract.datasets import DatasetList
from budgetlab.contract.runs import FINAL_RUN_STATUSES
from budgetlab.errors import Code, OracleError, OracleUnavailable, responses
from budgetlab.oracle_client import AsyncOracleClient
from budgetlab.service_client import tls_context
from learner.service.auth import Caller
from learner.service.deps import Config, CurrentCaller, Runs, Store
from learner.service.oracle_access import unusable
from learner.service.reports import REPORTS_ENV, ReportDetail, ReportList, Reports, reports_dir
from learner.service.runs import RunManager
from learner.service.store import RunStore
from web.events import Events, event_stream
from web.state import from_state

ORACLE_PUBLIC_ENV = "BUDGETLAB_ORACLE_PUBLIC_URL"
POLL_SECONDS = 0.5
DATASETS_TIMEOUT = 10.0
# The oracle's readiness is asked at most this often (seconds), whatever the number of viewers, each time within
# READINESS_TIMEOUT.
READINESS_SECONDS, READINESS_TIMEOUT = 2.0, 2.0
REPORTS = Reports()

router = APIRouter(tags=["dashboard"])
ReportName = Annotated[str, PathParam(min_length=1, max_length=128)]


class DashboardConfig(BaseModel):
    oracle_url: str = Field(..., description=f"the oracle's dashboard ({ORACLE_PUBLIC_ENV}, else ORACLE_URL)",
                            examples=["http://127.0.0.1:8000"])
    reports_dir: str = Field(..., description=f"where past comparisons are looked for ({REPORTS_ENV})",
                             examples=["/home/me/budgetlab/reports"])


class OracleReadiness:
    """What the learner's oracle says of its ledger (``GET /readyz``), asked at most every ``READINESS_SECONDS``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._at, self._state = -READINESS_SECONDS, {"ready": True, "error": None, "detail": None}

    def state(self) -> dict[str, Any]:
        """The last answer; asked again if it is old, unless another viewer's question is under way (then the last
        answer, rather than a thread of the pool waiting as long as the oracle takes)."""
        if self._lock.acquire(blocking=False):
            try:
                if time.monotonic() - self._at >= READINESS_SECONDS:
                    self._state, self._at = self._ask(), time.monotonic()
            finally:
                self._lock.release()
        return self._state

    def _ask(self) -> dict[str, Any]:
        try:
            answer = httpx.get(f"{self.url}/readyz", timeout=READINESS_TIMEOUT, verify=tls_context())
        except httpx.HTTPError as exc:
            return {"ready": False, "error": Code.ORACLE_UNAVAILABLE.value,
                    "detail": f"the oracle at {self.url} cannot be reached ({type(exc).__name__})"}
        if answer.status_code == 200:
            return {"ready": True, "error": None, "detail": None}
        try:
            body = answer.json()
            return {"ready": False, "error": str(body["error"]), "detail": str(body["detail"])}
        except (ValueError, KeyError, TypeError):  # not an oracle's answer
            return {"ready": False, "error": Code.ORACLE_UNAVAILABLE.value,
                    "detail": f"the oracle at {self.url} answered /readyz with HTTP {answer.status_code}"}


class RunFeed:
    """One caller's stream: the runs page when it changes, each run's curve points as they come, and the oracle's
    readiness when it changes."""

    def __init__(self, manager: RunManager, store: RunStore, caller: Caller, limit: int,
                 oracle: OracleReadiness | None = None) -> None:
        self.manager, self.store, self.caller, self.limit = manager, store, caller, limit
        self.oracle = oracle
        self.oracle_state: dict[str, Any] | None = None
        self.listed: dict[str, Any] | None = None
        self.sent: dict[str, int] = {}  # points sent of runs still queued or executing
        self.ended: set[str] = set()  # runs whose whole curve was sent once they ended

    def poll(self) -> Events:
        page = self.store.page(None if self.caller.is_admin else self.caller.id, limit=self.limit, before=None,
                               status=None)
        live = self.manager.freshen(page)
        events: Events = []
        listed = page.model_dump(mode="json")
        if listed != self.listed:
            self.listed = listed
            events.append(("runs", listed))
        for run in page.runs:
            if run.id in live and live[run.id].status not in FINAL_RUN_STATUSES:  # executing: its curve grows
                curve = live[run.id].curve
                start = self.sent.get(run.id, 0)
                if len(curve) > start:
                    self.sent[run.id] = len(curve)
                    events.append(("curve", {"run": run.id, "start": start, "ended": False,
                                             "points": [p.model_dump() for p in curve[start:]]}))
            elif run.id not in self.ended:
                found = self.manager.find(run.id)
                # Not final: stored a moment before the manager took it in; its points come with the next poll.
                if found is not None and found[1].status in FINAL_RUN_STATUSES:
                    self.ended.add(run.id)
                    self.sent.pop(run.id, None)
                    events.append(("curve", {"run": run.id, "start": 0, "ended": True,
                                             "points": [p.model_dump() for p in found[1].curve]}))
        if self.oracle is not None:
            state = self.oracle.state()
            if state != self.oracle_state:
                self.oracle_state = state
                events.append(("oracle", state))
        return events


@router.get("/v1/dashboard/config", response_model=DashboardConfig)
def dashboard_config(settings: Config) -> DashboardConfig:
    """Where the oracle's dashboard is, and where past comparisons are looked for."""
    oracle = os.environ.get(ORACLE_PUBLIC_ENV) or settings.oracle_url
    return DashboardConfig(oracle_url=oracle, reports_dir=str(reports_dir()))


@router.get("/v1/dashboard/datasets", response_model=DatasetList, responses=responses(Code.ORACLE_UNAVAILABLE))
async def dashboard_datasets(settings: Config) -> DatasetList:
    """The datasets of the learner's oracle (``ORACLE_URL``), for the page's run form."""
    try:
        async with AsyncOracleClient(settings.oracle_url, timeout=DATASETS_TIMEOUT, stream=False) as oracle:
            return await oracle.datasets()
    except (OracleError, OracleUnavailable):
        raise unusable() from None


@router.get("/v1/dashboard/comparisons", response_model=ReportList)
def comparisons() -> ReportList:
    """The report folders under the reports directory, newest first."""
    return REPORTS.listing()


@router.get("/v1/dashboard/comparisons/{name}", response_model=ReportDetail,
            responses=responses(Code.NOT_FOUND, Code.INVALID_REQUEST))
def comparison(name: ReportName) -> ReportDetail:
    """One comparison: its claims table, and per design the algorithms' results and the plots."""
    return REPORTS.detail(name)


@router.get("/v1/dashboard/comparisons/{name}/plots/{plot}", response_class=FileResponse,
            responses={200: {"content": {"image/png": {}}}, **responses(Code.NOT_FOUND, Code.INVALID_REQUEST)})
def comparison_plot(name: ReportName, plot: Annotated[str, PathParam(min_length=1, max_length=210)]) -> FileResponse:
    return FileResponse(REPORTS.plot(name, plot))


# Not in the OpenAPI document: an event stream never ends, which no schema-driven client (or fuzzer) expects.
@router.get("/v1/events", include_in_schema=False)
async def events(request: Request, caller: CurrentCaller, manager: Runs, store: Store,
                 oracle: Annotated[OracleReadiness, Depends(from_state("oracle_readiness", OracleReadiness))],
                 limit: Annotated[int, Query(ge=1, le=200)] = 50) -> StreamingResponse:
    """Server-sent events: ``runs`` when the caller's runs change, ``curve`` with their new curve points."""
    feed = RunFeed(manager, store, caller, limit, oracle)
    return event_stream(request, lambda: run_in_threadpool(feed.poll), POLL_SECONDS)
