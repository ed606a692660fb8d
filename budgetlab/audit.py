"""Compliance audit: recompute every budget from the ledger rows alone and check the hash chain.

Used by ``GET /v1/sessions/{id}/audit`` and, on an exported NDJSON file, by ``budgetlab audit`` offline.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from budgetlab import ledger, ledger_v1
from budgetlab.contract.accounts import AccountAudit, Allowance
from budgetlab.contract.budgets import Budget
from budgetlab.contract.ledger import AuditReport, Receipt

_SLACK = 1e-6


def _payload(row: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(row["payload"]) if isinstance(row["payload"], str) else row["payload"]
    return payload


def audit_rows(session_id: str, rows: Iterable[dict[str, Any]], recorded: dict[str, Any] | None, *,
               receipts: Iterable[Receipt] = (), format: int = ledger.FORMAT,
               account: str | None = None) -> AuditReport:
    """Audit one session's rows (in seq order) against the counters it recorded (None: rows only).

    ``receipts`` are chain heads a client was given: each must be a link of this chain, so a ledger rewritten
    wholesale (every digest recomputed) no longer passes for the original. ``format`` 1 and 2 read older ledgers;
    from format 3 every link names the session's ``account`` (None: anonymous), which its open row states too.
    """
    rows = list(rows)
    reasons: list[str] = []
    if format in ledger.FORMATS:
        chain = ledger.verify_chain(ledger.chain_name(session_id, account, format), rows)
    else:
        chain = ledger_v1.verify_chain(session_id, rows)
    if not chain.ok:
        reasons.append(chain.reason)
    for receipt in receipts:
        if format not in ledger.FORMATS:
            reasons.append("receipts can only be checked on a ledger of format 2 or later")
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
        if format >= 3 and config.get("account") != account:
            reasons.append(f"the open row names the account {config.get('account')!r}, not {account!r}")
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


def audit_account(account: str, allowance: Allowance,
                  sessions: Iterable[tuple[str, list[dict[str, Any]], dict[str, Any], int]], *,
                  spent_recorded: float, evaluations_recorded: int) -> AccountAudit:
    """Audit an account: each of its sessions ``(id, rows, recorded counters, ledger format)`` as ``audit_rows``
    does, each one's open row within the allowance, and the allowance recomputed from all their rows together
    against what the account records (``spent_recorded``, ``evaluations_recorded``)."""
    reasons: list[str] = []
    spent = 0.0
    evaluations = 0
    count = 0
    rows_read = 0
    for session_id, rows, recorded, format in sessions:
        count += 1
        rows_read += len(rows)
        report = audit_rows(session_id, rows, recorded, format=format, account=account)
        reasons += [f"session {session_id}: {reason}" for reason in report.reasons]
        spent += report.spent_recomputed
        evaluations += sum(1 for row in rows if row["kind"] == "evaluate")
        if not rows or rows[0]["kind"] != "open":
            continue
        opened = _payload(rows[0])
        per_example = Budget.model_validate(opened.get("budget", {})).per_example
        if allowance.datasets is not None and opened.get("dataset") not in allowance.datasets:
            reasons.append(f"session {session_id} uses the dataset {opened.get('dataset')}, which the allowance "
                           "does not name")
        if opened.get("split") not in allowance.splits:
            reasons.append(f"session {session_id} uses the {opened.get('split')} split, which the allowance "
                           "shields")
        if allowance.per_example is not None and (per_example is None or per_example > allowance.per_example):
            reasons.append(f"session {session_id} has the local budget {per_example}; the allowance's is "
                           f"{allowance.per_example}")
    if allowance.total is not None and spent > allowance.total + _SLACK:
        reasons.append(f"the sessions spend {spent:g} together; the allowance is {allowance.total:g}")
    if allowance.evaluations is not None and evaluations > allowance.evaluations:
        reasons.append(f"the sessions made {evaluations} evaluations; the allowance is {allowance.evaluations}")
    if abs(spent_recorded - spent) > _SLACK * max(1.0, abs(spent)):
        reasons.append(f"the account records a spend of {spent_recorded:g}; its sessions' rows add up to {spent:g}")
    if evaluations_recorded != evaluations:
        reasons.append(f"the account records {evaluations_recorded} evaluations; its sessions' rows have "
                       f"{evaluations}")
    return AccountAudit(account=account, compliant=not reasons, reasons=reasons, sessions=count, rows=rows_read,
                        spent_recomputed=spent, spent_recorded=spent_recorded, evaluations_recomputed=evaluations,
                        evaluations_recorded=evaluations_recorded, allowance=allowance)


def audit_ndjson(lines: Iterable[str], receipts: Iterable[Receipt] = ()) -> AuditReport:
    """Audit an exported ledger: its ``{"type": "ledger", "format": 3, "account": ...}`` line, row lines in seq
    order, then the session's ``{"type": "head"}`` line. An export without the first line is format 1 (before
    receipts); format 2 is before accounts."""
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
    if format not in (1, *ledger.FORMATS):
        raise ValueError(f"ledger format {format} is not one this version reads (1 to {ledger.FORMAT})")
    session_id = ((header or {}).get("session_id") or (head or {}).get("session_id")
                  or (rows[0].get("session_id", "") if rows else ""))
    report = audit_rows(session_id, rows, head, receipts=receipts, format=format,
                        account=(header or {}).get("account"))
    if head is None:
        report.reasons.append("the export has no head line: rows missing at the end cannot be detected")
        report.compliant = False
    return report
