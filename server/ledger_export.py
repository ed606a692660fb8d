"""A session's whole ledger, exported: NDJSON (a header line, every row, the session's recorded counters last, which
the offline audit checks: ``budgetlab audit``) or CSV (the rows), read in chunks and streamed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from budgetlab.ledger import ROW_FIELDS, ChainRow, canonical_json
from server.steps import Loaded, SessionSteps

# Rows read from the database at a time, and rows sent in one piece of the stream.
CHUNK_ROWS = 20_000
PIECE_ROWS = 2000


def export_header(loaded: Loaded) -> dict[str, Any]:
    """The first line of an NDJSON export: what it is, in which format (the session's own: 2 before accounts) and,
    from format 3, the account its chain names."""
    header: dict[str, Any] = {"type": "ledger", "format": loaded.row["ledger_format"], "session_id": loaded.id}
    if header["format"] >= 3:
        header["account"] = loaded.account
    return header


def recorded_counters(loaded: Loaded) -> dict[str, Any]:
    """The session's recorded counters: the last line of an NDJSON export, which the audit checks."""
    c = loaded.counters
    return {
        "type": "head", "session_id": loaded.id, "rows": loaded.ledger_rows, "head_hash": loaded.head_hash,
        "spent_cost": c.spent_cost, "spent_attributes": c.spent_attributes, "labels": c.labels,
        "predictions": c.predictions, "status": c.status,
    }


class LedgerExport:
    def __init__(self, steps: SessionSteps) -> None:
        self.steps = steps

    def rows(self, session_id: str, token: str, after: int = -1, chunk: int = CHUNK_ROWS,
             ) -> Iterator[ChainRow]:
        """Every row of a session after ``after``, in order, read in chunks."""
        db = self.steps.db
        while True:
            with db.read() as cursor:
                loaded = self.steps.load(cursor, session_id, token, lock=False)
                rows = db.rows(cursor, loaded.key, db.declared_costs(cursor, loaded.key), after, chunk)
            yield from rows
            if len(rows) < chunk:
                return
            after = rows[-1]["seq"]

    def head(self, session_id: str, token: str) -> Loaded:
        """The session as it stands now (its recorded counters: ``recorded_counters``)."""
        with self.steps.db.read() as cursor:
            return self.steps.load(cursor, session_id, token, lock=False)

    def ndjson(self, session_id: str, token: str, after: int = -1) -> Iterator[str]:
        """The NDJSON export, in pieces; the token is checked before it returns, so that a refusal can still be
        the answer's status (once streaming starts, it no longer can)."""
        loaded = self.head(session_id, token)
        head = recorded_counters(loaded)
        rows = self.rows(session_id, token, after)

        def pieces() -> Iterator[str]:
            yield json.dumps(export_header(loaded)) + "\n"
            dumps = json.dumps
            lines: list[str] = []
            for row in rows:
                lines.append(dumps(row))
                if len(lines) >= PIECE_ROWS:
                    yield "\n".join(lines) + "\n"
                    lines.clear()
            if lines:
                yield "\n".join(lines) + "\n"
            yield json.dumps(head) + "\n"

        return pieces()

    def csv(self, session_id: str, token: str, after: int = -1) -> Iterator[str]:
        """The CSV export (a header line, then the rows, the payload as canonical JSON), in pieces; the token is
        checked before it returns."""
        self.head(session_id, token)
        rows = self.rows(session_id, token, after)

        def pieces() -> Iterator[str]:
            buffer = io.StringIO()
            writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS)
            writer.writeheader()
            for i, row in enumerate(rows, start=1):
                writer.writerow({**row, "payload": canonical_json(row["payload"])})
                if i % PIECE_ROWS == 0:
                    yield buffer.getvalue()
                    buffer.seek(0)
                    buffer.truncate()
            yield buffer.getvalue()

        return pieces()
