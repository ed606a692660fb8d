"""``budgetlab compare`` refuses a config with a mistake before anything starts, naming the file and the line."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from client.cli import app
from client.comparison.config import CompareConfig
from client.comparison.config_errors import key_lines
from client.comparison.preflight import Algorithms, LocalCatalog, check_config
from tests.helpers import RUNNER

TYPOS = """title = "typos"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }

[[algorithms]]
id = "aerr2"

[[algorithms]]
id = "aer"
params = { lamm = 1.0 }

[[algorithms]]
id = "ridge"

[[designs]]
name = "misspelt dataset"
dataset = { name = "digit-3v5" }

[[designs]]
name = "impossible dataset"
dataset = { name = "sparse-gaussian", params = { d = 5, s_plus = 9 } }

[[designs]]
name = "a parameter that is not a number"
algorithms = [{ id = "aelr", params = { eta = "fast" } }]

[[designs]]
name = "the top level's dataset and algorithms"
"""


def compare(tmp_path: Path, text: str, *args: str) -> tuple[int, str, Path]:
    config = tmp_path / "c.toml"
    config.write_text(text)
    out = tmp_path / "out"
    result = RUNNER.invoke(app, ["compare", str(config), "--out", str(out), *args])
    return result.exit_code, " ".join(result.output.split()), out


@pytest.mark.parametrize("mode", [["--local"], []], ids=["local", "services"])
def test_every_mistake_is_named_with_its_line_before_anything_starts(tmp_path: Path, mode: list[str]) -> None:
    code, output, out = compare(tmp_path, TYPOS, *mode)
    assert code == 1
    path = tmp_path / "c.toml"
    for expected in (
        f"{path}:6: algorithms[0].id: unknown algorithm 'aerr2'; did you mean 'aerr' or 'gaerr'?",
        f"{path}:10: algorithms[1].params.lamm: aer has no parameter 'lamm'; did you mean 'lam'? It takes lam, radius",
        f"{path}:12: algorithms[2]: ridge (ridge) on digits-3v5 with k = 4: ridge is a full-information reference: it"
        " needs all d=64 attributes per example, the budget allows 4",
        f"{path}:17: designs[0].dataset.name: unknown dataset 'digit-3v5'",
        f"{path}:21: designs[1].dataset.params: s_plus + s_minus (the support of theta*) must not exceed d",
        f"{path}:25: designs[2].algorithms[0]: aelr (aelr) on digits-3v5 with k = 4: parameter eta='fast' of aelr is"
        " not a number",
        "6 problem(s)",
    ):
        assert expected in output, output
    assert "did you mean 'digits-3v5'" in output
    # Nothing started: no services (they would have written their ledger and logs into --out), no run.
    assert not out.exists()


def test_toml_shape_errors_name_the_file_the_line_and_the_key(tmp_path: Path) -> None:
    shape = 'title = "shape"\ndataset = { name = "digits-3v5", params = { n = [1] } }\nseeds = []\n\n' \
            '[[algorithms]]\nid = "aer"\nlable = "AER"\n'
    code, output, out = compare(tmp_path, shape, "--local")
    path = tmp_path / "c.toml"
    assert code == 1 and not out.exists()
    assert f"{path}:2: dataset.params.n: expected an integer, a number, a string or a boolean; got [1]" in output
    assert f"{path}:3: seeds: List should have at least 1 item" in output
    assert f"{path}:7: algorithms[0].lable: unknown key 'lable'; did you mean 'label'?" in output
    assert "validation error" not in output and "pydantic" not in output  # not pydantic's own text
    code, output, _ = compare(tmp_path, 'title = "broken"\ndataset = { name = "digits-3v5"\n', "--local")
    assert code == 1 and f"{path}:2: not valid TOML:" in output


def test_budgets_and_tune_values_are_checked_too(tmp_path: Path) -> None:
    text = ('title = "budgets"\ndataset = { name = "digits-3v5" }\nbudget = { per_example = 4, costs = [1.0, 2.0] }\n'
            '\n[[algorithms]]\nid = "aerr"\nlabel = "AERR"\n\n[tune.grid.AERR]\neta = [0.1, "x"]\n')
    code, output, out = compare(tmp_path, text, "--local")
    path = tmp_path / "c.toml"
    assert code == 1 and not out.exists()
    assert f"{path}:3: budget.costs: lists 2 costs; digits-3v5 has d = 64 attributes" in output
    assert f"{path}:10: tune.grid.AERR.eta: AERR (aerr) on digits-3v5 with k = 4, eta = 'x': parameter eta='x' of " \
           "aerr is not a number" in output


def test_datasets_are_checked_on_the_oracle_the_runs_will_use(tmp_path: Path, shared_oracle_url: str,
                                                              learner_url: str) -> None:
    text = 'title = "remote"\ndataset = { name = "sparse-gausian", params = { d = 8 } }\n\n[[algorithms]]\nid = "aer"\n'
    code, output, out = compare(tmp_path, text, "--learner", learner_url, "--oracle", shared_oracle_url)
    assert code == 1 and not out.exists()
    assert f"{tmp_path / 'c.toml'}:2: dataset.name: unknown dataset 'sparse-gausian'" in output
    assert "did you mean 'sparse-gaussian'?" in output
    code, output, _ = compare(tmp_path, text, "--learner", learner_url, "--oracle", "http://127.0.0.1:9")
    assert code == 1 and "cannot check the config's datasets" in output and "127.0.0.1:9" in output


def test_algorithms_are_checked_against_the_learner_the_runs_will_use(tmp_path: Path, shared_oracle_url: str,
                                                                      learner_url: str) -> None:
    text = ('title = "remote"\ndataset = { name = "sparse-gaussian" }\n\n[[algorithms]]\nid = "aerrr"\n'
            '\n[[algorithms]]\nid = "aerr"\nparams = { etaa = 0.1 }\n')
    code, output, out = compare(tmp_path, text, "--learner", learner_url, "--oracle", shared_oracle_url)
    assert code == 1 and not out.exists()
    assert f"{tmp_path / 'c.toml'}:5: algorithms[0].id: the learner at {learner_url} runs no algorithm 'aerrr'; " \
           "did you mean 'aerr'" in output
    assert f"{tmp_path / 'c.toml'}:9: algorithms[1].params.etaa: aerr has no parameter 'etaa'; did you mean " \
        "'eta'" in output


def test_an_algorithm_this_machine_runs_and_the_learner_does_not_says_how_the_learner_gets_it() -> None:
    """A plugin installed here only (``ddaerr`` stands for one) or a ``package.module:Class`` target: the learner
    needs the package, or the target in its BUDGETLAB_LEARNER_ALGORITHMS. A typo gets no such advice."""
    text = ('title = "plugins"\ndataset = { name = "diabetes" }\nbudget = { per_example = 4 }\n\n[[algorithms]]\n'
            'id = "ddaerr"\n\n[[algorithms]]\nid = "tests.learner.broken_plugins:ReadsUnpaid"\n\n[[algorithms]]\n'
            'id = "zzz"\n')
    table = Algorithms({"aerr": ["eta"]}, "the learner at http://learner:8001")
    problems = check_config(CompareConfig.model_validate(tomllib.loads(text)), "c.toml", text, LocalCatalog(), table)
    advice = "install its package where the learner runs (it finds it without a restart), or list its " \
             "package.module:Class in the learner's BUDGETLAB_LEARNER_ALGORITHMS"
    assert [advice in line for line in problems] == [True, True, False], problems
    assert all("the learner at http://learner:8001 runs no algorithm" in line for line in problems)


def test_a_learner_out_of_reach_or_a_refused_caller_token_stops_compare_before_any_run(
        tmp_path: Path, shared_oracle_url: str, learner_url: str) -> None:
    """During the runs a learner out of reach is waited for (it may be restarting): at the start it is an error at
    once, as is a caller token the learner does not know (every run would be refused)."""
    text = 'title = "remote"\ndataset = { name = "sparse-gaussian" }\n\n[[algorithms]]\nid = "aer"\n'
    code, output, out = compare(tmp_path, text, "--learner", "http://127.0.0.1:9", "--oracle", shared_oracle_url)
    assert code == 1 and not out.exists()
    assert "cannot reach the learner at http://127.0.0.1:9: nothing was started" in output
    code, output, out = compare(tmp_path, text, "--learner", learner_url, "--oracle", shared_oracle_url,
                                "--learner-token", "not-a-caller-of-this-learner")
    assert code == 1 and not out.exists()
    assert "refuses the caller token" in output and "unauthorized" in output


def test_key_lines_follows_nested_arrays_of_tables_and_skips_multiline_values() -> None:
    text = '''title = "x"
description = """
id = "not a key"
"""
seeds = [
  0,
]

[[designs]]
name = "a"

[[designs.algorithms]]
id = "aer"

[[designs.algorithms]]
id = "aelr"
params.eta = 0.1

[[designs]]
name = "b"
[designs.dataset]
name = "digits-3v5"
'''
    lines = key_lines(text)
    assert ("id",) not in lines and lines[("seeds",)] == 5
    assert lines[("designs", 0, "algorithms", 1, "id")] == 16
    assert lines[("designs", 0, "algorithms", 1, "params", "eta")] == 17
    assert lines[("designs", 1, "name")] == 20 and lines[("designs", 1, "dataset", "name")] == 22
