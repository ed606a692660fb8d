"""The learner service: runs one chosen algorithm per run against an oracle over real HTTP."""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import FastAPI, Path
from pydantic import BaseModel

from budgetlab.errors import LearnerError, OracleError, OracleUnavailable
from budgetlab.http_errors import install_error_handlers
from budgetlab.models import AlgorithmList, AuditReport, ErrorBody, RunCreate, RunInfo, RunList
from budgetlab.oracle_client import DEFAULT_ORACLE_URL, OracleClient
from learner.algorithms import ParamError, algorithms, get_algorithm
from learner.http_oracle import HttpOracle
from learner.runs import RunManager

RunId = Annotated[str, Path(min_length=1, max_length=64)]
ERRORS = {code: {"model": ErrorBody} for code in (404, 409, 422)}


class Health(BaseModel):
    status: str = "ok"


def validate(request: RunCreate) -> None:
    cls = get_algorithm(request.algorithm)
    unknown = sorted(set(request.params) - set(cls.params))
    if unknown:
        raise ParamError(f"{cls.id} has no parameter(s) {', '.join(unknown)}; it takes {sorted(cls.params)}")


def create_app(oracle_url: str | None = None) -> FastAPI:
    """The learner app; runs that name no oracle use ``oracle_url`` (default: env ORACLE_URL, else port 8000)."""
    default_oracle = oracle_url or os.environ.get("ORACLE_URL") or DEFAULT_ORACLE_URL
    app = FastAPI(title="budgetlab learner", version="1",
                  description="Runs the papers' attribute-efficient algorithms against a feature oracle over HTTP.")
    install_error_handlers(app)
    manager = RunManager()
    app.state.runs = manager

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        return Health()

    @app.get("/v1/algorithms", response_model=AlgorithmList, tags=["algorithms"])
    def list_algorithms() -> AlgorithmList:
        return AlgorithmList(algorithms=[cls.info() for cls in algorithms().values()])

    @app.post("/v1/runs", status_code=201, response_model=RunInfo, tags=["runs"], responses=ERRORS)
    def start_run(request: RunCreate) -> RunInfo:
        """Open an oracle session for the run and start it in the background."""
        request = request.model_copy(update={"oracle_url": request.oracle_url or default_oracle})
        try:
            validate(request)
            oracle = HttpOracle(request.oracle_url, request.dataset, dataset_params=request.dataset_params,
                                protocol=get_algorithm(request.algorithm).protocol, budget=request.budget,
                                seed=request.seed)
        except ParamError as exc:
            raise LearnerError(422, "invalid_params", str(exc)) from None
        except OracleUnavailable as exc:
            raise LearnerError(422, "oracle_unavailable", str(exc)) from None
        except OracleError as exc:
            raise LearnerError(422, "oracle_rejected", exc.detail) from None
        return manager.start(request, oracle).info()

    @app.get("/v1/runs", response_model=RunList, tags=["runs"])
    def list_runs() -> RunList:
        return RunList(runs=[run.info() for run in list(manager.runs.values())])

    @app.get("/v1/runs/{run_id}", response_model=RunInfo, tags=["runs"], responses=ERRORS)
    def get_run(run_id: RunId) -> RunInfo:
        run = manager.get(run_id)
        if run is None:
            raise LearnerError(404, "not_found", f"run {run_id} does not exist")
        return run.info()

    @app.get("/v1/runs/{run_id}/audit", response_model=AuditReport, tags=["runs"],
             responses={**ERRORS, 502: {"model": ErrorBody}})
    def audit_run(run_id: RunId) -> AuditReport:
        """The oracle's audit of the run's session (the learner holds the session's token, the caller need not)."""
        run = manager.get(run_id)
        if run is None:
            raise LearnerError(404, "not_found", f"run {run_id} does not exist")
        assert run.request.oracle_url is not None
        try:
            with OracleClient(run.request.oracle_url) as client:
                return client.session(run.oracle.session.id, run.oracle.session.token).audit()
        except OracleUnavailable as exc:
            raise LearnerError(502, "oracle_unavailable", str(exc)) from None
        except OracleError as exc:
            raise LearnerError(502, "oracle_error", exc.detail) from None

    @app.delete("/v1/runs/{run_id}", response_model=RunInfo, tags=["runs"], responses=ERRORS)
    def cancel_run(run_id: RunId) -> RunInfo:
        """Ask a run to stop; it ends as 'cancelled' with its curve so far."""
        run = manager.get(run_id)
        if run is None:
            raise LearnerError(404, "not_found", f"run {run_id} does not exist")
        run.cancel.set()
        if run.thread is not None:
            run.thread.join(timeout=10)
        return run.info()

    return app
