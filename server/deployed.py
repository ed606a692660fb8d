"""The oracle as it is deployed: what ``budgetlab serve oracle`` runs (so the image and docker compose too).

Its ledger's database is migrated once, before uvicorn starts its workers (``prepare``): N workers would otherwise
race to upgrade one database. Each worker then builds its app from the environment (``app_from_env``, uvicorn's
factory), with the pages it is given: the dashboards' pages are the top floor's, which hands the oracle's in
(``client.dashboards.oracle_app_from_env``). uvicorn reads a stream's messages up to ``stream_message_limit``.
"""

from __future__ import annotations

import os

from fastapi import APIRouter, FastAPI

from server.app import create_app
from server.config import Settings
from server.db import upgrade

# Set by ``prepare`` for the workers it precedes: the database is at the migrations' head already.
SKIP_MIGRATIONS = "BUDGETLAB_SKIP_MIGRATIONS"
# A stream message's envelope around a request body (its op, id and JSON framing), generously.
ENVELOPE_BYTES = 64 << 10


def prepare(database_url: str) -> None:
    """Make ``database_url`` the ledger of the workers started after this, migrated to the head, and tell them so
    (their apps then skip the migrations). A bad URL or an unreachable database raises."""
    os.environ["DATABASE_URL"] = database_url
    upgrade(database_url)
    os.environ[SKIP_MIGRATIONS] = "1"


def app_from_env(*pages: APIRouter) -> FastAPI:
    """One worker's oracle, its settings from the environment, with ``pages`` (routers of pages to serve beside the
    API); it migrates its database itself unless ``prepare`` did."""
    app = create_app(migrate=os.environ.get(SKIP_MIGRATIONS) != "1")
    for page in pages:
        app.include_router(page)
    return app


def stream_message_limit(settings: Settings) -> int:
    """uvicorn's largest WebSocket message (``ws_max_size``) for ``settings``: a stream message far past the body
    limit is cut off by uvicorn before it is read, one a little past it is read and answered 413 by the app."""
    return settings.max_body_bytes + ENVELOPE_BYTES
