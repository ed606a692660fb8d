"""The ledger's first format (format 1), kept to read what it wrote: old NDJSON exports and old databases.

Every row was its own chain link: ``hash = sha256(prev_hash + "\\n" + canonical(row))`` in hex, one per
observed value. ``budgetlab.ledger`` (format 2) replaced it; migration 0002 re-chains format-1 ledgers after
checking them with ``verify_chain`` here, and ``budgetlab audit`` still verifies format-1 exports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from budgetlab.ledger import ChainCheck, canonical_json

GENESIS = "0" * 64
EMPTY_PAYLOAD = "{}"


def canonical_payload(payload: dict[str, Any]) -> str:
    return canonical_json(payload) or EMPTY_PAYLOAD


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
