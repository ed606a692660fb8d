"""The ask/tell interface every budgeted learner implements.

For each example the runner asks ``select()`` which attributes to observe, pays for them at an
oracle, and tells ``update(observed, y)`` only those values: ``observed`` maps attribute index to
value and an attribute that was not paid for is simply absent (never 0). Algorithms hold no I/O.

Online-protocol algorithms (``protocol = "online"``) also answer ``predict_one(observed)`` after
observing and before the label is revealed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from budgetlab.contract.algorithms import AlgorithmInfo, Defaults, ParamSpec
from budgetlab.contract.base import ParamValue
from budgetlab.contract.sessions import Protocol
from budgetlab.params import parse_bool

Observed = Mapping[int, float]


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


class Algorithm(ABC):
    """Base class: subclasses set the class attributes and implement ``select``/``update``/``weights``."""

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
    # name -> (default, description); a default of None means "the paper's theoretical choice".
    params: ClassVar[dict[str, tuple[ParamValue | None, str]]] = {}
    # Parameters whose default is a rule applied as the run goes, with no one value (a running maximum, an
    # adaptive schedule): name -> the rule's name (or names). ``config`` records that name for them and they accept
    # it back, so the resolved parameters of a run reproduce it.
    rules: ClassVar[dict[str, str | tuple[str, ...]]] = {}

    def __init__(self, problem: Problem, seed: int = 0, **params: ParamValue) -> None:
        self.check_params(params)
        if problem.budget < self.min_budget:
            raise ParamError(f"{self.id} needs at least {self.min_budget} attributes per example, got {problem.budget}")
        if self.needs_second_moments and problem.second_moments is None:
            raise ParamError(f"{self.id} needs the second moments E[x_i^2] as prior knowledge")
        self.problem = problem
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        # Each value has its default's type (``_coerce``), or is a rule's name: an algorithm reads its own as such.
        self.config: dict[str, Any] = {
            name: self._coerce(name, params[name]) if name in params else default
            for name, (default, _) in self.params.items()
        }
        self.bias = 0.0

    @classmethod
    def check_params(cls, params: Iterable[str]) -> None:
        """Every name in ``params`` is a parameter of the algorithm (``params``, its spec); ParamError names those
        that are not, and the ones it takes."""
        unknown = sorted(set(params) - set(cls.params))
        if unknown:
            raise ParamError(f"{cls.id} has no parameter(s) {', '.join(unknown)}; it takes {sorted(cls.params)}")

    def _coerce(self, name: str, value: ParamValue) -> ParamValue:
        names = self.rules.get(name, ())
        if value in ((names,) if isinstance(names, str) else names):
            return value
        default = self.params[name][0]
        try:
            if isinstance(default, bool):
                return parse_bool(value)
            if isinstance(default, int):
                return int(value)
            if isinstance(default, float) or default is None:
                return value if isinstance(value, str) and default is not None else float(value)
        except (TypeError, ValueError) as exc:
            kind = "a boolean (true or false)" if isinstance(default, bool) else "a number"
            raise ParamError(f"parameter {name}={value!r} of {self.id} is not {kind}") from exc
        return value

    @abstractmethod
    def select(self) -> Sequence[int]:
        """Distinct attribute indices to observe of the next example (at most ``problem.budget``)."""

    @abstractmethod
    def update(self, observed: Observed, y: float) -> None:
        """Consume the values paid for (attribute -> value) and the example's label."""

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
            description=(cls.__doc__ or "").strip().split("\n\n")[0],
        )


def around(value: float) -> list[float]:
    """A decade either side of ``value``: the grid a tuning hint proposes."""
    return [value / 10, value, value * 10] if value > 0 else []
