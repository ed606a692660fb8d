"""The learner service: runs one chosen algorithm per run against an allowed oracle over real HTTP.

Runs belong to the caller whose token started them (``learner.auth``), persist in the learner's database
(``learner.store``), execute in a bounded pool (``learner.runs``) and use only allowed oracles
(``learner.oracle_access``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import httpx
from fastapi import FastAPI, Path, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from budgetlab.contract.algorithms import AlgorithmList
from budgetlab.contract.callers import CallerToken
from budgetlab.contract.ledger import AuditReport
from budgetlab.contract.runs import RunCreate, RunInfo, RunPage, RunStatus
from budgetlab.contract.service import Health
from budgetlab.errors import Code, LearnerError, OracleError, OracleUnavailable, SessionBusy, learner_refusal, responses
from budgetlab.oracle_client import OracleClient
from learner import dashboard
from learner.algorithms import ParamError, UnknownAlgorithm, algorithms, describe, get_algorithm, is_target, rescan
from learner.auth import Caller, Callers, CurrentCaller
from learner.database import make_engine, upgrade
from learner.http_oracle import HttpOracle
from learner.oracle_access import OracleAllowList, busy
from learner.runs import RunManager
from learner.settings import LearnerSettings
from learner.store import RunStore
from web.errors import install_error_handlers
from web.limits import RequestLimits
from web.openapi_refusals import add_refusals, database_refusals
from web.rates import Rate, RateLimits

log = logging.getLogger(__name__)
RunId = Annotated[str, Path(min_length=1, max_length=64)]
# An answer that is not an oracle's (a non-HTTP port, another kind of service): never passed on to the caller.
NOT_AN_ORACLE = (OracleUnavailable, ValidationError, ValueError, httpx.HTTPError)
# What every endpoint about runs may refuse: the caller's token, and a path or query that does not validate.
CALLER = (Code.UNAUTHORIZED, Code.INVALID_REQUEST)
# What one that asks the run's oracle may refuse beyond.
ASKS_ORACLE = (Code.ORACLE_UNAVAILABLE, Code.ORACLE_BUSY)
# What a plugin's author needs to hear when the learner does not know its id: the learner is another machine, or
# another environment, than the one where the plugin runs with --local.
RUNS_ALGORITHMS = ("This learner runs budgetlab's algorithms, the plugins installed where it runs (found without a "
                   "restart) and the package.module:Class targets its BUDGETLAB_LEARNER_ALGORITHMS allow-lists; GET "
                   "/v1/algorithms lists them")


def open_session(request: RunCreate, oracles: OracleAllowList) -> HttpOracle:
    """The run's training session on its (allowed) oracle; the oracle's own refusals are passed on."""
    assert request.oracle_url is not None
    try:
        get_algorithm(request.algorithm).read_params(request.params)
        return HttpOracle(request.oracle_url, request.dataset, dataset_params=request.dataset_params,
                          protocol=get_algorithm(request.algorithm).protocol, budget=request.budget,
                          seed=request.seed, api_key=request.key())
    except UnknownAlgorithm as exc:
        raise learner_refusal(Code.INVALID_PARAMS, f"{exc}. {RUNS_ALGORITHMS}") from None
    except ParamError as exc:
        raise learner_refusal(Code.INVALID_PARAMS, str(exc)) from None
    except SessionBusy as exc:
        raise busy(exc.retry_after) from None
    except OracleError as exc:
        raise learner_refusal(Code.ORACLE_REJECTED, exc.detail) from None
    except NOT_AN_ORACLE:
        raise oracles.unusable() from None


def loadable(algorithm: str, settings: LearnerSettings) -> None:
    """The learner imports only its own algorithms, the installed plugins and the targets its settings allow-list:
    a request naming other code (package.module:Class) is refused before anything is imported."""
    if is_target(algorithm) and algorithm not in settings.algorithm_targets:
        raise learner_refusal(
            Code.ALGORITHM_NOT_ALLOWED,
            f"{algorithm!r} names code to import: this learner runs its own algorithms, the installed plugins (GET "
            "/v1/algorithms) and the package.module:Class targets allow-listed in BUDGETLAB_LEARNER_ALGORITHMS")


def listing(settings: LearnerSettings) -> AlgorithmList:
    """Every algorithm a run may name, with its package and version; the entry points are read again, so a plugin
    installed while the learner runs is listed (one that cannot be imported is logged and left out)."""
    rescan()
    found = []
    for name in [*algorithms(), *settings.algorithm_targets]:
        try:
            found.append(describe(name))
        except (ParamError, ValueError) as exc:  # ValueError: a plugin's description that does not validate
            log.warning("algorithm %s is not listed: %s", name, exc)
    return AlgorithmList(algorithms=found)


def not_found(run_id: str) -> LearnerError:
    # Another caller's run answers exactly as one that does not exist.
    return learner_refusal(Code.NOT_FOUND, f"run {run_id} does not exist (or is not one of this token's runs)")


def create_app(settings: LearnerSettings | None = None) -> FastAPI:
    """The learner app; without ``settings`` they come from the environment (``learner.settings``)."""
    settings = settings or LearnerSettings()
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    store = RunStore(engine)
    manager = RunManager(store, max_running=settings.max_running, retained=settings.retained_runs,
                         workers=settings.workers, scheduler=settings.scheduler, oracle_url=settings.oracle_url,
                         max_queued=settings.max_queued)
    manager.recover()
    oracles = OracleAllowList(settings.oracle_url, settings.extra_oracles)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        manager.start_workers()  # in the background: the first runs find them up, or queue until they are
        yield
        await run_in_threadpool(manager.shutdown)
        engine.dispose()

    app = FastAPI(title="budgetlab learner", version="1", lifespan=lifespan,
                  description="Runs the papers' attribute-efficient algorithms against a feature oracle over HTTP. "
                              "Get a caller token from POST /v1/callers and send it as a bearer token: a caller "
                              "sees and cancels only its own runs.")
    install_error_handlers(app)
    callers = Rate(settings.callers_per_second, settings.callers_burst,
                   "BUDGETLAB_LEARNER_CALLERS_PER_SECOND, BUDGETLAB_LEARNER_CALLERS_BURST")
    app.add_middleware(RateLimits, limits={("POST", "/v1/callers"): callers})
    # Callers and runs live in the learner's database; its state may refuse any of their requests.
    add_refusals(app, lambda method, path: database_refusals(method) if path.startswith(("/v1/runs", "/v1/callers"))
                 else [])
    app.add_middleware(RequestLimits, max_body_bytes=settings.max_body_bytes,
                       setting="BUDGETLAB_LEARNER_MAX_BODY_BYTES")
    app.state.settings = settings
    app.state.runs = manager
    app.state.callers = Callers(store, settings.admin_token)

    def owned(run_id: str, caller: Caller) -> RunInfo:
        found = manager.find(run_id)
        if found is None or not caller.owns(found[0]):
            raise not_found(run_id)
        return found[1]

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        return Health()

    @app.get("/v1/algorithms", response_model=AlgorithmList, tags=["algorithms"])
    def list_algorithms() -> AlgorithmList:
        """budgetlab's algorithms, the installed plugins' and the allow-listed targets, with package and version."""
        return listing(settings)

    @app.post("/v1/callers", status_code=201, response_model=CallerToken, tags=["callers"],
              responses=responses(Code.RATE_LIMITED))
    def new_caller() -> CallerToken:
        """A new caller token (shown once): the runs started with it are visible to its holder only."""
        return app.state.callers.issue()

    @app.post("/v1/runs", status_code=201, response_model=RunInfo, tags=["runs"],
              responses=responses(*CALLER, *ASKS_ORACLE, Code.TOO_LARGE, Code.INVALID_PARAMS, Code.ORACLE_REJECTED,
                                  Code.ALGORITHM_NOT_ALLOWED, Code.TOO_MANY_RUNS))
    def start_run(request: RunCreate, caller: CurrentCaller) -> RunInfo:
        """Open an oracle session for the run and queue it; it starts when the pool has room. A caller has at most
        BUDGETLAB_LEARNER_MAX_QUEUED runs queued or executing."""
        loadable(request.algorithm, settings)
        request = request.model_copy(update={"oracle_url": oracles.resolve(request.oracle_url),
                                             "api_key": request.api_key or settings.api_key})
        with manager.admitted(caller.id):
            return manager.start(caller.id, request, open_session(request, oracles))

    @app.get("/v1/runs", response_model=RunPage, tags=["runs"], responses=responses(*CALLER))
    def list_runs(
        caller: CurrentCaller,
        limit: Annotated[int, Query(ge=1, le=500, description="runs per page")] = 50,
        cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,18}$", description="'next' of the page before")]
        = None,
        status: Annotated[RunStatus | None, Query(description="only runs with this status")] = None,
    ) -> RunPage:
        """The caller's runs (every run for the admin), newest first, without curves or weights."""
        page = store.page(None if caller.is_admin else caller.id, limit=limit,
                          before=int(cursor) if cursor else None, status=status)
        live = manager.progress_of(run.id for run in page.runs)
        for run in page.runs:
            if run.id in live:
                info = live[run.id]
                run.status, run.progress_examples = info.status, info.progress_examples
                run.progress_attributes = info.progress_attributes
                run.last_point = info.curve[-1] if info.curve else run.last_point
        return page

    @app.get("/v1/runs/{run_id}", response_model=RunInfo, tags=["runs"], responses=responses(*CALLER, Code.NOT_FOUND))
    def get_run(run_id: RunId, caller: CurrentCaller) -> RunInfo:
        """Status, progress, learning curve and (once ended) result of one run."""
        return owned(run_id, caller)

    @app.get("/v1/runs/{run_id}/audit", response_model=AuditReport, tags=["runs"],
             responses=responses(*CALLER, Code.NOT_FOUND, *ASKS_ORACLE, Code.ORACLE_ERROR))
    def audit_run(run_id: RunId, caller: CurrentCaller) -> AuditReport:
        """The oracle's audit of the run's session (the learner holds the session's token, the caller need not)."""
        stored = manager.stored(run_id)
        if stored is None or not caller.owns(stored.owner) or stored.session is None:
            raise not_found(run_id)
        url = oracles.resolve(stored.session.oracle_url)
        try:
            with OracleClient(url) as client:
                return client.session(stored.session.id, stored.session.token).audit()
        except SessionBusy as exc:
            raise busy(exc.retry_after) from None
        except OracleError as exc:
            raise learner_refusal(Code.ORACLE_ERROR, exc.detail) from None
        except NOT_AN_ORACLE:
            raise oracles.unusable() from None

    @app.delete("/v1/runs/{run_id}", response_model=RunInfo, tags=["runs"],
                responses=responses(*CALLER, Code.NOT_FOUND))
    def cancel_run(run_id: RunId, caller: CurrentCaller) -> RunInfo:
        """Stop a run: a queued one at once, an executing one at its next example, with its curve so far."""
        owned(run_id, caller)
        manager.cancel(run_id)
        return owned(run_id, caller)

    app.include_router(dashboard.router)
    return app
