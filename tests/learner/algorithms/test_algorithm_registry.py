"""The explicit algorithm registry (``learner.algorithms.BUILT_IN``, a literal table): the same algorithms and metadata
as importing every module of the package, without the imports."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from importlib.metadata import version

import httpx
import pytest

import learner.algorithms as package
from learner.algorithms import Algorithm, ParamError, algorithm_modules, algorithms, get_algorithm


def imported_all() -> dict[str, type[Algorithm]]:
    """Every concrete class with an id that the package's modules define (its subpackages' too): what the table must
    list, found by importing them all."""
    found: dict[str, type[Algorithm]] = {}
    for module_info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(module_info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (issubclass(obj, Algorithm) and not inspect.isabstract(obj) and "id" in obj.__dict__
                    and obj.__module__ == module.__name__):
                assert obj.id not in found or found[obj.id] is obj, f"two classes with the id {obj.id!r}"
                found[obj.id] = obj
    return dict(sorted(found.items()))


def test_the_table_lists_exactly_the_algorithms_and_metadata_of_importing_them_all() -> None:
    eager = imported_all()
    lazy = algorithms()
    assert list(lazy) == list(eager) and len(lazy) == len(eager) >= 23
    for algorithm_id, cls in eager.items():
        assert algorithm_id in lazy
        assert lazy[algorithm_id] is cls and get_algorithm(algorithm_id) is cls
        assert algorithm_modules()[algorithm_id] == cls.__module__
    assert [c.info() for c in lazy.values()] == [c.info() for c in eager.values()]


def test_an_unknown_id_is_a_param_error_naming_the_known_ones() -> None:
    with pytest.raises(ParamError, match="unknown algorithm 'nope'; known: .*aer.*ridge"):
        get_algorithm("nope")
    assert "nope" not in algorithms()
    with pytest.raises(KeyError):
        algorithms()["nope"]


@pytest.mark.process
def test_ids_cost_no_import_and_one_algorithm_imports_only_its_module() -> None:
    # A fresh interpreter: what listing the ids and getting one algorithm import.
    script = """
import json, sys
from learner.algorithms import algorithms, get_algorithm
ids = list(algorithms())
before = sorted(m for m in sys.modules if m.startswith("learner.algorithms."))
get_algorithm("aer")
after = sorted(m for m in sys.modules if m.startswith("learner.algorithms."))
print(json.dumps({"ids": ids, "before": before, "after": after, "sklearn": "sklearn" in sys.modules}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert seen["ids"] == list(algorithm_modules())
    assert seen["before"] == ["learner.algorithms.base"]
    assert "learner.algorithms.cesa_bianchi_2011.aer" in seen["after"]
    assert not any(m.startswith(("learner.algorithms.references", "learner.algorithms.hazan_koren_2012"))
                   for m in seen["after"])
    assert not seen["sklearn"]


def test_budgetlab_algorithms_json_describes_every_algorithm() -> None:
    from typer.testing import CliRunner

    from client.cli import app

    result = CliRunner().invoke(app, ["algorithms", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == listing()


def listing() -> list[dict]:
    """Every algorithm's description as importing them all gives it, with budgetlab as its package."""
    ours = {"package": "budgetlab", "version": version("budgetlab")}
    return [{**c.info().model_dump(mode="json"), **ours} for c in imported_all().values()]


def test_the_learner_service_lists_every_algorithm_as_importing_them_all_does(learner_url: str,
                                                                              http: httpx.Client) -> None:
    listed = http.get(f"{learner_url}/v1/algorithms", timeout=60).json()["algorithms"]
    assert listed == listing()


def test_variants_are_composed_at_most_three_classes_below_the_base() -> None:
    """A variant is its twin with another strategy (prices, step sizes, phases), not another layer of classes: every
    built-in algorithm is at most three classes below ``Algorithm``, itself included."""
    from learner.algorithms.shared.attribute_efficient import AttributeEfficient

    for algorithm_id, cls in algorithms().items():
        below = cls.__mro__[:cls.__mro__.index(Algorithm)]
        assert len(below) <= 3, f"{algorithm_id}: {' -> '.join(c.__name__ for c in below)} -> Algorithm"
        if issubclass(cls, AttributeEfficient):
            assert cls.prices.priced == cls.needs_costs, algorithm_id  # a priced learner has the prices fetched
