"""``budgetlab accounts``: the oracle's accounts as its admin manages them (create, list, show, revoke, audit), and an
account's own view with its key (``budgetlab accounts show`` with ``--api-key``).

The admin is known by the oracle's admin token (``--admin-token`` or ``BUDGETLAB_ADMIN_TOKEN``); an account by its
API key (``--api-key`` or ``BUDGETLAB_API_KEY``), which ``create`` prints once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from client.console import App, UsageError, call, console, err

if TYPE_CHECKING:
    from budgetlab.contract.accounts import AccountInfo, AccountView, Allowance
    from budgetlab.oracle_client import OracleClient

accounts_app = App(help="The oracle's accounts and their allowances: create, list, show, revoke, audit.",
                   no_args_is_help=True)

OracleOpt = Annotated[str, typer.Option("--oracle", envvar="ORACLE_URL", help="oracle base URL")]
AdminOpt = Annotated[str | None, typer.Option("--admin-token", envvar="BUDGETLAB_ADMIN_TOKEN", show_envvar=True,
                                              help="the oracle's admin token")]
KeyOpt = Annotated[str | None, typer.Option("--api-key", envvar="BUDGETLAB_API_KEY", show_envvar=True,
                                            help="an account's API key: show that account (no admin token needed)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]
DEFAULT_ORACLE = "http://127.0.0.1:8000"
STATUS_STYLE = {"active": "green", "revoked": "yellow"}


def admin_client(oracle: str, admin_token: str | None) -> OracleClient:
    from budgetlab.oracle_client import OracleClient

    if not admin_token:
        raise UsageError("accounts are the admin's: give --admin-token or set BUDGETLAB_ADMIN_TOKEN")
    return OracleClient(oracle, admin_token=admin_token)


def limit_text(value: float | int | None) -> str:
    return "no limit" if value is None else f"{value:g}"


def allowance_lines(allowance: Allowance) -> list[tuple[str, str]]:
    datasets = "every dataset" if allowance.datasets is None else ", ".join(allowance.datasets) or "none"
    splits = ("train and test" if "test" in allowance.splits and "train" in allowance.splits
              else f"{allowance.splits[0]} only" + (" (test splits shielded)" if "test" not in allowance.splits
                                                     else ""))
    return [("total cost", limit_text(allowance.total)), ("per example", limit_text(allowance.per_example)),
            ("datasets", datasets), ("splits", splits), ("open at once", limit_text(allowance.sessions)),
            ("evaluations", limit_text(allowance.evaluations))]


def spent_text(value: float, limit: float | int | None) -> str:
    return f"{value:g}" if limit is None else f"{value:g} / {limit:g}"


def accounts_table(accounts: list[AccountInfo]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, show_edge=False)
    table.add_column("account", no_wrap=True)
    table.add_column("name", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    table.add_column("evaluations", justify="right", no_wrap=True)
    table.add_column("open", justify="right", no_wrap=True)
    table.add_column("k", justify="right", no_wrap=True)
    for a in accounts:
        table.add_row(a.id, escape(a.name), f"[{STATUS_STYLE[a.status]}]{a.status}[/]",
                      spent_text(a.spent.cost, a.allowance.total),
                      spent_text(a.spent.evaluations, a.allowance.evaluations),
                      spent_text(a.spent.open, a.allowance.sessions), limit_text(a.allowance.per_example))
    return table


def show_account(view: AccountView) -> None:
    a = view.account
    console.print(f"[bold]{escape(a.name)}[/]  {a.id}  [{STATUS_STYLE[a.status]}]{a.status}[/]", soft_wrap=True)
    details = Table.grid(padding=(0, 2))
    details.add_column(style="bold", no_wrap=True)
    details.add_column(overflow="fold")
    for key, value in allowance_lines(a.allowance):
        details.add_row(key, value)
    details.add_row("spent", f"{a.spent.cost:g} cost units, {a.spent.evaluations} evaluations, {a.spent.sessions} "
                             f"session(s) ({a.spent.open} open)")
    left = a.remaining
    details.add_row("left", f"{limit_text(left.total)} cost units, {limit_text(left.evaluations)} evaluations")
    console.print(details)
    if not view.sessions:
        console.print("no sessions yet")
        return
    # Session ids are never cut (they are what a session is told by); datasets fold.
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, show_edge=False)
    table.add_column("session", no_wrap=True)
    table.add_column("dataset", overflow="fold")
    for name in ("split", "k", "status", "cost", "rows"):
        table.add_column(name, no_wrap=True, justify="left" if name in ("split", "status") else "right")
    for s in view.sessions:
        table.add_row(s.id, escape(s.dataset), s.split, limit_text(s.budget.per_example), s.status,
                      f"{s.spent.cost:g}", str(s.ledger_rows))
    console.print(table)


@accounts_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="the account's name (a student, a group)")],
    total: Annotated[float | None, typer.Option(min=0, help="cost units all its sessions may spend together")]
    = None,
    per_example: Annotated[int | None, typer.Option(min=0, help="the largest local budget k of a session (a session "
                                                               "asking none gets it)")] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", help="a dataset it may use (repeat it; default: "
                                                                        "every dataset)")] = None,
    shield_test: Annotated[bool, typer.Option("--shield-test", help="no test sessions: only evaluation results "
                                                                    "leave the test splits")] = False,
    sessions: Annotated[int, typer.Option(min=0, help="sessions open at once (0: no limit)")] = 50,
    evaluations: Annotated[int | None, typer.Option(min=0, help="evaluate requests of all its sessions")] = None,
    oracle: OracleOpt = DEFAULT_ORACLE,
    admin_token: AdminOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an account with its allowance; prints its API key, shown this once."""
    from budgetlab.contract.accounts import Allowance

    allowance = Allowance(total=total, per_example=per_example, datasets=dataset or None,
                          splits=["train"] if shield_test else ["train", "test"], sessions=sessions or None,
                          evaluations=evaluations)
    with admin_client(oracle, admin_token) as client:
        created = call(lambda: client.create_account(name, allowance))
    if as_json:
        typer.echo(created.model_dump_json(indent=2))
        return
    show_account_info(created.account)
    console.print(f"API key (shown once; the oracle keeps only a hash of it):\n{created.key}", soft_wrap=True,
                  highlight=False)
    err.print("give it to the account's holder: export BUDGETLAB_API_KEY=... then budgetlab compare, run, session "
              "open use it", soft_wrap=True, highlight=False)


def show_account_info(info: AccountInfo) -> None:
    from budgetlab.contract.accounts import AccountView

    show_account(AccountView(account=info, sessions=[]))


@accounts_app.command("list")
def list_(oracle: OracleOpt = DEFAULT_ORACLE, admin_token: AdminOpt = None, as_json: JsonOpt = False) -> None:
    """Every account: its spend against its allowance, sessions open, local budget k."""
    with admin_client(oracle, admin_token) as client:
        listing = call(client.accounts)
    if as_json:
        typer.echo(listing.model_dump_json(indent=2))
    elif not listing.accounts:
        console.print("no accounts yet ('budgetlab accounts create NAME' makes one)")
    else:
        console.print(accounts_table(listing.accounts))


@accounts_app.command("show")
def show(
    account_id: Annotated[str | None, typer.Argument(help="the account's id (default: the --api-key's account)")]
    = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="sessions listed, newest first")] = 20,
    oracle: OracleOpt = DEFAULT_ORACLE,
    admin_token: AdminOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """An account: its allowance, what its sessions drew, and its newest sessions."""
    from budgetlab.oracle_client import OracleClient

    if account_id is None:
        if not api_key:
            raise UsageError("give an account's id (with the admin token), or --api-key for the key's own account")
        with OracleClient(oracle, api_key=api_key) as client:
            view = call(lambda: client.account(limit))
    else:
        with admin_client(oracle, admin_token) as client:
            view = call(lambda: client.show_account(account_id, limit))
    if as_json:
        typer.echo(view.model_dump_json(indent=2))
    else:
        show_account(view)


@accounts_app.command("revoke")
def revoke(account_id: Annotated[str, typer.Argument(help="the account's id")], oracle: OracleOpt = DEFAULT_ORACLE,
           admin_token: AdminOpt = None) -> None:
    """Revoke an account: its key opens nothing more, and its open sessions are closed."""
    with admin_client(oracle, admin_token) as client:
        info = call(lambda: client.revoke_account(account_id))
    console.print(f"revoked [bold]{escape(info.name)}[/] ({info.id}): its key opens nothing more; its sessions are "
                  f"closed, their ledgers kept ({info.spent.sessions} sessions, {info.spent.cost:g} cost units)",
                  soft_wrap=True)


@accounts_app.command("audit")
def audit(
    account_id: Annotated[str | None, typer.Argument(help="the account's id (default: the --api-key's account)")]
    = None,
    oracle: OracleOpt = DEFAULT_ORACLE,
    admin_token: AdminOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Audit an account: every session's ledger, and the allowance recomputed from their rows. Exit 1 if not
    compliant."""
    from budgetlab.oracle_client import OracleClient

    if account_id is None and not api_key:
        raise UsageError("give an account's id (with the admin token), or --api-key for the key's own account")
    client = (OracleClient(oracle, api_key=api_key) if account_id is None else admin_client(oracle, admin_token))
    with client:
        report = call(lambda: client.audit_account(account_id))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    elif report.compliant:
        console.print(f"[bold green]compliant[/]: {report.sessions} sessions, {report.rows} rows, chains intact; "
                      f"spent {report.spent_recomputed:g} of {limit_text(report.allowance.total)}, "
                      f"{report.evaluations_recomputed} evaluations of {limit_text(report.allowance.evaluations)}",
                      soft_wrap=True)
    else:
        console.print("[bold red]NOT compliant[/]")
        for reason in report.reasons:
            console.print(f"  - {escape(reason)}", soft_wrap=True)
    raise typer.Exit(0 if report.compliant else 1)
