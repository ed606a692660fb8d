"""``budgetlab algorithms``: the algorithms there are (budgetlab's and the installed plugins'), and ``check``, the
algorithm contract run on one."""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.markup import escape

from client.console import App, UsageError, console, err, print_json

algorithms_app = App(help="List the algorithms (budgetlab's and the installed plugins'); check one against the "
                          "contract.", invoke_without_command=True)


@algorithms_app.callback()
def list_algorithms(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the algorithms with their paper, protocol and parameters: budgetlab's and the installed plugins' (entry
    points of 'budgetlab.algorithms'), a plugin's with its package and version. 'batch, ahead': it chooses the
    attributes of the next examples before it sees them, and a run of it pays for many examples a request."""
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
    protocols = [f"{i.protocol}, ahead" if i.chooses_ahead else i.protocol for i in infos]
    # "batch, ahead" wraps after its comma: a row already takes two lines for its paper.
    table.columns[2].max_width = len("protocol")
    others = max(len(i.id) for i in infos) + len("protocol") + table.columns[3].min_width + 13  # 13: borders
    table.columns[1].max_width, table.columns[1].overflow = max(16, console.width - others), "fold"
    for i, protocol in zip(infos, protocols, strict=True):
        cited = re.search(r"\b(?:19|20)\d\d\b", i.paper)
        paper = ("full information" if i.paper.startswith("full-information")
                 else i.paper[: cited.end()] if cited else i.paper)
        plugin = f" [{i.package} {i.version or ''}]".rstrip() if i.package != "budgetlab" else ""
        table.add_row(i.id, f"{paper}, {i.algorithm}{escape(plugin)}", protocol, ", ".join(p.name for p in i.params))
    console.print(table)


@algorithms_app.command("check")
def check_algorithm(
    target: Annotated[str, typer.Argument(help="an algorithm id (budgetlab's or an installed plugin's) or "
                                               "package.module:Class")],
) -> None:
    """Run the algorithm contract on TARGET: it declares its parameters, sees only paid-for values, respects the
    budget it is given, gives the same weights for the same seed and, if it chooses ahead (select_ahead), chooses as
    one example at a time would. Exits 1 if a point fails."""
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
