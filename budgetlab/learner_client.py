"""Python SDK of the learner service: ``LearnerClient`` (sync) and ``AsyncLearnerClient`` (asyncio), both httpx.

The learner runs one algorithm per run against an oracle; these clients start runs, follow them and fetch the
oracle's audit of a run's session (the learner holds the session's token, the caller need not). Runs belong to the
caller token that started them: a client sends its ``token``, or, given none, asks the learner for a new one on its
first call about runs and keeps it in ``client.token`` (so one client sees the runs it started)::

    with LearnerClient("http://127.0.0.1:8001") as learner:
        run = learner.start(RunCreate(dataset="mnist-3v5", algorithm="aerr", budget=Budget(per_example=57)))
        done = learner.wait(run.id, timeout=600, progress=lambda info: print(info.progress_examples))
        print(done.status, done.result.final)

A 4xx answer raises ``LearnerError`` (``status``, ``error``, ``detail``); a learner that cannot be reached or
answers 5xx raises ``LearnerUnavailable``; ``wait`` past its deadline raises ``RunTimeout`` (a ``TimeoutError``).
Each endpoint is described once, as a ``Call`` (``budgetlab.service_client``, shared with ``OracleClient``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace

import httpx

from budgetlab.contract.algorithms import AlgorithmList
from budgetlab.contract.callers import CallerToken
from budgetlab.contract.ledger import AuditReport
from budgetlab.contract.runs import FINAL_RUN_STATUSES, RunCreate, RunInfo, RunPage, RunSummary
from budgetlab.errors import LearnerError, LearnerUnavailable, RunTimeout
from budgetlab.service_client import AsyncServiceClient, Call, M, Service, ServiceClient

DEFAULT_LEARNER_URL = "http://127.0.0.1:8001"
POLL_SECONDS = 0.2
PAGE_SIZE = 100
LEARNER = Service("the learner service", LearnerError, LearnerUnavailable)

Progress = Callable[[RunInfo], None]


class RunCalls:
    """The learner's endpoints as ``Call``s, shared by the sync and async clients."""

    @staticmethod
    def algorithms() -> Call[AlgorithmList]:
        return Call("GET", "/v1/algorithms", AlgorithmList)

    @staticmethod
    def new_caller() -> Call[CallerToken]:
        return Call("POST", "/v1/callers", CallerToken)

    @staticmethod
    def start(request: RunCreate) -> Call[RunInfo]:
        return Call("POST", "/v1/runs", RunInfo, body=request)

    @staticmethod
    def get(run_id: str) -> Call[RunInfo]:
        return Call("GET", f"/v1/runs/{run_id}", RunInfo)

    @staticmethod
    def page(limit: int = PAGE_SIZE, cursor: str | None = None, status: str | None = None) -> Call[RunPage]:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {}), **({"status": status} if status else {})}
        return Call("GET", "/v1/runs", RunPage, params=params)

    @staticmethod
    def cancel(run_id: str) -> Call[RunInfo]:
        return Call("DELETE", f"/v1/runs/{run_id}", RunInfo)

    @staticmethod
    def audit(run_id: str) -> Call[AuditReport]:
        return Call("GET", f"/v1/runs/{run_id}/audit", AuditReport)


def _waited(run_id: str, info: RunInfo, deadline: float, timeout: float, progress: Progress | None) -> float | None:
    """One step of ``wait``: report ``info``; None when the run has ended, else how long to sleep at most."""
    if progress is not None:
        progress(info)
    if info.status in FINAL_RUN_STATUSES:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise RunTimeout(run_id, timeout, info.status)
    return left


class LearnerClient(ServiceClient):
    """Synchronous client of every learner endpoint."""

    service = LEARNER

    def __init__(self, base_url: str = DEFAULT_LEARNER_URL, *, token: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.token = token
        self._issuing = threading.Lock()

    def new_caller(self) -> CallerToken:
        """A new caller token from the learner (shown once); this client does not start using it."""
        return self.send(RunCalls.new_caller())

    def _authorized(self, call: Call[M]) -> M:
        """Send ``call`` with the caller token, asking the learner for one first if the client has none."""
        with self._issuing:
            if self.token is None:
                self.token = self.new_caller().token
        return self.send(replace(call, token=self.token))

    def algorithms(self) -> AlgorithmList:
        """Every algorithm the learner runs, with its paper, protocol and parameters."""
        return self.send(RunCalls.algorithms())

    def start(self, request: RunCreate) -> RunInfo:
        """Open the run's oracle session and queue the run; its info as it starts (status 'queued')."""
        return self._authorized(RunCalls.start(request))

    def get(self, run_id: str) -> RunInfo:
        return self._authorized(RunCalls.get(run_id))

    def page(self, limit: int = PAGE_SIZE, cursor: str | None = None, status: str | None = None) -> RunPage:
        """One page of this caller's runs (every run for the admin token), newest first, without curves."""
        return self._authorized(RunCalls.page(limit, cursor, status))

    def list(self, status: str | None = None) -> list[RunSummary]:
        """Every run of this caller, newest first, page after page."""
        return list(self.iter_runs(status))

    def iter_runs(self, status: str | None = None) -> Iterator[RunSummary]:
        cursor = None
        while True:
            page = self.page(PAGE_SIZE, cursor, status)
            yield from page.runs
            if page.next is None:
                return
            cursor = page.next

    def cancel(self, run_id: str) -> RunInfo:
        """Ask the run to stop; it ends as 'cancelled' with its curve so far (at once if it was still queued)."""
        return self._authorized(RunCalls.cancel(run_id))

    def audit(self, run_id: str) -> AuditReport:
        """The oracle's audit of the run's session."""
        return self._authorized(RunCalls.audit(run_id))

    def wait(self, run_id: str, *, timeout: float, poll: float = POLL_SECONDS,
             progress: Progress | None = None) -> RunInfo:
        """Poll the run every ``poll`` seconds until it has ended; ``RunTimeout`` once ``timeout`` seconds pass.

        ``progress`` gets every ``RunInfo`` polled, the last one included.
        """
        deadline = time.monotonic() + timeout
        while True:
            info = self.get(run_id)
            left = _waited(run_id, info, deadline, timeout, progress)
            if left is None:
                return info
            time.sleep(min(poll, left))


class AsyncLearnerClient(AsyncServiceClient):
    """Asynchronous client of every learner endpoint; the same methods as ``LearnerClient``, awaitable."""

    service = LEARNER

    def __init__(self, base_url: str = DEFAULT_LEARNER_URL, *, token: str | None = None, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport)
        self.token = token
        self._issuing = asyncio.Lock()

    async def new_caller(self) -> CallerToken:
        return await self.send(RunCalls.new_caller())

    async def _authorized(self, call: Call[M]) -> M:
        async with self._issuing:
            if self.token is None:
                self.token = (await self.new_caller()).token
        return await self.send(replace(call, token=self.token))

    async def algorithms(self) -> AlgorithmList:
        return await self.send(RunCalls.algorithms())

    async def start(self, request: RunCreate) -> RunInfo:
        return await self._authorized(RunCalls.start(request))

    async def get(self, run_id: str) -> RunInfo:
        return await self._authorized(RunCalls.get(run_id))

    async def page(self, limit: int = PAGE_SIZE, cursor: str | None = None, status: str | None = None) -> RunPage:
        return await self._authorized(RunCalls.page(limit, cursor, status))

    async def list(self, status: str | None = None) -> list[RunSummary]:
        """Every run of this caller, newest first, page after page."""
        return [run async for run in self.iter_runs(status)]

    async def iter_runs(self, status: str | None = None) -> AsyncIterator[RunSummary]:
        cursor = None
        while True:
            page = await self.page(PAGE_SIZE, cursor, status)
            for run in page.runs:
                yield run
            if page.next is None:
                return
            cursor = page.next

    async def cancel(self, run_id: str) -> RunInfo:
        return await self._authorized(RunCalls.cancel(run_id))

    async def audit(self, run_id: str) -> AuditReport:
        return await self._authorized(RunCalls.audit(run_id))

    async def wait(self, run_id: str, *, timeout: float, poll: float = POLL_SECONDS,
                   progress: Progress | None = None) -> RunInfo:
        deadline = time.monotonic() + timeout
        while True:
            info = await self.get(run_id)
            left = _waited(run_id, info, deadline, timeout, progress)
            if left is None:
                return info
            await asyncio.sleep(min(poll, left))
