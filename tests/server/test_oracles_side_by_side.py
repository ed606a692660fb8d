"""Oracles side by side: two separately started oracle processes on one PostgreSQL database enforce the same
budgets as one. Clients spread the requests of the same sessions over both, over HTTP and over the sessions'
WebSockets at once; every session ends with its budget spent exactly, one valid chain, and a compliant audit, as
either oracle tells it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from itertools import count, product
from pathlib import Path

import psycopg
import pytest

from budgetlab.errors import BudgetExhausted
from budgetlab.oracle_client import OracleClient
from tests.helpers import ADMIN_TOKEN
from tests.servers import cli_service

PER_REQUEST = 3
BUDGET = 200  # 66 requests of 3 attributes fit, then every request is refused whole
SESSIONS = 3
CLIENTS_PER_WAY = 2  # clients of each session on each oracle over each transport: 8 per session
PARAMS = {"d": 10, "n_train": 2000, "n_test": 10, "s_plus": 2, "s_minus": 2}


@pytest.fixture
def two_oracles(postgres_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two `budgetlab serve oracle` processes on one fresh database, started at the same moment (both migrate it
    at start), sharing the admin token and the data directory, each on its own port."""
    env = {"DATABASE_URL": postgres_url, "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN,
           "BUDGETLAB_DATA_DIR": str(tmp_path / "data")}
    with ExitStack() as stack, ThreadPoolExecutor(2) as starting:
        urls = list(starting.map(lambda i: stack.enter_context(
            cli_service(["serve", "oracle"], env=env, cwd=tmp_path)), range(2)))
        yield urls


def spend(session_id: str, token: str, url: str, stream: bool, examples: Iterator[int],
          taken: threading.Lock) -> int:
    """Observe fresh examples of the session through one oracle until it refuses for the budget; how many
    requests it accepted."""
    accepted = 0
    with OracleClient(url, stream=stream) as client:
        session = client.session(session_id, token)
        while True:
            with taken:
                example = next(examples)
            try:
                session.observe(example, [(example + j) % PARAMS["d"] for j in range(PER_REQUEST)])
            except BudgetExhausted:
                assert session.transport == ("websocket" if stream else "http")
                return accepted
            accepted += 1


def test_two_oracles_on_one_database_spend_every_budget_exactly(two_oracles: list[str], postgres_url: str) -> None:
    first, second = two_oracles
    sessions = []
    for i in range(SESSIONS):  # opened on either oracle
        with OracleClient(two_oracles[i % 2], stream=False) as client:
            opened = client.open_session("sparse-gaussian", dataset_params=PARAMS, order="pool", seed=i,
                                         budget={"total": BUDGET, "per_example": PER_REQUEST})
            sessions.append((opened.id, opened.token))
    ways = [(sid, token, url, stream) for (sid, token), url, stream, _ in
            product(sessions, two_oracles, (False, True), range(CLIENTS_PER_WAY))]
    fresh = {sid: (count(), threading.Lock()) for sid, _ in sessions}
    with ThreadPoolExecutor(len(ways)) as clients:
        accepted = list(clients.map(lambda w: spend(*w, *fresh[w[0]]), ways))

    for sid, token in sessions:
        took = [n for (s, *_), n in zip(ways, accepted, strict=True) if s == sid]
        assert sum(took) == BUDGET // PER_REQUEST, took  # exactly what fits, whoever served it
        assert sum(n > 0 for n in took) > 1  # the session's requests were spread, not served by one client
        for url in two_oracles:
            with OracleClient(url, stream=False) as client:
                session = client.session(sid, token)
                info = session.get()
                assert info.spent.cost == info.spent.attributes == PER_REQUEST * (BUDGET // PER_REQUEST)
                audit = session.audit()
                assert audit.compliant and audit.chain_ok, audit.reasons
                assert audit.rows == info.ledger_rows == 1 + info.spent.attributes
        with OracleClient(first, stream=False) as a, OracleClient(second, stream=False) as b:
            assert list(a.session(sid, token).iter_ledger()) == list(b.session(sid, token).iter_ledger())
    with psycopg.connect(postgres_url) as conn:
        links = dict(conn.execute("select sessions.id, count(*) from links join sessions on session_key = ledger_key "
                                  "group by sessions.id").fetchall())
    # One chain each: the open row, then one link per accepted request, none forked or lost.
    assert links == {sid: 1 + BUDGET // PER_REQUEST for sid, _ in sessions}
