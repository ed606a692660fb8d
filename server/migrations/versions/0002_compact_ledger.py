"""The compact ledger (format 2): chain links with binary digests, and the values of each observe link packed.

Every format-1 row was a chain link of its own (hex hashes, a JSON payload, ~300 bytes per value on SQLite).
Each session's rows are carried over with the same seq numbers: events become one-row links, and consecutive
observations of one example one link (format 1 did not record where a request ended). The chain is hashed
again in format 2, so the session's head changes; a format-1 chain that no longer verifies is carried over as
it is, and the migration says which sessions those were.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from budgetlab import ledger, ledger_v1
from budgetlab.engine import Event, Observations

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")
SEQUENCE = "sessions_ledger_key_seq"
V1_COLUMNS = ("session_id", "seq", "kind", "example", "attribute", "value", "cost", "payload", "prev_hash", "hash")


def _create_v2_tables() -> None:
    op.create_table(
        "links",
        sa.Column("session_key", sa.Integer(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("example", sa.BigInteger(), nullable=True),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("digest", sa.LargeBinary(32), nullable=False),
        sqlite_with_rowid=False,
    )
    for kind in ("label", "predict"):
        where = sa.text(f"kind = '{kind}'")
        op.create_index(f"ix_links_{kind}", "links", ["session_key", "example"], sqlite_where=where,
                        postgresql_where=where)
    op.create_table(
        "cells",
        sa.Column("session_key", sa.Integer(), primary_key=True),
        sa.Column("example", sa.BigInteger(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True),
        sa.Column("cells", sa.LargeBinary(), nullable=False),
    )


def _events(rows: list[dict[str, Any]]) -> Iterator[Event | Observations]:
    """Format-1 rows as the engine's events: consecutive observations of one example become one link."""
    i = 0
    while i < len(rows):
        row = rows[i]
        if row["kind"] != "observe":
            payload = json.loads(row["payload"]) if row["payload"] else None
            yield Event(row["kind"], example=row["example"], value=row["value"], cost=row["cost"], payload=payload)
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j]["kind"] == "observe" and rows[j]["example"] == row["example"]:
            j += 1
        cells = rows[i:j]
        yield Observations([r["example"] for r in cells], [r["attribute"] for r in cells],
                           [float(r["value"]) for r in cells], [float(r["cost"]) for r in cells])
        i = j


def upgrade() -> None:
    bind = op.get_bind()
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("ledger_key", sa.Integer(), nullable=True))
    _create_v2_tables()

    sessions = bind.execute(sa.text("SELECT id FROM sessions ORDER BY created_at, id")).scalars().all()
    broken: list[str] = []
    for key, session_id in enumerate(sessions, start=1):
        rows = [dict(zip(V1_COLUMNS, r, strict=True)) for r in bind.execute(
            sa.text(f"SELECT {', '.join(V1_COLUMNS)} FROM ledger WHERE session_id = :sid ORDER BY seq"),
            {"sid": session_id})]
        if not ledger_v1.verify_chain(session_id, rows).ok:
            broken.append(session_id)
        chain = ledger.Chain(session_id, key, 0, ledger.GENESIS).record(_events(rows))
        if chain.links:
            bind.execute(sa.text(f"INSERT INTO links ({', '.join(ledger.LINK_FIELDS)}) VALUES "
                                 f"({', '.join(':' + f for f in ledger.LINK_FIELDS)})"),
                         [dict(zip(ledger.LINK_FIELDS, link, strict=True)) for link in chain.links])
        if chain.cells:
            bind.execute(sa.text(f"INSERT INTO cells ({', '.join(ledger.CELLS_FIELDS)}) VALUES "
                                 f"({', '.join(':' + f for f in ledger.CELLS_FIELDS)})"),
                         [dict(zip(ledger.CELLS_FIELDS, c, strict=True)) for c in chain.cells])
        bind.execute(sa.text("UPDATE sessions SET ledger_key = :key, head_hash = :head WHERE id = :sid"),
                     {"key": key, "head": chain.head, "sid": session_id})
    if broken:
        log.warning("format-1 chains that did not verify before the migration: %s", ", ".join(broken))

    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("ledger_key", existing_type=sa.Integer(), nullable=False)
        batch.create_unique_constraint("uq_sessions_ledger_key", ["ledger_key"])
    if bind.dialect.name == "postgresql":
        # New sessions draw their key here; SQLite's single writer takes MAX + 1 under its write lock instead.
        op.execute(f"CREATE SEQUENCE {SEQUENCE} START WITH {len(sessions) + 1}")
    op.drop_index("ix_ledger_session_kind_example", table_name="ledger")
    op.drop_table("ledger")


def downgrade() -> None:
    bind = op.get_bind()
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
    for session_id, key in bind.execute(sa.text("SELECT id, ledger_key FROM sessions")).all():
        links = bind.execute(sa.text("SELECT seq, kind, example, value, cost, n, payload, digest FROM links "
                                     "WHERE session_key = :k ORDER BY seq"), {"k": key}).all()
        by_link: dict[int, bytes] = dict(
            bind.execute(sa.text("SELECT seq, cells FROM cells WHERE session_key = :k"), {"k": key}).all())
        open_costs = None
        head = ledger_v1.GENESIS
        out: list[dict[str, Any]] = []
        for row in ledger.rows_of_links(links, by_link, None):
            if row["kind"] == "open":
                open_costs = row["payload"].get("costs")
            cost = (1.0 if open_costs is None else float(open_costs[row["attribute"]])) \
                if row["kind"] == "observe" else float(row["cost"])
            payload = ledger_v1.canonical_payload(row["payload"])
            digest = ledger_v1.chain_hash(head, ledger_v1.canonical(
                session_id, row["seq"], row["kind"], row["example"], row["attribute"], row["value"], cost, payload))
            out.append({"session_id": session_id, "seq": row["seq"], "kind": row["kind"], "example": row["example"],
                        "attribute": row["attribute"], "value": row["value"], "cost": cost, "payload": payload,
                        "prev_hash": head, "hash": digest})
            head = digest
        if out:
            bind.execute(sa.text(f"INSERT INTO ledger ({', '.join(V1_COLUMNS)}) VALUES "
                                 f"({', '.join(':' + c for c in V1_COLUMNS)})"), out)
        bind.execute(sa.text("UPDATE sessions SET head_hash = :head WHERE id = :sid"),
                     {"head": head, "sid": session_id})
    if bind.dialect.name == "postgresql":
        op.execute(f"DROP SEQUENCE {SEQUENCE}")
    op.drop_table("cells")
    op.drop_index("ix_links_predict", table_name="links")
    op.drop_index("ix_links_label", table_name="links")
    op.drop_table("links")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_constraint("uq_sessions_ledger_key", type_="unique")
        batch.drop_column("ledger_key")

