"""The learner's database: callers (token digests), runs, the points of their learning curves, and the oracle
sessions the learner holds until it has closed them.

The tables are prefixed ``learner_`` (and Alembic's version table too), so the learner may share a database
with the oracle, as it does in docker-compose.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

VERSION_TABLE = "learner_alembic_version"


class Base(DeclarativeBase):
    pass


class CallerRecord(Base):
    """Whoever holds the token whose SHA-256 digest is ``token_hash`` owns the runs started with it."""

    __tablename__ = "learner_callers"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RunRecord(Base):
    """One run: its request, its owner, its oracle session, where it got to, and (once ended) its result."""

    __tablename__ = "learner_runs"

    # Insertion order: the keyset of GET /v1/runs pages.
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(32), unique=True)
    owner: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(24))
    algorithm: Mapped[str] = mapped_column(String(100))
    dataset: Mapped[str] = mapped_column(String(200))
    seed: Mapped[int] = mapped_column(BigInteger)
    request: Mapped[str] = mapped_column(Text)  # RunCreate as JSON
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The learner acts on the session for its owner (audit, close), after a restart too.
    session_token: Mapped[str | None] = mapped_column(String(128), nullable=True)
    max_examples: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    progress_examples: Mapped[int] = mapped_column(BigInteger, default=0)
    progress_attributes: Mapped[int] = mapped_column(BigInteger, default=0)
    message: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[str | None] = mapped_column(Text, nullable=True)  # RunResult as JSON, without its curve
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (Index("ix_learner_runs_owner_seq", "owner", "seq"), Index("ix_learner_runs_status", "status"))


class CurvePointRecord(Base):
    """The ``idx``-th point of a run's learning curve, written as the run reaches it."""

    __tablename__ = "learner_curve_points"

    run_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    examples: Mapped[int] = mapped_column(BigInteger)
    attributes: Mapped[int] = mapped_column(BigInteger)
    cost: Mapped[float] = mapped_column(Float)
    test_mse: Mapped[float] = mapped_column(Float)
    normalized_mse: Mapped[float] = mapped_column(Float)
    zero_one: Mapped[float] = mapped_column(Float)
    cumulative_loss: Mapped[float | None] = mapped_column(Float, nullable=True)


class HeldSessionRecord(Base):
    """An oracle session the learner opened for a run (its training session, its test session), recorded as it is
    opened and marked once closed: a learner killed before closing it closes it when it starts again."""

    __tablename__ = "learner_sessions"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32))
    oracle_url: Mapped[str] = mapped_column(Text)
    token: Mapped[str] = mapped_column(String(128))
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True, index=True)
