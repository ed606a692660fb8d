"""An account cannot exceed its allowance however many sessions it opens: sessions of one key racing over HTTP and
over their streams, on SQLite (one worker, two workers) and on PostgreSQL (two workers), draw exactly the allowance
and no more, and the account's audit recomputes it from their ledgers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from budgetlab.errors import BudgetExhausted, OracleError
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context
from tests.helpers import ADMIN_TOKEN
from tests.servers import cli_service

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

DATASET = "sparse-gaussian"
PARAMS = {"d": 10, "n_train": 400, "n_test": 10, "s_plus": 2, "s_minus": 2}
THREADS = 8
SESSIONS_EACH = 2
REQUESTS_EACH = 12  # of 3 attributes: 8 x 12 x 3 = 288 asked of an allowance of 150
TOTAL = 150.0
EVALUATIONS = 5  # of THREADS asked
OPEN_AT_ONCE = 5  # of THREADS asked


def pooled(url: str) -> None:
    with OracleClient(url, admin_token=ADMIN_TOKEN) as admin:
        spender = admin.create_account("spender", {"total": TOTAL, "per_example": 3, "evaluations": EVALUATIONS,
                                                   "sessions": THREADS * SESSIONS_EACH})
        opener = admin.create_account("opener", {"sessions": OPEN_AT_ONCE})

    def spend(t: int) -> tuple[int, int, str]:
        charged = evaluated = 0
        # Even threads drive their sessions over WebSocket streams, odd ones over plain HTTP.
        with OracleClient(url, api_key=spender.key, stream=t % 2 == 0, timeout=120) as client:
            sessions = [client.open_session(DATASET, dataset_params=PARAMS, order="pool", seed=t)
                        for _ in range(SESSIONS_EACH)]
            for i in range(REQUESTS_EACH):
                try:
                    charged += int(sessions[i % SESSIONS_EACH].observe(t * REQUESTS_EACH + i, [i % 7, 7, 8]).charged)
                except BudgetExhausted as exc:
                    assert exc.error == "allowance_exceeded", exc
            try:
                sessions[0].evaluate([0.0] * PARAMS["d"])
                evaluated = 1
            except BudgetExhausted as exc:
                assert exc.error == "allowance_exceeded", exc
            transport = sessions[0].transport
        return charged, evaluated, transport

    def open_one(t: int) -> str:
        with OracleClient(url, api_key=opener.key) as client:
            try:
                client.open_session(DATASET, dataset_params=PARAMS)
            except OracleError as exc:
                return exc.error
        return "opened"

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(spend, range(THREADS)))
        opened = list(pool.map(open_one, range(THREADS)))
    assert sum(charged for charged, _, _ in results) == TOTAL  # 50 requests of 3, every other one refused whole
    assert sum(evaluated for _, evaluated, _ in results) == EVALUATIONS
    assert {transport for _, _, transport in results} == {"websocket", "http"}
    assert sorted(opened) == ["opened"] * OPEN_AT_ONCE + ["too_many_sessions"] * (THREADS - OPEN_AT_ONCE)

    with OracleClient(url, admin_token=ADMIN_TOKEN) as admin:
        view = admin.show_account(spender.account.id, limit=100)
        audit = admin.audit_account(spender.account.id)
    assert view.account.spent.cost == TOTAL and view.account.spent.evaluations == EVALUATIONS
    assert sum(s.spent.cost for s in view.sessions) == TOTAL and len(view.sessions) == THREADS * SESSIONS_EACH
    assert audit.compliant, audit.reasons
    assert (audit.spent_recomputed, audit.evaluations_recomputed) == (TOTAL, EVALUATIONS)


def test_an_account_cannot_exceed_its_allowance_on_sqlite(oracle_url: str) -> None:
    pooled(oracle_url)


def test_nor_with_two_workers_on_one_sqlite_file(tmp_path: Path) -> None:
    with cli_service(["serve", "oracle", "--workers", "2"], cwd=tmp_path,
                     env={"BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}) as url:
        pooled(url)


@pytest.mark.postgres
def test_nor_with_two_workers_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    with cli_service(["serve", "oracle", "--workers", "2"], cwd=tmp_path,
                     env={"DATABASE_URL": postgres_url, "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}) as url:
        pooled(url)
        assert httpx.get(f"{url}/readyz", verify=tls_context()).status_code == 200
