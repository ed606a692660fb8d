"""What a built-in dataset family declares: its name pattern, typed parameters, sizes and generator.

A family answers ``sizes`` from its parameters alone, so listing and describing never generate data;
``build`` produces the arrays, deterministically in (arguments, parameters, seed).
"""

from __future__ import annotations

import importlib.util
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.datasets import DatasetParam, Task
from budgetlab.datasets.base import DatasetError
from budgetlab.params import parse_bool

# A generated set may hold at most this many cells (n_train + n_test) * d: 4e8 bytes at float32.
MAX_CELLS = 100_000_000


@dataclass(frozen=True)
class Param:
    """One typed parameter; ``low``/``high`` are inclusive bounds, ``choices`` the allowed strings."""

    name: str
    kind: type[int] | type[float] | type[str] | type[bool]
    default: ParamValue
    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def spec(self) -> DatasetParam:
        return DatasetParam(name=self.name, default=self.default, description=self.description)

    def coerce(self, value: ParamValue) -> ParamValue:
        """The value as the declared type (strings from a CLI included), or a DatasetError saying why not."""
        converted = self._convert(value)
        if self.choices and converted not in self.choices:
            raise DatasetError(f"parameter {self.name} must be one of {', '.join(self.choices)}; got {value!r}")
        if isinstance(converted, int | float) and not isinstance(converted, bool):
            if (self.low is not None and converted < self.low) or (self.high is not None and converted > self.high):
                raise DatasetError(f"parameter {self.name} must be in [{self._bound(self.low)}, "
                                   f"{self._bound(self.high)}]; got {value!r}")
        return converted

    def _convert(self, value: ParamValue) -> ParamValue:
        expected = f"parameter {self.name} takes {self.kind.__name__} values; got {value!r}"
        if self.kind is bool:
            try:
                return parse_bool(value)
            except ValueError:
                raise DatasetError(f"{expected} (use true or false)") from None
        if self.kind is str:
            if isinstance(value, str):
                return value.strip()
            raise DatasetError(expected)
        if isinstance(value, bool):
            raise DatasetError(expected)
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except ValueError:
            raise DatasetError(expected) from None
        if not math.isfinite(number):
            raise DatasetError(f"parameter {self.name} must be finite; got {value!r}")
        if self.kind is int:
            if not number.is_integer():
                raise DatasetError(expected)
            return int(number)
        return number

    @staticmethod
    def _bound(bound: float | None) -> str:
        return "-inf" if bound is None else f"{bound:g}"


def resolve_params(
    declared: tuple[Param, ...], given: Mapping[str, ParamValue] | None, dataset: str
) -> dict[str, ParamValue]:
    """Every declared parameter's value in effect: the given ones coerced, the rest at their defaults."""
    given = dict(given or {})
    unknown = sorted(set(given) - {p.name for p in declared})
    if unknown:
        accepted = ", ".join(p.name for p in declared) or "no parameters"
        raise DatasetError(f"{dataset} has no parameter(s) {', '.join(unknown)}; it accepts {accepted}")
    return {p.name: p.coerce(given[p.name]) if p.name in given else p.default for p in declared}


def check_cells(n_train: int, n_test: int, d: int) -> None:
    if (n_train + n_test) * d > MAX_CELLS:
        raise DatasetError(f"(n_train + n_test) * d = {(n_train + n_test) * d:,} exceeds the {MAX_CELLS:,} cells "
                           "a generated dataset may hold; lower n_train, n_test or d")


def read_only(*arrays: np.ndarray) -> None:
    """Freeze arrays shared by every session of a cached dataset."""
    for a in arrays:
        a.flags.writeable = False


@dataclass(frozen=True)
class Data:
    """The arrays a family generates; the registry wraps them into a ``Dataset``."""

    X: np.ndarray
    y: np.ndarray
    train_rows: np.ndarray
    test_rows: np.ndarray
    scale: float = 1.0
    true_weights: np.ndarray | None = None


class Family(ABC):
    """A built-in dataset, or a parameterised family of them (``pattern`` like ``mnist-AvB``)."""

    pattern: ClassVar[str]
    example: ClassVar[str]  # the instance ``list_datasets`` shows
    task: ClassVar[Task]
    source: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    # The label values of a classification task, sorted: the papers' binary tasks are -1 and +1.
    classes: ClassVar[tuple[float, ...]] = (-1.0, 1.0)
    # The Python package the data come with, where it is not one of the base install's: the set is available where
    # it is installed (the ``datasets`` extra, which the services' extras include).
    package: ClassVar[str | None] = None

    def match(self, name: str) -> tuple[int, ...] | None:
        """The arguments encoded in ``name`` if it names a member of this family, else None."""
        return () if name == self.pattern else None

    def available(self) -> bool:
        return self.package is None or importlib.util.find_spec(self.package) is not None

    def install_hint(self) -> str:
        """Where ``available()`` can be False: where the data were looked for and how to install them."""
        if self.package is None:
            return ""
        return f"its data come with the Python package {self.package}: pip install 'budgetlab[datasets]'"

    def check(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> None:
        """Rules across parameters (e.g. k <= d); raises DatasetError."""
        n_train, n_test, d = self.sizes(args, params)
        check_cells(n_train, n_test, d)

    @abstractmethod
    def describe(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> str: ...

    @abstractmethod
    def sizes(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> tuple[int, int, int]:
        """(n_train, n_test, d), computed without generating anything."""

    def costs(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> np.ndarray | None:
        """The attributes' prices the dataset declares (None: 1 each), from the parameters alone."""
        return None

    @abstractmethod
    def build(self, args: tuple[int, ...], params: dict[str, ParamValue], seed: int) -> Data: ...


class Generated(Family):
    """A generated set, whose sizes are its parameters ``n_train``, ``n_test`` and ``d``."""

    def sizes(self, args: tuple[int, ...], params: dict[str, ParamValue]) -> tuple[int, int, int]:
        return int(params["n_train"]), int(params["n_test"]), int(params["d"])
