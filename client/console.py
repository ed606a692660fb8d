"""The command's two terminals, its JSON output, and how a user error ends a command: one line on stderr, then the
exit code.

Code under a command raises ``UsageError``; the command groups (``App``) turn it into that line, in one place.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

Command = TypeVar("Command", bound=Callable[..., Any])

console = Console()
err = Console(stderr=True)


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout, alone: a script reads it whole (the progress goes to ``err``)."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


class UsageError(Exception):
    """A user error that ends the command: ``message`` is the line it ends with, ``code`` its exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def call(fn: Callable[[], Any]) -> Any:
    """``fn()``, a request to a service: its refusal (``error: detail``) or its absence as the one line a command
    ends with."""
    from budgetlab.errors import Refused, Unavailable  # a command's start imports no SDK it does not use

    try:
        return fn()
    except Refused as exc:
        raise UsageError(f"{exc.error}: {exc.detail}") from None
    except Unavailable as exc:
        raise UsageError(str(exc)) from None


def _ending(command: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UsageError as exc:
            # One line, never wrapped whatever its length (a script greps it), then the exit code.
            err.print(f"[bold red]error:[/] {escape(exc.message)}", soft_wrap=True)
            raise typer.Exit(exc.code) from None

    return run


class App(typer.Typer):
    """A command group whose commands end a ``UsageError`` as one line on stderr and its exit code."""

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Command], Command]:
        register = super().command(name, **kwargs)

        def decorator(function: Command) -> Command:
            register(_ending(function))
            return function

        return decorator
