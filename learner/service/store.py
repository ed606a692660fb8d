"""The learner's one SQL path: callers, runs and curve points in the tables of ``learner.service.tables``.

Every write is a short transaction that starts with its write (no read before it), so SQLite's writers queue on
its busy timeout instead of failing, and the API's reads (WAL snapshots, or PostgreSQL's) never wait for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, func, insert, select, tuple_, update

from budgetlab.contract.runs import CurvePoint, RunCreate, RunInfo, RunPage, RunResult, RunSummary
from learner.held import OpenSession
from learner.service.tables import CALLERS, HELD, POINTS, RUNS

POINT_FIELDS = ("examples", "attributes", "cost", "test_mse", "normalized_mse", "zero_one", "cumulative_loss")
# Statuses of a run that has not ended: after a restart nothing executes them any more.
UNENDED = ("pending", "queued", "running")


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class StoredRun:
    owner: str
    info: RunInfo
    session: OpenSession | None


def _held(run_id: str, session: OpenSession) -> dict[str, Any]:
    return {"session_id": session.id, "run_id": run_id, "oracle_url": session.oracle_url, "token": session.token}


def _point(row: Any) -> CurvePoint:
    return CurvePoint(**{name: getattr(row, name) for name in POINT_FIELDS})


def _point_values(run_id: str, idx: int, point: CurvePoint) -> dict[str, Any]:
    return {"run_id": run_id, "idx": idx, **point.model_dump(include=set(POINT_FIELDS))}


class RunStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # --- callers --------------------------------------------------------------------------------------

    def add_caller(self, caller_id: str, token_hash: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(CALLERS).values(id=caller_id, token_hash=token_hash, created_at=now()))

    def caller_with(self, token_hash: str) -> tuple[str, str] | None:
        """(caller id, stored digest) of the caller whose token has this digest."""
        with self.engine.connect() as conn:
            row = conn.execute(select(CALLERS.c.id, CALLERS.c.token_hash)
                               .where(CALLERS.c.token_hash == token_hash)).first()
        return None if row is None else (row.id, row.token_hash)

    # --- writes of a run's life -----------------------------------------------------------------------

    def insert(self, owner: str, info: RunInfo, session: OpenSession) -> None:
        request = info.request
        with self.engine.begin() as conn:
            conn.execute(insert(RUNS).values(
                id=info.id, owner=owner, status=info.status, algorithm=request.algorithm, dataset=request.dataset,
                seed=request.seed, request=request.model_dump_json(exclude={"api_key"}), session_id=session.id,
                session_token=session.token, max_examples=info.max_examples, progress_examples=0,
                progress_attributes=0, message="", created_at=now()))
            conn.execute(insert(HELD).values(_held(info.id, session)))

    def hold(self, run_id: str, session: OpenSession) -> None:
        """Record a further session the run opened (its test session), to be closed whatever happens next."""
        with self.engine.begin() as conn:
            if conn.execute(select(HELD.c.session_id).where(HELD.c.session_id == session.id)).first() is None:
                conn.execute(insert(HELD).values(_held(run_id, session)))

    def closed(self, session_id: str) -> None:
        """The session is closed on its oracle (or there was nothing to close there)."""
        with self.engine.begin() as conn:
            conn.execute(update(HELD).where(HELD.c.session_id == session_id).values(closed_at=now()))

    def set_status(self, run_id: str, status: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(status=status))

    def add_point(self, run_id: str, idx: int, point: CurvePoint, examples: int, attributes: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(RUNS).where(RUNS.c.id == run_id)
                         .values(progress_examples=examples, progress_attributes=attributes))
            conn.execute(insert(POINTS).values(_point_values(run_id, idx, point)))

    def finish(self, run_id: str, *, status: str, message: str, examples: int, attributes: int,
               result: RunResult | None, curve: Sequence[CurvePoint], written: int) -> None:
        """The run's end: its status, result (its curve goes to the points) and the points not yet written."""
        with self.engine.begin() as conn:
            conn.execute(update(RUNS).where(RUNS.c.id == run_id).values(
                status=status, message=message, progress_examples=examples, progress_attributes=attributes,
                result=None if result is None else result.model_dump_json(exclude={"curve"}), ended_at=now()))
            if len(curve) > written:
                conn.execute(insert(POINTS), [_point_values(run_id, i, p) for i, p in enumerate(curve)
                                              if i >= written])

    def interrupt_unended(self, message: str) -> list[OpenSession]:
        """Mark every run that was queued or executing when the learner stopped as 'interrupted'; their sessions."""
        with self.engine.begin() as conn:
            rows = conn.execute(select(RUNS.c.request, RUNS.c.session_id, RUNS.c.session_token)
                                .where(RUNS.c.status.in_(UNENDED))).all()
            conn.execute(update(RUNS).where(RUNS.c.status.in_(UNENDED))
                         .values(status="interrupted", message=message, ended_at=now()))
        return [OpenSession(RunCreate.model_validate_json(r.request).oracle_url or "", r.session_id, r.session_token)
                for r in rows if r.session_id and r.session_token]

    def unclosed(self) -> list[OpenSession]:
        """The sessions the learner opened and has not closed (a learner killed while it held them)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(HELD).where(HELD.c.closed_at.is_(None))).all()
        return [OpenSession(r.oracle_url, r.session_id, r.token) for r in rows]

    # --- reads ----------------------------------------------------------------------------------------

    def load(self, run_id: str) -> StoredRun | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(RUNS).where(RUNS.c.id == run_id)).first()
            if row is None:
                return None
            points = conn.execute(select(POINTS).where(POINTS.c.run_id == run_id).order_by(POINTS.c.idx)).all()
        curve = [_point(p) for p in points]
        request = RunCreate.model_validate_json(row.request)
        result = None
        if row.result is not None:
            result = RunResult.model_validate_json(row.result)
            result.curve = list(curve)
        info = RunInfo(id=row.id, status=row.status, request=request, progress_examples=row.progress_examples,
                       progress_attributes=row.progress_attributes, max_examples=row.max_examples,
                       session=row.session_id, result=result, curve=curve, message=row.message)
        session = None
        if row.session_id and row.session_token:
            session = OpenSession(request.oracle_url or "", row.session_id, row.session_token)
        return StoredRun(row.owner, info, session)

    def page(self, owner: str | None, *, limit: int, before: int | None, status: str | None) -> RunPage:
        """Runs newest first (all of them for ``owner`` None), ``limit`` at most, older than the cursor ``before``."""
        conditions = []
        if owner is not None:
            conditions.append(RUNS.c.owner == owner)
        if before is not None:
            conditions.append(RUNS.c.seq < before)
        if status is not None:
            conditions.append(RUNS.c.status == status)
        query = select(RUNS).where(*conditions).order_by(RUNS.c.seq.desc()).limit(limit + 1)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            ids = [r.id for r in rows[:limit]]
            latest = (select(POINTS.c.run_id, func.max(POINTS.c.idx)).where(POINTS.c.run_id.in_(ids))
                      .group_by(POINTS.c.run_id))
            points = conn.execute(select(POINTS).where(tuple_(POINTS.c.run_id, POINTS.c.idx).in_(latest))).all() \
                if ids else []
        last = {p.run_id: _point(p) for p in points}
        summaries = []
        for row in rows[:limit]:
            request = RunCreate.model_validate_json(row.request)
            summaries.append(RunSummary(
                id=row.id, status=row.status, algorithm=row.algorithm, dataset=row.dataset, seed=row.seed,
                budget=request.budget, progress_examples=row.progress_examples,
                progress_attributes=row.progress_attributes, max_examples=row.max_examples, session=row.session_id,
                message=row.message, last_point=last.get(row.id), created_at=row.created_at, ended_at=row.ended_at))
        return RunPage(runs=summaries, next=str(rows[limit - 1].seq) if len(rows) > limit else None)
