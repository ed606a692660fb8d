"""``budgetlab datasets``: list, describe, add and remove datasets, on this machine or on a running oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from client.console import App, UsageError, console, print_json

datasets_app = App(help="List, describe, add and remove datasets.", no_args_is_help=True)


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
    from budgetlab.datasets.user import data_dir, split_statement
    from budgetlab.errors import OracleError, OracleUnavailable

    if cost and costs is not None:
        raise UsageError("give the prices with --cost COLUMN=PRICE or with --costs FILE, not both")
    parsed: str | int | None = target
    if target is not None and target.lstrip("-").isdigit() and file.suffix.lower() != ".csv":
        parsed = int(target)
    try:
        prices = _prices(cost, costs)
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


def _prices(cost: list[str] | None, costs: Path | None) -> list[float] | dict[str, float] | None:
    """The attributes' prices: read from ``--costs FILE``, or ``--cost COLUMN=PRICE``'s; None when neither is given
    (every attribute costs 1)."""
    from budgetlab.datasets.user import read_costs_file

    if costs is not None:
        return read_costs_file(costs)
    if not cost:
        return None
    prices: dict[str, float] = {}
    for pair in cost:
        column, sep, price = pair.rpartition("=")
        if not sep or not column.strip():
            raise UsageError(f"--cost {pair!r} is not COLUMN=PRICE")
        try:
            prices[column.strip()] = float(price)
        except ValueError:
            raise UsageError(f"--cost {pair!r}: {price!r} is not a number") from None
    return prices


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
