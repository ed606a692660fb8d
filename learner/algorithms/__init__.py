"""Registry of the papers' algorithms, by the ids used in the API and the CLI.

Every module of this package that defines ``Algorithm`` subclasses with an ``id`` is picked up, so
adding an algorithm is adding one file.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache

from learner.algorithms.base import Algorithm, DataScale, Observed, ParamError, Problem

__all__ = ["Algorithm", "DataScale", "Observed", "ParamError", "Problem", "algorithms", "get_algorithm"]


@cache
def algorithms() -> dict[str, type[Algorithm]]:
    found: dict[str, type[Algorithm]] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Algorithm) and not inspect.isabstract(obj) and "id" in obj.__dict__:
                found[obj.id] = obj
    return dict(sorted(found.items()))


def get_algorithm(algorithm_id: str) -> type[Algorithm]:
    table = algorithms()
    if algorithm_id not in table:
        raise ParamError(f"unknown algorithm {algorithm_id!r}; known: {', '.join(table)}")
    return table[algorithm_id]
