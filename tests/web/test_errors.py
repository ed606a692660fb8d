"""web.errors: every failure of an app with its handlers installed answers JSON ``{"error", "detail"}``, with the
status of its code, and a 5xx only for a bug (a database fault is a refusal, not one)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from budgetlab.errors import Code, learner_refusal
from tests.helpers import in_process
from web.errors import install_error_handlers


class Body(BaseModel):
    n: int


def app_of(tmp_path: Path) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/refused")
    def refused(retry_after: float | None = None) -> None:
        raise learner_refusal(Code.ORACLE_BUSY, "busy now", retry_after=retry_after)

    @app.post("/body")
    def body(b: Body) -> int:
        return b.n

    @app.get("/cannot-open")
    def cannot_open() -> None:  # a real SQLite fault: a database in a folder that does not exist
        sqlite3.connect(tmp_path / "missing" / "db.sqlite").execute("SELECT 1")

    @app.get("/read-only")
    def read_only() -> None:  # a real SQLite fault: a write on a database opened read-only
        sqlite3.connect(tmp_path / "rw.sqlite").execute("CREATE TABLE IF NOT EXISTS t (x)").connection.commit()
        sqlite3.connect(f"file:{tmp_path / 'rw.sqlite'}?mode=ro", uri=True).execute("INSERT INTO t VALUES (1)")

    @app.get("/bug")
    def bug() -> None:
        raise RuntimeError("a bug")

    @app.get("/syntax")
    def syntax() -> None:  # a database error that says nothing of the database's state: a bug too
        sqlite3.connect(":memory:").execute("SELEC 1")

    return app


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    return app_of(tmp_path)


def test_a_refusal_answers_its_code_and_status_with_retry_after_in_whole_seconds(app: FastAPI) -> None:
    answer = in_process(app, "GET", "/refused")
    assert answer.status_code == Code.ORACLE_BUSY.status
    assert answer.json() == {"error": "oracle_busy", "detail": "busy now"}
    assert "retry-after" not in answer.headers
    # Retry-After counts whole seconds, at least 1: a client never retries at once.
    assert in_process(app, "GET", "/refused", params={"retry_after": 0.2}).headers["retry-after"] == "1"
    assert in_process(app, "GET", "/refused", params={"retry_after": 2.6}).headers["retry-after"] == "3"


def test_a_request_that_does_not_validate_is_invalid_request_whatever_fails(app: FastAPI) -> None:
    for answer in (in_process(app, "POST", "/body", json={"n": "many"}),
                   in_process(app, "POST", "/body", content=b"{not json"),
                   in_process(app, "GET", "/refused", params={"retry_after": "soon"})):
        assert answer.status_code == 422
        assert answer.json()["error"] == "invalid_request" and answer.json()["detail"]
    # A body that is not even UTF-8 is one more body that does not validate (FastAPI says 400).
    answer = in_process(app, "POST", "/body", content=b'{"n": "\xff"}', headers={"content-type": "application/json"})
    assert answer.status_code == 422
    assert answer.json()["error"] == "invalid_request" and "not UTF-8 JSON" in answer.json()["detail"]


def test_the_http_layers_own_refusals_are_json_with_their_codes(app: FastAPI) -> None:
    assert in_process(app, "GET", "/nowhere").json()["error"] == "not_found"
    answer = in_process(app, "DELETE", "/body")
    assert answer.status_code == 405 and answer.json()["error"] == "method_not_allowed"


def test_a_database_that_cannot_serve_is_a_refusal_and_anything_else_a_500(app: FastAPI) -> None:
    unavailable = in_process(app, "GET", "/cannot-open")
    assert unavailable.status_code == Code.DATABASE_UNAVAILABLE.status
    assert unavailable.json()["error"] == "database_unavailable"
    assert unavailable.headers["retry-after"]  # transient: worth a retry
    read_only = in_process(app, "GET", "/read-only")
    assert (read_only.status_code, read_only.json()["error"]) == (Code.READ_ONLY.status, "read_only")
    assert in_process(app, "GET", "/bug").status_code == 500
    assert in_process(app, "GET", "/syntax").status_code == 500
