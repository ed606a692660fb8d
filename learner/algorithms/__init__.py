"""Registry of the papers' algorithms, by the ids used in the API and the CLI.

Every module of this package that defines ``Algorithm`` subclasses with an ``id`` is picked up, so
adding an algorithm is adding one file. The ids are read from the modules' source (a class attribute
``id = "..."``) without importing them, and a module is imported when one of its algorithms is asked
for: a run imports its algorithm's module, not all of them and their libraries (scikit-learn alone
takes seconds). Listing every algorithm's description still imports them all.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import threading
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

from learner.algorithms.base import Algorithm, DataScale, Observed, ParamError, Problem

__all__ = ["Algorithm", "DataScale", "Observed", "ParamError", "Problem", "algorithm_modules", "algorithms",
           "get_algorithm"]


def _declared_ids(source: str) -> list[str]:
    """The string ``id`` class attributes of the top-level classes of a module's source."""
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            else:
                continue
            if (any(isinstance(t, ast.Name) and t.id == "id" for t in targets)
                    and isinstance(value, ast.Constant) and isinstance(value.value, str)):
                found.append(value.value)
    return found


# Before 3.11.8, CPython's ast kept its recursion depth in state shared by threads (gh-106905): two first reads at once
# (the learner starting two runs together) once failed with "AST constructor recursion depth mismatch". functools.cache
# lets two first calls both compute, so the read is behind a lock.
_READING = threading.Lock()


def algorithm_modules() -> dict[str, str]:
    """Each algorithm id to the name of the module that defines it, sorted by id; nothing is imported."""
    with _READING:
        return _read_algorithm_modules()


@cache
def _read_algorithm_modules() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem.startswith("_") or path.stem == "base":
            continue
        for algorithm_id in _declared_ids(path.read_text(encoding="utf-8")):
            if algorithm_id in found:
                raise RuntimeError(f"algorithm id {algorithm_id!r} is declared in {found[algorithm_id]} and "
                                   f"{__name__}.{path.stem}")
            found[algorithm_id] = f"{__name__}.{path.stem}"
    return dict(sorted(found.items()))


@cache
def _load(algorithm_id: str) -> type[Algorithm]:
    module = importlib.import_module(algorithm_modules()[algorithm_id])
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if (issubclass(obj, Algorithm) and not inspect.isabstract(obj) and obj.__dict__.get("id") == algorithm_id
                and obj.__module__ == module.__name__):
            return obj
    raise RuntimeError(f"{module.__name__} declares id {algorithm_id!r} but defines no concrete Algorithm with it")


class Registry(Mapping[str, type[Algorithm]]):
    """The algorithms by id: the ids (iteration, ``in``, ``len``) cost no import, a class its module's."""

    def __getitem__(self, algorithm_id: str) -> type[Algorithm]:
        if algorithm_id not in algorithm_modules():
            raise KeyError(algorithm_id)
        return _load(algorithm_id)

    def __iter__(self) -> Iterator[str]:
        return iter(algorithm_modules())

    def __len__(self) -> int:
        return len(algorithm_modules())

    def __contains__(self, algorithm_id: object) -> bool:
        return algorithm_id in algorithm_modules()


_REGISTRY = Registry()


def algorithms() -> Registry:
    return _REGISTRY


def get_algorithm(algorithm_id: str) -> type[Algorithm]:
    table = algorithm_modules()
    if algorithm_id not in table:
        raise ParamError(f"unknown algorithm {algorithm_id!r}; known: {', '.join(table)}")
    return _load(algorithm_id)
