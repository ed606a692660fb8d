"""The SDK reads the answers of an oracle older than its wire's last change: before 2026-11-29 a session and a dataset
named their number of attributes ``d`` (docs/reference/changelog.md). No such oracle runs here: a transport answers
as one did, with the contract's own examples in the older names."""

from __future__ import annotations

import json
from typing import Any

import httpx

from budgetlab.contract.datasets import DATASET_INFO_EXAMPLE
from budgetlab.contract.sessions import SESSION_INFO_EXAMPLE, SessionInfo
from budgetlab.oracle_client import OracleClient


def older(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as an older oracle wrote it."""
    return {("d" if key == "n_attributes" else key): value for key, value in answer.items()}


def test_the_sdk_reads_an_older_oracles_d_as_n_attributes() -> None:
    session, dataset = older(SESSION_INFO_EXAMPLE), older(DATASET_INFO_EXAMPLE)
    assert "n_attributes" not in session and session["d"] == 100 and dataset["d"] == 500
    answers = {("POST", "/v1/sessions"): (201, {"id": session["id"], "token": "t" * 43, "session": session}),
               ("GET", "/v1/datasets/powerlaw"): (200, dataset)}

    def older_oracle(request: httpx.Request) -> httpx.Response:
        status, body = answers[request.method, request.url.path]
        return httpx.Response(status, json=body)

    with OracleClient("http://older-oracle", transport=httpx.MockTransport(older_oracle)) as sdk:
        assert sdk.dataset("powerlaw").n_attributes == 500
        opened = sdk.open_session("powerlaw", dataset_params={"d": 100})
        assert opened.info.n_attributes == 100
    # and writes the new name only
    written = json.loads(SessionInfo.model_validate(session).model_dump_json())
    assert written["n_attributes"] == 100 and "d" not in written
