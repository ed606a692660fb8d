"""``budgetlab audit``: a ledger verified offline from its export (with the receipts kept), or by its oracle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from client.commands.options import ORACLE_URL, OracleOpt
from client.commands.session import session_of
from client.console import UsageError, call, console, print_json

if TYPE_CHECKING:
    from budgetlab.contract.ledger import Receipt


def audit(
    source: Annotated[str, typer.Argument(help="an exported FILE.ndjson, or a session id with --token")],
    token: Annotated[str | None, typer.Option("--token", envvar="BUDGETLAB_TOKEN")] = None,
    oracle: OracleOpt = ORACLE_URL,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    receipt: Annotated[list[str] | None, typer.Option(
        "--receipt", help="ROWS:HEAD of an answer's receipt you kept; the export must contain it (repeatable)")] = None,
) -> None:
    """Verify a ledger: offline from an NDJSON export, or by asking the oracle. Exit 1 if not compliant.

    Receipts make a ledger rewritten wholesale in the database fail: its recomputed chain no longer holds them.
    """
    path = Path(source)
    receipts = [_receipt(text) for text in receipt or ()]
    if path.exists():
        from budgetlab.audit import audit_ndjson

        try:
            with path.open() as lines:
                report = audit_ndjson(lines, receipts)
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path} is not a budgetlab ledger export: {exc}") from None
    elif receipts:
        raise UsageError("receipts are checked against an exported ledger: export it first (budgetlab session export)")
    elif token:
        report = call(lambda: session_of(oracle, source, token).audit())
    else:
        raise UsageError(f"{source} is not a file; to audit a live session pass its --token")
    if as_json:
        print_json(report.model_dump())
    elif report.compliant:
        console.print(f"[bold green]compliant[/]: {report.rows} rows, chain intact, spent {report.spent_recomputed:g}"
                      f", at most {report.max_attributes_per_example} attributes per example")
    else:
        console.print("[bold red]NOT compliant[/]")
        for reason in report.reasons:
            console.print(f"  - {reason}")
    raise typer.Exit(0 if report.compliant else 1)


def _receipt(text: str) -> Receipt:
    from budgetlab.contract.ledger import Receipt

    rows, _, head = text.partition(":")
    if not rows.isdigit() or len(head) != 64:
        raise typer.BadParameter(f"{text!r} is not ROWS:HEAD (a row count and a 64-digit hex digest)",
                                 param_hint="--receipt")
    return Receipt(rows=int(rows), head=head.lower())
