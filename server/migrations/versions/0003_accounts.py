"""Accounts with allowances, the account of every session, and ledger format 3.

A session now names the account it draws on (None: anonymous), and new sessions chain their ledgers in format 3,
whose every link names that account (``budgetlab.ledger.chain_name``). The sessions already stored keep format 2:
their chains go on as they were hashed.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("allowance", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("spent_cost", sa.Float(), nullable=False),
        sa.Column("evaluations", sa.BigInteger(), nullable=False),
        sa.Column("sessions", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    with op.batch_alter_table("sessions") as sessions:
        sessions.add_column(sa.Column("account_id", sa.String(32), nullable=True))
        sessions.add_column(sa.Column("ledger_format", sa.Integer(), nullable=False, server_default=sa.text("2")))
    op.create_index("ix_sessions_account", "sessions", ["account_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_sessions_account", table_name="sessions")
    with op.batch_alter_table("sessions") as sessions:
        sessions.drop_column("ledger_format")
        sessions.drop_column("account_id")
    op.drop_table("accounts")
