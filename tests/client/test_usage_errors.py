"""A user error is an exception (``client.console.UsageError``) wherever it is found, and the command's one line
on stderr with its exit code at one place: every command group of ``budgetlab`` is an ``App``."""

from __future__ import annotations

import pytest
from rich.console import Console
from typer.testing import CliRunner

from budgetlab.contract.runs import RunCreate
from client.cli import app
from client.console import App, UsageError
from client.running import execute_run


def test_a_user_error_below_the_command_is_an_exception() -> None:
    with pytest.raises(UsageError, match="unknown algorithm 'no-such'") as raised:
        execute_run(RunCreate(dataset="diabetes", algorithm="no-such"), console=Console(quiet=True))
    assert raised.value.code == 1


def test_the_command_ends_it_as_one_line_and_its_exit_code() -> None:
    result = CliRunner().invoke(app, ["run", "--algorithm", "no-such", "--dataset", "diabetes", "--local"])
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "unknown algorithm 'no-such'" in line
    assert "Traceback" not in result.output


def test_every_command_group_turns_usage_errors_into_the_line() -> None:
    groups = [app, *(g.typer_instance for g in app.registered_groups)]
    assert len(groups) >= 5 and all(isinstance(g, App) for g in groups)
    for group in groups:
        for command in group.registered_commands:
            assert command.callback is not None and hasattr(command.callback, "__wrapped__"), command.name
