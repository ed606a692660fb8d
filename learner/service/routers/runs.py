"""A caller's runs: start one (its oracle session opened here, the run queued), list them, read, audit and cancel one.

Every endpoint needs a caller's token (``deps.CurrentCaller``); another caller's run answers exactly as one that does
not exist. What an oracle answers is translated once, by ``OracleAllowList.asking``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from budgetlab.contract.ledger import AuditReport
from budgetlab.contract.runs import RunCreate, RunInfo, RunPage, RunStatus
from budgetlab.errors import Code, LearnerError, learner_refusal, responses
from budgetlab.oracle_client import OracleClient
from learner.algorithms import ParamError, UnknownAlgorithm, get_algorithm, is_target
from learner.http_oracle import HttpOracle
from learner.service.auth import Caller
from learner.service.deps import Config, CurrentCaller, Oracles, Runs, Store
from learner.service.oracle_access import OracleAllowList
from learner.service.runs import RunManager
from learner.service.settings import LearnerSettings

router = APIRouter(tags=["runs"])
RunId = Annotated[str, Path(min_length=1, max_length=64)]
# What every endpoint about runs may refuse: the caller's token, and a path or query that does not validate.
CALLER = (Code.UNAUTHORIZED, Code.INVALID_REQUEST)
# What one that asks the run's oracle may refuse beyond.
ASKS_ORACLE = (Code.ORACLE_UNAVAILABLE, Code.ORACLE_BUSY)
# What a plugin's author needs to hear when the learner does not know its id: the learner is another machine, or
# another environment, than the one where the plugin runs with --local.
RUNS_ALGORITHMS = ("This learner runs budgetlab's algorithms, the plugins installed where it runs (found without a "
                   "restart) and the package.module:Class targets its BUDGETLAB_LEARNER_ALGORITHMS allow-lists; GET "
                   "/v1/algorithms lists them")


def loadable(algorithm: str, settings: LearnerSettings) -> None:
    """The learner imports only its own algorithms, the installed plugins and the targets its settings allow-list:
    a request naming other code (package.module:Class) is refused before anything is imported."""
    if is_target(algorithm) and algorithm not in settings.algorithm_targets:
        raise learner_refusal(
            Code.ALGORITHM_NOT_ALLOWED,
            f"{algorithm!r} names code to import: this learner runs its own algorithms, the installed plugins (GET "
            "/v1/algorithms) and the package.module:Class targets allow-listed in BUDGETLAB_LEARNER_ALGORITHMS")


def open_session(request: RunCreate, oracles: OracleAllowList) -> HttpOracle:
    """The run's training session on its (allowed) oracle, once its algorithm takes its parameters."""
    assert request.oracle_url is not None
    try:
        algorithm = get_algorithm(request.algorithm)
        algorithm.read_params(request.params)
    except UnknownAlgorithm as exc:
        raise learner_refusal(Code.INVALID_PARAMS, f"{exc}. {RUNS_ALGORITHMS}") from None
    except ParamError as exc:
        raise learner_refusal(Code.INVALID_PARAMS, str(exc)) from None
    with oracles.asking(refused=Code.ORACLE_REJECTED):
        return HttpOracle(request.oracle_url, request.dataset, dataset_params=request.dataset_params,
                          protocol=algorithm.protocol, budget=request.budget, seed=request.seed,
                          api_key=request.key())


def not_found(run_id: str) -> LearnerError:
    # Another caller's run answers exactly as one that does not exist.
    return learner_refusal(Code.NOT_FOUND, f"run {run_id} does not exist (or is not one of this token's runs)")


def owned(manager: RunManager, run_id: str, caller: Caller) -> RunInfo:
    found = manager.find(run_id)
    if found is None or not caller.owns(found[0]):
        raise not_found(run_id)
    return found[1]


@router.post("/v1/runs", status_code=201, response_model=RunInfo,
             responses=responses(*CALLER, *ASKS_ORACLE, Code.TOO_LARGE, Code.INVALID_PARAMS, Code.ORACLE_REJECTED,
                                 Code.ALGORITHM_NOT_ALLOWED, Code.TOO_MANY_RUNS))
def start_run(request: RunCreate, caller: CurrentCaller, manager: Runs, settings: Config,
              oracles: Oracles) -> RunInfo:
    """Open an oracle session for the run and queue it; it starts when the pool has room. A caller has at most
    BUDGETLAB_LEARNER_MAX_QUEUED runs queued or executing."""
    loadable(request.algorithm, settings)
    request = request.model_copy(update={"oracle_url": oracles.resolve(request.oracle_url),
                                         "api_key": request.api_key or settings.api_key})
    with manager.admitted(caller.id):
        return manager.start(caller.id, request, open_session(request, oracles))


@router.get("/v1/runs", response_model=RunPage, responses=responses(*CALLER))
def list_runs(
    caller: CurrentCaller,
    manager: Runs,
    store: Store,
    limit: Annotated[int, Query(ge=1, le=500, description="runs per page")] = 50,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,18}$", description="'next' of the page before")] = None,
    status: Annotated[RunStatus | None, Query(description="only runs with this status")] = None,
) -> RunPage:
    """The caller's runs (every run for the admin), newest first, without curves or weights."""
    page = store.page(None if caller.is_admin else caller.id, limit=limit, before=int(cursor) if cursor else None,
                      status=status)
    manager.freshen(page)
    return page


@router.get("/v1/runs/{run_id}", response_model=RunInfo, responses=responses(*CALLER, Code.NOT_FOUND))
def get_run(run_id: RunId, caller: CurrentCaller, manager: Runs) -> RunInfo:
    """Status, progress, learning curve and (once ended) result of one run."""
    return owned(manager, run_id, caller)


@router.get("/v1/runs/{run_id}/audit", response_model=AuditReport,
            responses=responses(*CALLER, Code.NOT_FOUND, *ASKS_ORACLE, Code.ORACLE_ERROR))
def audit_run(run_id: RunId, caller: CurrentCaller, manager: Runs, oracles: Oracles) -> AuditReport:
    """The oracle's audit of the run's session (the learner holds the session's token, the caller need not)."""
    stored = manager.stored(run_id)
    if stored is None or not caller.owns(stored.owner) or stored.session is None:
        raise not_found(run_id)
    url = oracles.resolve(stored.session.oracle_url)
    with oracles.asking(refused=Code.ORACLE_ERROR), OracleClient(url) as client:
        return client.session(stored.session.id, stored.session.token).audit()


@router.delete("/v1/runs/{run_id}", response_model=RunInfo, responses=responses(*CALLER, Code.NOT_FOUND))
def cancel_run(run_id: RunId, caller: CurrentCaller, manager: Runs) -> RunInfo:
    """Stop a run: a queued one at once, an executing one at its next example, with its curve so far."""
    owned(manager, run_id, caller)
    manager.cancel(run_id)
    return owned(manager, run_id, caller)
