"""The learner service: runs one chosen algorithm per run against an allowed oracle over real HTTP.

Runs belong to the caller whose token started them (``learner.service.auth``), persist in the learner's database
(``learner.service.store``), execute in a bounded pool (``learner.service.runs``) and use only allowed oracles
(``learner.service.oracle_access``). The routes are in ``learner.service.routers`` and ``learner.service.dashboard``;
this module assembles them with what they depend on (``learner.service.deps``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Engine

from budgetlab.contract.service import Health
from learner.service import dashboard
from learner.service.auth import Callers
from learner.service.dashboard import OracleReadiness
from learner.service.database import make_engine, upgrade
from learner.service.oracle_access import OracleAllowList
from learner.service.routers import algorithms, callers, runs
from learner.service.runs import RunManager
from learner.service.settings import LearnerSettings
from learner.service.store import RunStore
from web.errors import install_error_handlers
from web.limits import RequestLimits
from web.openapi_refusals import add_refusals, database_refusals
from web.rates import Rate, RateLimits

DESCRIPTION = ("Runs the papers' attribute-efficient algorithms against a feature oracle over HTTP. Get a caller "
               "token from POST /v1/callers and send it as a bearer token: a caller sees and cancels only its own "
               "runs.")


def create_app(settings: LearnerSettings | None = None) -> FastAPI:
    """The learner app; without ``settings`` they come from the environment (``learner.service.settings``)."""
    settings = settings or LearnerSettings()
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    store = RunStore(engine)
    manager = RunManager(store, max_running=settings.max_running, retained=settings.retained_runs,
                         workers=settings.workers, threads=settings.worker_threads, scheduler=settings.scheduler,
                         oracle_url=settings.oracle_url, max_queued=settings.max_queued)
    manager.recover()
    app = FastAPI(title="budgetlab learner", version="1", lifespan=lifespan(manager, engine),
                  description=DESCRIPTION)
    app.state.settings = settings
    app.state.store = store
    app.state.runs = manager
    app.state.callers = Callers(store, settings.admin_token)
    app.state.oracles = OracleAllowList(settings.oracle_url, settings.extra_oracles)
    app.state.oracle_readiness = OracleReadiness(settings.oracle_url)
    limit(app, settings)

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        return Health()

    for router in (algorithms.router, callers.router, runs.router, dashboard.router):
        app.include_router(router)
    return app


def lifespan(manager: RunManager, engine: Engine) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The workers start with the served app; as it stops, every unended run ends 'interrupted'."""

    @asynccontextmanager
    async def running(_: FastAPI) -> AsyncIterator[None]:
        manager.start_workers()  # in the background: the first runs find them up, or queue until they are
        yield
        await run_in_threadpool(manager.shutdown)
        engine.dispose()

    return running


def limit(app: FastAPI, settings: LearnerSettings) -> None:
    """What a request meets before a route reads it: its error answers, the rate of new callers and the size of
    its body; and the refusals the OpenAPI document lists for the database's state."""
    install_error_handlers(app)
    callers = Rate(settings.callers_per_second, settings.callers_burst,
                   "BUDGETLAB_LEARNER_CALLERS_PER_SECOND, BUDGETLAB_LEARNER_CALLERS_BURST")
    app.add_middleware(RateLimits, limits={("POST", "/v1/callers"): callers})
    # Callers and runs live in the learner's database; its state may refuse any of their requests.
    add_refusals(app, lambda method, path: database_refusals(method) if path.startswith(("/v1/runs", "/v1/callers"))
                 else [])
    app.add_middleware(RequestLimits, max_body_bytes=settings.max_body_bytes,
                       setting="BUDGETLAB_LEARNER_MAX_BODY_BYTES")
