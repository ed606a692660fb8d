"""The oracle sessions the learner opened (a run's training session and its test session), until each is closed.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "learner_sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("oracle_url", sa.Text(), nullable=False),
        sa.Column("token", sa.String(128), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_learner_sessions_closed_at", "learner_sessions", ["closed_at"])


def downgrade() -> None:
    op.drop_index("ix_learner_sessions_closed_at", "learner_sessions")
    op.drop_table("learner_sessions")
