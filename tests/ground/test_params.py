"""A parameter is read by one set of rules wherever it comes from: booleans by ``budgetlab.params.parse_bool``
(unknown text is refused, never read as False) for a dataset's and an algorithm's parameters alike, ``key=value``
by ``split_pair``, an algorithm's parameter values by the types its constructor declares (``read_value``), its
parameter names checked against its spec in one place, and a run's horizon by ``learner.runner.run_horizon``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pytest
from typer.testing import CliRunner

from budgetlab.datasets import DatasetError, describe, parse_dataset_spec
from budgetlab.params import parse_bool, read_value, split_pair
from client.cli import app
from client.comparison.tune import TuneError, parse_tune_option
from learner.algorithms import Algorithm, ParamError, Problem
from learner.algorithms.base import Observed
from learner.runner import run_horizon


class Flagged(Algorithm):
    """An algorithm with a boolean parameter (none of the built-in ones has one): only its parameters matter.

    Parameters
    ----------
    average
        average the iterates
    eta
        step size
    """

    id = name = paper = algorithm = "flagged"

    def __init__(self, problem: Problem, seed: int = 0, *, average: bool = True, eta: float = 0.1) -> None:
        super().__init__(problem, seed)
        self.average = average
        self.eta = eta

    def select(self) -> Sequence[int]:
        return [0]

    def update(self, observed: Observed, y: float) -> None:
        pass

    @property
    def weights(self) -> np.ndarray:
        return np.zeros(self.problem.d)


PROBLEM = Problem(d=2, k=1, n_examples=10)


@pytest.mark.parametrize("text, value", [("true", True), ("Yes", True), (" on ", True), ("1", True), (1, True),
                                         ("false", False), ("NO", False), ("off", False), (0, False), (False, False)])
def test_booleans_by_one_rule(text: str | int | bool, value: bool) -> None:
    assert parse_bool(text) is value
    assert Flagged(PROBLEM, average=text).average is value
    assert describe("diabetes", {"standardize": text}).params["standardize"] is value


@pytest.mark.parametrize("text", ["maybe", "flase", "", "2", 2.5])
def test_a_bad_boolean_is_refused_everywhere_it_is_parsed(text: str | float) -> None:
    with pytest.raises(ValueError, match="not a boolean"):
        parse_bool(text)
    with pytest.raises(ParamError, match=r"average=.* of flagged is not a boolean"):
        Flagged(PROBLEM, average=text)
    with pytest.raises(DatasetError, match="use true or false"):
        describe("diabetes", {"standardize": text})


def test_a_bad_boolean_on_the_command_line_ends_the_command() -> None:
    for dataset in (["--dataset", "diabetes:standardize=maybe"],
                    ["--dataset", "diabetes", "--dataset-param", "standardize=maybe"]):
        result = CliRunner().invoke(app, ["run", "--algorithm", "aerr", *dataset, "--local"])
        assert result.exit_code == 1 and "use true or false" in result.output, result.output


def test_key_value_pairs_are_split_by_one_helper() -> None:
    assert split_pair(" eta = 0.5 ", "--param") == ("eta", "0.5")
    assert split_pair("path=a=b", "--param") == ("path", "a=b")
    for bad in ("eta", "=0.5", " = "):
        with pytest.raises(ValueError, match="--param .* is not key=value"):
            split_pair(bad, "--param")
    with pytest.raises(DatasetError, match="'d' is not key=value"):
        parse_dataset_spec("powerlaw:d")
    assert parse_tune_option("aerr:eta=0.1,1") == ("aerr", "eta", [0.1, 1])
    for bad in ("aerr:eta", "eta=0.1", "aerr:=0.1", ":eta=1"):
        with pytest.raises(TuneError, match="is not ALGORITHM:PARAM"):
            parse_tune_option(bad)
    result = CliRunner().invoke(app, ["run", "--algorithm", "aerr", "--dataset", "diabetes", "--param", "eta",
                                      "--local"])
    assert result.exit_code == 1 and "--param 'eta' is not key=value" in result.output, result.output


@pytest.mark.parametrize(("value", "kind", "read"), [
    ("adaptive", float | Literal["adaptive"] | None, "adaptive"), ("0.5", float | Literal["adaptive"] | None, 0.5),
    (3, float | None, 3.0), (None, float | None, None), ("3", int | None, 3), (4.0, int, 4), ("1e2", int, 100),
    ("power:2", str, "power:2"), ("printed", Literal["printed", "unbiased"], "printed"), ("on", bool, True),
])
def test_a_value_is_read_by_the_type_its_constructor_declares(value: object, kind: object, read: object) -> None:
    got = read_value(value, kind)
    assert got == read and type(got) is type(read)


@pytest.mark.parametrize(("value", "kind", "reason"), [
    ("fast", float | Literal["adaptive"] | None, "is not a number"), (True, float, "is not a number"),
    (2.5, int | None, "is not an integer"), ("two", int, "is not an integer"), (None, float, "is not a number"),
    ("diagonal", Literal["printed", "unbiased"], "must be one of 'printed', 'unbiased'"),
    ("maybe", bool, "is not a boolean"),
])
def test_a_value_that_does_not_fit_its_type_says_why(value: object, kind: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        read_value(value, kind)


def test_an_algorithm_reads_its_parameters_by_their_types_and_names_the_one_that_does_not_fit() -> None:
    flagged = Flagged(PROBLEM, eta="0.5")
    assert flagged.eta == 0.5 and flagged.get_params() == {"average": True, "eta": 0.5}
    with pytest.raises(ParamError, match=r"^parameter eta='fast' of flagged is not a number$"):
        Flagged(PROBLEM, eta="fast")


def test_parameter_names_are_checked_against_the_spec() -> None:
    Flagged.check_params(["average", "eta"])
    with pytest.raises(ParamError, match=r"flagged has no parameter\(s\) avg, step; it takes \['average', 'eta'\]"):
        Flagged.check_params(["avg", "eta", "step"])
    with pytest.raises(ParamError, match="has no parameter"):
        Flagged(PROBLEM, avg=True)


def test_the_run_horizon() -> None:
    assert run_horizon(None, 100) == 100
    assert run_horizon(40, 100) == 40
    assert run_horizon(400, 100) == 100
