"""The learner closes every oracle session it opened: one it could not close because the oracle was down is closed
once the oracle is back (tried again in the background), with a 'close' row in its ledger."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import pytest

from budgetlab.oracle_client import OracleClient
from learner.held import OpenSession
from learner.service.closing import SessionCloser
from server.app import create_app
from server.config import Settings
from tests.servers import serve_in_thread

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

POOL = {"dataset": "sparse-gaussian", "order": "pool",
        "dataset_params": {"d": 10, "n_train": 40, "n_test": 10, "s_plus": 2, "s_minus": 2}}


def test_a_session_the_oracle_was_down_for_is_closed_once_it_is_back(sqlite_url: str, http: httpx.Client) -> None:
    settings = Settings(database_url=sqlite_url, batch_process=False)
    with serve_in_thread(create_app(settings)) as url:
        with OracleClient(url, stream=False) as client:
            opened = [client.open_session(**POOL) for _ in range(3)]
    sessions = [OpenSession(url, s.id, s.token) for s in opened]
    closer = SessionCloser(retry_every=0.2)
    closer.close(sessions)  # the oracle is down: nothing closed yet
    assert sorted(closer.pending()) == sorted(s.id for s in sessions)
    with serve_in_thread(create_app(settings), port=urlsplit(url).port or 0):
        deadline = time.monotonic() + 30
        while closer.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert closer.pending() == []
        for session in sessions:
            info = http.get(f"{url}/v1/sessions/{session.id}",
                            headers={"Authorization": f"Bearer {session.token}"}).json()
            assert info["status"] == "closed", info
