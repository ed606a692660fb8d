"""Refusals any operation of a service may answer whatever its route (a request rate, the database's state), added to
each operation's OpenAPI after it is built: to the statuses it lists, or to the description of one it lists."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI

from budgetlab.errors import Code

ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}


def add_refusals(app: FastAPI, refusals: Callable[[str, str], Sequence[Code]]) -> None:
    """Have ``app``'s OpenAPI list, on each operation (method, path), the codes ``refusals`` gives for it."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path, item in schema.get("paths", {}).items():
            for method, operation in item.items():
                listed = operation.setdefault("responses", {})
                for code in refusals(method, path):
                    entry = listed.get(str(code.status))
                    if entry is None:
                        listed[str(code.status)] = {"description": f"{code.value}: {code.when}", "content": ERROR_BODY}
                    elif f"{code.value}:" not in entry["description"]:
                        entry["description"] += f"; {code.value}: {code.when}"
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def database_refusals(method: str) -> list[Code]:
    """What an operation that uses the service's database may answer when the database cannot serve it: 503 to any
    request, 507 to one that writes."""
    codes = [Code.DATABASE_UNAVAILABLE]
    if method in ("post", "put", "patch", "delete"):
        codes += [Code.STORAGE_FULL, Code.READ_ONLY]
    return codes
