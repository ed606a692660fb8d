"""Request bodies the oracle parses itself, on the thread pool rather than on the event loop.

FastAPI decodes and validates a JSON body on the event loop before a plain ``def`` endpoint goes to the thread
pool. For a 10,000-cell ``observe/batch`` that is a millisecond during which no other request of the worker
moves, and twice the work it needs: pydantic reads the raw bytes directly (``model_validate_json``) in about a
third of the time of ``json.loads`` plus validation. Such an endpoint takes the raw body and calls ``parsed`` in
its worker thread; ``documented`` keeps its request body in the OpenAPI document, and ``add_components`` puts
the models there, as FastAPI does for the bodies it parses.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
REF = "#/components/schemas/{model}"


def parsed(model: type[M], raw: bytes) -> M:
    """The body as ``model``; invalid JSON or a body that does not validate is the same 422 as FastAPI's."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in exc.errors()]) from None


def documented(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` of a route that parses its own body as ``model``."""
    schema = {"$ref": REF.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def add_components(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Add ``models`` (and the models they nest) to the app's OpenAPI components, once the document is built."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = build()
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                schema = model.model_json_schema(ref_template=REF)
                for name, nested in schema.pop("$defs", {}).items():
                    schemas.setdefault(name, nested)
                schemas.setdefault(model.__name__, schema)
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]
