"""``budgetlab sandbox``: both services started here and the demo comparison run through them (``client.sandbox``),
or the demo alone through running services."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from client.console import UsageError, console


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
