"""A comparison checked before anything starts: every algorithm id, parameter, dataset and budget of its config.

Each algorithm is built exactly as its runs will build it (``Problem`` from the dataset's d and size, the effective
budget, its parameters and every ``[tune]`` value to try), without data: what the constructor refuses (an unknown or
ill-typed parameter, a budget below what the algorithm needs, a full-information reference given fewer than d
attributes) is refused here, with the file and line, instead of as failed runs after the services started.
Datasets are described by the oracle the runs will use (``RemoteCatalog``) or by this machine (``LocalCatalog``);
algorithms are those the learner the runs will use serves (``Algorithms.of_learner``: a plugin may be installed there
and nowhere else) or this machine's (``Algorithms()``). An algorithm this machine lacks is checked by its id and
parameter names; the learner builds it, and refuses what it cannot, when the run starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from budgetlab.contract.algorithms import AlgorithmList
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import DatasetInfo
from budgetlab.datasets import DatasetError, UnknownDataset, describe, list_datasets
from budgetlab.errors import OracleError
from budgetlab.oracle_client import OracleClient
from client.comparison.config import AlgorithmEntry, CompareConfig, DatasetSpec, entry_defaults
from client.comparison.config_errors import Loc, did_you_mean, key_lines, line_of, located, unknown
from learner.algorithms import ParamError, Problem, algorithms, get_algorithm, is_target
from learner.applicability import refusal
from learner.runner import run_horizon


class Catalog(Protocol):
    def describe(self, name: str, params: dict[str, ParamValue]) -> DatasetInfo:
        """What the dataset is (DatasetError, UnknownDataset for a name it does not serve)."""

    def names(self) -> list[str]: ...


class LocalCatalog:
    """The datasets of this machine (``--local``, or the services ``compare`` starts here)."""

    def describe(self, name: str, params: dict[str, ParamValue]) -> DatasetInfo:
        return describe(name, params)

    def names(self) -> list[str]:
        return [d.name for d in list_datasets().datasets]


class RemoteCatalog:
    """The datasets of the oracle the runs will use (OracleUnavailable when it cannot be reached)."""

    def __init__(self, client: OracleClient) -> None:
        self.client = client

    def describe(self, name: str, params: dict[str, ParamValue]) -> DatasetInfo:
        spec = name + (":" + ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                                      for k, v in params.items()) if params else "")
        try:
            return self.client.dataset(spec)
        except OracleError as exc:
            raise (UnknownDataset if exc.status == 404 else DatasetError)(exc.detail) from None

    def names(self) -> list[str]:
        return [d.name for d in self.client.datasets().datasets]


@dataclass(frozen=True)
class Algorithms:
    """The algorithms a comparison's runs can name, with the parameter names each takes: this machine's
    (``served`` None) or those a running learner serves."""

    served: dict[str, list[str]] | None = None
    where: str = "this machine"
    # The package and version of each algorithm the learner serves, as it lists them (for the report's provenance).
    packages: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    @classmethod
    def of_learner(cls, listing: AlgorithmList, url: str) -> Algorithms:
        return cls({a.id: [p.name for p in a.params] for a in listing.algorithms}, f"the learner at {url}",
                   {a.id: (a.package, a.version) for a in listing.algorithms})

    def names(self) -> list[str]:
        return list(algorithms()) if self.served is None else list(self.served)

    def accepted(self, name: str) -> list[str] | None:
        """The parameter names of ``name``; None when the runs cannot name it."""
        if self.served is not None:
            return self.served.get(name)
        return list(algorithms()[name].params) if name in algorithms() else None


@dataclass
class Findings:
    """The problems found, each at its place in the config (deduplicated: a top-level algorithm is checked in
    every design that uses it)."""

    source: str
    text: str
    problems: dict[tuple[Loc, str], None] = field(default_factory=dict)

    def add(self, loc: Loc, message: str) -> None:
        self.problems[(loc, message)] = None

    def lines(self) -> list[str]:
        """One ``FILE:LINE: ...`` per problem, in the order of the file."""
        where = key_lines(self.text)
        ordered = sorted(self.problems, key=lambda problem: line_of(where, problem[0]) or 0)
        return [located(self.source, where, loc, message) for loc, message in ordered]


@dataclass
class Section:
    """One ``[[designs]]`` entry (or the config's top level) with where each of its parts was written."""

    datasets: list[tuple[DatasetSpec, Loc]]
    budget: Budget
    budget_loc: Loc
    entries: list[AlgorithmEntry]
    entries_loc: Loc


def sections(config: CompareConfig) -> list[Section]:
    """The config's designs as ``resolve_designs`` reads them, keeping the path of every part in the file."""
    out = []
    for j, spec in enumerate(config.designs or [None]):
        at: Loc = ("designs", j) if spec is not None else ()
        budget, budget_loc = ((spec.budget, at + ("budget",)) if spec is not None and spec.budget is not None
                              else (config.budget, ("budget",)))
        entries, entries_loc = ((spec.algorithms, at + ("algorithms",)) if spec is not None
                                and spec.algorithms is not None else (config.algorithms, ("algorithms",)))
        if spec is not None and spec.datasets:
            datasets = [(DatasetSpec(name=name), at + ("datasets", i)) for i, name in enumerate(spec.datasets)]
        elif spec is not None and spec.dataset is not None:
            datasets = [(spec.dataset, at + ("dataset",))]
        else:
            assert config.dataset is not None  # CompareConfig's validator saw to it
            datasets = [(config.dataset, ("dataset",))]
        out.append(Section(datasets, budget, budget_loc, entries, entries_loc))
    return out


def check_config(config: CompareConfig, source: str, text: str, catalog: Catalog,
                 table: Algorithms | None = None) -> list[str]:
    """Every problem of ``config`` (read from ``text`` in the file ``source``) as ``FILE:LINE: ...``; none: it can
    run. The oracle's ``OracleUnavailable`` propagates (the caller says the oracle cannot be reached). ``table``:
    the algorithms the runs can name (default: this machine's)."""
    table = table or Algorithms()
    found = Findings(source, text)
    known_datasets: list[str] | None = None
    for section in sections(config):
        # Ids and parameter names need no dataset: they are checked even where every dataset is wrong.
        known = [(entry, section.entries_loc + (i,)) for i, entry in enumerate(section.entries)
                 if _names_known(found, entry, section.entries_loc + (i,), table) and _built_here(entry.id)]
        for dataset, dataset_loc in section.datasets:
            try:
                info = catalog.describe(dataset.name, dataset.params)
            except UnknownDataset as exc:
                known_datasets = catalog.names() if known_datasets is None else known_datasets
                loc = dataset_loc if dataset_loc[-1] != "dataset" else dataset_loc + ("name",)
                found.add(loc, f"{exc}{did_you_mean(dataset.name, known_datasets)}")
                continue
            except DatasetError as exc:
                found.add(dataset_loc + ("params",) if dataset.params else dataset_loc, str(exc))
                continue
            if section.budget.costs is not None and len(section.budget.costs) != info.n_attributes:
                found.add(section.budget_loc + ("costs",), f"lists {len(section.budget.costs)} costs; "
                                                           f"{info.name} has d = {info.n_attributes} attributes")
            for entry, loc in known:
                _check_entry(found, config, entry, loc, section.budget, info)
    return found.lines()


def _names_known(found: Findings, entry: AlgorithmEntry, loc: Loc, table: Algorithms) -> bool:
    """Whether the entry's algorithm id and parameter names exist (each that does not is a finding)."""
    if is_target(entry.id) and table.served is None:
        try:
            get_algorithm(entry.id)
        except ParamError as exc:
            found.add(loc + ("id",), str(exc))
            return False
    accepted = table.accepted(entry.id)
    if accepted is None:
        what = "unknown algorithm" if table.served is None else f"{table.where} runs no algorithm"
        message = unknown(what, entry.id, table.names(), f"known: {', '.join(table.names())}")
        if table.served is not None and (is_target(entry.id) or _built_here(entry.id)):
            # runs here, not there: a plugin installed on this machine only, or a target the learner does not allow
            message += ("; install its package where the learner runs (it finds it without a restart), or list "
                        "its package.module:Class in the learner's BUDGETLAB_LEARNER_ALGORITHMS")
        found.add(loc + ("id",), message)
        return False
    strange = [name for name in entry.params if name not in accepted]
    for name in strange:
        found.add(loc + ("params", name), unknown(f"{entry.id} has no parameter", name, accepted,
                                                  f"it takes {', '.join(accepted) or 'none'}"))
    return not strange


def _built_here(name: str) -> bool:
    """Whether this machine has the algorithm, so that it can be built as its runs will build it."""
    try:
        get_algorithm(name)
    except ParamError:
        return False
    return True


def _check_entry(found: Findings, config: CompareConfig, entry: AlgorithmEntry, loc: Loc, budget: Budget,
                 info: DatasetInfo) -> None:
    """The entry's algorithm built on this dataset and budget, with its parameters and every [tune] value."""
    cls = algorithms()[entry.id]
    per_example = entry.per_example if entry.per_example is not None else budget.per_example
    total = entry.total if entry.total is not None else budget.total
    n = run_horizon(config.max_examples, info.n_train)
    problem = Problem(d=info.n_attributes, k=per_example, n_examples=n, total=total,
                      second_moments=np.ones(info.n_attributes) if cls.needs_second_moments else None,
                      defaults=entry_defaults(config, entry))
    what = f"{entry.label} ({entry.id}) on {info.name} with k = {per_example if per_example is not None else 'all'}"
    message = refusal(cls, problem, config.seeds[0], entry.params)
    if message:
        found.add(loc, f"{what}: {message}")
    tune = config.tune
    grid = (tune.grid.get(entry.label) or tune.grid.get(entry.id) or {}) if tune is not None else {}
    key = entry.label if tune is not None and entry.label in tune.grid else entry.id
    for name, values in grid.items():
        if name not in cls.params:
            continue  # [tune]'s own check names it
        for value in values:
            message = refusal(cls, problem, config.seeds[0], {**entry.params, name: value})
            if message:
                found.add(("tune", "grid", key, name), f"{what}, {name} = {value!r}: {message}")
