"""The learner's database: callers (token digests), runs, the points of their learning curves, and the oracle
sessions the learner holds until it has closed them.

The tables are prefixed ``learner_`` (and Alembic's version table too), so the learner may share a database with the
oracle, as it does in docker-compose. Core tables, not ORM classes: the run store works with them through SQLAlchemy
Core (``learner.service.store``), and SQLAlchemy's ORM, imported for declarative classes alone, cost every learner
process 0.08 CPU-s at its start.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, DateTime, Float, Index, Integer, MetaData, String, Table, Text

VERSION_TABLE = "learner_alembic_version"

metadata = MetaData()

# Whoever holds the token whose SHA-256 digest is ``token_hash`` owns the runs started with it.
CALLERS = Table(
    "learner_callers", metadata,
    Column("id", String(32), primary_key=True),
    Column("token_hash", String(64), unique=True, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# One run: its request, its owner, its oracle session, where it got to, and (once ended) its result.
RUNS = Table(
    "learner_runs", metadata,
    # Insertion order: the keyset of GET /v1/runs pages.
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(32), unique=True, nullable=False),
    Column("owner", String(32), nullable=False),
    Column("status", String(24), nullable=False),
    Column("algorithm", String(100), nullable=False),
    Column("dataset", String(200), nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("request", Text, nullable=False),  # RunCreate as JSON
    Column("session_id", String(64), nullable=True),
    # The learner acts on the session for its owner (audit, close), after a restart too.
    Column("session_token", String(128), nullable=True),
    Column("max_examples", BigInteger, nullable=True),
    Column("progress_examples", BigInteger, default=0, nullable=False),
    Column("progress_attributes", BigInteger, default=0, nullable=False),
    Column("message", Text, default="", nullable=False),
    Column("result", Text, nullable=True),  # RunResult as JSON, without its curve
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("ended_at", DateTime(timezone=True), nullable=True),
    Index("ix_learner_runs_owner_seq", "owner", "seq"),
    Index("ix_learner_runs_status", "status"),
)

# The ``idx``-th point of a run's learning curve, written as the run reaches it.
POINTS = Table(
    "learner_curve_points", metadata,
    Column("run_id", String(32), primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("examples", BigInteger, nullable=False),
    Column("attributes", BigInteger, nullable=False),
    Column("cost", Float, nullable=False),
    Column("test_mse", Float, nullable=False),
    Column("normalized_mse", Float, nullable=False),
    Column("zero_one", Float, nullable=False),
    Column("cumulative_loss", Float, nullable=True),
)

# An oracle session the learner opened for a run (its training session, its test session), recorded as it is opened
# and marked once closed: a learner killed before closing it closes it when it starts again.
HELD = Table(
    "learner_sessions", metadata,
    Column("session_id", String(64), primary_key=True),
    Column("run_id", String(32), nullable=False),
    Column("oracle_url", Text, nullable=False),
    Column("token", String(128), nullable=False),
    Column("closed_at", DateTime(timezone=True), nullable=True, index=True),
)
