"""The first hour's paper cuts (#34 item 5): what a new user types wrong is answered with what they meant, as one
line and exit code 1, before anything is asked of them that the mistake makes moot."""

from __future__ import annotations

from client.cli import app
from tests.helpers import RUNNER


def error_line(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("error:")]
    return line


def test_an_unknown_algorithm_is_answered_with_the_closest_ids() -> None:
    result = RUNNER.invoke(app, ["run", "--algorithm", "ddaer", "--dataset", "diabetes", "--local"])
    assert result.exit_code == 1, result.output
    assert error_line(result.output).startswith("error: unknown algorithm 'ddaer'; did you mean 'ddaerr' or "), \
        result.output
