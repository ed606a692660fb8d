"""The ledger's hash chain: canonical content of a row and the sha256 that links it to the previous one.

``hash = sha256(prev_hash + "\\n" + canonical(row))``. The canonical form uses ``repr`` of floats (an
exact round trip through JSON), so an exported NDJSON ledger can be re-hashed offline bit for bit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from budgetlab.engine import Event, Observations

GENESIS = "0" * 64
EMPTY_PAYLOAD = "{}"
# The order of a ledger row's fields wherever a row travels as a tuple (bulk inserts, exports).
ROW_FIELDS = ("session_id", "seq", "kind", "example", "attribute", "value", "cost", "payload", "prev_hash", "hash")


def canonical_payload(payload: dict[str, Any]) -> str:
    if not payload:
        return EMPTY_PAYLOAD
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _int(x: int | None) -> str:
    return "" if x is None else str(int(x))


def _float(x: float | None) -> str:
    return "" if x is None else repr(float(x))


def canonical(
    session_id: str, seq: int, kind: str, example: int | None, attribute: int | None, value: float | None,
    cost: float, payload: str,
) -> str:
    return "|".join(
        (session_id, str(int(seq)), kind, _int(example), _int(attribute), _float(value), _float(cost), payload)
    )


def chain_hash(prev_hash: str, content: str) -> str:
    return hashlib.sha256(f"{prev_hash}\n{content}".encode()).hexdigest()


@dataclass
class Chain:
    """Builds consecutive rows of one session, continuing from its head."""

    session_id: str
    seq: int
    head: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def append(
        self, kind: str, *, example: int | None = None, attribute: int | None = None, value: float | None = None,
        cost: float = 0.0, payload: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        text = canonical_payload(payload or {})
        value = None if value is None else float(value)
        cost = float(cost)
        content = canonical(self.session_id, self.seq, kind, example, attribute, value, cost, text)
        digest = chain_hash(self.head, content)
        row = {
            "session_id": self.session_id, "seq": self.seq, "kind": kind, "example": example,
            "attribute": attribute, "value": value, "cost": cost, "payload": text, "prev_hash": self.head,
            "hash": digest,
        }
        self.rows.append(row)
        self.seq += 1
        self.head = digest
        return row

    def record(self, events: Iterable[Event | Observations]) -> list[tuple]:
        """The ledger rows of an engine outcome's events as ``ROW_FIELDS`` tuples, continuing the chain."""
        out: list[tuple] = []
        for event in events:
            if isinstance(event, Observations):
                out += self.observation_rows(event.examples, event.attributes, event.values, event.costs)
            else:
                row = self.append(event.kind, example=event.example, value=event.value, cost=event.cost,
                                  payload=event.payload)
                out.append(tuple(row[f] for f in ROW_FIELDS))
        return out

    def observation_rows(self, examples: list[int], attributes: list[int], values: list[float],
                         costs: list[float]) -> list[tuple]:
        """One ``observe`` row per cell as a ``ROW_FIELDS`` tuple, with ``append``'s canonical content.

        The bulk path of a batch observe: tens of thousands of rows go straight to the driver, so no dict
        per row, and ``canonical`` is inlined. Its inputs must be Python ints and floats (``tolist()``),
        whose ``str``/``repr`` are then exactly ``canonical``'s.
        """
        sid, head, first = self.session_id, self.head, self.seq
        prefix = f"{sid}|"
        sha256 = hashlib.sha256
        rows: list[tuple] = []
        add = rows.append
        for seq, example, attribute, value, cost in zip(
            range(first, first + len(examples)), examples, attributes, values, costs, strict=True
        ):
            digest = sha256(
                f"{head}\n{prefix}{seq}|observe|{example}|{attribute}|{value!r}|{cost!r}|{EMPTY_PAYLOAD}".encode()
            ).hexdigest()
            add((sid, seq, "observe", example, attribute, value, cost, EMPTY_PAYLOAD, head, digest))
            head = digest
        self.head, self.seq = head, first + len(examples)
        return rows


@dataclass
class ChainCheck:
    ok: bool
    rows: int
    head: str
    first_bad_seq: int | None = None
    reason: str = ""


def verify_chain(session_id: str, rows: Iterable[dict[str, Any]]) -> ChainCheck:
    """Recompute every hash; name the first row that was altered, inserted or is missing."""
    head = GENESIS
    count = 0
    for expected_seq, row in enumerate(rows):
        count += 1
        payload = row["payload"] if isinstance(row["payload"], str) else canonical_payload(row["payload"])
        if row["seq"] != expected_seq:
            what = "missing" if row["seq"] > expected_seq else "inserted or repeated"
            return ChainCheck(False, count, head, expected_seq,
                              f"row {expected_seq} is {what}: found seq {row['seq']} in its place")
        if row["prev_hash"] != head:
            return ChainCheck(False, count, head, expected_seq,
                              f"row {expected_seq} does not link to row {expected_seq - 1} (prev_hash mismatch)")
        digest = chain_hash(head, canonical(session_id, row["seq"], row["kind"], row.get("example"),
                                            row.get("attribute"), row.get("value"), row.get("cost", 0.0), payload))
        if digest != row["hash"]:
            return ChainCheck(False, count, head, expected_seq,
                              f"row {expected_seq} was altered: its content does not hash to its recorded hash")
        head = digest
    return ChainCheck(True, count, head)


def ledger_rows_as_dicts(rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for r in rows:
        yield {
            "session_id": r.session_id, "seq": r.seq, "kind": r.kind, "example": r.example,
            "attribute": r.attribute, "value": r.value, "cost": r.cost, "payload": r.payload,
            "prev_hash": r.prev_hash, "hash": r.hash,
        }
