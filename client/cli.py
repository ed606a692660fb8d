"""The ``budgetlab`` command line: serve the services, query attributes, run and audit.

Everything beyond typer and rich (pydantic's models, numpy, the datasets, the learner, the services) is imported
inside the commands that need it, so that any command can say something within a fraction of a second and a
client-only use never loads the server (``benchmarks/first_contact.py`` measures it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape

from client.accounts_cli import accounts_app
from client.bench.times import FULL_TIME, QUICK_TIME
from client.console import App, UsageError, call, console, err
from client.runs_cli import runs_app

if TYPE_CHECKING:
    from budgetlab.contract.base import ParamValue
    from budgetlab.contract.ledger import Receipt

app = App(help="budgetlab: budgeted learning against a charging, auditable feature oracle.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
serve_app = App(help="Start a service.", no_args_is_help=True)
datasets_app = App(help="List, describe, add and remove datasets.", no_args_is_help=True)
session_app = App(help="Single attribute queries on an oracle session.", no_args_is_help=True)
algorithms_app = App(help="List the algorithms (budgetlab's and the installed plugins'); check one against the "
                          "contract.", invoke_without_command=True)
app.add_typer(serve_app, name="serve")
app.add_typer(datasets_app, name="datasets")
app.add_typer(session_app, name="session")
app.add_typer(runs_app, name="runs")
app.add_typer(algorithms_app, name="algorithms")
app.add_typer(accounts_app, name="accounts")

ORACLE_URL = os.environ.get("ORACLE_URL", "http://127.0.0.1:8000")
LEARNER_URL = os.environ.get("LEARNER_URL", "http://127.0.0.1:8001")

OracleOpt = Annotated[str, typer.Option("--oracle", help="oracle base URL", envvar="ORACLE_URL")]
TokenOpt = Annotated[str, typer.Option("--token", help="the session's bearer token", envvar="BUDGETLAB_TOKEN")]
ApiKeyOpt = Annotated[str | None, typer.Option(
    "--api-key", envvar="BUDGETLAB_API_KEY", show_envvar=True,
    help="an account's API key on the oracle: its sessions draw on the account's allowance (default: anonymous "
         "sessions)")]


class _ToStderr(logging.Handler):
    """The ground floor's announcements (a dataset parsed for the first time, a cache that cannot be written) as
    lines on stderr, above any progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "" if record.levelno < logging.WARNING else "[yellow]warning:[/] "
        err.print(prefix + escape(record.getMessage()), soft_wrap=True, highlight=False)


def _announce_datasets() -> None:
    logger = logging.getLogger("budgetlab.datasets")
    if not any(isinstance(h, _ToStderr) for h in logger.handlers):
        logger.addHandler(_ToStderr())
        logger.setLevel(logging.INFO)
        logger.propagate = False


def _version(value: bool) -> None:
    if value:
        from client.comparison.provenance import version_line

        console.print(version_line(), soft_wrap=True, highlight=False)
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                   help="print the version (and git commit) and exit")] = False,
             ) -> None:
    """budgetlab: budgeted learning against a charging, auditable feature oracle."""
    _announce_datasets()




def parse_pairs(pairs: list[str] | None, what: str) -> dict[str, ParamValue]:
    from budgetlab.params import split_pair
    from client.comparison.config import parse_value

    out: dict[str, ParamValue] = {}
    for pair in pairs or []:
        try:
            key, value = split_pair(pair, what)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        out[key] = parse_value(value)
    return out


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


# --- serve ---------------------------------------------------------------------------------------


PortOpt = Annotated[int, typer.Option(help="port; 0 for any free port (the first line on stderr says which)")]


def _listen(host: str, port: int):
    from client.services import listen

    try:
        return listen(host, port)
    except OSError as exc:
        raise UsageError(str(exc)) from None


@serve_app.command("oracle")
def serve_oracle(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: PortOpt = 8000,
    workers: Annotated[int, typer.Option(help="worker processes on one database")] = 1,
    database_url: Annotated[str | None, typer.Option(envvar="DATABASE_URL",
                                                     help="SQLAlchemy URL; default SQLite in the working directory")]
    = None,
) -> None:
    """Start the feature oracle (uvicorn). Migrations are applied once before the workers start."""
    from client.services import announcement, serve
    from server.config import Settings, default_database_url
    from server.db import upgrade

    sock = _listen(host, port)
    url = database_url or default_database_url()
    os.environ["DATABASE_URL"] = url
    try:
        upgrade(url)
    except Exception as exc:  # a bad URL or an unreachable database: say so instead of a traceback
        sock.close()
        raise UsageError(f"cannot prepare the ledger database at {url}: {exc}") from None
    os.environ["BUDGETLAB_SKIP_MIGRATIONS"] = "1"
    from budgetlab.datasets.user import data_dir

    anonymous = ("anonymous sessions: on (BUDGETLAB_ANONYMOUS=0 for accounts only)" if Settings().anonymous
                 else "anonymous sessions: off (accounts only)")
    print(announcement("oracle", sock, f", ledger: {url}, user datasets: {data_dir()}, {anonymous}"), file=sys.stderr,
          flush=True)
    # A stream message far past the body limit is cut off by uvicorn before it is read (the app answers 413 to
    # one a little past it); the margin is for the message's envelope around a body.
    serve("client.dashboards:oracle_app_from_env", sock, workers=workers,
          ws_max_size=Settings().max_body_bytes + (64 << 10))


@serve_app.command("learner")
def serve_learner(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: PortOpt = 8001,
    database_url: Annotated[str | None, typer.Option(
        envvar="LEARNER_DATABASE_URL", help="SQLAlchemy URL of the runs; default SQLite in the working directory. Not "
        "DATABASE_URL: started from one shell, the learner would share the oracle's SQLite file and its write lock")]
    = None,
) -> None:
    """Start the learner service (runs algorithms against an oracle over HTTP)."""
    from client.services import announcement, serve

    if database_url:
        os.environ["LEARNER_DATABASE_URL"] = database_url
    sock = _listen(host, port)
    print(announcement("learner", sock, f", runs: {database_url or 'budgetlab-runs.db'}"), file=sys.stderr,
          flush=True)
    serve("client.dashboards:learner_app_from_env", sock)


# --- datasets ------------------------------------------------------------------------------------


@datasets_app.command("list")
def datasets_list(
    oracle: Annotated[str | None, typer.Option("--oracle", help="ask a running oracle instead of this machine")]
    = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List the datasets (built-in, installed and user-added)."""
    from rich.padding import Padding
    from rich.text import Text

    if oracle:
        from budgetlab.oracle_client import OracleClient

        with OracleClient(oracle) as c:
            listing = c.datasets()
    else:
        from budgetlab.datasets import list_datasets
        from budgetlab.datasets.user import data_dir

        listing = list_datasets()
    if as_json:
        print_json(listing.model_dump())
        return
    # A line per dataset and its description indented below: readable at 80 columns, where a table squeezes the
    # descriptions into a column a few words wide.
    for info in listing.datasets:
        console.print(Text.assemble((info.name, "bold"), f"  {info.task}, {info.n_train:,} train / "
                                                        f"{info.n_test:,} test examples, d = {info.n_attributes:,}"))
        console.print(Padding(Text(info.description), (0, 0, 0, 4)))
    if listing.families:
        console.print("families: " + ", ".join(listing.families))
    if not oracle:
        console.print(Text(f"user datasets are read from {data_dir()} (BUDGETLAB_DATA_DIR sets it)",
                           overflow="fold"))


@datasets_app.command("show")
def datasets_show(spec: Annotated[str, typer.Argument(help="name or name:key=value,...")],
                  seed: int = 0) -> None:
    """Describe one dataset (never its values)."""
    from budgetlab.datasets import DatasetError, describe, parse_dataset_spec

    try:
        name, params = parse_dataset_spec(spec)
        print_json(describe(name, params, seed).model_dump())
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


@datasets_app.command("add")
def datasets_add(
    file: Annotated[Path, typer.Argument(help="CSV, NPY or NPZ file", exists=True, dir_okay=False)],
    target: Annotated[str | None, typer.Option(help="target column (CSV: name; NPY: index); default last")] = None,
    name: Annotated[str | None, typer.Option(help="dataset name; default the file's stem")] = None,
    test_fraction: Annotated[float, typer.Option(min=0.01, max=0.99, help="share of the rows held out for testing")]
    = 0.2,
    split_seed: Annotated[int | None, typer.Option(min=0, max=2**32 - 1, help="fix the train/test split for every "
                                                   "session; default: drawn from each session's seed")] = None,
    cost: Annotated[list[str] | None, typer.Option(
        "--cost", help="COLUMN=PRICE: the price of one attribute (a CSV column name or an attribute index 0..d-1); "
                       "repeat it; the others cost 1")] = None,
    costs: Annotated[Path | None, typer.Option(
        "--costs", exists=True, dir_okay=False, help="a file of prices: d numbers (.csv, .txt or .npy), or a CSV "
                                                     "with the header 'column,cost'")] = None,
    oracle: Annotated[str | None, typer.Option("--oracle", help="upload to this running oracle instead (into the data "
                                                                "directory it reads); needs its admin token")] = None,
    admin_token: Annotated[str | None, typer.Option(envvar="BUDGETLAB_ADMIN_TOKEN",
                                                    help="the oracle's admin token (with --oracle)")] = None,
) -> None:
    """Add a dataset to the data directory (BUDGETLAB_DATA_DIR, else the per-user one), or with --oracle URL to
    the data directory of that running oracle; the oracle serves it memory-mapped."""
    from budgetlab.datasets import DatasetError, add_dataset
    from budgetlab.datasets.user import data_dir, read_costs_file, split_statement
    from budgetlab.errors import OracleError, OracleUnavailable

    if cost and costs is not None:
        raise UsageError("give the prices with --cost COLUMN=PRICE or with --costs FILE, not both")
    parsed: str | int | None = target
    if target is not None and target.lstrip("-").isdigit() and file.suffix.lower() != ".csv":
        parsed = int(target)
    prices: list[float] | dict[str, float] | None = None
    try:
        if costs is not None:
            prices = read_costs_file(costs)
        elif cost:
            prices = {}
            for pair in cost:
                column, sep, price = pair.rpartition("=")
                if not sep or not column.strip():
                    raise UsageError(f"--cost {pair!r} is not COLUMN=PRICE")
                try:
                    prices[column.strip()] = float(price)
                except ValueError:
                    raise UsageError(f"--cost {pair!r}: {price!r} is not a number") from None
        if oracle:
            from budgetlab.oracle_client import OracleClient

            if not admin_token:
                raise UsageError("uploading to an oracle needs its admin token: --admin-token or BUDGETLAB_ADMIN_TOKEN")
            with OracleClient(oracle, admin_token=admin_token) as client:
                info = client.upload_dataset(file, name=name, target=parsed, test_fraction=test_fraction,
                                             split_seed=split_seed, costs=prices)
            where = f"the oracle {oracle}"
        else:
            info = add_dataset(file, parsed, name, test_fraction=test_fraction, split_seed=split_seed, costs=prices)
            where = f"the data directory {data_dir()}"
    except (DatasetError, OracleError, OracleUnavailable, OSError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    console.print(f"added [bold]{escape(info.name)}[/] to {escape(where)}: {info.task}, d={info.n_attributes}, "
                  f"{info.n_train:,} train / {info.n_test:,} test examples", soft_wrap=True)
    console.print(f"split: {split_statement(test_fraction, split_seed)}"
                  + ("" if split_seed is not None else " (--split-seed fixes one)"), soft_wrap=True)
    console.print(f"costs: {_costs_line(info.costs)}", soft_wrap=True)


@datasets_app.command("remove")
def datasets_remove(
    name: Annotated[str, typer.Argument(help="a user dataset's name (see 'budgetlab datasets list')")],
) -> None:
    """Remove a user dataset from the data directory (BUDGETLAB_DATA_DIR, else the per-user one); built-in datasets
    stay. An oracle reading that directory then refuses its sessions on it (409 dataset_unavailable)."""
    from budgetlab.datasets import DatasetError, remove_dataset
    from budgetlab.datasets.user import data_dir

    root = data_dir()
    try:
        remove_dataset(name, root)
    except (DatasetError, OSError) as exc:
        raise UsageError(str(exc)) from None
    console.print(f"removed [bold]{escape(name)}[/] from the data directory {escape(str(root))}", soft_wrap=True)


def _costs_line(costs: list[float] | None) -> str:
    if costs is None:
        return "1 per attribute (none declared; --cost COLUMN=PRICE or --costs FILE sets them)"
    if len(costs) <= 12:
        return ", ".join(f"{c:g}" for c in costs) + " (attributes 0.." + f"{len(costs) - 1}, charged by the oracle)"
    return (f"from {min(costs):g} to {max(costs):g}, {sum(costs):g} for all {len(costs)} attributes "
            "(charged by the oracle)")


# --- single queries ------------------------------------------------------------------------------


def _session(oracle: str, session_id: str, token: str):
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
    print_json(call(lambda: _session(oracle, session_id, token).next()).model_dump())


@session_app.command("observe")
def session_observe(
    session_id: str,
    example: int,
    attributes: Annotated[list[int], typer.Argument(help="attribute indices")],
    token: TokenOpt,
    oracle: OracleOpt = ORACLE_URL,
) -> None:
    """Pay for attributes of one example; prints the values, the charge and what remains."""
    print_json(call(lambda: _session(oracle, session_id, token).observe(example, attributes)).model_dump())


@session_app.command("info")
def session_info(session_id: str, token: TokenOpt, oracle: OracleOpt = ORACLE_URL) -> None:
    """Configuration, spend and what remains."""
    print_json(call(lambda: _session(oracle, session_id, token).get()).model_dump(mode="json"))


@session_app.command("export")
def session_export(session_id: str, out: Path, token: TokenOpt, oracle: OracleOpt = ORACLE_URL,
                   format: str = "ndjson") -> None:
    """Export the session's ledger (NDJSON with its head line, or CSV)."""
    call(lambda: _session(oracle, session_id, token).export_ledger(out, format))
    console.print(f"ledger written to {out}")


@session_app.command("close")
def session_close(session_id: str, token: TokenOpt, oracle: OracleOpt = ORACLE_URL) -> None:
    """Close the session; later calls answer 409."""
    print_json(call(lambda: _session(oracle, session_id, token).close()).model_dump(mode="json"))


# --- audit ---------------------------------------------------------------------------------------


@app.command("audit")
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
        report = call(lambda: _session(oracle, source, token).audit())
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


# --- algorithms and runs -------------------------------------------------------------------------


@algorithms_app.callback()
def list_algorithms(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the algorithms with their paper, protocol and parameters: budgetlab's and the installed plugins' (entry
    points of 'budgetlab.algorithms'), a plugin's with its package and version."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.table import Table

    from learner.algorithms import algorithms, describe, rescan

    rescan()
    infos = [describe(name) for name in algorithms()]
    if as_json:
        print_json([i.model_dump() for i in infos])
        return
    # The paper by its authors and year, the parameters by name (--json has titles and defaults): the table then
    # stays readable at 80 columns.
    table = Table("id", "paper, where", "protocol", "parameters")
    table.columns[0].no_wrap = True
    table.columns[3].min_width = max(len(p.name) + 1 for i in infos for p in i.params)  # never cut (its comma too)
    # The paper takes what the others leave (rich would crop the table's edge rather than squeeze it); a word
    # longer than that (sklearn.linear_model...) breaks instead of being cut.
    others = max(len(i.id) for i in infos) + len("protocol") + table.columns[3].min_width + 13  # 13: borders
    table.columns[1].max_width, table.columns[1].overflow = max(16, console.width - others), "fold"
    for i in infos:
        cited = re.search(r"\b(?:19|20)\d\d\b", i.paper)
        paper = ("full information" if i.paper.startswith("full-information")
                 else i.paper[: cited.end()] if cited else i.paper)
        plugin = f" [{i.package} {i.version or ''}]".rstrip() if i.package != "budgetlab" else ""
        table.add_row(i.id, f"{paper}, {i.algorithm}{escape(plugin)}", i.protocol, ", ".join(p.name for p in i.params))
    console.print(table)


@algorithms_app.command("check")
def check_algorithm(
    target: Annotated[str, typer.Argument(help="an algorithm id (budgetlab's or an installed plugin's) or "
                                               "package.module:Class")],
) -> None:
    """Run the algorithm contract on TARGET: it declares its parameters, sees only paid-for values, respects the
    budget it is given and gives the same weights for the same seed. Exits 1 if a point fails."""
    from learner.algorithm_contract import DATASET, DATASET_PARAMS, EXAMPLES, check
    from learner.algorithms import ParamError

    params = ", ".join(f"{k}={v}" for k, v in DATASET_PARAMS.items())
    err.print(f"checking {target} on {DATASET} ({params}), {EXAMPLES} examples, twice with one seed ...")
    try:
        verdicts = check(target)
    except ParamError as exc:
        raise UsageError(str(exc)) from None
    for verdict in verdicts:
        mark = "[green]pass[/]" if verdict.passed else "[red]FAIL[/]"
        console.print(f"{mark} {escape(verdict.point)}: {escape(verdict.reason)}", soft_wrap=True)
    failed = [v.point for v in verdicts if not v.passed]
    if failed:
        raise UsageError(f"{target} breaks the contract: {'; '.join(failed)}")
    console.print(f"{escape(target)} keeps the contract ({len(verdicts)} points).")


@app.command("run")
def run(
    algorithm: Annotated[str, typer.Option(help="algorithm id (see 'budgetlab algorithms')")],
    dataset: Annotated[str, typer.Option(help="dataset name or name:key=value,...")],
    dataset_param: Annotated[list[str] | None, typer.Option(help="dataset parameter key=value")] = None,
    per_example: Annotated[int | None, typer.Option(help="local budget: attributes per example")] = None,
    total: Annotated[float | None, typer.Option(help="global budget: total cost")] = None,
    param: Annotated[list[str] | None, typer.Option(help="algorithm parameter key=value")] = None,
    defaults: Annotated[str, typer.Option(
        "--defaults", help="what fills the parameters not given: 'practical' (adapt to the data) or 'theory' (the "
                           "theorems' constants)")] = "practical",
    seed: int = 0,
    max_examples: Annotated[int | None, typer.Option(min=1)] = None,
    eval_every: Annotated[int | None, typer.Option(min=1)] = None,
    test_budget: Annotated[int | None, typer.Option(min=1, help="also score with K attributes per test example")]
    = None,
    local: Annotated[bool, typer.Option("--local", help="run in-process on a LocalOracle")] = False,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL to run against over HTTP")] = None,
    tune: Annotated[list[str] | None, typer.Option(
        "--tune", help="first tune [ALGORITHM:]PARAM=V1,V2,... on held-out training examples (repeatable; the grid "
                       "is every combination); the tuning's sessions are paid for and reported")] = None,
    tune_folds: Annotated[int, typer.Option(min=1, max=20, help="k-fold cross-validation for --tune (default: one "
                                                                 "validation part, the last 20%)")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    api_key: ApiKeyOpt = None,
) -> None:
    """Run one algorithm on a dataset under a budget, in-process (--local) or against an oracle (--oracle URL).

    Progress goes to stderr (a bar on a terminal, lines elsewhere), so that with --json stdout holds only the result.
    """
    if local == bool(oracle):
        raise UsageError("choose exactly one of --local and --oracle URL")
    if local and api_key:
        raise UsageError("an API key is an account of an oracle: give it with --oracle URL (--local has no oracle)")
    # Said before anything slow is imported: the imports below and the dataset take a second or more.
    err.print(f"{escape(algorithm)} on {escape(dataset)}: starting "
              + ("in-process" if local else f"against the oracle {escape(str(oracle))}") + " ...",
              soft_wrap=True, highlight=False)
    from pydantic import ValidationError

    from budgetlab.contract.budgets import Budget
    from budgetlab.contract.runs import RunCreate
    from budgetlab.datasets import DatasetError, parse_dataset_spec
    from client.running import execute_run

    try:
        name, params = parse_dataset_spec(dataset)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    params.update(parse_pairs(dataset_param, "--dataset-param"))
    try:
        request = RunCreate(oracle_url=oracle, dataset=name, dataset_params=params, algorithm=algorithm,
                            params=parse_pairs(param, "--param"), defaults=defaults,
                            budget=Budget(per_example=per_example, total=total),
                            seed=seed, max_examples=max_examples, eval_every=eval_every, test_budget=test_budget,
                            api_key=api_key)
    except ValidationError as exc:
        raise UsageError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    result = execute_run(request, console=err, tune=_run_grid(algorithm, tune), tune_folds=tune_folds)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    if result.tuning is not None:
        t = result.tuning
        chosen = ", ".join(f"{k}={v}" for k, v in t.chosen.items()) or f"nothing ({t.message})"
        console.print(f"tuned over {len(t.candidates)} grid point(s) x {len(t.folds)} fold(s): chose {chosen}; the "
                      f"tuning's {t.sessions} sessions paid {t.attributes} attributes (cost {t.cost:g}), "
                      f"{t.attributes + result.attributes} with the run's", soft_wrap=True)
    final = result.final
    console.print(f"[bold]{result.algorithm}[/] on {result.dataset}: {result.status} after {result.examples} "
                  f"examples, {result.attributes} attributes paid" + (f" ({result.message})" if result.message else ""))
    from client.comparison.tasks import dataset_task, scores_line

    task = dataset_task(name, params, oracle) if final is not None or result.test_budget is not None else None
    if final is not None:
        console.print(scores_line(task, final.test_mse, final.normalized_mse, final.zero_one))
    if result.test_budget is not None:
        score = result.test_budget
        console.print(f"with {score.per_example} attributes per test example: "
                      + scores_line(task, score.mse, score.normalized_mse, score.zero_one))
    if result.diagnosis:
        console.print(f"[yellow]{escape(result.diagnosis)}[/]", soft_wrap=True)
    if result.session:
        console.print(f"oracle session: {result.session}")


def _run_grid(algorithm: str, options: list[str] | None) -> dict[str, list[ParamValue]] | None:
    """``--tune`` of ``budgetlab run`` as a grid: PARAM=V1,... or ALGORITHM:PARAM=V1,... (ALGORITHM the run's)."""
    from client.comparison.tune import TuneError, parse_tune_option

    grid: dict[str, list[ParamValue]] = {}
    for option in options or []:
        text = option if ":" in option.partition("=")[0] else f"{algorithm}:{option}"
        try:
            named, name, values = parse_tune_option(text)
        except TuneError as exc:
            raise UsageError(str(exc).replace("ALGORITHM:PARAM", "[ALGORITHM:]PARAM")) from None
        if named != algorithm:
            raise UsageError(f"--tune {option!r} names {named!r}, but this run is {algorithm!r}")
        if not values:
            raise UsageError(f"--tune {option!r} lists no value to try")
        grid[name] = values
    return grid or None


# --- comparisons and the sandbox -----------------------------------------------------------------


BENCH_HELP = ("Run every algorithm that applies on the standard grid (datasets x local budgets x seeds), resuming "
              "from the results store; write the ranks per budget (Friedman test, critical-difference diagram) and "
              f"each dataset's table and plot. Full grid: {FULL_TIME}; --quick: {QUICK_TIME}. Exit code: 0 every "
              "run completed; 1 nothing ran; 3 some runs did not complete (they run again next time); 130 "
              "interrupted (the finished runs are kept).")


@app.command("compare")
def compare(
    config: Annotated[Path | None, typer.Argument(help="comparison config (TOML)", exists=True, dir_okay=False)]
    = None,
    out: Annotated[Path | None, typer.Option("--out", help="directory for report.md, results.json and plots")] = None,
    preset: Annotated[str | None, typer.Option("--preset", help="a paper's experiment (see --list)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="a preset's small version (under a minute)")] = False,
    list_presets: Annotated[bool, typer.Option("--list", help="list the presets and their run times")] = False,
    local: Annotated[bool, typer.Option("--local", help="run on LocalOracles in worker processes (no ledger)")]
    = False,
    learner: Annotated[str | None, typer.Option("--learner", help="learner service URL")] = None,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL the runs use")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, help="runs at the same time (default: as many as the workers execute at once)")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="worker processes of the Dask LocalCluster started here, for --local or for the "
                                 "learner started here (default: the machine's cores)")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", envvar="BUDGETLAB_SCHEDULER", show_envvar=True,
        help="a running Dask scheduler (tcp://HOST:8786) whose workers execute the runs, instead of a "
             "LocalCluster")] = None,
    tune: Annotated[list[str] | None, typer.Option(
        "--tune", help="tune ALGORITHM:PARAM=V1,V2,... on held-out training examples (repeatable; ALGORITHM is a "
                       "label or an id); the tuning's sessions are paid for and reported")] = None,
    tune_folds: Annotated[int | None, typer.Option(min=1, max=20, help="k-fold cross-validation for --tune "
                                                                        "(default: one validation part)")] = None,
    learner_token: Annotated[str | None, typer.Option(
        "--learner-token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
        help="with --learner: start the runs as this caller, so that 'budgetlab runs' lists them (default: a new "
             "caller)")] = None,
    # "\\[": help texts are Rich markup, which takes [mlflow] for a style and prints nothing of it
    mlflow: Annotated[bool, typer.Option(
        "--mlflow", help="log the report to MLflow (tracking server: MLFLOW_TRACKING_URI; needs "
                         "pip install 'budgetlab\\[mlflow]')")] = False,
    mlflow_experiment: Annotated[str | None, typer.Option(
        "--mlflow-experiment", help="MLflow experiment name (default: the comparison's title; implies --mlflow)")]
    = None,
    api_key: ApiKeyOpt = None,
) -> None:
    """Compare algorithms x seeds on one dataset and budget; write a report with plots (see 'compare --list').

    The config is checked before anything starts. Exit code: 0 every run completed; 1 nothing ran (a problem with
    the config or the services); 3 the report is written but some runs did not complete; 4 the report is written but
    logging it to MLflow failed; 130 interrupted (Ctrl-C or SIGTERM: the runs were cancelled and a partial report
    written).
    """
    from client.comparison.compare import run_compare

    code = run_compare(config=config, out=out, preset=preset, quick=quick, list_presets=list_presets, local=local,
                       learner=learner, oracle=oracle, parallel=parallel, console=console, err=err,
                       tune=tune, tune_folds=tune_folds, learner_token=learner_token,
                       mlflow=mlflow or mlflow_experiment is not None, mlflow_experiment=mlflow_experiment,
                       workers=workers, scheduler=scheduler, api_key=api_key)
    raise typer.Exit(code)


@app.command("bench", help=BENCH_HELP)
def bench(
    out: Annotated[Path, typer.Option("--out", help="directory of the report and of the results store (runs.sqlite), "
                                                    "which a second invocation resumes from")] = Path("bench-report"),
    quick: Annotated[bool, typer.Option("--quick", help="the small grid (81 runs, seconds)")] = False,
    list_grids: Annotated[bool, typer.Option("--list", help="list both grids, their runs and measured times")]
    = False,
    local: Annotated[bool, typer.Option("--local", help="run on LocalOracles in Dask worker processes (the default "
                                                        "without --oracle/--learner)")] = False,
    learner: Annotated[str | None, typer.Option("--learner", help="learner service URL (with --oracle)")] = None,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL the runs use (with --learner)")] = None,
    learner_token: Annotated[str | None, typer.Option(
        "--learner-token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
        help="with --learner: start the runs as this caller (default: a new caller)")] = None,
    algorithm: Annotated[list[str] | None, typer.Option(
        "--algorithm", help="an installed plugin's algorithm id to add to the grid (repeatable)")] = None,
    parallel: Annotated[int | None, typer.Option(
        min=1, help="runs at the same time (default: as many as the workers execute at once)")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="worker processes of the Dask LocalCluster started here (default: the machine's "
                                 "cores)")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", envvar="BUDGETLAB_SCHEDULER", show_envvar=True,
        help="a running Dask scheduler (tcp://HOST:8786) whose workers execute the runs")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="the results store (default: OUT/runs.sqlite): a report written elsewhere from the same runs")]
    = None,
) -> None:
    from client.bench.grid import FULL, QUICK
    from client.bench.run import Where, run_bench, show_grids

    if list_grids:
        raise typer.Exit(show_grids(console, err))
    if local and (learner or oracle):
        raise UsageError("--local runs in-process: drop --learner/--oracle")
    where = Where(oracle=oracle, learner=learner, learner_token=learner_token, workers=workers, scheduler=scheduler,
                  parallel=parallel)
    raise typer.Exit(run_bench(grid=QUICK if quick else FULL, out=out, where=where, console=console, err=err,
                               extra=algorithm, store=store))


@app.command("claims")
def claims(
    out: Annotated[Path, typer.Argument(help="a comparison's output directory (its results.json)", exists=True,
                                        file_okay=False)],
    preset: Annotated[str | None, typer.Option(
        "--preset", help="decide the claims of this preset as they are now, instead of those written in results.json")]
    = None,
    markdown: Annotated[Path | None, typer.Option(
        "--markdown", help="also write the claims table, as a report opens with it, into this file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the claims as JSON (results.json's form)")] = False,
) -> None:
    """Decide the claims of a comparison written earlier again, from its runs in results.json, under the current
    rules (paired tests over seeds, Holm's correction): nothing is run."""
    from client.comparison.claims import claims_markdown, claims_table
    from client.comparison.presets import UnknownPreset, load_preset
    from client.comparison.recorded import read_recorded

    try:
        specs = load_preset(preset).claims if preset else None
    except UnknownPreset as exc:
        raise UsageError(str(exc)) from None
    recorded = read_recorded(out, specs)
    decided = recorded.claims()
    if markdown is not None:
        markdown.write_text("\n".join(claims_markdown(recorded.config, decided)))
    if as_json:
        print(json.dumps([c.json() for c in decided], indent=1))
    else:
        console.print(claims_table(decided))


@app.command("mlflow-log")
def mlflow_log(
    out: Annotated[Path, typer.Argument(help="a comparison's output directory (its results.json)", exists=True,
                                        file_okay=False)],
    experiment: Annotated[str | None, typer.Option(
        "--experiment", help="MLflow experiment name (default: the comparison's title)")] = None,
) -> None:
    """Log a comparison already written (compare --out DIR) to MLflow, as compare --mlflow does."""
    from client.comparison.tracking import TrackingError, log_comparison

    try:
        logged = log_comparison(out, experiment)
    except TrackingError as exc:
        raise UsageError(str(exc)) from None
    console.print(escape(str(logged)), soft_wrap=True, highlight=False)


@app.command("sandbox")
def sandbox(
    demo_only: Annotated[bool, typer.Option("--demo-only", help="exit after the demo comparison")] = False,
    oracle_port: Annotated[int, typer.Option(help="oracle port (0: any free port)")] = 8000,
    learner_port: Annotated[int, typer.Option(help="learner port (0: any free port)")] = 8001,
    out: Annotated[Path, typer.Option("--out", help="directory for the ledger, logs and the demo report")]
    = Path("sandbox-report"),
    examples: Annotated[int | None, typer.Option(min=1, help="examples per demo run (default 1000)")] = None,
    oracle: Annotated[str | None, typer.Option(
        "--oracle", help="with --learner: run only the demo, against these running services")] = None,
    learner: Annotated[str | None, typer.Option("--learner", help="learner service URL (with --oracle)")] = None,
    learner_token: Annotated[str | None, typer.Option(
        "--learner-token", envvar="BUDGETLAB_LEARNER_TOKEN", show_envvar=True,
        help="with --learner: start the demo's runs as this caller (default: a new caller, whose token is printed)")]
    = None,
) -> None:
    """Start oracle + learner (SQLite ledger), run the demo comparison, print the signed-in pages, keep serving
    until Ctrl-C. With --oracle and --learner, run the same demo against those services and exit."""
    if bool(oracle) != bool(learner):
        raise UsageError("give both --oracle and --learner, or neither (then both services are started here)")
    # Said before the comparison's modules (plots, reports) are imported, which takes seconds on a cold disk.
    what = f"the demo comparison through {oracle} and {learner}" if oracle else \
        "an oracle and a learner, then the demo comparison"
    console.print(f"sandbox: {escape(what)} (report in {escape(str(out))}/)", soft_wrap=True, highlight=False)
    from client.sandbox import run_sandbox

    run_sandbox(demo_only=demo_only, oracle_port=oracle_port, learner_port=learner_port, out=out, examples=examples,
                console=console, oracle_url=oracle, learner_url=learner, learner_token=learner_token)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
