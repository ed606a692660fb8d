"""The first hour's paper cuts (#34 item 5): what a new user types wrong is answered with what they meant, as one
line and exit code 1, before anything is asked of them that the mistake makes moot."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import typer.main

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


def help_texts(command: click.Command, path: str = "budgetlab") -> Iterator[tuple[str, str]]:
    yield path, command.help or ""
    for param in command.params:
        yield f"{path} {param.name}", getattr(param, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from help_texts(sub, f"{path} {name}")


def test_help_texts_print_their_square_brackets() -> None:
    """Help texts are Rich markup: ``[mlflow]`` unescaped is taken for a style and printed as nothing."""
    markup = [(where, text) for where, text in help_texts(typer.main.get_command(app))
              if re.search(r"(?<!\\)\[[a-z#/@]", text)]
    assert markup == []
    result = RUNNER.invoke(app, ["compare", "--help"], env={"COLUMNS": "250"}, terminal_width=250)
    assert "pip install 'budgetlab[mlflow]'" in result.output, result.output


def test_run_local_names_a_dataset_it_lacks_with_the_closest_and_no_http_status() -> None:
    result = RUNNER.invoke(app, ["run", "--algorithm", "aerr", "--dataset", "digit-3v5", "--local"])
    assert result.exit_code == 1, result.output
    line = error_line(result.output)
    assert line.startswith("error: unknown dataset 'digit-3v5'; built in: ") and \
        line.endswith("did you mean 'digits-3v5' or 'mnist-3v5'?"), line
    assert "422" not in line and "invalid_session" not in line


def test_a_misspelt_preset_is_named_before_out_is_asked_for() -> None:
    result = RUNNER.invoke(app, ["compare", "--preset", "kuklianski-mnist"])
    assert result.exit_code == 1, result.output
    assert error_line(result.output).startswith(
        "error: unknown preset 'kuklianski-mnist'; did you mean 'kukliansky-mnist'"), result.output
    assert "--out" not in result.output
    assert "give --out DIR" in RUNNER.invoke(app, ["compare", "--preset", "kukliansky-mnist", "--quick"]).output


def test_datasets_remove_takes_a_user_dataset_out_of_the_data_directory(tmp_path: Path) -> None:
    root = Path(os.environ["BUDGETLAB_DATA_DIR"])  # the test's own (conftest)
    csv = tmp_path / "patients.csv"
    csv.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i * 0.5}\n" for i in range(10)))
    assert RUNNER.invoke(app, ["datasets", "add", str(csv)]).exit_code == 0
    again = RUNNER.invoke(app, ["datasets", "add", str(csv)])
    assert again.exit_code == 1
    assert f"a user dataset named 'patients' already exists in {root / 'datasets' / 'patients'}: " in \
        " ".join(again.output.split()), again.output
    assert "budgetlab datasets remove patients" in " ".join(again.output.split())

    misspelt = RUNNER.invoke(app, ["datasets", "remove", "patiens"])
    assert misspelt.exit_code == 1
    assert error_line(misspelt.output) == f"error: no user dataset 'patiens' in the data directory {root}; did you " \
                                          "mean 'patients'?"
    builtin = RUNNER.invoke(app, ["datasets", "remove", "mnist-3v5"])
    assert builtin.exit_code == 1
    assert error_line(builtin.output) == "error: 'mnist-3v5' is a built-in dataset; only user datasets can be removed"

    removed = RUNNER.invoke(app, ["datasets", "remove", "patients"])
    assert removed.exit_code == 0, removed.output
    assert " ".join(removed.output.split()) == f"removed patients from the data directory {root}"
    assert not (root / "datasets" / "patients").exists()
    assert "patients" not in RUNNER.invoke(app, ["datasets", "list", "--json"]).output
    assert RUNNER.invoke(app, ["datasets", "add", str(csv)]).exit_code == 0, "the name is free again"
