"""The ask/tell interface every budgeted learner implements.

For each example the runner asks ``select()`` which attributes to observe, pays for them at an
oracle, and tells ``update(observed, y)`` only those values: ``observed`` maps attribute index to
value and an attribute that was not paid for is simply absent (never 0). Algorithms hold no I/O.

Online-protocol algorithms (``protocol = "online"``) also answer ``predict_one(observed)`` after
observing and before the label is revealed.

An algorithm's parameters are the keyword arguments of its constructor, after ``problem`` and ``seed``, each with
its type and its default, described in the class docstring's numpydoc ``Parameters`` section, as scikit-learn and
River declare their estimators. The listing (``params``, ``info()``: the CLI, the learner's API, the docs, the
contract check) is derived from the signature and the docstrings once, when the class is defined; constructing an
algorithm reads each given value by its annotation first (``read_params``). ``__init__`` keeps each parameter as an
attribute of its name, holding the value in effect once the algorithm has resolved its default, and ``get_params()``
reads them back: a run's resolved parameters.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Literal, cast

import numpy as np

from budgetlab.contract.algorithms import AlgorithmInfo, Defaults, ParamSpec
from budgetlab.contract.base import ParamValue
from budgetlab.contract.sessions import Protocol
from budgetlab.params import parse_bool, read_value

Observed = Mapping[int, float]


class PaidRow(Mapping[int, float]):
    """One step's values as the oracle answered them: the ``attributes`` ``select()`` chose (ints) and their
    ``attribute_values`` (floats), in that order. It is the ``observed`` of ``update`` (attribute -> value, only what
    was paid for: an unobserved attribute is absent), whose dict is made at its first read by key or iteration, so
    that an algorithm that reads the values in their order or not at all (``Algorithm.takes_paid_row``) never pays for
    it: 65 ns an attribute, 51 us a step of a full-information learner on MNIST's 784 attributes."""

    __slots__ = ("attributes", "attribute_values", "_by_key")

    def __init__(self, attributes: list[int], attribute_values: list[float]) -> None:
        self.attributes = attributes
        self.attribute_values = attribute_values
        self._by_key: dict[int, float] | None = None

    def _mapping(self) -> dict[int, float]:
        if self._by_key is None:
            self._by_key = dict(zip(self.attributes, self.attribute_values, strict=True))
        return self._by_key

    def __getitem__(self, attribute: int) -> float:
        return self._mapping()[attribute]

    def __iter__(self) -> Iterator[int]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self.attributes)

    def __contains__(self, attribute: object) -> bool:
        return attribute in self._mapping()


@dataclass(frozen=True)
class DataScale:
    """The bounds the papers' theorems assume about the data, as the oracle declares them (free, recorded prior).

    ``max_norm2`` = max ||x||_2, ``max_abs`` = max |x_i|, ``max_label`` = max |y|, ``mean_sq_norm`` = E||x||^2,
    ``max_second_moment`` = max_i E[x_i^2]; ``weight_norm2``/``weight_norm1`` bound ||w*||_2 and ||w*||_1 (a
    synthetic design's generating w*, or the oracle's stand-in for real data: ``generated`` says which). ``unit()``
    is the papers' normalised setting, every bound 1, for an algorithm built without an oracle.
    """

    max_norm2: float = 1.0
    max_abs: float = 1.0
    max_label: float = 1.0
    mean_sq_norm: float = 1.0
    max_second_moment: float = 1.0
    weight_norm2: float = 1.0
    weight_norm1: float = 1.0
    generated: bool = True

    @classmethod
    def unit(cls) -> DataScale:
        return cls()

    @classmethod
    def declared(cls, prior: object) -> DataScale:
        """From the oracle's moments answer (``MomentsResponse``); a zero bound (no data) counts as 1."""
        bounds = {name: float(getattr(prior, name)) or 1.0 for name in cls.__dataclass_fields__ if name != "generated"}
        return cls(**bounds, generated=str(getattr(prior, "weight_source", "")).startswith("generating"))

    def radius2(self, given: float | None = None) -> float:
        """The L2 ball of the ridge theorems: ||w*||_2 <= B, widened to max|y| / max||x||_2 so |y| <= B ||x||."""
        return float(given) if given is not None else max(self.weight_norm2, self.max_label / self.max_norm2)

    def radius1(self, given: float | None = None) -> float:
        """The L1 ball of the lasso theorems: ||w*||_1 <= B, widened to max|y| / max|x_i|."""
        return float(given) if given is not None else max(self.weight_norm1, self.max_label / self.max_abs)


@dataclass(frozen=True)
class Problem:
    """What an algorithm is told about its task before it starts.

    ``k`` is the local budget: the number of distinct attributes it may observe of each example
    (``None``: all ``d``). ``n_examples`` is the horizon m used by the theoretical step sizes.
    ``second_moments`` is E[x_i^2], given only to algorithms that declare ``needs_second_moments``;
    ``scale`` is the data's declared bounds (``DataScale``), given to algorithms that declare ``needs_scale``
    (the oracle records both prior-knowledge reveals in its ledger). Without an oracle ``scale`` is the
    papers' normalised setting, ``DataScale.unit()``. ``defaults`` says which values fill the parameters not
    given: ``"practical"`` (the data-adaptive defaults each docstring describes) or ``"theory"`` (the theorems'
    constants for the declared scale). ``costs`` is the price of each attribute in the session (public), given to
    algorithms that declare ``needs_costs``; None: every attribute costs the same.
    """

    d: int
    k: int | None
    n_examples: int
    total: float | None = None
    second_moments: np.ndarray | None = None
    scale: DataScale = field(default_factory=DataScale.unit)
    defaults: Defaults = "practical"
    costs: np.ndarray | None = None

    @property
    def theory(self) -> bool:
        """The theorems' constants are asked for (``defaults = "theory"``)."""
        return self.defaults == "theory"

    @property
    def budget(self) -> int:
        return self.d if self.k is None else min(self.k, self.d)


class ParamError(ValueError):
    """An unknown or ill-typed algorithm parameter (a 4xx for the services)."""


def docstring_parameters(doc: str | None) -> dict[str, str]:
    """The descriptions of a docstring's numpydoc ``Parameters`` section: a line ``name`` (or ``name : type``), then its
    description on the more indented lines below it, joined into one line; the section ends at a blank line."""
    lines = inspect.cleandoc(doc or "").splitlines()
    found: dict[str, str] = {}
    for at, line in enumerate(lines[:-1]):
        if line.strip() == "Parameters" and set(lines[at + 1].strip()) == {"-"}:
            name = ""
            for entry in lines[at + 2:]:
                if not entry.strip():
                    break
                if entry == entry.lstrip():
                    name = entry.partition(":")[0].strip()
                    found[name] = ""
                elif name:
                    found[name] = f"{found[name]} {entry.strip()}".strip()
            break
    return found


def _initialiser(cls: type) -> Any:
    """The ``__init__`` an instance of ``cls`` runs (its own, or the nearest base class's)."""
    return next(klass.__dict__["__init__"] for klass in cls.__mro__ if "__init__" in klass.__dict__)


def keyword_parameters(cls: type[Algorithm]) -> dict[str, tuple[ParamValue | None, str]] | None:
    """The parameters ``cls``'s constructor declares, in order: each keyword after ``problem`` and ``seed`` to its
    default and its description (the first docstring along the class's bases that describes it). None when the
    constructor takes ``**params``: the parameters are then those its class attribute ``params`` declares (an algorithm
    with no parameters needs neither, nor a constructor of its own)."""
    initialiser = _initialiser(cls)
    if initialiser is Algorithm.__dict__["__init__"]:
        by_hand = any("params" in klass.__dict__ for klass in cls.__mro__ if klass not in (Algorithm, object))
        return None if by_hand else {}
    parameters = list(inspect.signature(initialiser).parameters.values())[3:]  # self, problem, seed
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    docs: dict[str, str] = {}
    for klass in cls.__mro__:
        for name, description in docstring_parameters(klass.__dict__.get("__doc__")).items():
            docs.setdefault(name, description)
    declared: dict[str, tuple[ParamValue | None, str]] = {}
    for p in parameters:
        if p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is p.empty:
            raise TypeError(f"{cls.__qualname__}.__init__: the parameter {p.name} needs a default (a run may give "
                            "none) and is given by keyword")
        declared[p.name] = (p.default, docs.get(p.name, ""))
    return declared


@cache
def _annotations(cls: type[Algorithm]) -> dict[str, Any]:
    """The types of the constructor's parameters, as ``read_params`` reads values by them."""
    return typing.get_type_hints(_initialiser(cls))


class AlgorithmType(ABCMeta):
    """The type of every algorithm class: ``Cls(problem, seed, **params)`` reads the parameters first
    (``Algorithm.read_params``: each value by its declared type, an unknown name refused with the names it takes),
    then constructs the algorithm with them."""

    def __call__(cls, problem: Problem, seed: int = 0, **params: Any) -> Any:
        return super().__call__(problem, seed, **cast("type[Algorithm]", cls).read_params(params))


class Algorithm(metaclass=AlgorithmType):
    """Base class of every algorithm, budgetlab's and the plugins': a subclass sets the class attributes (``id``,
    ``name``, ``paper``, ``algorithm``; what it needs of the oracle), implements ``select``, ``update`` and
    ``weights``, and declares its parameters as the keyword arguments of ``__init__`` after ``problem`` and ``seed``,
    as scikit-learn and River declare estimators:

        def __init__(self, problem: Problem, seed: int = 0, *, eta: float | None = None) -> None:
            super().__init__(problem, seed)
            self.eta = 0.1 if eta is None else eta  # the value in effect

    each with its type and its default (None: worked out from the problem), and described in the class docstring's
    numpydoc ``Parameters`` section (a line with the name, its description indented below it). The listing
    (``params``, ``info()``) is derived from them once, when the class is defined; ``Cls(problem, seed, **params)``
    reads each value by its type first (``read_params``), and ``get_params()`` reads the attributes back: a run's
    resolved parameters. A parameter whose default is a rule with no one value (a step size that adapts) takes the
    rule's name as a ``Literal`` choice (``float | Literal["adaptive"] | None``), which its attribute then holds."""

    id: ClassVar[str]
    name: ClassVar[str]
    paper: ClassVar[str]
    algorithm: ClassVar[str]
    protocol: ClassVar[Protocol] = "batch"
    budget_kind: ClassVar[Literal["local", "global", "full"]] = "local"
    needs_second_moments: ClassVar[bool] = False
    # Whether the algorithm uses the attributes' prices (``Problem.costs``).
    needs_costs: ClassVar[bool] = False
    # Whether the default parameters use the data's declared scale (``Problem.scale``).
    needs_scale: ClassVar[bool] = False
    min_budget: ClassVar[int] = 1
    # Whether ``update`` (and ``predict_one``) take the step's values as a ``PaidRow`` rather than a dict: for an
    # algorithm that reads them in ``select()``'s order or not at all (read by key, a dict costs less).
    takes_paid_row: ClassVar[bool] = False
    # name -> (default, description), derived from the constructor's keywords and the docstrings when the class is
    # defined; a default of None means "the paper's choice", resolved from the problem. Declared by hand only the way
    # before keyword parameters (a constructor taking ``**params``; deprecated): ``config`` then holds the values.
    params: ClassVar[dict[str, tuple[ParamValue | None, str]]] = {}
    # The way before keyword parameters only: parameters whose default is a rule with no one value, name -> the
    # rule's name (or names), which they accept back. A keyword parameter says so in its type (``Literal``).
    rules: ClassVar[dict[str, str | tuple[str, ...]]] = {}
    # Whether the parameters are declared the way before keyword parameters (``params`` and ``**params``).
    legacy_params: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = keyword_parameters(cls)
        cls.legacy_params = declared is None
        if declared is None:
            if cls.__dict__.get("params"):
                warnings.warn(f"{cls.__module__}.{cls.__qualname__} declares its parameters in params, read through "
                              "self.config: declare them as keyword arguments of __init__ instead (the way before "
                              "them still works, and is deprecated)", DeprecationWarning, stacklevel=3)
            return
        if "params" in cls.__dict__:
            raise TypeError(f"{cls.__qualname__} declares params and keyword parameters: its parameters are its "
                            "constructor's keywords (their descriptions in its docstring's Parameters section)")
        cls.params = declared

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        """``params``: the way before keyword parameters only (read into ``config``); a subclass declaring keyword
        parameters calls ``super().__init__(problem, seed)``."""
        if problem.budget < self.min_budget:
            raise ParamError(f"{self.id} needs at least {self.min_budget} attributes per example, got {problem.budget}")
        if self.needs_second_moments and problem.second_moments is None:
            raise ParamError(f"{self.id} needs the second moments E[x_i^2] as prior knowledge")
        self.problem = problem
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        if self.legacy_params:
            self.check_params(params)
            self.config: dict[str, Any] = {name: params[name] if name in params else default
                                           for name, (default, _) in self.params.items()}
        self.bias = 0.0

    @classmethod
    def check_params(cls, params: Iterable[str]) -> None:
        """Every name in ``params`` is a parameter of the algorithm (``params``, its spec); ParamError names those
        that are not, and the ones it takes."""
        unknown = sorted(set(params) - set(cls.params))
        if unknown:
            raise ParamError(f"{cls.id} has no parameter(s) {', '.join(unknown)}; it takes {sorted(cls.params)}")

    @classmethod
    def read_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters as the constructor takes them: the names checked (``check_params``), each value read by its
        declared type (``budgetlab.params.read_value``: ``"0.5"`` as 0.5 for a float, a rule's name as it is), a
        ``ParamError`` saying which value does not fit."""
        cls.check_params(params)
        annotations = {} if cls.legacy_params else _annotations(cls)
        read = {}
        for name, value in params.items():
            try:  # a parameter without an annotation is read by its default's type, as before keyword parameters
                read[name] = read_value(value, annotations[name]) if name in annotations else cls._read_by_default(
                    name, value)
            except ValueError as exc:
                raise ParamError(f"parameter {name}={value!r} of {cls.id} {exc}") from None
        return read

    @classmethod
    def _read_by_default(cls, name: str, value: ParamValue) -> ParamValue:
        """A value as the way before keyword parameters read it: by its default's type, or a rule's name."""
        names = cls.rules.get(name, ())
        default = cls.params[name][0]
        if value in ((names,) if isinstance(names, str) else names) or (value is None and default is None):
            return value
        try:
            if isinstance(default, bool):
                return parse_bool(value)
            if isinstance(default, int):
                return int(value)
            if isinstance(default, float) or default is None:
                return float(value)
        except (TypeError, ValueError):
            raise ValueError("is not a boolean (true or false)" if isinstance(default, bool)
                             else "is not a number") from None
        return value

    def get_params(self) -> dict[str, Any]:
        """The parameters in effect, by name (a run's resolved parameters): each constructor keyword's attribute, as
        the algorithm resolved it (a rule's name where the value is a rule, such as ``"adaptive"``); some resolve only
        once they have seen data (a two-phased learner's step size), so read them at the end of a run."""
        if self.legacy_params:
            return dict(self.config)
        missing = [name for name in self.params if not hasattr(self, name)]
        if missing:
            raise AttributeError(f"{self.id} keeps no attribute for its parameter(s) {', '.join(missing)}: its "
                                 f"__init__ sets self.{missing[0]} = {missing[0]} (the value in effect)")
        return {name: getattr(self, name) for name in self.params}

    @abstractmethod
    def select(self) -> Sequence[int]:
        """Distinct attribute indices to observe of the next example (at most ``problem.budget``)."""

    @abstractmethod
    def update(self, observed: Observed, y: float) -> None:
        """Consume the values paid for (attribute -> value) and the example's label."""

    def select_ahead(self, limit: int) -> list[Sequence[int]] | None:
        """The attributes of each of the next examples, at most ``limit`` of them (and at least one), chosen before any
        of them is seen; None (the default): the algorithm does not choose ahead.

        An algorithm offers it where its choices do not depend on what the examples show until some point: the
        full-information references (every attribute, always), a mini-batch learner (its support fixed within the
        batch). The selections must be exactly those ``select()`` would return, called before each of the same
        examples in turn with ``update()`` between: the same random numbers drawn in the same order, so that a run
        that chooses ahead ends with the weights of one that does not, bit for bit. The caller then calls
        ``update()`` once for each selection, in order, and ``select()`` for none of them: whatever ``select()``
        would have set for its ``update()`` (the draws it made), ``select_ahead`` keeps for each of them
        (``shared.lookahead.Ahead``). The runner sends the rounds of a batch-protocol run in one request
        (``Oracle.paid_steps``); an online run predicts between rounds and never asks."""
        return None

    @classmethod
    def chooses_ahead(cls) -> bool:
        """Whether it offers ``select_ahead`` (overrides it)."""
        return cls.select_ahead is not Algorithm.select_ahead

    @property
    @abstractmethod
    def weights(self) -> np.ndarray:
        """The current predictor (the average where the paper outputs an average)."""

    def predict_one(self, observed: Observed) -> float:
        """Prediction from observed values only (online protocol); default <w, x> over what was seen."""
        w = self.current_weights()
        return float(sum(w[i] * v for i, v in observed.items())) + self.bias

    def current_weights(self) -> np.ndarray:
        """The iterate w_t used for online predictions; averaging algorithms override ``weights``."""
        return self.weights

    def tuning_hint(self) -> dict[str, list[float]] | None:
        """Values worth trying for the parameter that moves this run most (a decade either side of the value it
        used last), for the line that says why a run stayed near the zero predictor (``learner.diagnosis``)."""
        return None

    @classmethod
    def info(cls) -> AlgorithmInfo:
        return AlgorithmInfo(
            id=cls.id,
            name=cls.name,
            paper=cls.paper,
            algorithm=cls.algorithm,
            protocol=cls.protocol,
            budget_kind=cls.budget_kind,
            params=[ParamSpec(name=n, default=d, description=t) for n, (d, t) in cls.params.items()],
            chooses_ahead=cls.chooses_ahead(),
            description=(cls.__doc__ or "").strip().split("\n\n")[0],
        )


def around(value: float) -> list[float]:
    """A decade either side of ``value``: the grid a tuning hint proposes."""
    return [value / 10, value, value * 10] if value > 0 else []
