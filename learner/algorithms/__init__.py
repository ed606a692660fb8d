"""Registry of the algorithms, by the names used in the API and the CLI: the one place the CLI, ``compare``, the
estimator and the learner service look an algorithm up (``get_algorithm``, ``algorithms``, ``describe``).

budgetlab's own: the literal table ``BUILT_IN``, each id to the ``package.module:Class`` that defines it, written as a
plugin writes its entry point. Nothing is imported to list the ids; a module is imported when one of its algorithms is
asked for: a run imports its algorithm's module, not all of them and their libraries (scikit-learn alone takes
seconds). Listing every algorithm's description still imports them all. Adding an algorithm is its file and its line
in the table (``tests/learner/algorithms/test_algorithm_registry.py`` finds a file the table misses).

Plugins: an installed package's entry points in the group ``budgetlab.algorithms`` (the entry point's name is the
algorithm's id), read with ``importlib.metadata``, again whenever a name is not among them (a package installed
while a service runs is found without a restart). For quick work a local tool may name a class directly,
``package.module:Class``; the learner service accepts such a target only if its settings allow-list it.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, packages_distributions, version

from budgetlab.contract.algorithms import AlgorithmInfo
from learner.algorithms.base import Algorithm, DataScale, Observed, ParamError, Problem

__all__ = ["ENTRY_POINT_GROUP", "TARGET", "Algorithm", "DataScale", "Observed", "Origin", "ParamError", "Problem",
           "UnknownAlgorithm", "BUILT_IN", "algorithm_modules", "algorithms", "describe", "get_algorithm", "is_target",
           "origin", "plugins", "rescan"]

# The entry point group of algorithm plugins: a package adds algorithms with
# [project.entry-points."budgetlab.algorithms"] id = "package.module:Class".
ENTRY_POINT_GROUP = "budgetlab.algorithms"
PACKAGE = "budgetlab"
TARGET = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


# budgetlab's own algorithms, grouped by paper, as entry points are written: id = "package.module:Class".
BUILT_IN: dict[str, str] = {
    # Cesa-Bianchi, Shalev-Shwartz & Shamir 2011
    "aer": "learner.algorithms.cesa_bianchi_2011.aer:AER",
    "aer-baseline": "learner.algorithms.cesa_bianchi_2011.aer_baseline:AERBaseline",
    # Hazan & Koren 2012
    "aerr": "learner.algorithms.hazan_koren_2012.aerr:AERR",
    "aelr": "learner.algorithms.hazan_koren_2012.aelr:AELR",
    "aesvr": "learner.algorithms.hazan_koren_2012.aesvr:AESVR",
    # Kukliansky & Shamir 2015
    "gaerr": "learner.algorithms.kukliansky_shamir_2015.gaerr:GAERR",
    "gaelr": "learner.algorithms.kukliansky_shamir_2015.gaelr:GAELR",
    "ddaerr": "learner.algorithms.kukliansky_shamir_2015.ddaerr:DDAERR",
    "ddaelr": "learner.algorithms.kukliansky_shamir_2015.ddaelr:DDAELR",
    "ddaerr-2phase": "learner.algorithms.kukliansky_shamir_2015.ddaerr_2phase:TwoPhasedDDAERR",
    "ddaelr-2phase": "learner.algorithms.kukliansky_shamir_2015.ddaelr_2phase:TwoPhasedDDAELR",
    # Ito et al. 2017
    "ito1": "learner.algorithms.ito_2017.ito1:Ito1",
    "ito2": "learner.algorithms.ito_2017.ito2:Ito2",
    "ito3": "learner.algorithms.ito_2017.ito3:Ito3",
    "greedy": "learner.algorithms.ito_2017.greedy:Greedy",
    "uniform": "learner.algorithms.ito_2017.uniform:Uniform",
    # Murata & Suzuki 2018
    "exploration": "learner.algorithms.murata_suzuki_2018.exploration:Exploration",
    "exploitation": "learner.algorithms.murata_suzuki_2018.exploitation:Exploitation",
    "hybrid": "learner.algorithms.murata_suzuki_2018.hybrid:Hybrid",
    # the full-information references
    "ridge": "learner.algorithms.references.ridge:Ridge",
    "lasso": "learner.algorithms.references.lasso:Lasso",
    "ogd-ridge": "learner.algorithms.references.ogd_ridge:OGDRidge",
    "eg-lasso": "learner.algorithms.references.eg_lasso:EGLasso",
    # beyond the papers: budgetlab's own
    "ddaerr-cost": "learner.algorithms.beyond_the_papers.ddaerr_cost:CostAwareDDAERR",
    "ddaelr-cost": "learner.algorithms.beyond_the_papers.ddaelr_cost:CostAwareDDAELR",
    "ddaerr-2p-cost": "learner.algorithms.beyond_the_papers.ddaerr_2phase_cost:CostAwareTwoPhasedDDAERR",
    "ddaelr-2p-cost": "learner.algorithms.beyond_the_papers.ddaelr_2phase_cost:CostAwareTwoPhasedDDAELR",
    "screening": "learner.algorithms.beyond_the_papers.screening:Screening",
}


def algorithm_modules() -> dict[str, str]:
    """Each algorithm id to the name of the module that defines it, sorted by id; nothing is imported."""
    return {algorithm_id: BUILT_IN[algorithm_id].partition(":")[0] for algorithm_id in sorted(BUILT_IN)}


@cache
def _load(algorithm_id: str) -> type[Algorithm]:
    """The built-in algorithm ``algorithm_id``, imported from its line of ``BUILT_IN``: a concrete Algorithm whose
    ``id`` is the table's."""
    cls = load_target(BUILT_IN[algorithm_id])
    if cls.__dict__.get("id") != algorithm_id:
        raise RuntimeError(f"{BUILT_IN[algorithm_id]} is registered as {algorithm_id!r} but its id is {cls.id!r}")
    return cls


# --- plugins: installed packages' entry points, and module:Class targets -------------------------------------------


@cache
def _entry_points() -> dict[str, EntryPoint]:
    """The installed plugins by algorithm id (the entry point's name); an id of the package's own is kept for it, with a
    warning naming the plugin that declared it too."""
    found: dict[str, EntryPoint] = {}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        owner = _distribution(entry)
        if entry.name in BUILT_IN:
            warnings.warn(f"the plugin {owner[0]} declares the algorithm id {entry.name!r}, which is budgetlab's own: "
                          "its entry point is ignored (rename it)", stacklevel=2)
        elif entry.name in found:
            warnings.warn(f"the algorithm id {entry.name!r} is declared by {_distribution(found[entry.name])[0]} and "
                          f"by {owner[0]}: the first is used", stacklevel=2)
        else:
            found[entry.name] = entry
    return found


def rescan() -> None:
    """Read the installed entry points again (a package installed since they were read)."""
    importlib.invalidate_caches()
    _entry_points.cache_clear()


def plugins() -> dict[str, EntryPoint]:
    return _entry_points()


def is_target(name: str) -> bool:
    """Whether ``name`` names code to import, ``package.module:Class``, rather than an algorithm id."""
    return ":" in name


def _distribution(entry: EntryPoint) -> tuple[str, str | None]:
    dist = entry.dist
    return (dist.name, dist.version) if dist is not None else (entry.module.partition(".")[0], None)


def _checked(cls: object, where: str) -> type[Algorithm]:
    if not (inspect.isclass(cls) and issubclass(cls, Algorithm)) or inspect.isabstract(cls):
        raise ParamError(f"{where} is not a concrete subclass of learner.algorithms.base.Algorithm")
    return cls


@cache
def load_target(target: str) -> type[Algorithm]:
    """The Algorithm class ``package.module:Class`` names (imported: only for code its caller chose to run)."""
    if not TARGET.fullmatch(target):
        raise ParamError(f"{target!r} is not package.module:Class")
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # not only ImportError: a plugin's module may raise anything as it is imported
        raise ParamError(f"cannot import {module_name!r} for the algorithm {target!r}: {exc}") from None
    if not hasattr(module, attribute):
        raise ParamError(f"{module_name!r} has no {attribute!r} (the algorithm {target!r})")
    return _checked(getattr(module, attribute), target)


def _load_plugin(entry: EntryPoint) -> type[Algorithm]:
    package = _distribution(entry)[0]
    try:
        loaded = entry.load()
    except Exception as exc:  # not only ImportError: a plugin's module may raise anything as it is imported
        raise ParamError(f"the algorithm {entry.name!r} of {package} cannot be imported ({entry.value}): "
                         f"{exc}") from None
    cls = _checked(loaded, f"the entry point {entry.name!r} of {package} ({entry.value})")
    if cls.id != entry.name:
        raise ParamError(f"the entry point {entry.name!r} of {package} names {entry.value}, whose id is {cls.id!r}: "
                         "they must be the same")
    return cls


@dataclass(frozen=True)
class Origin:
    """Where an algorithm comes from: the distribution that provides it, its version, and the code (module:Class)."""

    package: str
    version: str | None
    target: str


def _installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def origin(name: str) -> Origin:
    """The package, version and code of the algorithm ``name`` (an id, or a ``module:Class`` target)."""
    if name in BUILT_IN:
        cls = _load(name)
        return Origin(PACKAGE, _installed_version(PACKAGE), f"{cls.__module__}:{cls.__qualname__}")
    if is_target(name):
        top = name.partition(":")[0].partition(".")[0]
        providers = packages_distributions().get(top, [])
        package = providers[0] if providers else top
        return Origin(package, _installed_version(package) if providers else None, name)
    entry = _lookup_plugin(name)
    return Origin(*_distribution(entry), entry.value)


class UnknownAlgorithm(ParamError):
    """An id that is none of budgetlab's algorithms nor an installed plugin's, with the closest ids if any."""

    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=2)
        hint = f"; did you mean {' or '.join(map(repr, close))}? Known" if close else "; known"
        super().__init__(f"unknown algorithm {name!r}{hint}: {', '.join(known)} (a plugin is an installed package's "
                         f"entry point in the group {ENTRY_POINT_GROUP!r}, or package.module:Class)")


def _lookup_plugin(name: str) -> EntryPoint:
    found = plugins()
    if name not in found:
        rescan()  # installed since the entry points were read: found without a restart
        found = plugins()
    if name not in found:
        raise UnknownAlgorithm(name, [*algorithm_modules(), *found])
    return found[name]


def get_algorithm(name: str) -> type[Algorithm]:
    """The algorithm ``name``: one of budgetlab's, an installed plugin's (entry points are read again when the name is
    not among them), or the class a ``package.module:Class`` target names (imported: the learner service lets a
    request name only the targets its settings allow, ``learner.service.routers.runs``)."""
    if name in BUILT_IN:
        return _load(name)
    if is_target(name):
        return load_target(name)
    return _load_plugin(_lookup_plugin(name))


def describe(name: str) -> AlgorithmInfo:
    """The algorithm's listing (``GET /v1/algorithms``, ``budgetlab algorithms``), with its package and version; a
    target is listed under the name a run gives it."""
    found = origin(name)
    return get_algorithm(name).info().model_copy(update={"id": name, "package": found.package,
                                                         "version": found.version})


class Registry(Mapping[str, type[Algorithm]]):
    """The algorithms by name: budgetlab's and the installed plugins' (iteration, ``len``: no import), and the
    ``module:Class`` targets a local tool is given (``in`` and lookup import them)."""

    def __getitem__(self, name: str) -> type[Algorithm]:
        try:
            return get_algorithm(name)
        except ParamError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter([*algorithm_modules(), *plugins()])

    def __len__(self) -> int:
        return len(BUILT_IN) + len(plugins())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            get_algorithm(name)
        except ParamError:
            return False
        return True


_REGISTRY = Registry()


def algorithms() -> Registry:
    return _REGISTRY
