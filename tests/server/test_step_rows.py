"""A step reads its session's row without what the session was opened with when its runtime is cached in this process
(``Database.load``'s ``config``), and the whole row when it is not (another process's session, or this process's after
a restart): on a real SQLite ledger, steps taken either way chain on each other, and the session reads back the same
from both processes."""

from __future__ import annotations

from pathlib import Path

from budgetlab.contract.calls import StepRequest, StepResponse
from budgetlab.contract.sessions import SessionCreate
from budgetlab.operations import OPERATIONS
from server.db import make_engine, upgrade
from server.sessions import SessionService
from server.store import CONFIG_COLUMNS, STEP_COLUMNS
from tests.helpers import TINY

STEP = OPERATIONS["step"]


def test_steps_with_and_without_a_cached_runtime_chain_on_each_other(tmp_path: Path) -> None:
    assert not set(CONFIG_COLUMNS) & set(STEP_COLUMNS)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    upgrade(url)
    first, second = SessionService(make_engine(url)), SessionService(make_engine(url))
    try:
        created = first.create(SessionCreate(dataset="sparse-gaussian", dataset_params=TINY, order="stream",
                                             budget={"per_example": 3, "total": 20.0}))
        answers = []
        # The first service opened the session (its runtime cached there); the second has never seen it.
        for sessions, attributes in [(first, [0, 1]), (second, [2]), (second, [3, 4]), (first, [5, 6, 7])]:
            answer = sessions.perform(STEP, created.id, created.token, StepRequest(attributes=attributes))
            assert isinstance(answer, StepResponse)
            answers.append(answer)
        assert [a.example for a in answers] == [0, 1, 2, 3]
        assert [a.fresh for a in answers] == [2, 1, 2, 3]
        # Each step charged on the counters the one before left, whichever process took it.
        for before, after in zip(answers, answers[1:], strict=False):
            assert after.spent == before.spent + after.charged
            assert after.receipt is not None and before.receipt is not None
            assert after.receipt.rows > before.receipt.rows
        last = answers[-1]
        assert last.receipt is not None and last.remaining.total == 20.0 - last.spent
        infos = [sessions.info(created.id, created.token) for sessions in (first, second)]
        assert infos[0] == infos[1]
        assert (infos[0].head_hash, infos[0].ledger_rows, infos[0].spent.cost) == (last.receipt.head,
                                                                                    last.receipt.rows, last.spent)
        assert infos[0].created_at == created.session.created_at
        report = second.audit(created.id, created.token)
        assert (report.compliant, report.chain_ok, report.rows) == (True, True, last.receipt.rows)
    finally:
        first.close_connections()
        second.close_connections()
