"""Compliance audit: recompute every budget from a session's ledger alone and check its hash chain.

The audit reads the ledger link by link (``budgetlab.ledger.ChainLink``): the oracle's stored links for
``GET /v1/sessions/{id}/audit`` and an account's audit (``audit_links``), or the rows of an exported NDJSON file
grouped into links for ``budgetlab audit`` offline (``audit_rows``), so each rule is checked in one place. Rows can
go wrong in ways stored links cannot (a row of another example in a link, a row of another session): the grouping
(``budgetlab.ledger.links_of_rows``) and ``_rows_of_other_sessions`` find those.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from budgetlab import ledger, ledger_v1
from budgetlab.contract.accounts import AccountAudit, Allowance
from budgetlab.contract.budgets import Budget
from budgetlab.contract.ledger import AuditReport, Receipt
from budgetlab.ledger import ChainCheck, ChainLink

_SLACK = 1e-6
# What only rows can get wrong in a link (a row of another session), as (the row's place in the link, the reason).
Notes = Callable[[ChainLink], list[tuple[int, str]]]


def _payload(payload: dict[str, Any] | str) -> dict[str, Any]:
    opened: dict[str, Any] = json.loads(payload) if isinstance(payload, str) else payload
    return opened


@dataclass
class _Tally:
    """What the audit counts of a session's links, besides its chain, in the order of their rows."""

    format: int
    account: str | None
    opened: dict[str, Any] | None = None
    budget: Budget = field(default_factory=Budget)
    costs: list[float] | None = None
    d: int | None = None
    opening: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    links: int = 0
    rows: int = 0
    spent: float = 0.0
    attributes: int = 0
    labels: int = 0
    evaluations: int = 0
    per_example: dict[int, int] = field(default_factory=dict)
    seen: dict[int, set[int]] = field(default_factory=dict)  # the attributes observed of each example
    labelled: set[int] = field(default_factory=set)
    predicted: set[int] = field(default_factory=set)

    def add(self, link: ChainLink, notes: Sequence[tuple[int, str]]) -> None:
        if not self.links:
            self._open(link)
        self.links += 1
        self.rows += link.rows
        found: list[tuple[int, str]] = []
        kind = link.kind
        # An event without an example (a database altered by hand) is named by the verifier: its digest covers it.
        if kind == "label":
            example = link.example
            if example in self.labelled:
                found.append((0, f"row {link.seq} reveals the label of example {link.example} twice"))
            self.labelled.add(example)
            self.labels += 1
            self.spent += float(link.cost)
        elif kind == "predict":
            example = link.example
            if example in self.predicted:
                found.append((0, f"row {link.seq} is a second prediction for example {link.example}"))
            self.predicted.add(example)
        elif kind == "evaluate":
            self.evaluations += 1
        if link.attributes:
            self._values(link, found)
        if notes:
            found = sorted([*notes, *found], key=lambda note: note[0])
        if found:
            self.reasons += [reason for _, reason in found]

    def _open(self, link: ChainLink) -> None:
        if link.kind != "open":
            self.opening.append("the ledger does not start with the session's open row")
            return
        self.opened = config = _payload(link.payload)
        if self.format >= 3 and config.get("account") != self.account:
            self.opening.append(f"the open row names the account {config.get('account')!r}, not {self.account!r}")
        self.budget = Budget.model_validate(config.get("budget", {}))
        self.costs, self.d = config.get("costs"), config.get("d")

    def _values(self, link: ChainLink, found: list[tuple[int, str]]) -> None:
        attributes, charged = link.attributes, link.costs
        m = len(attributes)
        self.attributes += m
        if link.examples is None:  # every value is of the link's example (a stored link, or rows as stored)
            example, costs, d = link.example, self.costs, self.d
            ordered = sorted(attributes)
            low, high = ordered[0], ordered[-1]
            new, prior = set(attributes), self.seen.get(example)
            if costs is None:
                declared: list[Any] | None = [1.0] * m
            else:
                declared = [costs[a] for a in attributes] if 0 <= low and high < len(costs) else None
            if (len(new) == m and (prior is None or prior.isdisjoint(new)) and (d is None or 0 <= low and high < d)
                    and declared == charged):
                # Nearly every link: its values are new, within 0..d-1 and charged as declared, so none is named.
                if prior is None:
                    self.seen[example] = new
                else:
                    prior |= new
                self.per_example[example] = self.per_example.get(example, 0) + m
                spent = self.spent
                for cost in charged:
                    spent += float(cost)
                self.spent = spent
                return
        self._name_values(link, found)

    def _name_values(self, link: ChainLink, found: list[tuple[int, str]]) -> None:
        costs, d, seen, per_example = self.costs, self.d, self.seen, self.per_example
        examples = [link.example] * len(link.attributes) if link.examples is None else link.examples
        first = link.rows - len(link.attributes)  # the rows of an event's link before its values
        for i, (example, attribute, cost) in enumerate(zip(examples, link.attributes, link.costs, strict=True),
                                                        start=first):
            observed = seen.setdefault(example, set())
            if attribute in observed:
                found.append((i, f"row {link.seq + i} charges attribute {attribute} of example {example} a second "
                                 "time"))
            observed.add(attribute)
            if d is not None and not 0 <= attribute < d:
                found.append((i, f"row {link.seq + i} observes attribute {attribute} outside 0..{d - 1}"))
            expected = 1.0 if costs is None else costs[attribute] if 0 <= attribute < len(costs) else None
            if expected is not None and abs(float(cost) - expected) > _SLACK:
                found.append((i, f"row {link.seq + i} charges {cost} for attribute {attribute}, which costs "
                                 f"{expected}"))
            per_example[example] = per_example.get(example, 0) + 1
            self.spent += float(cost)


def _audit(session_id: str, links: Iterable[ChainLink], recorded: dict[str, Any] | None, *, receipts: Iterable[Receipt],
           format: int, account: str | None, chain: ChainCheck | None = None, notes: Notes | None = None,
           ) -> tuple[AuditReport, _Tally]:
    """The audit of one session's links; ``chain`` given: the chain was checked already (format 1, on rows)."""
    receipts = list(receipts)
    verifier = None
    if chain is None:
        verifier = ledger.ChainVerifier(ledger.chain_name(session_id, account, format), receipts=bool(receipts))
    tally = _Tally(format, account)
    for link in links:
        if verifier is not None:
            verifier.add(link)
        tally.add(link, notes(link) if notes is not None else ())
    if verifier is not None:
        chain = verifier.result()
    assert chain is not None
    reasons = [] if chain.ok else [chain.reason]
    reasons += _receipt_reasons(chain, verifier, receipts)
    reasons += tally.opening
    reasons += tally.reasons
    budget, spent, per_example = tally.budget, tally.spent, tally.per_example
    max_per_example = max(per_example.values(), default=0)
    if budget.per_example is not None and max_per_example > budget.per_example:
        worst = max(per_example, key=per_example.__getitem__)
        reasons.append(f"example {worst} had {max_per_example} attributes observed; the local budget is "
                       f"{budget.per_example}")
    if budget.total is not None and spent > budget.total + _SLACK:
        reasons.append(f"the rows spend {spent:g}; the global budget is {budget.total:g}")
    if recorded is not None:
        reasons += _recorded_reasons(chain, tally, recorded)
    report = AuditReport(
        session_id=session_id,
        compliant=not reasons,
        reasons=reasons,
        rows=tally.rows,
        chain_ok=chain.ok,
        first_bad_seq=chain.first_bad_seq,
        spent_recomputed=spent,
        spent_recorded=None if recorded is None else recorded.get("spent_cost"),
        attributes_recomputed=tally.attributes,
        max_attributes_per_example=max_per_example,
        per_example_limit=budget.per_example,
        total_limit=budget.total,
        labels_recomputed=tally.labels,
        predictions_recomputed=len(tally.predicted),
    )
    return report, tally


def _receipt_reasons(chain: ChainCheck, verifier: ledger.ChainVerifier | None, receipts: list[Receipt]) -> list[str]:
    """Why the receipts a client was given do not fit this chain (each must be one of its links)."""
    if receipts and verifier is None:
        return ["receipts can only be checked on a ledger of format 2 or later"]
    if verifier is None or not chain.ok:
        return []
    return [f"the receipt for row {receipt.rows - 1} ({receipt.head[:16]}...) is not in this ledger: it is not the "
            "ledger that was given out" for receipt in receipts if not verifier.contains(receipt.rows, receipt.head)]


def _recorded_reasons(chain: ChainCheck, tally: _Tally, recorded: dict[str, Any]) -> list[str]:
    """Where the counters the session recorded disagree with what its rows add up to."""
    reasons: list[str] = []
    checks = [
        ("rows", chain.rows if chain.ok else tally.rows, recorded.get("rows")),
        ("attributes", tally.attributes, recorded.get("spent_attributes")),
        ("labels", tally.labels, recorded.get("labels")),
        ("predictions", len(tally.predicted), recorded.get("predictions")),
    ]
    for name, counted, kept in checks:
        if kept is not None and counted != kept:
            reasons.append(f"the session records {kept} {name}; the ledger has {counted}")
    kept_cost, spent = recorded.get("spent_cost"), tally.spent
    if kept_cost is not None and abs(kept_cost - spent) > _SLACK * max(1.0, abs(spent)):
        reasons.append(f"the session records a spend of {kept_cost:g}; the rows add up to {spent:g}")
    if chain.ok and recorded.get("head_hash") not in (None, chain.head):
        reasons.append("the last row's hash is not the session's recorded head: rows are missing at the end")
    return reasons


def audit_links(session_id: str, links: Iterable[ChainLink], recorded: dict[str, Any] | None, *,
                format: int = ledger.FORMAT, account: str | None = None) -> AuditReport:
    """Audit one session's stored links (in seq order, format 2 or later) against the counters it recorded (None:
    the links only). From format 3 every link names the session's ``account`` (None: anonymous), which its open
    row states too."""
    return _audit(session_id, links, recorded, receipts=(), format=format, account=account)[0]


def _rows_of_other_sessions(session_id: str, link: ChainLink) -> list[tuple[int, str]]:
    """The rows of a link that name another session than the one audited (an NDJSON export's rows name theirs)."""
    return [(i, f"row {row['seq']} belongs to session {row['session_id']}") for i, row in enumerate(link.source)
            if row.get("session_id", session_id) != session_id]


def audit_rows(session_id: str, rows: Iterable[dict[str, Any]], recorded: dict[str, Any] | None, *,
               receipts: Iterable[Receipt] = (), format: int = ledger.FORMAT,
               account: str | None = None) -> AuditReport:
    """Audit one session's rows (in seq order) against the counters it recorded (None: rows only), as
    ``audit_links`` does their links.

    ``receipts`` are chain heads a client was given: each must be a link of this chain, so a ledger rewritten
    wholesale (every digest recomputed) no longer passes for the original. ``format`` 1 and 2 read older ledgers.
    """
    rows = list(rows)
    chain = None if format in ledger.FORMATS else ledger_v1.verify_chain(session_id, rows)
    return _audit(session_id, ledger.links_of_rows(rows), recorded, receipts=receipts, format=format,
                  account=account, chain=chain, notes=partial(_rows_of_other_sessions, session_id))[0]


def audit_account(account: str, allowance: Allowance,
                  sessions: Iterable[tuple[str, Iterable[ChainLink], dict[str, Any], int]], *,
                  spent_recorded: float, evaluations_recorded: int) -> AccountAudit:
    """Audit an account: each of its sessions ``(id, links, recorded counters, ledger format)`` as ``audit_links``
    does, each one's open row within the allowance, and the allowance recomputed from all their links together
    against what the account records (``spent_recorded``, ``evaluations_recorded``)."""
    reasons: list[str] = []
    spent = 0.0
    evaluations = 0
    count = 0
    rows_read = 0
    for session_id, links, recorded, format in sessions:
        count += 1
        report, tally = _audit(session_id, links, recorded, receipts=(), format=format, account=account)
        rows_read += report.rows
        reasons += [f"session {session_id}: {reason}" for reason in report.reasons]
        spent += report.spent_recomputed
        evaluations += tally.evaluations
        opened = tally.opened
        if opened is None:
            continue
        per_example = tally.budget.per_example
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
