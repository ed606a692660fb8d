"""The oracle's database: accounts with their allowances, sessions with their budget counters, and the ledger (chain
links, packed values).

Core tables, not ORM classes: the oracle reads and writes them through statements of its own (``server.store``), and
SQLAlchemy's ORM, imported for declarative classes alone, cost every oracle process 0.08 CPU-s at its start.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()

# One oracle session: its configuration and the counters the ledger rows must add up to.
SESSIONS = Table(
    "sessions", metadata,
    Column("id", String(32), primary_key=True),
    # The small integer the ledger's rows carry instead of the 32-character id.
    Column("ledger_key", Integer, unique=True, nullable=False),
    Column("token_hash", String(64), nullable=False),
    Column("dataset", String(200), nullable=False),
    Column("dataset_params", JSON, nullable=False),
    Column("split", String(8), nullable=False),
    Column("protocol", String(8), nullable=False),
    Column("example_order", String(8), nullable=False),
    Column("budget", JSON, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("n_examples", Integer, nullable=False),
    Column("d", Integer, nullable=False),
    Column("status", String(8), default="open", nullable=False),
    Column("spent_cost", Float, default=0.0, nullable=False),
    Column("spent_attributes", BigInteger, default=0, nullable=False),
    Column("labels", BigInteger, default=0, nullable=False),
    Column("issued", BigInteger, default=0, nullable=False),
    Column("predictions", BigInteger, default=0, nullable=False),
    Column("cumulative_loss", Float, default=0.0, nullable=False),
    Column("ledger_rows", BigInteger, default=0, nullable=False),
    Column("head_hash", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_active", DateTime(timezone=True), nullable=False),
    # The account the session draws on (None: anonymous), and the format its chain is hashed in (migration 0003: the
    # sessions before accounts go on in format 2).
    Column("account_id", String(32), nullable=True),
    Column("ledger_format", Integer, server_default=text("2"), nullable=False),
    # An account's open sessions are counted when it opens another; the listings read an account's sessions.
    Index("ix_sessions_account", "account_id", "status"),
)

# An account: its allowance, and what all its sessions drew on it (kept in the transaction of each draw).
ACCOUNTS = Table(
    "accounts", metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(100), unique=True, nullable=False),
    # sha256 of the key's secret part (the key is ID.SECRET): the key itself is shown once and never stored.
    Column("key_hash", String(64), nullable=False),
    Column("allowance", JSON, nullable=False),
    Column("status", String(8), nullable=False),
    Column("spent_cost", Float, nullable=False),
    Column("evaluations", BigInteger, nullable=False),
    Column("sessions", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
)

# One link of a session's hash chain: an event, or the values one request paid for of one example. ``seq`` is the
# number of the link's first row; an observe link holds rows seq .. seq + n - 1, stored in ``cells``. See
# ``budgetlab.ledger`` for what the digest covers.
LINKS = Table(
    "links", metadata,
    Column("session_key", Integer, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("kind", String(10), nullable=False),
    Column("example", BigInteger, nullable=True),
    Column("value", Float, nullable=True),
    Column("cost", Float, nullable=False),
    Column("n", Integer, nullable=False),
    Column("payload", Text, nullable=True),
    Column("digest", LargeBinary(32), nullable=False),
    # Only label and predict links are ever looked up by example; the rest stay out of these indexes.
    Index("ix_links_label", "session_key", "example", sqlite_where=text("kind = 'label'"),
          postgresql_where=text("kind = 'label'")),
    Index("ix_links_predict", "session_key", "example", sqlite_where=text("kind = 'predict'"),
          postgresql_where=text("kind = 'predict'")),
    sqlite_with_rowid=False,
)

# The rows of one observe link, packed (``budgetlab.ledger.pack_cells``): every value the link revealed. Keyed by
# (session, example, link), which is the lookup that makes a paid-for value free: one entry per example and request,
# not per value, so a big request holds the write lock for a short time.
CELLS = Table(
    "cells", metadata,
    Column("session_key", Integer, primary_key=True),
    Column("example", BigInteger, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    # A rowid table on SQLite, unlike ``links``: a WITHOUT ROWID row spills into overflow pages past ~1 KB (64
    # values), a rowid row only past ~4 KB, and each spill wastes most of a page.
    Column("cells", LargeBinary, nullable=False),
)
