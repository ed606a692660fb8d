"""``budgetlab session``: one oracle session driven a call at a time (open, next, observe, info, export, close)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from client.commands.options import ORACLE_URL, ApiKeyOpt, OracleOpt, TokenOpt
from client.console import App, UsageError, call, console, print_json

if TYPE_CHECKING:
    from budgetlab.oracle_client import ExportFormat, OracleSession

session_app = App(help="Single attribute queries on an oracle session.", no_args_is_help=True)


def session_of(oracle: str, session_id: str, token: str) -> OracleSession:
    """The session ``session_id`` of ``oracle``, attached to by its token (no request is made yet)."""
    from budgetlab.oracle_client import OracleClient

    return OracleClient(oracle).session(session_id, token)


@session_app.command("open")
def session_open(
    dataset: Annotated[str, typer.Argument(help="name or name:key=value,...")],
    oracle: OracleOpt = ORACLE_URL,
    split: str = "train",
    protocol: str = "batch",
    order: str = "stream",
    per_example: Annotated[int | None, typer.Option(help="local budget k")] = None,
    total: Annotated[float | None, typer.Option(help="global budget K")] = None,
    seed: int = 0,
    api_key: ApiKeyOpt = None,
) -> None:
    """Open a session; prints its id and token (export BUDGETLAB_TOKEN=... for the other commands)."""
    from budgetlab.contract.budgets import Budget
    from budgetlab.contract.sessions import Order, Protocol, Split
    from budgetlab.datasets import DatasetError, parse_dataset_spec
    from budgetlab.oracle_client import OracleClient

    try:
        name, params = parse_dataset_spec(dataset)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    # typed as the contract's literals; the SDK refuses any other value (invalid_request), which ends in a UsageError
    split_, protocol_, order_ = cast(Split, split), cast(Protocol, protocol), cast(Order, order)
    with OracleClient(oracle, api_key=api_key) as c:
        s = call(lambda: c.open_session(name, dataset_params=params, split=split_, protocol=protocol_,
                                         order=order_, budget=Budget(per_example=per_example, total=total),
                                         seed=seed))
    print_json({"id": s.id, "token": s.token, "session": s.info.model_dump(mode="json")})


@session_app.command("next")
def session_next(session_id: str, token: TokenOpt, oracle: OracleOpt = ORACLE_URL) -> None:
    """Issue the next example of the stream."""
    print_json(call(lambda: session_of(oracle, session_id, token).next()).model_dump())


@session_app.command("observe")
def session_observe(
    session_id: str,
    example: int,
    attributes: Annotated[list[int], typer.Argument(help="attribute indices")],
    token: TokenOpt,
    oracle: OracleOpt = ORACLE_URL,
) -> None:
    """Pay for attributes of one example; prints the values, the charge and what remains."""
    print_json(call(lambda: session_of(oracle, session_id, token).observe(example, attributes)).model_dump())


@session_app.command("info")
def session_info(session_id: str, token: TokenOpt, oracle: OracleOpt = ORACLE_URL) -> None:
    """Configuration, spend and what remains."""
    print_json(call(lambda: session_of(oracle, session_id, token).get()).model_dump(mode="json"))


@session_app.command("export")
def session_export(session_id: str, out: Path, token: TokenOpt, oracle: OracleOpt = ORACLE_URL,
                   format: str = "ndjson") -> None:
    """Export the session's ledger (NDJSON with its head line, or CSV)."""
    if format not in ("ndjson", "csv"):  # the SDK's ExportFormat: checked here, or pydantic's traceback ends it
        raise UsageError(f"--format {format!r}: a ledger is exported as ndjson or csv")
    call(lambda: session_of(oracle, session_id, token).export_ledger(out, cast("ExportFormat", format)))
    console.print(f"ledger written to {out}")


@session_app.command("close")
def session_close(session_id: str, token: TokenOpt, oracle: OracleOpt = ORACLE_URL) -> None:
    """Close the session; later calls answer 409."""
    print_json(call(lambda: session_of(oracle, session_id, token).close()).model_dump(mode="json"))
