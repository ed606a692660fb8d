"""Dataset names to datasets: the built-in families, then the user datasets of the data directory.

``load_dataset`` is deterministic in (name, params, seed) and cached in a bounded LRU (at most
``CACHE_ENTRIES`` datasets and ``CACHE_BYTES`` of in-memory arrays; memory-mapped arrays count as
nothing), keyed on the name, the coerced parameters and the seed, plus the data directory and the
version of a user dataset, so a dataset removed and added again is never served stale, also by
another worker process. One dataset is built at a time (a key once, even when several threads ask for it).

The cache bounds memory only if nothing else keeps an evicted dataset alive: whoever holds datasets
longer than a request (the oracle's per-session runtimes) drops the ones the cache no longer ``holds``,
checked again whenever ``evictions`` has moved, and reports each use (``cache_touch``), so that the datasets
of sessions in use are not the ones evicted.

A build's cost can be charged to whoever asked for it (``BUILD_PAYER``, set by a service for the request it serves):
the payer may refuse the build before it waits for its turn (``admit``), chooses the thread it runs on (``run``),
and is told the CPU seconds it took there (``charge``). A build inside another (a family built from another
dataset) is the outer one's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.datasets import DatasetInfo, DatasetList
from budgetlab.datasets import (
    cube,
    fashion,
    mnist,
    online_sparse,
    powerlaw,
    priced,
    sklearn_sets,
    sparse_gaussian,
    user,
)
from budgetlab.datasets.base import Dataset, DatasetError, UnknownDataset
from budgetlab.datasets.family import Family, resolve_params
from budgetlab.params import split_pair

BUILTINS: tuple[Family, ...] = (
    powerlaw.FAMILY,
    sparse_gaussian.FAMILY,
    online_sparse.FAMILY,
    mnist.FAMILY,
    fashion.FAMILY,
    sklearn_sets.DIGITS,
    sklearn_sets.DIABETES,
    priced.FAMILY,
    cube.FAMILY,
)
CACHE_ENTRIES = 16
CACHE_BYTES = 512 << 20


class BuildPayer(Protocol):
    """Who pays for the datasets built while serving a request: ``admit`` raises to refuse a build before it starts;
    ``run`` calls its argument (the build, its turn taken) on a thread of its choice and returns what it returns;
    ``charge`` takes the CPU seconds the build took on that thread (0: built meanwhile for another request), once
    after every ``admit`` that did not raise, whether the build succeeded or not."""

    def admit(self) -> None: ...

    def run(self, call: Callable[[], Dataset]) -> Dataset: ...

    def charge(self, cpu_seconds: float) -> None: ...


BUILD_PAYER: ContextVar[BuildPayer | None] = ContextVar("dataset_build_payer", default=None)
# Set while this thread builds: a build inside it is part of its cost, neither admitted nor charged again.
_building = threading.local()


class _LRU:
    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Dataset, int]] = OrderedDict()
        self._keys: dict[int, Hashable] = {}  # id of each cached dataset to its key
        self._making: set[Hashable] = set()  # keys being built now
        self._gate = threading.RLock()
        self._lock = threading.Lock()
        # Bumped whenever an entry leaves, so holders of datasets know cheaply when to check theirs again.
        self.evictions = 0

    def get(self, key: Hashable, build: Callable[[], Dataset]) -> Dataset:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            # Being built for another request: this one finds it built once through the gate, at no cost.
            free = key in self._making
        payer = None if free or getattr(_building, "active", False) else BUILD_PAYER.get()
        if payer is None:
            return self._built(key, build, [0.0])
        payer.admit()  # before the gate: a refused build never waits there
        spent = [0.0]
        try:
            return payer.run(lambda: self._built(key, build, spent))
        finally:
            payer.charge(spent[0])

    def _built(self, key: Hashable, build: Callable[[], Dataset], spent: list[float]) -> Dataset:
        """The dataset of ``key``, built by ``build`` unless another request built it meanwhile; ``spent`` gets the
        CPU seconds of this thread it took."""
        # One build at a time: datasets in the making (and their temporaries) are never counted by the byte bound,
        # so concurrent builds of many keys (sessions on many seeds) would take that much memory each at once.
        # Re-entrant, for a family built from another dataset.
        with self._gate:
            with self._lock:
                if key in self._entries:  # built meanwhile, by the request this one waited behind
                    return self._entries[key][0]
                self._making.add(key)
            outer, _building.active = getattr(_building, "active", False), True
            start = time.thread_time()
            try:
                dataset = build()
            except BaseException:
                with self._lock:
                    self._making.discard(key)
                raise
            finally:
                _building.active = outer
                spent[0] = time.thread_time() - start
            with self._lock:
                self._making.discard(key)
                self._entries[key] = (dataset, _footprint(dataset))
                self._keys[id(dataset)] = key
                self._shrink()
        return dataset

    def touch(self, dataset: Dataset) -> bool:
        """Mark ``dataset`` as just used (a holder's use counts as a load); False if the cache no longer keeps it."""
        with self._lock:
            key = self._keys.get(id(dataset))
            if key is None or self._entries[key][0] is not dataset:
                return False
            self._entries.move_to_end(key)
            return True

    def _shrink(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries
            or sum(size for _, size in self._entries.values()) > self.max_bytes
        ):
            _, (evicted, _) = self._entries.popitem(last=False)
            del self._keys[id(evicted)]
            self.evictions += 1

    def resize(self, max_entries: int, max_bytes: int) -> None:
        with self._lock:
            self.max_entries, self.max_bytes = max_entries, max_bytes
            self._shrink()

    def holds(self, dataset: Dataset) -> bool:
        with self._lock:
            key = self._keys.get(id(dataset))
            return key is not None and self._entries[key][0] is dataset

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._keys.clear()
            self.evictions += 1


def _footprint(dataset: Dataset) -> int:
    arrays = (dataset.X, dataset.y, dataset.train_rows, dataset.test_rows)
    return sum(a.nbytes for a in arrays if not isinstance(a, np.memmap))


_CACHE = _LRU(CACHE_ENTRIES, CACHE_BYTES)


def _builtin(name: str) -> tuple[Family, tuple[int, ...]] | None:
    for family in BUILTINS:
        args = family.match(name)
        if args is not None:
            if not family.available():
                raise UnknownDataset(f"{name}: the {family.pattern} data ({family.source}) is not installed here"
                                     + (f"; {family.install_hint()}" if family.install_hint() else ""))
            return family, args
    return None


def _unknown(name: str, root: Path) -> UnknownDataset:
    """Names what is served and where user datasets were looked for, and how to put one there."""
    builtins = [f.pattern for f in BUILTINS if f.available()]
    users = user.names(root)
    found = f"user datasets: {', '.join(users)}" if users else "no user datasets"
    return UnknownDataset(f"unknown dataset {name!r}; built in: {', '.join(builtins)}; {found} in the data directory "
                          f"{root} (${user.DATA_DIR_ENV} of this process, else the per-user default); "
                          f"add one with 'budgetlab datasets add FILE --target COLUMN', and '--oracle URL' for an "
                          "oracle running elsewhere")


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise DatasetError(f"seed must be a non-negative integer; got {seed!r}")


def _wrap(family: Family, name: str, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Dataset:
    data = family.build(args, params, seed)
    return Dataset(name=name, description=family.describe(args, params), task=family.task, X=data.X, y=data.y,
                   train_rows=data.train_rows, test_rows=data.test_rows, costs=family.costs(args, params),
                   params=dict(params),
                   accepted_params=[p.spec() for p in family.params], source=family.source, scale=data.scale,
                   true_weights=data.true_weights)


def load_dataset(name: str, params: Mapping[str, ParamValue] | None = None, seed: int = 0) -> Dataset:
    """The dataset ``name`` with ``params`` (strings are coerced) for ``seed``; DatasetError if there is none."""
    _check_seed(seed)
    seed = int(seed)
    found = _builtin(name)
    if found is not None:
        family, args = found
        resolved = resolve_params(family.params, params, name)
        family.check(args, resolved)
        return _CACHE.get(("builtin", name, tuple(sorted(resolved.items())), seed),
                          lambda: _wrap(family, name, args, resolved, seed))
    root = user.data_dir()
    if not user.exists(name, root):
        raise _unknown(name, root)
    resolve_params((), params, name)
    return _CACHE.get(("user", str(root.resolve()), name, user.version(name, root), seed),
                      lambda: user.load(name, seed, root))


def describe(name: str, params: Mapping[str, ParamValue] | None = None, seed: int = 0) -> DatasetInfo:
    """What ``load_dataset(name, params, seed)`` serves, computed without generating or loading any data."""
    _check_seed(seed)
    found = _builtin(name)
    if found is None:
        root = user.data_dir()
        if not user.exists(name, root):
            raise _unknown(name, root)
        resolve_params((), params, name)
        return user.info(name, root)
    family, args = found
    resolved = resolve_params(family.params, params, name)
    family.check(args, resolved)
    n_train, n_test, d = family.sizes(args, resolved)
    costs = family.costs(args, resolved)
    return DatasetInfo(name=name, description=family.describe(args, resolved), task=family.task, n_train=n_train,
                       n_test=n_test, n_attributes=d, costs=None if costs is None else [float(c) for c in costs],
                       params=resolved, accepted_params=[p.spec() for p in family.params], source=family.source)


def list_datasets() -> DatasetList:
    """Every available built-in set at its default parameters (one example per family), then the user sets."""
    available = [f for f in BUILTINS if f.available()]
    root = user.data_dir()
    return DatasetList(
        datasets=[describe(f.example) for f in available] + [user.info(name, root) for name in user.names(root)],
        families=[f.pattern for f in available if f.pattern != f.example],
    )


def label_classes(name: str) -> tuple[float, ...]:
    """The label values of the classification dataset ``name``, sorted: a built-in family's own, else those of a
    user's classification set (-1 and +1, ``user``'s rule). Known from the name alone: no data is loaded."""
    for family in BUILTINS:
        if family.match(name) is not None:
            return family.classes
    return Family.classes


def parse_dataset_spec(spec: str) -> tuple[str, dict[str, ParamValue]]:
    """``name:key=value,key=value`` (the CLI form) to the name and its parameters, values as strings."""
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise DatasetError(f"dataset spec {spec!r} has no name; the form is name:key=value,key=value")
    params: dict[str, ParamValue] = {}
    if rest.strip():
        for item in rest.split(","):
            try:
                key, value = split_pair(item, f"dataset spec {spec!r}:")
            except ValueError as exc:
                raise DatasetError(str(exc)) from None
            if key in params:
                raise DatasetError(f"dataset spec {spec!r} sets {key} twice")
            params[key] = value
    return name, params


def is_builtin_name(name: str) -> bool:
    """Whether ``name`` is taken by a built-in set or family, installed here or not."""
    try:
        return any(family.match(name) is not None for family in BUILTINS)
    except DatasetError:
        return True


def add_dataset(
    path: Path,
    target: str | int | None = None,
    name: str | None = None,
    *,
    test_fraction: float = user.DEFAULT_TEST_FRACTION,
    split_seed: int | None = None,
    data_dir: Path | None = None,
    costs: user.Costs = None,
) -> DatasetInfo:
    """Add a CSV, NPY or NPZ file as a user dataset (named after the file unless ``name`` is given).

    ``test_fraction`` of the rows are held out for testing, drawn from each session's seed unless ``split_seed``
    fixes one split for all; ``costs`` prices the attributes (see ``budgetlab.datasets.user``)."""
    name = Path(path).stem if name is None else name
    if is_builtin_name(name):
        raise DatasetError(f"{name!r} is the name of a built-in dataset; choose another name")
    return user.add(Path(path), name, user.data_dir(data_dir), target=target, test_fraction=test_fraction,
                    split_seed=split_seed, costs=costs)


def remove_dataset(name: str, data_dir: Path | None = None) -> None:
    if is_builtin_name(name):
        raise DatasetError(f"{name!r} is a built-in dataset; only user datasets can be removed")
    user.remove(name, user.data_dir(data_dir))


def cache_limits(max_entries: int = CACHE_ENTRIES, max_bytes: int = CACHE_BYTES) -> None:
    """Bound the cache to ``max_entries`` datasets and ``max_bytes`` of in-memory arrays (evicting at once)."""
    if max_entries < 1 or max_bytes < 0:
        raise ValueError("the dataset cache needs room for at least one dataset and a non-negative byte bound")
    _CACHE.resize(max_entries, max_bytes)


def cache_holds(dataset: Dataset) -> bool:
    """Whether the cache still keeps ``dataset`` (a holder of an evicted one would keep it alive on its own)."""
    return _CACHE.holds(dataset)


def cache_touch(dataset: Dataset) -> bool:
    """Count a holder's use of ``dataset`` as a load, so the datasets in use are the last evicted; False if the cache
    no longer keeps it (the holder should then let it go and load it again)."""
    return _CACHE.touch(dataset)


def cache_evictions() -> int:
    """How many datasets have left the cache so far: when it has not moved, every held dataset is still cached."""
    return _CACHE.evictions


def clear_cache() -> None:
    """Forget every cached dataset (the next load builds it again, identically)."""
    _CACHE.clear()
