"""Budget enforcement is atomic in the database: concurrent requests on one session never overspend."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from budgetlab.service_client import tls_context
from tests.servers import cli_service

THREADS = 16
PER_THREAD = 12  # examples each thread tries to observe 3 attributes of: demand 16*12*3 = 576
BUDGET = 200


def hammer(url: str, workers: int = THREADS) -> tuple[str, dict]:
    r = httpx.post(f"{url}/v1/sessions", json={
        "dataset": "sparse-gaussian",
        "dataset_params": {"d": 10, "n_train": 400, "n_test": 10, "s_plus": 2, "s_minus": 2},
        "order": "pool", "budget": {"total": BUDGET, "per_example": 3}, "seed": 5,
    }, verify=tls_context())
    sid, headers = r.json()["id"], {"Authorization": f"Bearer {r.json()['token']}"}

    def worker(t: int) -> list[int]:
        codes = []
        with httpx.Client(base_url=url, headers=headers, timeout=60, verify=tls_context()) as c:
            for i in range(PER_THREAD):
                example = t * PER_THREAD + i
                attrs = [(example + j) % 10 for j in range(3)]
                codes.append(c.post(f"/v1/sessions/{sid}/observe", json={"example": example, "attributes": attrs})
                             .status_code)
        return codes

    with ThreadPoolExecutor(workers) as pool:
        codes = [c for result in pool.map(worker, range(workers)) for c in result]
    assert set(codes) <= {200, 402}, codes
    assert codes.count(200) == BUDGET // 3
    return sid, headers


def check_exact_spend(url: str, sid: str, headers: dict) -> dict:
    info = httpx.get(f"{url}/v1/sessions/{sid}", headers=headers, verify=tls_context()).json()
    # 66 full requests of 3 fit in 200; every other request was refused whole
    assert info["spent"]["cost"] == 3 * (BUDGET // 3)
    assert info["spent"]["attributes"] == 3 * (BUDGET // 3)
    audit = httpx.get(f"{url}/v1/sessions/{sid}/audit", headers=headers, verify=tls_context()).json()
    assert audit["compliant"], audit["reasons"]
    assert audit["chain_ok"] and audit["attributes_recomputed"] == info["spent"]["attributes"]
    assert audit["rows"] == info["ledger_rows"] == 1 + info["spent"]["attributes"]
    return info


def test_sixteen_threads_never_overspend_on_sqlite(oracle_url: str, sqlite_url: str) -> None:
    sid, headers = hammer(oracle_url)
    check_exact_spend(oracle_url, sid, headers)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as db:
        blobs = db.execute("select cells from cells join sessions on session_key = ledger_key where sessions.id = ?",
                           (sid,)).fetchall()
    # one packed entry of 3 values (16 bytes each) per accepted request
    assert len(blobs) == BUDGET // 3 and all(len(blob) == 3 * 16 for (blob,) in blobs)


@pytest.mark.postgres
def test_two_workers_on_postgresql_never_overspend(postgres_url: str, tmp_path) -> None:
    with cli_service(["serve", "oracle", "--workers", "2"], env={"DATABASE_URL": postgres_url},
                     cwd=tmp_path) as url:
        sid, headers = hammer(url)
        check_exact_spend(url, sid, headers)
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        (links,) = conn.execute("select count(*) from links join sessions on session_key = ledger_key "
                                "where sessions.id = %s", (sid,)).fetchone()
        (cells,) = conn.execute("select count(*) from cells join sessions on session_key = ledger_key "
                                "where sessions.id = %s", (sid,)).fetchone()
    # the open row, then one link (and its packed values) per accepted request
    assert (links, cells) == (1 + BUDGET // 3, BUDGET // 3)
