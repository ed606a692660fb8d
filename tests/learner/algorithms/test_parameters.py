"""An algorithm's parameters are the keyword arguments of its constructor (#35 item 2): the listing (``params``,
``info()``) is derived from the signature and the docstrings once, a value is read by its declared type before
``__init__`` runs, ``get_params()`` reads the values in effect back; the way before (``params`` and ``**params``)
still works, with a deprecation warning."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pytest

from budgetlab.contract.algorithms import ParamSpec
from learner.algorithms import Algorithm, ParamError, Problem, algorithms
from learner.algorithms.base import Observed, docstring_parameters

PROBLEM = Problem(d=4, k=2, n_examples=10)


class Still(Algorithm):
    """Learns nothing: only its parameters matter.

    Parameters
    ----------
    eta
        step size η; default 'adaptive': a rule
        on two lines
    draws : int, optional
        draws per example
    """

    id = name = paper = algorithm = "still"

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float | Literal["adaptive"] | None = None,
                 draws: int = 2) -> None:
        super().__init__(problem, seed)
        self.eta = "adaptive" if eta is None else eta
        self.draws = draws

    def select(self) -> Sequence[int]:
        return [0]

    def update(self, observed: Observed, y: float) -> None:
        pass

    @property
    def weights(self) -> np.ndarray:
        return np.zeros(self.problem.d)


class Stiller(Still):
    """Still, with one parameter more (its others described by Still's docstring).

    Parameters
    ----------
    floor
        a floor
    """

    id = "stiller"

    def __init__(self, problem: Problem, seed: int = 0, *, eta: float | Literal["adaptive"] | None = None,
                 draws: int = 2, floor: float = 0.0) -> None:
        super().__init__(problem, seed, eta=eta, draws=draws)
        self.floor = floor


def test_the_listing_is_the_signature_with_the_docstrings_descriptions() -> None:
    assert Still.params == {"eta": (None, "step size η; default 'adaptive': a rule on two lines"),
                            "draws": (2, "draws per example")}
    assert Still.info().params == [ParamSpec(name="eta", default=None, description=Still.params["eta"][1]),
                                   ParamSpec(name="draws", default=2, description="draws per example")]
    assert Still.info().description == "Learns nothing: only its parameters matter."
    assert list(Stiller.params) == ["eta", "draws", "floor"]
    assert Stiller.params["draws"] == Still.params["draws"] and Stiller.params["floor"] == (0.0, "a floor")
    assert docstring_parameters(None) == {} and docstring_parameters("No section.") == {}


def test_values_are_read_by_their_types_and_the_values_in_effect_read_back() -> None:
    still = Still(PROBLEM, seed=1, eta="0.5", draws="3")
    assert (still.eta, still.draws) == (0.5, 3)
    assert still.get_params() == {"eta": 0.5, "draws": 3}
    assert Still(PROBLEM).get_params() == {"eta": "adaptive", "draws": 2}
    assert Still(PROBLEM, eta="adaptive").eta == "adaptive"
    with pytest.raises(ParamError, match=r"^parameter draws=2.5 of still is not an integer$"):
        Still(PROBLEM, draws=2.5)
    with pytest.raises(ParamError, match=r"^still has no parameter\(s\) etaa; it takes \['draws', 'eta'\]$"):
        Still(PROBLEM, etaa=0.1)


def test_an_algorithm_without_parameters_needs_no_constructor() -> None:
    class Bare(Algorithm):
        id = name = paper = algorithm = "bare"

        def select(self) -> Sequence[int]:
            return [0]

        def update(self, observed: Observed, y: float) -> None:
            pass

        @property
        def weights(self) -> np.ndarray:
            return np.zeros(self.problem.d)

    assert Bare.params == {} and not Bare.legacy_params
    assert Bare(PROBLEM).get_params() == {}
    with pytest.raises(ParamError, match=r"bare has no parameter\(s\) eta; it takes \[\]"):
        Bare(PROBLEM, eta=0.1)


def test_a_parameter_needs_a_default_and_is_declared_one_way() -> None:
    with pytest.raises(TypeError, match="the parameter eta needs a default"):
        class NoDefault(Still):
            def __init__(self, problem: Problem, seed: int = 0, *, eta: float) -> None:
                super().__init__(problem, seed)

    with pytest.raises(TypeError, match="declares params and keyword parameters"):
        class Both(Still):
            params = {"eta": (0.1, "step size")}


def test_an_attribute_a_constructor_forgot_is_named() -> None:
    class Forgetful(Still):
        def __init__(self, problem: Problem, seed: int = 0, *, eta: float = 0.1, draws: int = 2) -> None:
            super().__init__(problem, seed, eta=eta)
            del self.draws

    with pytest.raises(AttributeError, match=r"keeps no attribute for its parameter\(s\) draws: .* self.draws = draws"):
        Forgetful(PROBLEM).get_params()


def test_the_way_before_keyword_parameters_still_works_and_is_deprecated() -> None:
    with pytest.warns(DeprecationWarning, match="declare them as keyword arguments of __init__"):
        class Before(Algorithm):
            """An algorithm of before keyword parameters."""

            id = name = paper = algorithm = "before"
            params = {"eta": (0.1, "step size"), "lam": (None, "a rule or a number")}
            rules = {"lam": "running"}

            def __init__(self, problem: Problem, seed: int = 0, **params: float) -> None:
                super().__init__(problem, seed, **params)
                self.step = self.config["eta"]

            def select(self) -> Sequence[int]:
                return [0]

            def update(self, observed: Observed, y: float) -> None:
                pass

            @property
            def weights(self) -> np.ndarray:
                return np.zeros(self.problem.d)

    before = Before(PROBLEM, eta="0.2", lam="running")
    assert before.step == 0.2 and before.get_params() == {"eta": 0.2, "lam": "running"}
    assert Before(PROBLEM).get_params() == {"eta": 0.1, "lam": None}
    assert [p.name for p in Before.info().params] == ["eta", "lam"]
    with pytest.raises(ParamError, match=r"^parameter eta='x' of before is not a number$"):
        Before(PROBLEM, eta="x")
    with pytest.raises(ParamError, match="before has no parameter"):
        Before(PROBLEM, etaa=0.1)


@pytest.mark.parametrize("algorithm_id", list(algorithms()))
def test_every_built_in_parameter_is_a_described_keyword_of_its_constructor(algorithm_id: str) -> None:
    cls = algorithms()[algorithm_id]
    assert not cls.legacy_params, f"{algorithm_id} declares its parameters in params"
    undescribed = [name for name, (_, description) in cls.params.items() if not description]
    assert not undescribed, f"{algorithm_id}'s docstring describes no {undescribed}"
