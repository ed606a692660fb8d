"""Optional credentials stated at the root of a service's OpenAPI document, where generated clients read them as
optional.

An operation that takes a bearer or none lists ``[{"Scheme": []}, {}]`` (``{}``: "or none"). openapi-python-client
(0.29; its issue #1372) reads any operation whose own list is not empty as needing credentials, so the client it
generates types such an operation with ``AuthenticatedClient`` only, and an anonymous call is a type error. The same
list at the document's root, which an operation without a list of its own inherits, it leaves to the caller
(``AuthenticatedClient | Client``), and so do Swagger UI and the OpenAPI specification: the document says the same.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI


def optional_credentials_at_root(app: FastAPI) -> None:
    """Move the operations' optional credentials (a list with ``{}``) to the root of ``app``'s OpenAPI document, and
    give each operation that takes no credentials an empty list, so that it does not inherit the root's."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        operations = [op for item in schema.get("paths", {}).values() for op in item.values()]
        optional = [op for op in operations if {} in op.get("security", [])]
        if optional:
            requirements = optional[0]["security"]
            # One root for every operation: operations with different optional credentials cannot share it.
            if any(op["security"] != requirements for op in optional):
                raise ValueError("operations with different optional credentials: only one list can be the root's")
            schema["security"] = requirements
            for op in operations:
                if {} in op.get("security", []):
                    del op["security"]
                else:
                    op.setdefault("security", [])
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
