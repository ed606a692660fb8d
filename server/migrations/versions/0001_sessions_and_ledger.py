"""Sessions with budget counters, and the hash-chained ledger.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(200), nullable=False),
        sa.Column("dataset_params", sa.JSON(), nullable=False),
        sa.Column("split", sa.String(8), nullable=False),
        sa.Column("protocol", sa.String(8), nullable=False),
        sa.Column("example_order", sa.String(8), nullable=False),
        sa.Column("budget", sa.JSON(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("n_examples", sa.Integer(), nullable=False),
        sa.Column("d", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("spent_cost", sa.Float(), nullable=False),
        sa.Column("spent_attributes", sa.BigInteger(), nullable=False),
        sa.Column("labels", sa.BigInteger(), nullable=False),
        sa.Column("issued", sa.BigInteger(), nullable=False),
        sa.Column("predictions", sa.BigInteger(), nullable=False),
        sa.Column("cumulative_loss", sa.Float(), nullable=False),
        sa.Column("ledger_rows", sa.BigInteger(), nullable=False),
        sa.Column("head_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_active", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "ledger",
        sa.Column("session_id", sa.String(32), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("example", sa.BigInteger(), nullable=True),
        sa.Column("attribute", sa.Integer(), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_ledger_session_kind_example", "ledger", ["session_id", "kind", "example"])


def downgrade() -> None:
    op.drop_index("ix_ledger_session_kind_example", table_name="ledger")
    op.drop_table("ledger")
    op.drop_table("sessions")
