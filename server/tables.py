"""The oracle's database: sessions with their budget counters, and the ledger of every event."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, DateTime, Float, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class SessionRecord(Base):
    """One oracle session: its configuration and the counters the ledger rows must add up to."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
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


class LedgerEntry(Base):
    """One ledger row; ``hash`` chains it to the session's previous row."""

    __tablename__ = "ledger"

    session_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    example: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    attribute: Mapped[int | None] = mapped_column(Integer, nullable=True)
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    payload: Mapped[str] = mapped_column(Text, default="{}")
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))

    __table_args__ = (Index("ix_ledger_session_kind_example", "session_id", "kind", "example"),)
