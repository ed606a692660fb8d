"""The contract every algorithm keeps, checked on one (``budgetlab algorithms check TARGET``).

An algorithm, budgetlab's or a plugin's, is run twice on a small synthetic design in memory (a ``LocalOracle``), with
the same seed, through the ask/tell loop the runner drives, and each point of the contract is judged:

- **declares its parameters**: an ``id``, ``name``, ``paper`` and ``algorithm`` (where in the paper), each parameter
  a keyword argument of its constructor with a default, described in its docstring's ``Parameters`` section (or, the
  deprecated way before, in ``params``), an unknown parameter refused (``ParamError``), and the values in effect
  read back (``get_params()``: an attribute of each parameter's name) with nothing undeclared among them, so that a
  run's record can reproduce it;
- **sees only paid-for values**: ``update`` and ``predict_one`` receive the values of the attributes ``select`` chose;
  reading any other attribute of the example (``observed[j]``, ``observed.get(j)``) breaks the contract even when
  the algorithm then takes it for 0 (an unobserved attribute is absent, not zero);
- **respects the budget it is given**: every ``select`` returns distinct attribute indices in 0..d-1, at most the
  local budget k of ``Problem.budget`` (and the global total, for a global budget);
- **same weights for the same seed**: the two runs end with the same weights, finite and d of them (randomness comes
  from the ``seed`` the algorithm is given, e.g. ``self.rng``, never from a global generator);
- **chooses ahead as one by one**, for an algorithm that offers ``select_ahead`` only: a third run with the same seed,
  choosing 1 to 50 examples ahead at a time, chooses at least one and at most as many as asked each time, exactly
  the attributes the first run's ``select()`` chose, and ends with its weights, bit for bit.

A point that cannot be judged because the run raised says so, with the exception.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from budgetlab.contract.algorithms import AlgorithmInfo
from budgetlab.contract.budgets import Budget
from learner.algorithms import Algorithm, ParamError, get_algorithm
from learner.oracle import LocalOracle
from learner.runner import build_algorithm

PARAMETERS = "declares its parameters"
PAID_FOR = "sees only paid-for values"
BUDGET = "respects the budget it is given"
SEED = "same weights for the same seed"
POINTS = (PARAMETERS, PAID_FOR, BUDGET, SEED)
# Judged only for an algorithm that offers ``select_ahead``, after the others.
AHEAD = "chooses ahead as one by one"
# How many examples ahead the check asks for, in turn: one, a few, more than a mini-batch's end may allow.
AHEAD_LIMITS = (1, 7, 3, 50)

# The design it runs on: small enough for seconds, with every bound an algorithm may ask for declared.
DATASET = "powerlaw"
DATASET_PARAMS: dict[str, Any] = {"d": 20, "n_train": 150, "n_test": 50}
EXAMPLES = 120
SEED_USED = 7
LOCAL_BUDGET = 4
PROBE = "contract_probe_parameter"


@dataclass
class Verdict:
    point: str
    passed: bool
    reason: str


class PaidValues(Mapping[int, float]):
    """The values paid for, as ``update`` gets them, noting every read of an attribute that is not among them
    (``observed[j]`` and ``observed.get(j)``; asking ``j in observed`` is no read)."""

    def __init__(self, values: Iterable[tuple[int, float]], unpaid: list[int]) -> None:
        self.values_paid = dict(values)
        self.unpaid = unpaid

    def __getitem__(self, key: int) -> float:
        if key not in self.values_paid:
            self.unpaid.append(key)
        return self.values_paid[key]

    def __contains__(self, key: object) -> bool:
        return key in self.values_paid

    def __iter__(self) -> Iterator[int]:
        return iter(self.values_paid)

    def __len__(self) -> int:
        return len(self.values_paid)


@dataclass
class Run:
    weights: np.ndarray | None = None
    config: dict[str, Any] | None = None  # the parameters in effect at the end (``get_params()``)
    unread: str = ""  # why they could not be read back
    unpaid: list[tuple[int, int]] = field(default_factory=list)  # (example, attribute)
    over_budget: str = ""
    error: str = ""
    examples: int = 0  # the examples it learnt from before the run ended
    chosen: list[list[int]] = field(default_factory=list)  # each example's attributes, as chosen
    ahead: str = ""  # how choosing ahead broke its contract


def _budget(cls: type[Algorithm]) -> Budget:
    if cls.budget_kind == "full":
        return Budget()
    k = min(max(LOCAL_BUDGET, cls.min_budget), int(DATASET_PARAMS["d"]))
    return Budget(per_example=k, total=float(k * EXAMPLES) if cls.budget_kind == "global" else None)


def _bad_selection(wanted: list[Any], d: int, k: int, total: float | None, spent: int) -> str:
    if not all(isinstance(a, int | np.integer) and 0 <= int(a) < d for a in wanted):
        return f"select() returned {wanted!r}: not attribute indices in 0..{d - 1}"
    if len(set(wanted)) != len(wanted):
        return f"select() returned {wanted!r}: an attribute twice"
    if len(wanted) > k:
        return f"select() asked for {len(wanted)} attributes of one example; its budget is k = {k}"
    if total is not None and spent + len(wanted) > total:
        return f"select() asked for attribute {spent + len(wanted)} of a total budget of {total:g}"
    return ""


def choices(algorithm: Algorithm, ahead: bool, run: Run) -> Iterator[Sequence[int]]:
    """Each example's attributes as ``algorithm`` chooses them: ``select()`` before each, or (``ahead``) from
    ``select_ahead`` of ``AHEAD_LIMITS`` examples in turn, noting in ``run.ahead`` a call that chose none or too
    many. The caller learns from each before the next is asked for."""
    t = calls = 0
    while t < EXAMPLES:
        if not ahead:
            yield algorithm.select()
            t += 1
            continue
        limit = min(AHEAD_LIMITS[calls % len(AHEAD_LIMITS)], EXAMPLES - t)
        calls += 1
        chosen = algorithm.select_ahead(limit) or []
        if not 1 <= len(chosen) <= limit:
            run.ahead = f"select_ahead({limit}) at example {t} chose {len(chosen)} examples (1 to {limit})"
            return
        yield from chosen
        t += len(chosen)


def run_once(name: str, seed: int = SEED_USED, ahead: bool = False) -> Run:
    """The algorithm's ask/tell loop on the contract's design (choosing ahead, or one example at a time), noting what
    breaks the contract."""
    cls = get_algorithm(name)
    budget = _budget(cls)
    run = Run()
    oracle = LocalOracle(DATASET, dataset_params=DATASET_PARAMS, budget=budget, seed=seed, protocol=cls.protocol)
    try:
        algorithm = build_algorithm(name, oracle, params={}, seed=seed, max_examples=EXAMPLES)
        k, spent = algorithm.problem.budget, 0
        for t, selection in enumerate(choices(algorithm, ahead, run)):
            wanted = list(selection)
            run.chosen.append(wanted)
            run.over_budget = _bad_selection(wanted, oracle.d, k, budget.total, spent)
            if run.over_budget:
                run.over_budget = f"example {t}: {run.over_budget}"
                break
            wanted = [int(a) for a in wanted]
            spent += len(wanted)
            example, y, values = oracle.step(wanted)
            unpaid: list[int] = []
            observed = PaidValues(zip(wanted, (float(v) for v in values), strict=True), unpaid)
            if cls.protocol == "online":
                y = oracle.predict(example, float(algorithm.predict_one(observed)))
            assert y is not None
            algorithm.update(observed, y)
            run.unpaid.extend((t, j) for j in unpaid)
            run.examples += 1
        run.weights = np.asarray(algorithm.weights, dtype=np.float64)
        try:
            run.config = algorithm.get_params()
        except AttributeError as exc:  # a parameter kept under no attribute of its name
            run.unread = str(exc)
    except Exception as exc:  # a plugin may raise anything: the verdict names it
        run.error = f"{type(exc).__name__}: {exc}"
    finally:
        oracle.close()
    return run


def _parameters(cls: type[Algorithm], run: Run) -> Verdict:
    missing = [attr for attr in ("id", "name", "paper", "algorithm")
               if not isinstance(getattr(cls, attr, None), str) or not getattr(cls, attr)]
    if missing:
        return Verdict(PARAMETERS, False, f"no {', '.join(missing)} (class attributes, text)")
    try:
        AlgorithmInfo.model_validate(cls.info().model_dump())
    except Exception as exc:  # a malformed description: the verdict names it
        return Verdict(PARAMETERS, False, f"its description does not validate: {exc}")
    undescribed = [p for p, spec in cls.params.items()
                   if not (isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str) and spec[1])]
    if undescribed:
        where = ("are not (default, description) in params" if cls.legacy_params
                 else "have no description in its docstring's Parameters section")
        return Verdict(PARAMETERS, False, f"parameters {undescribed} {where}")
    try:
        cls.check_params([PROBE])
    except ParamError:
        pass
    else:
        return Verdict(PARAMETERS, False, f"an unknown parameter ({PROBE}) is accepted")
    if run.unread:
        return Verdict(PARAMETERS, False, run.unread)
    if run.config is not None:
        extra = sorted(set(run.config) - set(cls.params))
        if extra:
            return Verdict(PARAMETERS, False, f"records parameters it does not declare: {extra}")
    names = ", ".join(cls.params) or "none"
    return Verdict(PARAMETERS, True, f"id {cls.id!r}, {cls.paper}, {cls.algorithm}; parameters: {names}")


def check(name: str) -> list[Verdict]:
    """Each point of the contract for the algorithm ``name`` (an id or ``package.module:Class``), in ``POINTS``'
    order."""
    cls = get_algorithm(name)
    first, second = run_once(name), run_once(name)
    verdicts = [_parameters(cls, first)]
    if first.unpaid:
        t, j = first.unpaid[0]
        verdicts.append(Verdict(PAID_FOR, False, f"read attribute {j} of example {t}, which it did not pay for "
                                                 f"({len(first.unpaid)} such reads)"))
    elif first.error:
        verdicts.append(Verdict(PAID_FOR, False, f"the run raised {first.error}"))
    else:
        verdicts.append(Verdict(PAID_FOR, True, f"read only the attributes it selected, over {first.examples} "
                                                f"examples{stopped(first)}"))
    if first.over_budget:
        verdicts.append(Verdict(BUDGET, False, first.over_budget))
    elif first.error:
        verdicts.append(Verdict(BUDGET, False, f"the run raised {first.error}"))
    else:
        verdicts.append(Verdict(BUDGET, True, f"at most k = {_budget(cls).per_example or 'd'} distinct attributes of "
                                              "each example"))
    verdicts.append(_same_seed(first, second, int(DATASET_PARAMS["d"])))
    if cls.protocol == "batch" and cls.chooses_ahead():
        verdicts.append(_ahead(first, run_once(name, ahead=True)))
    return verdicts


def _ahead(first: Run, ahead: Run) -> Verdict:
    if ahead.ahead or ahead.error:
        return Verdict(AHEAD, False, ahead.ahead or f"the run raised {ahead.error}")
    for t, (one, chosen) in enumerate(zip(first.chosen, ahead.chosen, strict=False)):
        if one != chosen:
            return Verdict(AHEAD, False, f"example {t}: select_ahead chose {chosen}, select() {one} (the same draws "
                                         "in the same order, and no update that changes what it chooses sooner)")
    if first.weights is None or ahead.weights is None or not np.array_equal(first.weights, ahead.weights):
        return Verdict(AHEAD, False, "the same choices ended with other weights: what select() sets for update() "
                                     "must be kept for each example chosen ahead")
    return Verdict(AHEAD, True, f"select_ahead of {'/'.join(map(str, AHEAD_LIMITS))} examples chose what select() "
                                f"did, over {ahead.examples} examples, and the same weights")


def stopped(run: Run) -> str:
    return f" (the run stopped there: {BUDGET} fails)" if run.over_budget else ""


def _same_seed(first: Run, second: Run, d: int) -> Verdict:
    if first.weights is None or second.weights is None:
        return Verdict(SEED, False, f"the run raised {first.error or second.error}")
    if first.weights.shape != (d,) or not all(math.isfinite(w) for w in first.weights):
        return Verdict(SEED, False, f"weights must be {d} finite numbers, got shape {first.weights.shape}")
    if not np.array_equal(first.weights, second.weights):
        gap = float(np.max(np.abs(first.weights - second.weights)))
        return Verdict(SEED, False, f"two runs with seed {SEED_USED} ended {gap:.3g} apart: randomness not from the "
                                    "seed it is given (use self.rng)")
    return Verdict(SEED, True, f"two runs with seed {SEED_USED} gave the same {d} weights, after {first.examples} "
                               f"examples{stopped(first)}")
