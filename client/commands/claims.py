"""``budgetlab claims``: a written comparison's claims decided again from its results.json, nothing run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from client.console import UsageError, console


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
