"""The feature oracle: a FastAPI app over the datasets, the budgets and the ledger."""

from __future__ import annotations

import os
import sys
from typing import Annotated

from fastapi import FastAPI, Query
from pydantic import BaseModel

from budgetlab.http_errors import install_error_handlers
from budgetlab.models import ErrorBody
from server import dashboard
from server.config import Settings
from server.db import make_engine, upgrade
from server.deps import Admin, Service
from server.routers import datasets, sessions, stream
from server.sessions import SessionService

# A worker's small requests wait on the GIL behind a big request's Python work (parsing, hashing) as well as on
# the ledger's lock; handing the GIL over every 0.5 ms instead of every 5 ms keeps their wait short.
GIL_SWITCH_INTERVAL = 0.0005


class Health(BaseModel):
    status: str = "ok"


class Closed(BaseModel):
    closed: list[str]


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    settings = settings or Settings()
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    if migrate:
        upgrade(settings.database_url)
    app = FastAPI(
        title="budgetlab feature oracle",
        version="1",
        description="Hosts datasets and charges per attribute under local, global and test-time budgets. "
        "Every value sent has a ledger row, committed before the answer.",
    )
    app.state.settings = settings
    engine = make_engine(settings.database_url, settings.lock_timeout)
    app.state.sessions = SessionService(engine, settings.lock_timeout)
    install_error_handlers(app)

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        return Health()

    @app.post("/v1/admin/close-idle", response_model=Closed, tags=["admin"], dependencies=[Admin],
              responses={code: {"model": ErrorBody} for code in (401, 403, 422)})
    def close_idle(
        sessions_: Service,
        idle_seconds: Annotated[float | None, Query(ge=0, le=10**9)] = None,
    ) -> Closed:
        """Close every session idle longer than ``idle_seconds`` (default: the oracle's idle timeout)."""
        return Closed(closed=sessions_.close_idle(settings.idle_timeout if idle_seconds is None else idle_seconds))

    app.include_router(datasets.router)
    app.include_router(sessions.router)
    app.include_router(stream.router)
    app.include_router(dashboard.router)
    return app


def app_from_env() -> FastAPI:
    """Entry point for ``uvicorn --factory`` (several workers each build their app from the environment).

    ``budgetlab serve oracle`` migrates once before it starts the workers and says so with
    ``BUDGETLAB_SKIP_MIGRATIONS=1``, so that N workers do not race to upgrade one database.
    """
    return create_app(migrate=os.environ.get("BUDGETLAB_SKIP_MIGRATIONS") != "1")


