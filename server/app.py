"""The feature oracle: a FastAPI app over the datasets, the budgets and the ledger."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from starlette.types import Scope

from budgetlab.bearer import bearer_token
from budgetlab.contract.calls import ObserveBatchRequest, StepsRequest
from budgetlab.datasets.registry import CACHE_ENTRIES, cache_limits
from budgetlab.errors import Code, Refused
from server import dashboard
from server.accounts import AccountService
from server.batch_process import BatchProcess
from server.build_costs import BuildCosts
from server.config import Settings
from server.db import make_engine, upgrade
from server.deps import is_admin
from server.raw_bodies import add_components
from server.routers import accounts, admin, datasets, health, sessions, stream
from server.sessions import Admission, SessionService
from server.small_steps import SmallSteps
from server.steps import Caps
from web.errors import install_error_handlers
from web.limits import RequestLimits
from web.openapi_refusals import add_refusals, database_refusals
from web.openapi_security import optional_credentials_at_root
from web.rates import Rate, RateLimits, limited_keys

# A worker's small requests wait on the GIL behind a big request's Python work (parsing, hashing) as well as on
# the ledger's lock; handing the GIL over every 0.1 ms instead of every 5 ms keeps their wait short (a request that
# does I/O gives the GIL up at each call and waits up to an interval to get it back).
GIL_SWITCH_INTERVAL = 0.0001
# The operations that never use the database (the datasets' too, under /v1/datasets): no 503 or 507 of its state.
WITHOUT_DATABASE = {"/healthz", "/readyz", "/v1/dashboard/config"}
# While no OpenTelemetry provider is configured, FastAPI's request spans are looked for again after this long (s).
TELEMETRY_LOOK_SECONDS = 1.0
DESCRIPTION = ("Hosts datasets and charges per attribute under local, global and test-time budgets. Every value sent "
               "has a ledger row, committed before the answer.")


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    settings = settings or Settings()
    check(settings)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    cache_limits(CACHE_ENTRIES, settings.dataset_cache_bytes)
    if migrate:
        upgrade(settings.database_url)
    service, batches = open_service(settings)
    app = FastAPI(lifespan=lifespan(service, batches), title="budgetlab feature oracle", version="1",
                  description=DESCRIPTION)
    app.state.settings = settings
    app.state.sessions = service
    app.state.accounts = AccountService(service)
    install_error_handlers(app)
    telemetry_looked_up(app)
    app.add_middleware(SmallSteps)  # the innermost: inside the rates and limits every request meets
    limit(app, settings)
    optional_credentials_at_root(app)
    app.add_middleware(RequestLimits, max_body_bytes=settings.max_body_bytes, setting="BUDGETLAB_MAX_BODY_BYTES",
                       larger=admin_upload(settings))
    for router in (health.router, admin.router, datasets.router, accounts.router, sessions.router, stream.router,
                   dashboard.router):
        app.include_router(router)
    add_components(app, [ObserveBatchRequest, StepsRequest])
    return app


class TelemetryLook:
    """FastAPI's check, at every request and stream, for an OpenTelemetry provider to make its spans and metrics
    with, answered from its last look while that is under ``TELEMETRY_LOOK_SECONDS`` old: the check reads three
    environment variables and three global providers, 7.5 us a small step's request (1.3 % of the oracle's CPU a
    step). A provider, once set, stays (OpenTelemetry sets each once), so once found it is never looked for again; one
    configured while the oracle serves has its spans from at most a second later."""

    def __init__(self, enabled: Callable[[], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self._enabled = enabled
        self._clock = clock
        self._found = False
        self._next = 0.0

    def __call__(self) -> bool:
        if self._found:
            return True
        now = self._clock()
        if now >= self._next:
            self._found = self._enabled()
            self._next = now + TELEMETRY_LOOK_SECONDS
        return self._found


def telemetry_looked_up(app: FastAPI) -> None:
    """FastAPI's telemetry check through a ``TelemetryLook`` (a FastAPI without that check is left as it is)."""
    telemetry = getattr(app, "_native_telemetry", None)
    if telemetry is not None:
        telemetry.enabled = TelemetryLook(telemetry.enabled)


def open_service(settings: Settings) -> tuple[SessionService, BatchProcess | None]:
    """The session service on the ledger (and the batch process, if the settings ask for one); an oracle that cannot
    record what it sends must not send anything, so a ledger that cannot be written now refuses the start."""
    engine = make_engine(settings.database_url, settings.lock_timeout)
    caps = Caps(settings.max_cells, settings.max_examples)
    batches = (BatchProcess(settings.database_url, settings.lock_timeout, caps, settings.dataset_cache_bytes)
               if settings.batch_process else None)
    admission = Admission(settings.anonymous, settings.anonymous_allowance(), settings.shielded_datasets)
    service = SessionService(engine, settings.lock_timeout, caps, batch_process=batches, admission=admission,
                             reserve_bytes=settings.ledger_reserve_bytes, group_commit=settings.group_commit)
    try:
        service.check_ready()
    except Refused as exc:
        service.close_connections()
        if batches is not None:
            batches.close()
        raise ValueError(f"the ledger ({engine.url.render_as_string(hide_password=True)}) cannot be written: "
                         f"{exc.detail}") from exc
    return service, batches


def lifespan(service: SessionService, batches: BatchProcess | None,
             ) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """As the served app stops, the batch process and the ledger's connections close."""

    @asynccontextmanager
    async def serving(_: FastAPI) -> AsyncIterator[None]:
        yield
        if batches is not None:
            batches.close()
        service.close_connections()

    return serving


def limit(app: FastAPI, settings: Settings) -> None:
    """The rates a request meets before it is read (new sessions, every request of an address, every request of a
    key) and the CPU seconds of the datasets it has built; the refusals the OpenAPI document lists for them and for
    the database's state."""
    opening = Rate(settings.sessions_per_second, settings.sessions_burst,
                   "BUDGETLAB_SESSIONS_PER_SECOND, BUDGETLAB_SESSIONS_BURST")
    every = Rate(settings.requests_per_second, settings.requests_burst,
                 "BUDGETLAB_REQUESTS_PER_SECOND, BUDGETLAB_REQUESTS_BURST")
    keyed = Rate(settings.key_requests_per_second, settings.key_requests_burst,
                 "BUDGETLAB_KEY_REQUESTS_PER_SECOND, BUDGETLAB_KEY_REQUESTS_BURST")
    # The keys' buckets are the streams' too: a stream's messages are requests of its session's token.
    app.state.key_rates = limited_keys(keyed)
    # Inside the rates: a request they refuse costs nothing to look at.
    app.add_middleware(BuildCosts, per_second=settings.build_seconds_per_second, burst=settings.build_seconds_burst)
    app.add_middleware(RateLimits, limits={("POST", "/v1/sessions"): opening}, per_address=every,
                       per_key=app.state.key_rates)
    limited = every.per_second > 0 or keyed.per_second > 0

    def refusals(method: str, path: str) -> list[Code]:
        codes = [Code.RATE_LIMITED] if limited else []
        if path not in WITHOUT_DATABASE and not path.startswith("/v1/datasets"):
            codes += database_refusals(method)
        return codes

    add_refusals(app, refusals)


def admin_upload(settings: Settings) -> Callable[[Scope], tuple[int, str] | None]:
    """An admin's dataset upload may send ``max_upload_bytes``; anyone else's body stays under ``max_body_bytes``, so
    that no one but the admin can make the oracle read (and spool) a large file before it refuses the request."""

    def larger(scope: Scope) -> tuple[int, str] | None:
        if scope["path"] != datasets.UPLOAD_PATH:
            return None
        header = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        if not is_admin(bearer_token(header.decode("latin-1")), settings):
            return None
        return settings.max_upload_bytes, "BUDGETLAB_MAX_UPLOAD_BYTES"

    return larger


def check(settings: Settings) -> None:
    """Refuse to start on settings that cannot work, rather than fail on the first request."""
    if settings.admin_token is not None and bearer_token(f"Bearer {settings.admin_token}") is None:
        raise ValueError("BUDGETLAB_ADMIN_TOKEN must be a bearer token: letters, digits and -._~+/")
    if settings.sessions_per_second < 0 or settings.sessions_burst < 1:
        raise ValueError("sessions_per_second must not be negative and sessions_burst must be at least 1")
    for name in ("max_body_bytes", "max_upload_bytes", "max_cells", "max_examples"):
        if getattr(settings, name) < 1:
            raise ValueError(f"{name} must be at least 1, not {getattr(settings, name)}")
    if settings.build_seconds_per_second < 0 or settings.build_seconds_burst <= 0:
        raise ValueError("build_seconds_per_second must not be negative and build_seconds_burst must be positive")
    if settings.ledger_reserve_bytes < 0:
        raise ValueError(f"ledger_reserve_bytes must not be negative, not {settings.ledger_reserve_bytes}")
    if settings.dataset_cache_bytes < 0:
        raise ValueError(f"dataset_cache_bytes must not be negative, not {settings.dataset_cache_bytes}")
