"""Tuning as the papers did it (a grid of parameters, chosen on held-out training data), with its cost counted.

For one run (an algorithm, its parameters, dataset, budget and seed), the examples the run will see (the first H of
its seeded stream) are cut into folds: one validation part at their end (``folds = 1``), or k contiguous blocks.
Every grid point is run on the other examples of each fold, in a session restricted to them (``Budget.part``).
Then one validation session per fold, restricted to the block, pays for the attributes the candidates' weights need
on each held-out example and scores them all by squared error. The point with the lowest mean validation error is
the chosen parameters; every session of the tuning is paid for (in the ledger when the oracle keeps one), and what
they paid together is the tuning's cost, reported beside the result.

``budgetlab run --tune``, ``BudgetedRegressor(tune=...)`` and ``budgetlab compare``'s ``[tune]`` all tune through
this module: ``tune_run`` does it for one run, in-process or over HTTP; ``compare`` plans many ``Cell``s and runs
their fits through its grid (``client.comparison.tune``).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget, ExamplePart
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunCreate, RunResult, TuningReport
from budgetlab.errors import OracleError, OracleUnavailable
from learner.algorithms import get_algorithm
from learner.prediction_budget import top_k_attributes
from learner.runner import run_horizon
from learner.scoring import OpenOracle, run_and_score

VALIDATION_CHUNK = 64  # held-out examples observed per request
VALIDATION_SHARE = 0.2  # the share held out when folds = 1


class TuningError(ValueError):
    """A grid that cannot be tuned: too few examples for its folds, or no value to try."""


class Fit(Protocol):
    """A fit run of a grid point on a fold's training part: its result, and the audit of its session."""

    result: RunResult
    audit: str
    audit_compliant: bool | None
    run_id: str | None


@dataclass
class LocalFit:
    """A fit run made here (not through a learner service)."""

    result: RunResult
    audit: str = "local (no ledger)"
    audit_compliant: bool | None = None
    run_id: str | None = None


@dataclass
class Validation:
    """One fold's validation session: what it paid and each candidate's mean squared error on the block."""

    fold: int
    session: str | None = None
    examples: int = 0
    attributes: int = 0
    cost: float = 0.0
    audit: str = ""
    audit_compliant: bool | None = None
    errors: list[float | None] = field(default_factory=list)
    message: str = ""


@dataclass
class Cell:
    """The tuning of one run: the run's request (its algorithm, parameters, budget, seed), the grid's candidates,
    the folds over its H examples, the fit runs and validation sessions, and the choice."""

    request: RunCreate
    candidates: list[dict[str, ParamValue]]
    folds: list[tuple[int, int]]
    horizon: int
    fits: list[Fit] = field(default_factory=list)  # candidate-major: fits[c * len(folds) + f]
    validations: list[Validation] = field(default_factory=list)
    chosen: dict[str, ParamValue] = field(default_factory=dict)
    message: str = ""

    @property
    def seed(self) -> int:
        return self.request.seed

    def fit(self, candidate: int, fold: int) -> Fit:
        return self.fits[candidate * len(self.folds) + fold]

    def scores(self) -> list[float | None]:
        """Each candidate's validation error, averaged over the folds (None if a fold could not score it)."""
        out: list[float | None] = []
        for c in range(len(self.candidates)):
            errors = [v.errors[c] if c < len(v.errors) else None for v in self.validations]
            ok = [e for e in errors if e is not None]
            out.append(statistics.fmean(ok) if ok and len(ok) == len(self.folds) else None)
        return out

    @property
    def attributes(self) -> int:
        return sum(f.result.attributes for f in self.fits) + sum(v.attributes for v in self.validations)

    @property
    def cost(self) -> float:
        return sum(f.result.cost for f in self.fits) + sum(v.cost for v in self.validations)

    @property
    def sessions(self) -> int:
        """Fit runs and validations (in-process ones included: they are sessions of a LocalOracle)."""
        return len(self.fits) + sum(v.session is not None for v in self.validations)

    def audits(self) -> list[bool | None]:
        return [f.audit_compliant for f in self.fits] + [v.audit_compliant for v in self.validations]

    def params(self) -> dict[str, ParamValue]:
        """The run's parameters with the chosen grid point in place of the given ones."""
        return {**self.request.params, **self.chosen}

    def fit_requests(self) -> list[RunCreate]:
        """Every (candidate, fold) as a run on the fold's training part (the rest of the H examples)."""
        requests = []
        for candidate in self.candidates:
            for start, stop in self.folds:
                examples = self.horizon - (stop - start)
                part = ExamplePart(start=start, stop=stop, complement=True)
                requests.append(self.request.model_copy(update={
                    "params": {**self.request.params, **candidate},
                    "budget": self.request.budget.model_copy(update={"part": part}),
                    "max_examples": examples, "eval_every": examples, "test_budget": None}))
        return requests

    def json(self) -> dict[str, Any]:
        return {"seed": self.seed, "horizon": self.horizon, "folds": [list(f) for f in self.folds],
                "candidates": self.candidates, "scores": self.scores(), "chosen": self.chosen,
                "attributes": self.attributes, "cost": self.cost, "sessions": self.sessions, "message": self.message,
                "fits": [{"candidate": c, "fold": f, "run_id": o.run_id, "session": o.result.session,
                          "status": o.result.status, "attributes": o.result.attributes, "audit": o.audit,
                          "message": o.result.message}
                         for c in range(len(self.candidates)) for f in range(len(self.folds))
                         if (o := self.fit(c, f))],
                "validations": [{"fold": v.fold, "session": v.session, "examples": v.examples,
                                 "attributes": v.attributes, "cost": v.cost, "audit": v.audit, "errors": v.errors,
                                 "message": v.message} for v in self.validations]}

    def report(self) -> TuningReport:
        """What a run's result says of its tuning (``RunResult.tuning``)."""
        return TuningReport(candidates=self.candidates, folds=[list(f) for f in self.folds], scores=self.scores(),
                            chosen=self.chosen, sessions=self.sessions, attributes=self.attributes, cost=self.cost,
                            message=self.message)


def folds_of(horizon: int, folds: int, validation: float = VALIDATION_SHARE) -> list[tuple[int, int]]:
    """The validation blocks, as positions of the run's stream: the last share, or k contiguous blocks."""
    if folds == 1:
        held = min(horizon - 1, max(1, round(horizon * validation)))
        return [(horizon - held, horizon)]
    return [(j * horizon // folds, (j + 1) * horizon // folds) for j in range(folds)]


def grid_points(grid: dict[str, list[ParamValue]]) -> list[dict[str, ParamValue]]:
    """Every combination of the grid's values, in the grid's order."""
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[k] for k in names))]


def plan(request: RunCreate, grid: dict[str, list[ParamValue]], n_examples: int, folds: int = 1,
         validation: float = VALIDATION_SHARE) -> Cell:
    """The tuning of ``request`` over its first min(max_examples, n_examples) examples; TuningError when there are
    too few examples for the folds, or a parameter lists no value."""
    empty = [name for name, values in grid.items() if not values]
    if not grid or empty:
        raise TuningError(f"the tuning grid lists no value to try{' for ' + ', '.join(empty) if empty else ''}")
    horizon = run_horizon(request.max_examples, n_examples)
    if horizon < 2 * folds or horizon < 2:
        raise TuningError(f"{horizon} examples cannot be split into {folds} fold(s)")
    return Cell(request, grid_points(grid), folds_of(horizon, folds, validation), horizon)


def _support(weights: np.ndarray, k: int | None) -> np.ndarray:
    if k is not None:
        return np.asarray(top_k_attributes(weights, k), dtype=np.int64)
    return np.flatnonzero(weights)


def validate_fold(cell: Cell, fold: int, open_oracle: OpenOracle, validation_attributes: int | None = None,
                  audit: Callable[[Any], tuple[str, bool | None]] | None = None) -> Validation:
    """Score every candidate fitted on this fold by squared error on its held-out block, in one session that pays
    for the union of the attributes their weights use (an attribute already paid for is free again).

    ``validation_attributes`` = K scores each candidate from its K largest weights only; ``audit`` gives the
    session's audit (default: the oracle's, or "local (no ledger)" for an in-process session)."""
    start, stop = cell.folds[fold]
    found = Validation(fold)
    fitted = []
    for c in range(len(cell.candidates)):
        result = cell.fit(c, fold).result
        if result.status in COMPLETED_RUN_STATUSES and result.weights:
            w = np.asarray(result.weights, dtype=np.float64)
            mask = np.zeros_like(w)
            mask[_support(w, validation_attributes)] = 1.0
            fitted.append((c, w * mask, result.bias))
    found.errors = [None] * len(cell.candidates)
    if not fitted:
        found.message = "no candidate's fit completed"
        return found
    W = np.array([w for _, w, _ in fitted])
    bias = np.array([b for _, _, b in fitted])
    attributes = [int(a) for a in np.flatnonzero(np.any(W != 0, axis=0))]
    base = cell.request.budget
    budget = Budget(per_example=len(attributes), costs=base.costs, label_cost=base.label_cost,
                    part=ExamplePart(start=start, stop=stop))
    squared = np.zeros(len(fitted))
    try:
        oracle = open_oracle(split="train", protocol="batch", budget=budget)
        session = oracle.session  # type: ignore[attr-defined]  # SessionOracle: the SDK's or the local session
        found.session = session.id
        n = session.info.n_examples
        while found.examples < n:
            issued = [session.next() for _ in range(min(VALIDATION_CHUNK, n - found.examples))]
            X = np.zeros((len(issued), W.shape[1]))
            if attributes:
                answer = session.observe_batch([(r.example, attributes) for r in issued])
                X[:, attributes] = np.array([item.values for item in answer.items])
                found.attributes += answer.fresh
                found.cost = answer.spent
            y = np.array([r.label for r in issued], dtype=np.float64)
            squared += ((X @ W.T + bias - y[:, None]) ** 2).sum(axis=0)
            found.examples += len(issued)
        found.audit, found.audit_compliant = (audit or _audit)(oracle)
        session.close()
        oracle.close()
    except (OracleError, OracleUnavailable) as exc:
        found.message = f"validation session failed: {exc}"
        return found
    for (c, _, _), total in zip(fitted, squared, strict=True):
        found.errors[c] = float(total / max(found.examples, 1))
    return found


def _audit(oracle: Any) -> tuple[str, bool | None]:
    if oracle.session_id is None:
        return "local (no ledger)", None
    report = oracle.session.audit()
    return "compliant" if report.compliant else "NOT compliant: " + "; ".join(report.reasons), report.compliant


def choose(cell: Cell) -> None:
    """The candidate with the lowest mean validation error (the first of the best, in grid order)."""
    ranked = [(s, c) for c, s in enumerate(cell.scores()) if s is not None]
    if ranked:
        cell.chosen = dict(cell.candidates[min(ranked)[1]])
    else:
        cell.message = "no candidate could be scored: the run uses its given parameters"


def validate(cell: Cell, open_oracle: OpenOracle, validation_attributes: int | None = None) -> None:
    """Every fold's validation session, then the choice."""
    cell.validations = [validate_fold(cell, f, open_oracle, validation_attributes) for f in range(len(cell.folds))]
    choose(cell)


def tune_run(request: RunCreate, grid: dict[str, list[ParamValue]], open_oracle: OpenOracle, n_examples: int, *,
             folds: int = 1, validation: float = VALIDATION_SHARE, validation_attributes: int | None = None,
             progress: Callable[[str], None] | None = None) -> Cell:
    """Tune one run here, one session after another, through ``open_oracle`` (in-process or over HTTP): fit every
    candidate on every fold, validate, choose. ``n_examples`` is the training split's size."""
    accepted = get_algorithm(request.algorithm).params
    unknown = sorted(set(grid) - set(accepted))
    if unknown:
        raise TuningError(f"{request.algorithm} has no parameter(s) {', '.join(unknown)} to tune; it takes "
                          f"{', '.join(sorted(accepted))}")
    cell = plan(request, grid, n_examples, folds, validation)
    protocol = get_algorithm(request.algorithm).protocol
    for i, fit in enumerate(cell.fit_requests()):
        if progress is not None:
            progress(f"tuning {request.algorithm}: fit {i + 1} of {len(cell.candidates) * len(cell.folds)}")
        oracle = open_oracle(split="train", protocol=protocol, budget=fit.budget)
        try:
            result = run_and_score(fit, oracle, open_oracle)
            cell.fits.append(LocalFit(result, *_audit(oracle)))
        finally:
            oracle.close()
    if progress is not None:
        progress(f"tuning {request.algorithm}: {len(cell.folds)} validation session(s)")
    validate(cell, open_oracle, validation_attributes)
    return cell
