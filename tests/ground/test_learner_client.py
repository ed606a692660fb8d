"""The learner service's SDK, sync and async, against the real learner and oracle under uvicorn on loopback."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import FINAL_RUN_STATUSES, RunCreate, RunInfo
from budgetlab.errors import LearnerError, LearnerUnavailable, RunTimeout
from budgetlab.learner_client import AsyncLearnerClient, LearnerClient
from tests.helpers import TINY

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens there


def request(oracle_url: str, **changes: object) -> RunCreate:
    base = RunCreate(oracle_url=oracle_url, dataset="sparse-gaussian", dataset_params=TINY, algorithm="aerr",
                     budget=Budget(per_example=4), seed=3, eval_every=20)
    return base.model_copy(update=changes)


def long_request(oracle_url: str) -> RunCreate:
    """A run long enough to be caught while it runs (50,000 examples), to be cancelled."""
    return request(oracle_url, dataset_params={**TINY, "n_train": 50_000}, eval_every=1_000)


def wait_for_progress(client: LearnerClient, run_id: str, examples: int, timeout: float = 60.0) -> RunInfo:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = client.get(run_id)
        if info.progress_examples >= examples or info.status in FINAL_RUN_STATUSES:
            return info
        time.sleep(0.02)
    raise TimeoutError(f"run {run_id} made no progress in {timeout} s")


def test_start_get_list_wait_with_progress_and_audit(learner_url: str, shared_oracle_url: str,
                                                     http: httpx.Client) -> None:
    seen: list[RunInfo] = []
    with LearnerClient(learner_url) as client:
        assert {"aerr", "aelr", "ito1"} <= {a.id for a in client.algorithms().algorithms}
        started = client.start(request(shared_oracle_url))
        assert started.status in ("queued", "running") and started.request.algorithm == "aerr"
        assert started.session and started.max_examples == 60
        assert client.get(started.id).id == started.id
        assert started.id in {run.id for run in client.list()}
        done = client.wait(started.id, timeout=60, poll=0.01, progress=seen.append)
        assert done.status == "finished", done.message
        assert seen and seen[-1] == done
        examples = [info.progress_examples for info in seen]
        assert examples == sorted(examples) and examples[-1] == 60
        assert done.result is not None and [p.examples for p in done.result.curve] == [20, 40, 60]
        report = client.audit(started.id)
        assert report.compliant and report.session_id == done.session
        # Times go out with their offset (a reader would take a bare one as local time).
        caller = {"Authorization": f"Bearer {client.token}"}
        listed = next(r for r in http.get(f"{learner_url}/v1/runs", headers=caller).json()["runs"]
                      if r["id"] == started.id)
        for moment in (listed["created_at"], listed["ended_at"]):
            assert moment.endswith(("Z", "+00:00")), moment
        assert report.attributes_recomputed == done.result.attributes <= 4 * 60


def test_cancel_ends_the_run_and_wait_has_a_deadline(learner_url: str, shared_oracle_url: str) -> None:
    with LearnerClient(learner_url) as client:
        run = client.start(long_request(shared_oracle_url))
        with pytest.raises(RunTimeout) as timed_out:
            client.wait(run.id, timeout=0.2, poll=0.05)
        assert isinstance(timed_out.value, TimeoutError) and timed_out.value.run_id == run.id
        assert wait_for_progress(client, run.id, 5).status == "running"
        cancelled = client.cancel(run.id)
        assert cancelled.status == "cancelled" and cancelled.result is not None
        assert 5 <= cancelled.result.examples < 50_000
        assert client.wait(run.id, timeout=5).status == "cancelled"


def test_refusals_are_learner_errors(learner_url: str, shared_oracle_url: str) -> None:
    with LearnerClient(learner_url) as client:
        for call in (client.get, client.cancel, client.audit):
            with pytest.raises(LearnerError) as missing:
                call("no-such-run")
            assert (missing.value.status, missing.value.error) == (404, "not_found")
            assert "no-such-run" in missing.value.detail
        with pytest.raises(LearnerError) as bad:
            client.start(request(shared_oracle_url, algorithm="no-such-algorithm"))
        assert bad.value.status == 422 and bad.value.error == "invalid_params"


def test_an_unreachable_learner_or_a_server_error_is_learner_unavailable() -> None:
    with LearnerClient(UNREACHABLE) as client:
        with pytest.raises(LearnerUnavailable, match="cannot reach the learner service"):
            client.list()
        assert not client.health()
    failing = httpx.MockTransport(lambda _: httpx.Response(502, json={"error": "oracle_unavailable",
                                                                      "detail": "the oracle is gone"}))
    with LearnerClient("http://learner", transport=failing) as client:
        with pytest.raises(LearnerUnavailable, match="the oracle is gone"):
            client.audit("some-run")


def test_async_client_does_the_same(learner_url: str, shared_oracle_url: str) -> None:
    async def scenario() -> None:
        seen: list[RunInfo] = []
        async with AsyncLearnerClient(learner_url) as client:
            assert await client.health()
            assert "aerr" in {a.id for a in (await client.algorithms()).algorithms}
            started = await client.start(request(shared_oracle_url, seed=4))
            assert (await client.get(started.id)).id == started.id
            assert started.id in {run.id for run in await client.list()}
            done = await client.wait(started.id, timeout=60, poll=0.01, progress=seen.append)
            assert done.status == "finished" and seen[-1] == done, done.message
            assert (await client.audit(started.id)).compliant

            long = await client.start(long_request(shared_oracle_url))
            with pytest.raises(RunTimeout):
                await client.wait(long.id, timeout=0.2, poll=0.05)
            assert (await client.cancel(long.id)).status == "cancelled"

            with pytest.raises(LearnerError) as missing:
                await client.get("no-such-run")
            assert missing.value.status == 404
        async with AsyncLearnerClient(UNREACHABLE) as client:
            with pytest.raises(LearnerUnavailable):
                await client.algorithms()

    asyncio.run(scenario())
