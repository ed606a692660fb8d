"""Oracle sessions: every charging call is one database transaction that locks the session row,
checks the budgets, writes the ledger rows and the counters, and commits before the answer is sent.

A request that fails any check raises ``OracleError`` inside the transaction, which rolls it back: an
error never charges or records anything.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, bindparam, insert, select, update

from budgetlab import budget as rules
from budgetlab.audit import audit_rows
from budgetlab.datasets import DatasetError, load_dataset
from budgetlab.datasets.base import Dataset, stream_order
from budgetlab.errors import OracleError
from budgetlab.evaluation import evaluate_weights
from budgetlab.ledger import GENESIS, Chain, ledger_rows_as_dicts
from budgetlab.models import (
    AuditReport,
    Budget,
    EvaluateResponse,
    LabelResponse,
    LedgerRow,
    MomentsResponse,
    NextResponse,
    ObservedValues,
    ObserveRequest,
    PredictResponse,
    Remaining,
    SessionCreate,
    SessionCreated,
    SessionInfo,
    Spent,
)
from server.driver_sql import DriverSQL
from server.tables import LedgerEntry, SessionRecord

SESSIONS = SessionRecord.__table__
LEDGER = LedgerEntry.__table__
# Stay below SQLite's bound-parameter limit when looking up many examples at once.
IN_CHUNK = 900


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Runtime:
    """What a session needs besides its counters; immutable after creation, so cached per process."""

    dataset: Dataset
    budget: Budget
    costs: np.ndarray
    order: np.ndarray | None
    # Every attribute costs 1 (the common case): a charge is then a count, with no array work per request.
    unit_costs: bool


@lru_cache(maxsize=64)
def _stream_order(n: int, seed: int) -> np.ndarray:
    return stream_order(n, seed)


# The hot path's statements are built once: constructing a select/update per request costs more than
# running it on SQLite. Bound parameters carry the per-request values.
_LOAD = select(SESSIONS).where(SESSIONS.c.id == bindparam("b_id"))
_LOAD_LOCKED = _LOAD.with_for_update()
LEDGER_COLUMNS = tuple(c.name for c in LEDGER.columns)
_INSERT_SQL = f"INSERT INTO ledger ({', '.join(LEDGER_COLUMNS)}) VALUES ({', '.join(['{p}'] * len(LEDGER_COLUMNS))})"
_UPDATE_SESSION = update(SESSIONS).where(SESSIONS.c.id == bindparam("b_id"))

class SessionService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._driver = DriverSQL(engine)
        self._runtimes: dict[str, Runtime] = {}

    # --- helpers --------------------------------------------------------------------------------

    def _runtime(self, rec: Any) -> Runtime:
        rt = self._runtimes.get(rec.id)
        if rt is None:
            dataset = load_dataset(rec.dataset, rec.dataset_params, rec.seed)
            budget = Budget.model_validate(rec.budget)
            order = _stream_order(rec.n_examples, rec.seed) if rec.example_order == "stream" else None
            costs = rules.attribute_costs(budget, dataset.costs, dataset.d)
            rt = Runtime(dataset, budget, costs, order, bool(np.all(costs == 1.0)))
            if len(self._runtimes) > 4096:
                self._runtimes.clear()
            self._runtimes[rec.id] = rt
        return rt

    def _load(self, conn: Connection, session_id: str, token: str, *, lock: bool, open_only: bool) -> Any:
        rec = conn.execute(_LOAD_LOCKED if lock else _LOAD, {"b_id": session_id}).one_or_none()
        return self._check(rec, session_id, token, open_only=open_only)

    def _load_driver(self, cursor: Any, session_id: str, token: str) -> tuple[Any, Runtime]:
        """The open session, locked, on the driver-SQL path (``DriverSQL.transaction``), with its runtime."""
        rec = self._check(self._driver.load_session(cursor, session_id), session_id, token, open_only=True)
        if rec.id not in self._runtimes:
            self._driver.decode_json(rec)
        return rec, self._runtime(rec)

    def _check(self, rec: Any, session_id: str, token: str, *, open_only: bool) -> Any:
        # A wrong token and an unknown id answer the same, so a token reveals nothing about other sessions.
        if rec is None or not hmac.compare_digest(rec.token_hash, token_hash(token)):
            raise OracleError(404, "not_found", f"session {session_id} does not exist (or the token is not its own)")
        if open_only and rec.status != "open":
            raise OracleError(409, "session_closed", f"session {session_id} is closed")
        return rec

    def _position(self, rec: Any, rt: Runtime, example: int) -> int:
        """Map an example id to its position in the split, checking the caller may address it."""
        if rt.order is None:
            if not 0 <= example < rec.n_examples:
                raise OracleError(404, "unknown_example", f"example {example} is not in 0..{rec.n_examples - 1}")
            return example
        if not 0 <= example < rec.issued:
            raise OracleError(409, "example_not_issued",
                           f"example {example} has not been issued yet ({rec.issued} issued by next)")
        return int(rt.order[example])

    def _commit_rows(self, conn: Connection, rec: Any, chain: Chain, **counters: Any) -> None:
        if chain.rows:
            # Straight to the driver's executemany: SQLAlchemy's per-row parameter handling costs more than
            # SQLite's insert itself on a 50,000-row batch.
            placeholder = "?" if conn.dialect.paramstyle == "qmark" else "%s"
            conn.exec_driver_sql(_INSERT_SQL.format(p=placeholder),
                                 [tuple(row[c] for c in LEDGER_COLUMNS) for row in chain.rows])
        conn.execute(_UPDATE_SESSION, {"b_id": rec.id, "ledger_rows": chain.seq, "head_hash": chain.head,
                                       "last_active": _now(), **counters})

    def _info(self, rec: Any) -> SessionInfo:
        budget = Budget.model_validate(rec.budget)
        return SessionInfo(
            id=rec.id, dataset=rec.dataset, dataset_params=rec.dataset_params, split=rec.split,
            protocol=rec.protocol, order=rec.example_order, budget=budget, seed=rec.seed,
            n_examples=rec.n_examples, d=rec.d, status=rec.status,
            spent=Spent(cost=rec.spent_cost, attributes=rec.spent_attributes, labels=rec.labels,
                        examples_issued=rec.issued),
            remaining=rules.remaining(budget, rec.spent_cost), predictions=rec.predictions,
            cumulative_loss=rec.cumulative_loss, ledger_rows=rec.ledger_rows, head_hash=rec.head_hash,
            created_at=rec.created_at,
        )

    # --- lifecycle ------------------------------------------------------------------------------

    def create(self, req: SessionCreate) -> SessionCreated:
        try:
            dataset = load_dataset(req.dataset, req.dataset_params, req.seed)
            costs = rules.attribute_costs(req.budget, dataset.costs, dataset.d)
        except (DatasetError, ValueError) as exc:
            raise OracleError(422, "invalid_session", str(exc)) from None
        n = dataset.n(req.split)
        session_id = secrets.token_hex(16)
        token = secrets.token_urlsafe(32)
        now = _now()
        chain = Chain(session_id, 0, GENESIS)
        uniform = bool(np.all(costs == 1.0))
        chain.append("open", payload={
            "dataset": req.dataset, "dataset_params": dataset.params, "split": req.split,
            "protocol": req.protocol, "order": req.order, "seed": req.seed, "n_examples": n, "d": dataset.d,
            "budget": req.budget.model_dump(), "costs": None if uniform else [float(c) for c in costs],
        })
        record = {
            "id": session_id, "token_hash": token_hash(token), "dataset": req.dataset,
            "dataset_params": dataset.params, "split": req.split, "protocol": req.protocol,
            "example_order": req.order, "budget": req.budget.model_dump(), "seed": req.seed, "n_examples": n,
            "d": dataset.d, "status": "open", "spent_cost": 0.0, "spent_attributes": 0, "labels": 0, "issued": 0,
            "predictions": 0, "cumulative_loss": 0.0, "ledger_rows": chain.seq, "head_hash": chain.head,
            "created_at": now, "last_active": now,
        }
        with self.engine.begin() as conn:
            conn.execute(insert(SESSIONS), [record])
            conn.execute(insert(LEDGER), chain.rows)
            rec = conn.execute(select(SESSIONS).where(SESSIONS.c.id == session_id)).one()
        return SessionCreated(id=session_id, token=token, session=self._info(rec))

    def info(self, session_id: str, token: str) -> SessionInfo:
        with self.engine.connect() as conn:
            return self._info(self._load(conn, session_id, token, lock=False, open_only=False))

    def close(self, session_id: str, token: str) -> SessionInfo:
        with self.engine.begin() as conn:
            rec = self._load(conn, session_id, token, lock=True, open_only=True)
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            chain.append("close")
            self._commit_rows(conn, rec, chain, status="closed")
            return self._info(conn.execute(select(SESSIONS).where(SESSIONS.c.id == session_id)).one())

    def close_idle(self, idle_seconds: float) -> list[str]:
        """Close every open session idle for longer than ``idle_seconds``; returns their ids."""
        cutoff = _now() - timedelta(seconds=idle_seconds)
        closed: list[str] = []
        with self.engine.connect() as conn:
            rows = conn.execute(select(SESSIONS.c.id, SESSIONS.c.last_active).where(SESSIONS.c.status == "open"))
            candidates = [r.id for r in rows if r.last_active.replace(tzinfo=r.last_active.tzinfo or UTC) < cutoff]
        for session_id in candidates:
            with self.engine.begin() as conn:
                rec = conn.execute(select(SESSIONS).where(SESSIONS.c.id == session_id).with_for_update()).one()
                if rec.status != "open":
                    continue
                chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
                chain.append("close", payload={"reason": f"idle for more than {idle_seconds:g} s"})
                self._commit_rows(conn, rec, chain, status="closed")
                closed.append(session_id)
        return closed

    # --- the stream and labels ------------------------------------------------------------------

    def next(self, session_id: str, token: str) -> NextResponse:
        with self._driver.transaction() as cursor:
            rec, rt = self._load_driver(cursor, session_id, token)
            if rt.order is None:
                raise OracleError(409, "pool_order", "a pool session addresses examples by id; there is no next")
            if rec.issued >= rec.n_examples:
                raise OracleError(409, "stream_exhausted", f"all {rec.n_examples} examples have been issued")
            example = rec.issued
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            label = None
            spent = rec.spent_cost
            if rec.protocol == "batch":
                label, spent = self._reveal_label(rec, rt, chain, example, int(rt.order[example]))
            self._driver.write(cursor, rec.id, chain.tuples(), seq=chain.seq, head=chain.head, now=_now(),
                               issued=example + 1, spent_cost=spent,
                               labels=rec.labels + (label is not None))
            return NextResponse(example=example, label=label, position=example,
                                remaining=rules.remaining(rt.budget, spent, example, 0))

    def _reveal_label(self, rec: Any, rt: Runtime, chain: Chain, example: int, position: int) -> tuple[float, float]:
        try:
            rules.enforce_label(rt.budget, rec.spent_cost)
        except rules.BudgetExceeded as exc:
            raise OracleError(402, "budget_exceeded", exc.detail, exc.remaining) from None
        label = float(rt.dataset.labels(rec.split, np.array([position]))[0])
        chain.append("label", example=example, value=label, cost=rt.budget.label_cost)
        return label, rec.spent_cost + rt.budget.label_cost

    def label(self, session_id: str, token: str, example: int) -> LabelResponse:
        driver = self._driver
        with driver.transaction() as cursor:
            rec, rt = self._load_driver(cursor, session_id, token)
            if rec.protocol != "batch":
                raise OracleError(409, "online_protocol", "labels are revealed by predict in the online protocol")
            position = self._position(rec, rt, example)
            seen = driver.row_of_kind(cursor, rec.id, "label", example)
            if seen is not None:
                return LabelResponse(example=example, label=seen[1], charged=0.0)
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            label, spent = self._reveal_label(rec, rt, chain, example, position)
            driver.write(cursor, rec.id, chain.tuples(), seq=chain.seq, head=chain.head, now=_now(),
                         spent_cost=spent, labels=rec.labels + 1)
            return LabelResponse(example=example, label=label, charged=rt.budget.label_cost)

    # --- observation ----------------------------------------------------------------------------

    def observe(
        self, session_id: str, token: str, items: list[ObserveRequest]
    ) -> tuple[list[ObservedValues], float, int, float, Remaining]:
        """All-or-nothing observation of several examples; already-paid cells are free and unchanged."""
        examples = [item.example for item in items]
        if len(set(examples)) != len(examples):
            raise OracleError(422, "duplicate_example", "an example appears twice; list all its attributes once")
        for item in items:
            if len(set(item.attributes)) != len(item.attributes):
                raise OracleError(422, "duplicate_attributes", f"an attribute of example {item.example} is listed twice")
        driver = self._driver
        with driver.transaction() as cursor:
            rec, rt = self._load_driver(cursor, session_id, token)
            for item in items:
                bad = [a for a in item.attributes if not 0 <= a < rec.d]
                if bad:
                    raise OracleError(404, "unknown_attribute", f"attribute {bad[0]} is not in 0..{rec.d - 1}")
            positions = {item.example: self._position(rec, rt, item.example) for item in items}

            paid: dict[tuple[int, int], float] = {}
            used: Counter[int] = Counter()
            for start in range(0, len(examples), IN_CHUNK):
                chunk = examples[start : start + IN_CHUNK]
                cursor.execute(driver.paid(len(chunk)), (rec.id, *chunk))
                for example, attribute, value in cursor.fetchall():
                    paid[(example, attribute)] = value
                    used[example] += 1

            # Fresh cells in request order; an example with nothing paid yet (the usual case) needs no lookups.
            fresh_ex: list[int] = []
            fresh_attr: list[int] = []
            new_counts: list[int] = []
            for item in items:
                new = item.attributes
                if item.example in used:
                    new = [a for a in new if (item.example, a) not in paid]
                fresh_ex.extend([item.example] * len(new))
                fresh_attr.extend(new)
                new_counts.append(len(new))
            new_by_example = dict(zip(examples, new_counts, strict=True))
            if rt.unit_costs:
                costs = [1.0] * len(fresh_attr)
                charge = float(len(fresh_attr))
            else:
                cost_array = rt.costs[np.asarray(fresh_attr, dtype=np.int64)]
                costs = cost_array.tolist()
                charge = float(cost_array.sum()) if fresh_attr else 0.0
            try:
                rules.enforce(rt.budget, rec.spent_cost, charge, used, new_by_example)
            except rules.BudgetExceeded as exc:
                raise OracleError(402, "budget_exceeded", exc.detail, exc.remaining) from None

            values: list[float] = []
            if fresh_attr:
                pos = np.repeat(np.fromiter((positions[e] for e in examples), dtype=np.int64, count=len(examples)),
                                new_counts)
                values = rt.dataset.values(rec.split, pos, np.asarray(fresh_attr, dtype=np.int64)).tolist()
                chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
                rows = chain.observation_rows(fresh_ex, fresh_attr, values, costs)
                driver.write(cursor, rec.id, rows, seq=chain.seq, head=chain.head, now=_now(),
                             spent_cost=rec.spent_cost + charge,
                             spent_attributes=rec.spent_attributes + len(fresh_attr))
            spent = rec.spent_cost + charge
            last = items[-1].example
            remaining = rules.remaining(rt.budget, spent, last, used[last] + new_by_example[last])
            out = self._observed(items, new_counts, fresh_attr, values, paid)
            return out, charge, len(fresh_attr), spent, remaining

    @staticmethod
    def _observed(items: list[ObserveRequest], new_counts: list[int], fresh_attr: list[int], values: list[float],
                  paid: dict[tuple[int, int], float]) -> list[ObservedValues]:
        """Each item's values in its own attribute order, from this request's fresh cells and the earlier ones."""
        out: list[ObservedValues] = []
        offset = 0
        for item, n_new in zip(items, new_counts, strict=True):
            fresh = values[offset : offset + n_new]
            if n_new != len(item.attributes):
                now_paid = dict(zip(fresh_attr[offset : offset + n_new], fresh, strict=True))
                fresh = [now_paid[a] if a in now_paid else paid[(item.example, a)] for a in item.attributes]
            offset += n_new
            # Built from validated requests and stored floats: nothing left to validate.
            out.append(ObservedValues.model_construct(example=item.example, attributes=item.attributes, values=fresh))
        return out

    # --- online protocol, evaluation, prior knowledge -------------------------------------------

    def predict(self, session_id: str, token: str, example: int, prediction: float) -> PredictResponse:
        driver = self._driver
        with driver.transaction() as cursor:
            rec, rt = self._load_driver(cursor, session_id, token)
            if rec.protocol != "online":
                raise OracleError(409, "batch_protocol", "predict belongs to the online protocol and test sessions")
            position = self._position(rec, rt, example)
            if driver.row_of_kind(cursor, rec.id, "predict", example) is not None:
                raise OracleError(409, "already_predicted", f"a prediction for example {example} was already committed")
            label = float(rt.dataset.labels(rec.split, np.array([position]))[0])
            loss = (prediction - label) ** 2
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            chain.append("predict", example=example, value=prediction, payload={"label": label, "loss": loss})
            driver.write(cursor, rec.id, chain.tuples(), seq=chain.seq, head=chain.head, now=_now(),
                         predictions=rec.predictions + 1, cumulative_loss=rec.cumulative_loss + loss)
            return PredictResponse(example=example, prediction=prediction, label=label, loss=loss,
                                   cumulative_loss=rec.cumulative_loss + loss, predictions=rec.predictions + 1)

    def evaluate(self, session_id: str, token: str, weights: list[float], bias: float) -> EvaluateResponse:
        with self.engine.connect() as conn:
            rec = self._load(conn, session_id, token, lock=False, open_only=True)
        rt = self._runtime(rec)
        if len(weights) != rec.d:
            raise OracleError(422, "invalid_weights", f"weights must have d={rec.d} entries, got {len(weights)}")
        w = np.asarray(weights, dtype=np.float64)
        # The error is computed outside the lock (it reads the whole test split); only its record is serialised.
        with np.errstate(over="ignore", invalid="ignore"):
            result = evaluate_weights(rt.dataset, w, bias)
        if not all(np.isfinite([result.mse, result.normalized_mse])):
            raise OracleError(422, "invalid_weights", "these weights overflow the test error; scale them down")
        with self.engine.begin() as conn:
            rec = self._load(conn, session_id, token, lock=True, open_only=True)
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            chain.append("evaluate", payload={
                "weights_sha256": hashlib.sha256(w.tobytes()).hexdigest(), "bias": float(bias),
                **result.model_dump(),
            })
            self._commit_rows(conn, rec, chain)
        return result

    def moments(self, session_id: str, token: str) -> MomentsResponse:
        with self.engine.begin() as conn:
            rec = self._load(conn, session_id, token, lock=True, open_only=True)
            rt = self._runtime(rec)
            if rec.split != "train":
                raise OracleError(409, "test_session", "prior knowledge is for training sessions")
            moments = rt.dataset.second_moments()
            chain = Chain(rec.id, rec.ledger_rows, rec.head_hash)
            chain.append("prior", payload={
                "what": "E[x_i^2] over the training split",
                "sha256": hashlib.sha256(np.ascontiguousarray(moments).tobytes()).hexdigest(),
            })
            self._commit_rows(conn, rec, chain)
            return MomentsResponse(second_moments=moments.tolist())

    # --- ledger and audit -----------------------------------------------------------------------

    def ledger_page(self, session_id: str, token: str, after: int, limit: int) -> tuple[list[LedgerRow], int | None]:
        with self.engine.connect() as conn:
            self._load(conn, session_id, token, lock=False, open_only=False)
            rows = conn.execute(
                select(LEDGER).where(LEDGER.c.session_id == session_id, LEDGER.c.seq > after)
                .order_by(LEDGER.c.seq).limit(limit + 1)
            ).all()
        more = len(rows) > limit
        page = [as_ledger_row(r) for r in ledger_rows_as_dicts(rows[:limit])]
        return page, (page[-1].seq if more and page else None)

    def iter_ledger(self, session_id: str, token: str, chunk: int = 5000) -> Iterator[dict[str, Any]]:
        """Every row of a session in order, read in chunks (for exports and the audit)."""
        with self.engine.connect() as conn:
            self._load(conn, session_id, token, lock=False, open_only=False)
        after = -1
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(LEDGER).where(LEDGER.c.session_id == session_id, LEDGER.c.seq > after)
                    .order_by(LEDGER.c.seq).limit(chunk)
                ).all()
            yield from ledger_rows_as_dicts(rows)
            if len(rows) < chunk:
                return
            after = rows[-1].seq

    def head(self, session_id: str, token: str) -> dict[str, Any]:
        """The session's recorded counters: the last line of an NDJSON export, checked by the offline audit."""
        with self.engine.connect() as conn:
            rec = self._load(conn, session_id, token, lock=False, open_only=False)
        return recorded_counters(rec)

    def audit(self, session_id: str, token: str) -> AuditReport:
        # Rows and counters are read in one snapshot-consistent pass: lock the session so no write interleaves.
        with self.engine.begin() as conn:
            rec = self._load(conn, session_id, token, lock=True, open_only=False)
            rows = conn.execute(
                select(LEDGER).where(LEDGER.c.session_id == session_id).order_by(LEDGER.c.seq)
            ).all()
        return audit_rows(session_id, ledger_rows_as_dicts(rows), recorded_counters(rec))


def recorded_counters(rec: Any) -> dict[str, Any]:
    return {
        "type": "head", "session_id": rec.id, "rows": rec.ledger_rows, "head_hash": rec.head_hash,
        "spent_cost": rec.spent_cost, "spent_attributes": rec.spent_attributes, "labels": rec.labels,
        "predictions": rec.predictions, "status": rec.status,
    }


def as_ledger_row(row: dict[str, Any]) -> LedgerRow:
    import json

    return LedgerRow(**{**row, "payload": json.loads(row["payload"])})
