"""The command's two terminals and how a user error ends a command: one line on stderr, then the exit code."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
err = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """The one line a user error ends with (never wrapped, whatever its length), then exit with ``code``."""
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)
