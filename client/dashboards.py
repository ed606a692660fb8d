"""The services' live dashboards as people open them: each service's app with its page at ``/`` and the page's files
at ``/dashboard/{name}``.

The pages are the top floor's (docs/internals/layout.md): the oracle and the learner answer them with JSON and
server-sent events (``server.dashboard``, ``learner.service.dashboard``) and know nothing of them; ``budgetlab serve``
runs the apps built here, the deployed oracle (``server.deployed``) and the learner service, each with its page. Nothing
is built and nothing is fetched from elsewhere: the files ship inside the package (``static``), so a dashboard works
offline.
"""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, FastAPI, Path
from fastapi.responses import FileResponse

from budgetlab.errors import Code, Refused

STATIC = FilePath(__file__).parent / "static"
MEDIA_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
NO_CACHE = {"Cache-Control": "no-cache"}
# Each page's own files; the rest of ``static`` (the shared script and styles) is served to both.
PAGES = {"oracle.html": {"oracle.js"}, "learner.html": {"learner.js"}}


def page_router(page: str) -> APIRouter:
    """``GET /`` (the page) and ``GET /dashboard/{name}`` (its files and the shared ones, not the other page's)."""
    router = APIRouter(include_in_schema=False)
    others = {name for other, files in PAGES.items() if other != page for name in files | {other}}

    @router.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / page, media_type="text/html", headers=NO_CACHE)

    @router.get("/dashboard/{name}")
    def asset(name: Annotated[str, Path(pattern=r"^[a-z0-9][a-z0-9-]*\.(js|css)$")]) -> FileResponse:
        if name in others or not (STATIC / name).is_file():
            raise Refused(Code.NOT_FOUND.status, Code.NOT_FOUND.value, f"the dashboard has no file {name}")
        return FileResponse(STATIC / name, media_type=MEDIA_TYPES[(STATIC / name).suffix], headers=NO_CACHE)

    return router


def with_page(app: FastAPI, page: str) -> FastAPI:
    app.include_router(page_router(page))
    return app


# The factories import their service only when called: an oracle worker has no use for the learner's algorithms.


def oracle_app_from_env() -> FastAPI:
    """``budgetlab serve oracle``'s app factory: the deployed oracle (``server.deployed``) with the oracle's page."""
    from server.deployed import app_from_env

    return app_from_env(page_router("oracle.html"))


def learner_app_from_env() -> FastAPI:
    """``budgetlab serve learner``'s app factory: the learner service, settings from the environment, with its page."""
    from learner.service.app import create_app

    return with_page(create_app(), "learner.html")
