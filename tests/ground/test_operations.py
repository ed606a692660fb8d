"""The table of operations (``budgetlab.operations``) is what every side serves: each operation is reachable in
memory, over HTTP and over the session's stream with the same answers; every refusal it gives is one it declares,
and every one it declares is in its OpenAPI responses; the error codes are one catalog."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from budgetlab.errors import (
    BudgetExhausted,
    Code,
    OracleError,
    Refused,
    SessionBusy,
    StreamExhausted,
    error_body,
    refusal,
)
from budgetlab.local_session import LocalSession
from budgetlab.operations import OPERATIONS, Kind, Operation, SessionOperations
from budgetlab.oracle_client import ORACLE, OracleClient
from server.app import create_app
from server.config import Settings
from server.routers.stream import OPS
from tests.helpers import ROOT
from web.openapi_refusals import database_refusals

DATASET = "sparse-gaussian"
PARAMS = {"d": 8, "n_train": 30, "n_test": 10, "s_plus": 2, "s_minus": 2}
# Fields that name the session or the moment, not what the rules decided (a ledger's hashes cover the session's id).
INCIDENTAL = {"id", "session_id", "created_at", "head_hash", "receipt", "hash", "tag"}
# The SDK arguments each operation is called with here (an operation without arguments needs none).
ARGUMENTS: dict[str, tuple[Any, ...]] = {
    "step": ([0, 1],), "steps": ([[2], [], [0, 3]],), "observe": (0, [2, 3]),
    "observe_batch": ([(0, [4]), (1, [0, 5])],), "label": (1,),
    "predict": (0, 0.5), "evaluate": ([0.1] * PARAMS["d"], 0.2), "ledger": (-1, 5),
}
SETTINGS = {"batch-stream": {"budget": {"per_example": 3, "total": 9.0}},
            "online-pool": {"protocol": "online", "order": "pool", "budget": {"label_cost": 0.5}}}


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        answer = call()
    except Refused as exc:
        detail = None if exc.error == Code.INVALID_REQUEST else exc.detail
        return "refused", (type(exc), exc.status, exc.error, detail)
    assert isinstance(answer, BaseModel)
    return "ok", (type(answer), decided(answer.model_dump()))


def decided(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: decided(v) for k, v in value.items() if k not in INCIDENTAL}
    return [decided(v) for v in value] if isinstance(value, list) else value


def ordered() -> list[Operation[..., Any]]:
    """Every operation, ``close`` last, then every one again on the closed session."""
    ops = [op for op in OPERATIONS.values() if op is not SessionOperations.close]
    return [*ops, SessionOperations.close, *ops]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_every_operation_answers_the_same_in_memory_over_http_and_over_the_stream(setting: str,
                                                                                  shared_oracle_url: str) -> None:
    opened = {"dataset_params": PARAMS, "seed": 5, **SETTINGS[setting]}
    local = LocalSession.open(DATASET, **opened)
    with OracleClient(shared_oracle_url, stream=False) as http, OracleClient(shared_oracle_url) as streamed:
        over_http, over_stream = http.open_session(DATASET, **opened), streamed.open_session(DATASET, **opened)
        kinds = set()
        for op in ordered():
            sessions = [over_http, over_stream] if op.kind is Kind.LEDGER else [over_http, over_stream, local]
            got = [outcome(partial(getattr(session, op.name), *ARGUMENTS.get(op.name, ()))) for session in sessions]
            assert all(g == got[0] for g in got), (setting, op.name, got)
            kinds.add(got[0][0] if got[0][0] == "ok" else got[0][1][2])
        assert over_stream.transport == "websocket" and over_http.transport == "http"
        assert over_http.audit().compliant and over_stream.audit().compliant
    # Both answers and refusals were compared, the closed session's among them.
    assert {"ok", Code.SESSION_CLOSED} <= kinds, kinds


def test_a_session_in_memory_has_every_operation_but_the_ledgers() -> None:
    local = LocalSession.open(DATASET, dataset_params=PARAMS)
    for name, op in OPERATIONS.items():
        assert hasattr(local, name) == (op.kind is not Kind.LEDGER), name


@pytest.mark.process
def test_every_rule_is_an_engine_function_and_the_remote_sdk_never_imports_the_engine() -> None:
    from budgetlab import engine

    ruled = [op for op in OPERATIONS.values() if op.rule is not None]
    assert len(ruled) == len([op for op in OPERATIONS.values() if op.kind in (Kind.STEP, Kind.OFF_LOCK)])
    for op in ruled:
        assert op.rule is not None and op.step is getattr(engine, op.rule) and callable(op.step), op.name
    # The rules are imported when a session first applies one: a remote session (and every ``budgetlab`` command
    # on it) does without the engine and numpy, a quarter of such a command's start.
    script = ("import json, sys; import budgetlab.oracle_client, budgetlab.learner_client; "
              "print(json.dumps(sorted(m for m in ('numpy', 'budgetlab.engine') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_the_routes_and_the_stream_are_the_tables(tmp_path: Path) -> None:
    doc = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}")).openapi()
    session_routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops if p.startswith("/v1/sessions/")}
    assert session_routes == {(op.method, op.url) for op in OPERATIONS.values()}
    assert set(OPS) == {name for name, op in OPERATIONS.items() if op.stream}
    assert not {name for name, op in OPS.items() if op.kind is Kind.LEDGER}
    for op in OPERATIONS.values():
        entry = doc["paths"][op.url][op.method.lower()]
        assert entry["description"] == op.doc
        assert entry["responses"]["200"]["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{op.response.__name__}"}
        if op.request is not None and op.method != "GET":
            assert entry["requestBody"]["content"]["application/json"]["schema"] == {
                "$ref": f"#/components/schemas/{op.request.__name__}"}
        # Every refusal the operation may give is listed under its status, by its code.
        for code in op.all_refusals:
            assert code.value in entry["responses"][str(code.status)]["description"], (op.name, code)
        # Beside its own, the refusals any request may get whatever its route (web.openapi_refusals): a rate, and
        # the database's state.
        anywhere = {Code.RATE_LIMITED.status, *(code.status for code in database_refusals(op.method.lower()))}
        listed = {int(status) for status in entry["responses"] if int(status) >= 400}
        assert listed == {code.status for code in op.all_refusals} | anywhere, op.name


@pytest.mark.parametrize("setting", ["batch-stream", "online-pool", "test"])
def test_the_engine_refuses_only_with_the_codes_each_operation_declares(setting: str) -> None:
    """Seeded random requests, valid and not, to a session in memory: each refusal is declared by its op."""
    opened = ({"split": "test", "protocol": "online", "budget": {"per_example": 2}} if setting == "test"
              else SETTINGS[setting])
    rng = np.random.default_rng(11)
    d, n = PARAMS["d"], PARAMS["n_train"]

    def example() -> int:
        return int(rng.integers(-1, n + 2))

    def attributes() -> list[int]:
        return [int(a) for a in rng.integers(-1, d + 1, size=int(rng.integers(0, 5)))]

    draws: dict[str, Callable[[], tuple[Any, ...]]] = {
        "step": lambda: (attributes(),), "steps": lambda: ([attributes() for _ in range(int(rng.integers(0, 4)))],),
        "observe": lambda: (example(), attributes()),
        "observe_batch": lambda: ([(example(), attributes()) for _ in range(int(rng.integers(0, 3)))],),
        "label": lambda: (example(),), "predict": lambda: (example(), float(rng.choice([0.5, 1e200]))),
        "evaluate": lambda: ([0.1] * int(rng.choice([d, d - 1])),),
    }
    local = LocalSession.open(DATASET, dataset_params=PARAMS, seed=2, **opened)
    ops = [op for op in OPERATIONS.values() if op.kind is not Kind.LEDGER]
    seen: set[str] = set()
    for i in range(600):
        op = ops[int(rng.integers(len(ops)))]
        if op is SessionOperations.close and i < 550:
            continue
        try:
            getattr(local, op.name)(*draws.get(op.name, tuple)())
        except OracleError as exc:
            assert exc.error in op.all_refusals, (op.name, exc.error)
            seen.add(exc.error)
    assert len(seen) >= 5, seen


def test_every_code_comes_back_through_the_wire_as_the_class_the_engine_raises() -> None:
    codes = list(Code)
    assert len({code.value for code in codes}) == len(codes)
    for code in codes:
        assert 400 <= code.status < 600 and code.when, code
        if code.status >= 500 and code is not Code.BUSY:
            continue  # a learner's answer about its oracle: the SDK raises LearnerUnavailable for it
        raised = refusal(code, "why")
        body = error_body(raised.error, raised.detail, raised.remaining)
        with pytest.raises(Refused) as back:
            ORACLE.refuse(code.status, body, "here", retry_after=1.0)
        assert type(back.value) is type(raised) and back.value.error == code.value == raised.error, code
    assert type(refusal(Code.BUDGET_EXCEEDED, "")) is BudgetExhausted
    assert type(refusal(Code.STREAM_EXHAUSTED, "")) is StreamExhausted
    assert type(refusal(Code.BUSY, "")) is SessionBusy


def test_no_refusal_names_its_code_or_status_by_hand() -> None:
    """Every refusal the code base raises takes its code from the catalog: no ``OracleError(409, "...")``."""
    by_hand = []
    for path in sorted(p for package in ("budgetlab", "server", "learner", "client") for p in (ROOT / package).rglob(
            "*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in {"Refused", "OracleError", "LearnerError"}
                    and any(isinstance(arg, ast.Constant) for arg in node.args[:2])):
                by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not by_hand, by_hand
