"""Compliance audit: recompute every budget from the ledger rows alone and check the hash chain.

Used by ``GET /v1/sessions/{id}/audit`` and, on an exported NDJSON file, by ``budgetlab audit`` offline.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from budgetlab import ledger, ledger_v1
from budgetlab.contract.budgets import Budget
from budgetlab.contract.ledger import AuditReport, Receipt

_SLACK = 1e-6


def _payload(row: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(row["payload"]) if isinstance(row["payload"], str) else row["payload"]
    return payload


def audit_rows(session_id: str, rows: Iterable[dict[str, Any]], recorded: dict[str, Any] | None, *,
               receipts: Iterable[Receipt] = (), format: int = ledger.FORMAT) -> AuditReport:
    """Audit one session's rows (in seq order) against the counters it recorded (None: rows only).

    ``receipts`` are chain heads a client was given: each must be a link of this chain, so a ledger rewritten
    wholesale (every digest recomputed) no longer passes for the original. ``format`` 1 reads old exports.
    """
    rows = list(rows)
    reasons: list[str] = []
    verify = ledger.verify_chain if format == ledger.FORMAT else ledger_v1.verify_chain
    chain = verify(session_id, rows)
    if not chain.ok:
        reasons.append(chain.reason)
    for receipt in receipts:
        if format != ledger.FORMAT:
            reasons.append("receipts can only be checked on a format-2 ledger")
            break
        if chain.ok and not ledger.contains_receipt(rows, receipt.rows, receipt.head):
            reasons.append(f"the receipt for row {receipt.rows - 1} ({receipt.head[:16]}...) is not in this "
                           "ledger: it is not the ledger that was given out")

    budget = Budget()
    costs: list[float] | None = None
    d: int | None = None
    if not rows or rows[0]["kind"] != "open":
        reasons.append("the ledger does not start with the session's open row")
    else:
        config = _payload(rows[0])
        budget = Budget.model_validate(config.get("budget", {}))
        costs = config.get("costs")
        d = config.get("d")

    spent = 0.0
    attributes = 0
    labels = 0
    per_example: Counter[int] = Counter()
    seen: set[tuple[int, int]] = set()
    labelled: set[int] = set()
    predicted: set[int] = set()
    for row in rows:
        kind = row["kind"]
        if row.get("session_id", session_id) != session_id:
            reasons.append(f"row {row['seq']} belongs to session {row['session_id']}")
        if kind == "observe":
            example, attribute = int(row["example"]), int(row["attribute"])
            if (example, attribute) in seen:
                reasons.append(f"row {row['seq']} charges attribute {attribute} of example {example} a second time")
            seen.add((example, attribute))
            if d is not None and not 0 <= attribute < d:
                reasons.append(f"row {row['seq']} observes attribute {attribute} outside 0..{d - 1}")
            expected = 1.0 if costs is None else costs[attribute] if 0 <= attribute < len(costs) else None
            if expected is not None and abs(float(row["cost"]) - expected) > _SLACK:
                reasons.append(
                    f"row {row['seq']} charges {row['cost']} for attribute {attribute}, which costs {expected}"
                )
            per_example[example] += 1
            attributes += 1
            spent += float(row["cost"])
        elif kind == "label":
            if int(row["example"]) in labelled:
                reasons.append(f"row {row['seq']} reveals the label of example {row['example']} twice")
            labelled.add(int(row["example"]))
            labels += 1
            spent += float(row["cost"])
        elif kind == "predict":
            if int(row["example"]) in predicted:
                reasons.append(f"row {row['seq']} is a second prediction for example {row['example']}")
            predicted.add(int(row["example"]))

    max_per_example = max(per_example.values(), default=0)
    if budget.per_example is not None and max_per_example > budget.per_example:
        worst = max(per_example, key=per_example.__getitem__)
        reasons.append(f"example {worst} had {max_per_example} attributes observed; the local budget is "
                       f"{budget.per_example}")
    if budget.total is not None and spent > budget.total + _SLACK:
        reasons.append(f"the rows spend {spent:g}; the global budget is {budget.total:g}")

    if recorded is not None:
        checks = [
            ("rows", chain.rows if chain.ok else len(rows), recorded.get("rows")),
            ("attributes", attributes, recorded.get("spent_attributes")),
            ("labels", labels, recorded.get("labels")),
            ("predictions", len(predicted), recorded.get("predictions")),
        ]
        for name, counted, kept in checks:
            if kept is not None and counted != kept:
                reasons.append(f"the session records {kept} {name}; the ledger has {counted}")
        kept_cost = recorded.get("spent_cost")
        if kept_cost is not None and abs(kept_cost - spent) > _SLACK * max(1.0, abs(spent)):
            reasons.append(f"the session records a spend of {kept_cost:g}; the rows add up to {spent:g}")
        if chain.ok and recorded.get("head_hash") not in (None, chain.head):
            reasons.append("the last row's hash is not the session's recorded head: rows are missing at the end")

    return AuditReport(
        session_id=session_id,
        compliant=not reasons,
        reasons=reasons,
        rows=len(rows),
        chain_ok=chain.ok,
        first_bad_seq=chain.first_bad_seq,
        spent_recomputed=spent,
        spent_recorded=None if recorded is None else recorded.get("spent_cost"),
        attributes_recomputed=attributes,
        max_attributes_per_example=max_per_example,
        per_example_limit=budget.per_example,
        total_limit=budget.total,
        labels_recomputed=labels,
        predictions_recomputed=len(predicted),
    )


def audit_ndjson(lines: Iterable[str], receipts: Iterable[Receipt] = ()) -> AuditReport:
    """Audit an exported ledger: its ``{"type": "ledger", "format": 2}`` line, row lines in seq order, then the
    session's ``{"type": "head"}`` line. An export without the first line is format 1 (before receipts)."""
    rows: list[dict[str, Any]] = []
    head: dict[str, Any] | None = None
    header: dict[str, Any] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} is not JSON: {exc}") from None
        if obj.get("type") == "head":
            head = obj
        elif obj.get("type") == "ledger":
            header = obj
        else:
            rows.append(obj)
    format = int(header.get("format", ledger.FORMAT)) if header is not None else 1
    if format not in (1, ledger.FORMAT):
        raise ValueError(f"ledger format {format} is not one this version reads (1 or {ledger.FORMAT})")
    session_id = ((header or {}).get("session_id") or (head or {}).get("session_id")
                  or (rows[0].get("session_id", "") if rows else ""))
    report = audit_rows(session_id, rows, head, receipts=receipts, format=format)
    if head is None:
        report.reasons.append("the export has no head line: rows missing at the end cannot be detected")
        report.compliant = False
    return report
