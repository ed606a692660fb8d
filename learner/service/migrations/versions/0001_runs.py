"""Callers, runs and the points of their learning curves.

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
        "learner_callers",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "learner_runs",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("owner", sa.String(32), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("algorithm", sa.String(100), nullable=False),
        sa.Column("dataset", sa.String(200), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("request", sa.Text(), nullable=False),
        sa.Column("session_id", sa.String(64), nullable=True),
        sa.Column("session_token", sa.String(128), nullable=True),
        sa.Column("max_examples", sa.BigInteger(), nullable=True),
        sa.Column("progress_examples", sa.BigInteger(), nullable=False),
        sa.Column("progress_attributes", sa.BigInteger(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_learner_runs_owner_seq", "learner_runs", ["owner", "seq"])
    op.create_index("ix_learner_runs_status", "learner_runs", ["status"])
    op.create_table(
        "learner_curve_points",
        sa.Column("run_id", sa.String(32), primary_key=True),
        sa.Column("idx", sa.Integer(), primary_key=True),
        sa.Column("examples", sa.BigInteger(), nullable=False),
        sa.Column("attributes", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("test_mse", sa.Float(), nullable=False),
        sa.Column("normalized_mse", sa.Float(), nullable=False),
        sa.Column("zero_one", sa.Float(), nullable=False),
        sa.Column("cumulative_loss", sa.Float(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("learner_curve_points")
    op.drop_index("ix_learner_runs_status", "learner_runs")
    op.drop_index("ix_learner_runs_owner_seq", "learner_runs")
    op.drop_table("learner_runs")
    op.drop_table("learner_callers")
