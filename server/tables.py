"""The oracle's database: accounts with their allowances, sessions with their budget counters, and the ledger (chain
links, packed values)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, DateTime, Float, Index, Integer, LargeBinary, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class SessionRecord(Base):
    """One oracle session: its configuration and the counters the ledger rows must add up to."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    # The small integer the ledger's rows carry instead of the 32-character id.
    ledger_key: Mapped[int] = mapped_column(Integer, unique=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    dataset: Mapped[str] = mapped_column(String(200))
    dataset_params: Mapped[dict] = mapped_column(JSON)
    split: Mapped[str] = mapped_column(String(8))
    protocol: Mapped[str] = mapped_column(String(8))
    order: Mapped[str] = mapped_column("example_order", String(8))
    budget: Mapped[dict] = mapped_column(JSON)
    seed: Mapped[int] = mapped_column(BigInteger)
    n_examples: Mapped[int] = mapped_column(Integer)
    d: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(8), default="open")
    spent_cost: Mapped[float] = mapped_column(Float, default=0.0)
    spent_attributes: Mapped[int] = mapped_column(BigInteger, default=0)
    labels: Mapped[int] = mapped_column(BigInteger, default=0)
    issued: Mapped[int] = mapped_column(BigInteger, default=0)
    predictions: Mapped[int] = mapped_column(BigInteger, default=0)
    cumulative_loss: Mapped[float] = mapped_column(Float, default=0.0)
    ledger_rows: Mapped[int] = mapped_column(BigInteger, default=0)
    head_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_active: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The account the session draws on (None: anonymous), and the format its chain is hashed in (migration 0003: the
    # sessions before accounts go on in format 2).
    account_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    ledger_format: Mapped[int] = mapped_column(Integer, server_default=text("2"))

    __table_args__ = (
        # An account's open sessions are counted when it opens another; the listings read an account's sessions.
        Index("ix_sessions_account", "account_id", "status"),
    )


class AccountRecord(Base):
    """An account: its allowance, and what all its sessions drew on it (kept in the transaction of each draw)."""

    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    # sha256 of the key's secret part (the key is ID.SECRET): the key itself is shown once and never stored.
    key_hash: Mapped[str] = mapped_column(String(64))
    allowance: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(8))
    spent_cost: Mapped[float] = mapped_column(Float)
    evaluations: Mapped[int] = mapped_column(BigInteger)
    sessions: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Link(Base):
    """One link of a session's hash chain: an event, or the values one request paid for of one example.

    ``seq`` is the number of the link's first row; an observe link holds rows seq .. seq + n - 1, stored in
    ``cells``. See ``budgetlab.ledger`` for what the digest covers.
    """

    __tablename__ = "links"

    session_key: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    example: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    cost: Mapped[float] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    payload: Mapped[str | None] = mapped_column(Text, nullable=True)
    digest: Mapped[bytes] = mapped_column(LargeBinary(32))

    __table_args__ = (
        # Only label and predict links are ever looked up by example; the rest stay out of these indexes.
        Index("ix_links_label", "session_key", "example", sqlite_where=text("kind = 'label'"),
              postgresql_where=text("kind = 'label'")),
        Index("ix_links_predict", "session_key", "example", sqlite_where=text("kind = 'predict'"),
              postgresql_where=text("kind = 'predict'")),
        {"sqlite_with_rowid": False},
    )


class Cells(Base):
    """The rows of one observe link, packed (``budgetlab.ledger.pack_cells``): every value the link revealed.

    Keyed by (session, example, link), which is the lookup that makes a paid-for value free: one entry per
    example and request, not per value, so a big request holds the write lock for a short time.
    """

    __tablename__ = "cells"

    session_key: Mapped[int] = mapped_column(Integer, primary_key=True)
    example: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # A rowid table on SQLite, unlike ``links``: a WITHOUT ROWID row spills into overflow pages past ~1 KB (64
    # values), a rowid row only past ~4 KB, and each spill wastes most of a page.
    cells: Mapped[bytes] = mapped_column(LargeBinary)
