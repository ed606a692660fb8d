"""The SDK's synchronous and asynchronous flavours cannot drift: every public method of one is in the other with
the same parameters (the async one awaitable), and the three kinds of session have the table's operations."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.learner_client import AsyncLearnerClient, LearnerClient
from budgetlab.local_session import LocalSession
from budgetlab.operations import OPERATIONS, Kind
from budgetlab.oracle_client import AsyncOracleClient, AsyncOracleSession, OracleClient, OracleSession

# The names each flavour gives the one thing (Python's own protocols).
ASYNC_NAME = {"close": "aclose", "__enter__": "__aenter__", "__exit__": "__aexit__"}
# Methods that send nothing, the same in both flavours (attaching to a session by its id and token).
SENDS_NOTHING = {"session"}
PAIRS = [(OracleClient, AsyncOracleClient), (OracleSession, AsyncOracleSession), (LearnerClient, AsyncLearnerClient)]


def public(cls: type) -> dict[str, Any]:
    """The public methods (and the context manager's) of a class, its table operations included."""
    names = {name for name in dir(cls) if not name.startswith("_") or name in ("__enter__", "__exit__",
                                                                                "__aenter__", "__aexit__")}
    return {name: inspect.getattr_static(cls, name) for name in names
            if callable(getattr(cls, name)) and not isinstance(inspect.getattr_static(cls, name), property)}


def parameters(member: Any) -> list[tuple[str, Any]]:
    signature = member.signature if hasattr(member, "signature") else inspect.signature(member)
    return [(p.name, p.default) for p in signature.parameters.values() if p.name != "self"]


@pytest.mark.parametrize(("sync", "async_"), PAIRS, ids=lambda cls: cls.__name__)
def test_each_public_method_of_one_flavour_is_in_the_other_with_the_same_parameters(sync: type, async_: type) -> None:
    ours, theirs = public(sync), public(async_)
    assert {ASYNC_NAME.get(name, name) for name in ours} == set(theirs), (
        f"only sync: {sorted({ASYNC_NAME.get(n, n) for n in ours} - set(theirs))}, "
        f"only async: {sorted(set(theirs) - {ASYNC_NAME.get(n, n) for n in ours})}")
    for name, member in ours.items():
        other = theirs[ASYNC_NAME.get(name, name)]
        assert parameters(member) == parameters(other), name
        if member is other or name in SENDS_NOTHING:
            continue  # shared by both (the core's, a table operation's descriptor: its async binding awaits)
        assert not inspect.iscoroutinefunction(member), f"{sync.__name__}.{name}"
        assert inspect.iscoroutinefunction(other) or inspect.isasyncgenfunction(other), f"{async_.__name__}.{name}"


def test_every_session_has_the_tables_operations_and_the_async_one_awaits_them() -> None:
    for name, op in OPERATIONS.items():
        assert getattr(OracleSession, name) is getattr(AsyncOracleSession, name) is op
        assert getattr(LocalSession, name) is op
    session = AsyncOracleSession(AsyncOracleClient("http://127.0.0.1:9"), "s", "t")
    awaited = session.get()
    assert inspect.iscoroutine(awaited)
    awaited.close()
    local = LocalSession.open("online-sparse", dataset_params={"d": 10})
    assert [name for name, op in OPERATIONS.items() if op.kind is not Kind.LEDGER and not hasattr(local, name)] == []


def test_the_async_session_exports_and_the_async_learner_client_pages_like_the_sync_ones(
        learner_url: str, shared_oracle_url: str, tmp_path: Path) -> None:
    with OracleClient(shared_oracle_url) as client:
        session = client.open_session("online-sparse", dataset_params={"d": 10}, budget={"per_example": 2})
        session.step([0, 1])
        expected = session.export_ledger(tmp_path / "sync.csv", format="csv").read_text()
    with LearnerClient(learner_url) as learner:
        started = [learner.start(RunCreate(oracle_url=shared_oracle_url, dataset="online-sparse", algorithm="aerr",
                                           dataset_params={"d": 10, "n_train": 30, "n_test": 10}, seed=seed,
                                           budget=Budget(per_example=2))).id for seed in (1, 2)]
        for run_id in started:
            learner.wait(run_id, timeout=60)
        runs = [run.id for run in learner.iter_runs()]
        token = learner.token

    async def scenario() -> tuple[str, list[str]]:
        async with AsyncOracleClient(shared_oracle_url) as aclient:
            again = aclient.session(session.id, session.token)
            written = await again.export_ledger(tmp_path / "async.csv", format="csv")
        async with AsyncLearnerClient(learner_url, token=token) as alearner:
            return written.read_text(), [run.id async for run in alearner.iter_runs()]

    exported, async_runs = asyncio.run(scenario())
    assert exported == expected and exported.count("\n") == 1 + 2 + 2  # header, open and the step's label, 2 cells
    assert async_runs == runs == started[::-1]  # newest first
