"""web.openapi_refusals and web.openapi_security: what an app's OpenAPI document says beyond its routes' own
declarations, the refusals any operation may answer and the credentials it may go without."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from budgetlab.contract.service import ErrorBody
from budgetlab.errors import Code, responses
from web.openapi_refusals import add_refusals, database_refusals
from web.openapi_security import optional_credentials_at_root

OPTIONAL = HTTPBearer(auto_error=False, scheme_name="Token")
OTHER = HTTPBearer(auto_error=False, scheme_name="Other")
Credentials = HTTPAuthorizationCredentials | None


def app_with_routes() -> FastAPI:
    app = FastAPI()

    @app.get("/healthz")
    def healthz() -> None: ...

    @app.get("/things", responses=responses(Code.DATABASE_UNAVAILABLE))
    def things() -> None: ...

    @app.post("/things", responses={503: {"model": ErrorBody, "description": "busy: another write holds the lock"}})
    def add_thing() -> None: ...

    return app


def statuses(doc: dict[str, Any], method: str, path: str) -> dict[str, str]:
    return {status: r["description"] for status, r in doc["paths"][path][method]["responses"].items()}


def test_every_operation_lists_the_refusals_its_method_and_path_may_meet() -> None:
    app = app_with_routes()
    add_refusals(app, lambda method, path: [] if path == "/healthz" else database_refusals(method))
    doc = app.openapi()
    assert set(statuses(doc, "get", "/healthz")) == {"200"}
    # A read may find the database out of reach; a write also full or read-only.
    assert set(statuses(doc, "get", "/things")) == {"200", "503"}
    added = statuses(doc, "post", "/things")
    assert set(added) == {"200", "503", "507"}
    # A status the route declared keeps its words and gains the refusal's, once; a new one is the refusal's.
    assert added["503"] == f"busy: another write holds the lock; database_unavailable: {Code.DATABASE_UNAVAILABLE.when}"
    assert added["507"] == f"storage_full: {Code.STORAGE_FULL.when}; read_only: {Code.READ_ONLY.when}"
    listed = statuses(doc, "get", "/things")["503"]
    assert listed.count("database_unavailable") == 1
    new = doc["paths"]["/things"]["post"]["responses"]["507"]
    assert new["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert app.openapi() is doc, "the document is built once"


def test_optional_credentials_move_to_the_root_where_generated_clients_read_them_as_optional() -> None:
    app = app_with_routes()

    # {} is "or none": FastAPI adds it to the requirement the route's dependency declares.
    @app.get("/mine", openapi_extra={"security": [{}]})
    def mine(_: Annotated[Credentials, Depends(OPTIONAL)]) -> None: ...

    optional_credentials_at_root(app)
    doc = app.openapi()
    assert doc["security"] == [{"Token": []}, {}]
    assert "security" not in doc["paths"]["/mine"]["get"], "the operation inherits the root's"
    # An operation without credentials says so, rather than inherit the root's.
    assert doc["paths"]["/things"]["get"]["security"] == []


def test_operations_with_different_optional_credentials_cannot_share_the_root() -> None:
    app = app_with_routes()

    @app.get("/mine", openapi_extra={"security": [{}]})
    def mine(_: Annotated[Credentials, Depends(OPTIONAL)]) -> None: ...

    @app.get("/theirs", openapi_extra={"security": [{}]})
    def theirs(_: Annotated[Credentials, Depends(OTHER)]) -> None: ...

    optional_credentials_at_root(app)
    with pytest.raises(ValueError, match="different optional credentials"):
        app.openapi()
