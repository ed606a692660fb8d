"""What the learner's live dashboard asks of it: the caller's runs with their learning curves as they grow, and past
comparisons (``learner.reports``). The page itself is the top floor's (``client.dashboards``).

The page is a client of the learner's public API like any other: it gets a caller token from ``POST /v1/callers``
(or is given one, the admin's for instance), starts runs with ``POST /v1/runs`` and cancels them with
``DELETE /v1/runs/{id}``, all with that token. ``GET /v1/events`` streams the caller's runs (server-sent events,
``web.events``): ``runs`` (the first page of ``GET /v1/runs``, whenever it changes) and ``curve``
(``{"run", "start", "points", "ended"}``: a run's new curve points from ``start`` on; ``start`` 0 replaces the
curve, which happens once more when the run ends). The page links to the oracle's dashboard at
``BUDGETLAB_ORACLE_PUBLIC_URL`` (default: the learner's ``ORACLE_URL``).
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from budgetlab.contract.datasets import DatasetList
from budgetlab.contract.runs import FINAL_RUN_STATUSES
from budgetlab.errors import Code, OracleError, OracleUnavailable, responses
from budgetlab.oracle_client import AsyncOracleClient
from learner.auth import Caller, CurrentCaller
from learner.oracle_access import unusable
from learner.reports import REPORTS_ENV, ReportDetail, ReportList, Reports, reports_dir
from learner.runs import RunManager
from learner.store import RunStore
from web.events import Events, event_stream

ORACLE_PUBLIC_ENV = "BUDGETLAB_ORACLE_PUBLIC_URL"
POLL_SECONDS = 0.5
DATASETS_TIMEOUT = 10.0
REPORTS = Reports()

router = APIRouter(tags=["dashboard"])
ReportName = Annotated[str, PathParam(min_length=1, max_length=128)]


class DashboardConfig(BaseModel):
    oracle_url: str = Field(..., description=f"the oracle's dashboard ({ORACLE_PUBLIC_ENV}, else ORACLE_URL)",
                            examples=["http://127.0.0.1:8000"])
    reports_dir: str = Field(..., description=f"where past comparisons are looked for ({REPORTS_ENV})",
                             examples=["/home/me/budgetlab/reports"])


class RunFeed:
    """One caller's stream: the runs page when it changes, and each run's curve points as they come."""

    def __init__(self, manager: RunManager, store: RunStore, caller: Caller, limit: int) -> None:
        self.manager, self.store, self.caller, self.limit = manager, store, caller, limit
        self.listed: dict[str, Any] | None = None
        self.sent: dict[str, int] = {}  # points sent of runs still queued or executing
        self.ended: set[str] = set()  # runs whose whole curve was sent once they ended

    def poll(self) -> Events:
        page = self.store.page(None if self.caller.is_admin else self.caller.id, limit=self.limit, before=None,
                               status=None)
        live = self.manager.progress_of(run.id for run in page.runs)
        for run in page.runs:  # the database lags behind an executing run; memory does not
            if run.id in live:
                info = live[run.id]
                run.status, run.progress_examples = info.status, info.progress_examples
                run.progress_attributes = info.progress_attributes
                run.last_point = info.curve[-1] if info.curve else run.last_point
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
        return events


@router.get("/v1/dashboard/config", response_model=DashboardConfig)
def dashboard_config(request: Request) -> DashboardConfig:
    """Where the oracle's dashboard is, and where past comparisons are looked for."""
    oracle = os.environ.get(ORACLE_PUBLIC_ENV) or request.app.state.settings.oracle_url
    return DashboardConfig(oracle_url=oracle, reports_dir=str(reports_dir()))


@router.get("/v1/dashboard/datasets", response_model=DatasetList, responses=responses(Code.ORACLE_UNAVAILABLE))
async def dashboard_datasets(request: Request) -> DatasetList:
    """The datasets of the learner's oracle (``ORACLE_URL``), for the page's run form."""
    try:
        async with AsyncOracleClient(request.app.state.settings.oracle_url, timeout=DATASETS_TIMEOUT,
                                     stream=False) as oracle:
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
async def events(request: Request, caller: CurrentCaller,
                 limit: Annotated[int, Query(ge=1, le=200)] = 50) -> StreamingResponse:
    """Server-sent events: ``runs`` when the caller's runs change, ``curve`` with their new curve points."""
    feed = RunFeed(request.app.state.runs, request.app.state.runs.store, caller, limit)
    return event_stream(request, lambda: run_in_threadpool(feed.poll), POLL_SECONDS)
