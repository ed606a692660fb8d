"""Tuning as the papers did it (a grid of parameters, chosen on held-out training data), with its cost counted.

For each (design, tuned algorithm, seed) cell, the examples the comparison's run will see (the first H of its
seeded stream) are cut into folds: one validation part at their end (``folds = 1``), or k contiguous blocks. Every
grid point is run on the other examples of each fold, through the same learner and oracle as the comparison, in a
session restricted to them (``Budget.part``). Then one validation session per fold, restricted to the block,
pays for the attributes the candidates' weights need on each held-out example and scores them all by squared
error. The point with the lowest mean validation error is the cell's chosen parameters; every session of the
tuning is in the ledger, and what they paid together is the tuning's cost, reported beside the result.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Console

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget, ExamplePart
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunCreate
from budgetlab.datasets import DatasetError, describe
from budgetlab.errors import OracleError, OracleUnavailable
from budgetlab.local_session import LocalSession
from budgetlab.oracle_client import OracleClient
from budgetlab.params import split_pair
from client.config import AlgorithmEntry, CompareConfig, Design, TuneSpec, parse_value
from client.grid import Job, RunOutcome, execute
from learner.algorithms import ParamError, get_algorithm
from learner.runner import run_horizon
from learner.test_time import top_k_attributes

VALIDATION_CHUNK = 64  # held-out examples observed per request


class TuneError(ValueError):
    """A ``[tune]`` section that cannot run: it names an algorithm or a parameter the comparison does not have."""


def tuned_entries(tune: TuneSpec, entries: list[AlgorithmEntry]) -> dict[str, dict[str, list[ParamValue]]]:
    """label -> its grid, for the entries of one design that the grid names by label or by id."""
    return {e.label: tune.grid[e.label] if e.label in tune.grid else tune.grid[e.id]
            for e in entries if e.label in tune.grid or e.id in tune.grid}


def check_tune(config: CompareConfig, designs: list[Design], source: str) -> None:
    """Every grid key is an algorithm of the comparison and every parameter one it takes, with values to try."""
    tune = config.tune
    if tune is None:
        return
    entries = {e.label: e for d in designs for e in d.algorithms}
    ids = {e.id for e in entries.values()}
    for key, grid in tune.grid.items():
        if key not in entries and key not in ids:
            raise TuneError(f"{source}: [tune] names {key!r}, which is no algorithm of this comparison; "
                            f"labels: {', '.join(sorted(entries))}; ids: {', '.join(sorted(ids))}")
        algorithm_id = entries[key].id if key in entries else key
        try:
            accepted = get_algorithm(algorithm_id).params
        except ParamError as exc:
            raise TuneError(f"{source}: [tune] {key!r}: {exc}") from None
        for name, values in grid.items():
            if name not in accepted:
                raise TuneError(f"{source}: [tune] {key!r} ({algorithm_id}) has no parameter {name!r}; it takes "
                                f"{', '.join(sorted(accepted))}")
            if not values:
                raise TuneError(f"{source}: [tune] {key!r} parameter {name!r} lists no value to try")
    if not any(tuned_entries(tune, d.algorithms) for d in designs):
        raise TuneError(f"{source}: [tune] tunes nothing")


def parse_tune_option(text: str) -> tuple[str, str, list[ParamValue]]:
    """``ALGORITHM:PARAM=V1,V2,...`` (the ``--tune`` option) as (algorithm, parameter, values)."""
    try:
        target, values = split_pair(text, "--tune")
    except ValueError:
        target = values = ""
    algorithm, colon, name = (part.strip() for part in target.rpartition(":"))
    if not colon or not algorithm or not name or not values:
        raise TuneError(f"--tune {text!r} is not ALGORITHM:PARAM=V1,V2,...")
    return algorithm, name, [parse_value(v.strip()) for v in values.split(",") if v.strip()]




def with_tune_options(config: CompareConfig, options: list[str], folds: int | None) -> CompareConfig:
    """The config with the command line's ``--tune`` grids (they replace the file's grid of that parameter)."""
    if not options and folds is None:
        return config
    grid = {k: dict(v) for k, v in (config.tune.grid if config.tune else {}).items()}
    for option in options:
        algorithm, name, values = parse_tune_option(option)
        grid.setdefault(algorithm, {})[name] = values
    base = config.tune.model_dump() if config.tune else {}
    spec = TuneSpec.model_validate({**base, "grid": grid, **({"folds": folds} if folds is not None else {})})
    return config.model_copy(update={"tune": spec})


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
class Tuning:
    """The tuning of one (design, algorithm, seed) cell: its grid, folds, sessions and choice."""

    design: int
    entry: AlgorithmEntry
    seed: int
    candidates: list[dict[str, ParamValue]]
    folds: list[tuple[int, int]]
    horizon: int
    fits: list[RunOutcome] = field(default_factory=list)  # candidate-major: fits[c * len(folds) + f]
    validations: list[Validation] = field(default_factory=list)
    chosen: dict[str, ParamValue] = field(default_factory=dict)
    message: str = ""

    def fit(self, candidate: int, fold: int) -> RunOutcome:
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

    def json(self) -> dict[str, Any]:
        return {"design": self.design, "label": self.entry.label, "id": self.entry.id, "seed": self.seed,
                "horizon": self.horizon, "folds": [list(f) for f in self.folds], "candidates": self.candidates,
                "scores": self.scores(), "chosen": self.chosen, "attributes": self.attributes, "cost": self.cost,
                "sessions": self.sessions, "message": self.message,
                "fits": [{"candidate": c, "fold": f, "run_id": o.run_id, "session": o.result.session,
                          "status": o.result.status, "attributes": o.result.attributes, "audit": o.audit,
                          "message": o.result.message}
                         for c in range(len(self.candidates)) for f in range(len(self.folds))
                         if (o := self.fit(c, f))],
                "validations": [{"fold": v.fold, "session": v.session, "examples": v.examples,
                                 "attributes": v.attributes, "cost": v.cost, "audit": v.audit, "errors": v.errors,
                                 "message": v.message} for v in self.validations]}


def folds_of(horizon: int, tune: TuneSpec) -> list[tuple[int, int]]:
    """The validation blocks, as positions of the run's stream: the last share, or k contiguous blocks."""
    if tune.folds == 1:
        held = min(horizon - 1, max(1, round(horizon * tune.validation)))
        return [(horizon - held, horizon)]
    return [(j * horizon // tune.folds, (j + 1) * horizon // tune.folds) for j in range(tune.folds)]


def plan(config: CompareConfig, designs: list[Design]) -> list[Tuning]:
    """One ``Tuning`` per (design, tuned algorithm, seed); raises TuneError when a design has too few examples."""
    tune = config.tune
    if tune is None:
        return []
    cells = []
    for i, design in enumerate(designs):
        grids = tuned_entries(tune, design.algorithms)
        for seed in config.seeds:
            for entry in design.algorithms:
                if entry.label not in grids:
                    continue
                try:
                    n = describe(design.dataset.name, design.dataset.params, seed).n_train
                except DatasetError as exc:
                    raise TuneError(f"cannot tune on {design.dataset.name}: {exc}") from None
                horizon = run_horizon(config.max_examples, n)
                if horizon < 2 * tune.folds or horizon < 2:
                    raise TuneError(f"{design.name}: {horizon} examples cannot be split into {tune.folds} fold(s)")
                names = list(grids[entry.label])
                candidates = [dict(zip(names, values, strict=True))
                              for values in itertools.product(*(grids[entry.label][k] for k in names))]
                cells.append(Tuning(i, entry, seed, candidates, folds_of(horizon, tune), horizon))
    return cells


def _budget(design: Design, entry: AlgorithmEntry) -> Budget:
    return design.budget.model_copy(update={k: v for k, v in (("per_example", entry.per_example),
                                                              ("total", entry.total)) if v is not None})


def _text(params: dict[str, ParamValue]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def fit_jobs(tunings: list[Tuning], designs: list[Design], config: CompareConfig, oracle_url: str) -> list[Job]:
    """Every (candidate, fold) of every cell as a run on the fold's training part (the rest of the H examples)."""
    jobs = []
    for t in tunings:
        design = designs[t.design]
        for candidate in t.candidates:
            for f, (start, stop) in enumerate(t.folds):
                examples = t.horizon - (stop - start)
                budget = _budget(design, t.entry).model_copy(update={"part": ExamplePart(start=start, stop=stop,
                                                                                         complement=True)})
                request = RunCreate(oracle_url=oracle_url, dataset=design.dataset.name,
                                    dataset_params=design.dataset.params, algorithm=t.entry.id,
                                    params={**t.entry.params, **candidate}, defaults=t.entry.defaults,
                                    budget=budget, seed=t.seed,
                                    max_examples=examples, eval_every=examples)
                label = f"tune {t.entry.label} {_text(candidate)} f{f + 1}/{len(t.folds)}"
                jobs.append(Job(t.design, t.entry.model_copy(update={"label": label}), t.seed, request))
    return jobs


def _support(weights: np.ndarray, k: int | None) -> np.ndarray:
    if k is not None:
        return np.asarray(top_k_attributes(weights, k), dtype=np.int64)
    return np.flatnonzero(weights)


def validate_fold(tuning: Tuning, fold: int, design: Design, tune: TuneSpec, open_session: Callable[..., Any],
                  audit: Callable[[Any], tuple[str, bool | None]]) -> Validation:
    """Score every candidate fitted on this fold by squared error on its held-out block, in one session that pays
    for the union of the attributes their weights use (an attribute already paid for is free again)."""
    start, stop = tuning.folds[fold]
    found = Validation(fold)
    fitted = []
    for c in range(len(tuning.candidates)):
        result = tuning.fit(c, fold).result
        if result.status in COMPLETED_RUN_STATUSES and result.weights:
            w = np.asarray(result.weights, dtype=np.float64)
            mask = np.zeros_like(w)
            mask[_support(w, tune.validation_attributes)] = 1.0
            fitted.append((c, w * mask, result.bias))
    found.errors = [None] * len(tuning.candidates)
    if not fitted:
        found.message = "no candidate's fit completed"
        return found
    W = np.array([w for _, w, _ in fitted])
    bias = np.array([b for _, _, b in fitted])
    attributes = [int(a) for a in np.flatnonzero(np.any(W != 0, axis=0))]
    base = design.budget
    budget = Budget(per_example=len(attributes), costs=base.costs, label_cost=base.label_cost,
                    part=ExamplePart(start=start, stop=stop))
    squared = np.zeros(len(fitted))
    try:
        session = open_session(budget)
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
        found.audit, found.audit_compliant = audit(session)
        session.close()
    except (OracleError, OracleUnavailable) as exc:
        found.message = f"validation session failed: {exc}"
        return found
    for (c, _, _), total in zip(fitted, squared, strict=True):
        found.errors[c] = float(total / max(found.examples, 1))
    return found


def validate(tunings: list[Tuning], designs: list[Design], tune: TuneSpec, oracle_url: str | None,
             parallel: int) -> None:
    """Every fold's validation session, then each cell's choice (the first of the best, in grid order)."""

    def one(t: Tuning) -> None:
        design = designs[t.design]

        def open_session(budget: Budget) -> Any:
            if oracle_url is None:
                return LocalSession.open(design.dataset.name, dataset_params=design.dataset.params, budget=budget,
                                         seed=t.seed)
            assert client is not None
            return client.open_session(design.dataset.name, dataset_params=design.dataset.params, budget=budget,
                                       seed=t.seed)

        def audit(session: Any) -> tuple[str, bool | None]:
            if oracle_url is None:
                return "local (no ledger)", None
            report = session.audit()
            return ("compliant" if report.compliant else "NOT compliant: " + "; ".join(report.reasons),
                    report.compliant)

        t.validations = [validate_fold(t, f, design, tune, open_session, audit) for f in range(len(t.folds))]
        scores = t.scores()
        ranked = [(s, c) for c, s in enumerate(scores) if s is not None]
        if ranked:
            t.chosen = dict(t.candidates[min(ranked)[1]])
        else:
            t.message = "no candidate could be scored: the comparison runs its configured parameters"

    client = OracleClient(oracle_url) if oracle_url else None
    try:
        with ThreadPoolExecutor(max(1, parallel)) as pool:
            list(pool.map(one, tunings))
    finally:
        if client is not None:
            client.close()


def attach_fits(tunings: list[Tuning], outcomes: list[RunOutcome]) -> None:
    """Hand the fit runs (in ``fit_jobs`` order) back to their cells."""
    at = 0
    for t in tunings:
        size = len(t.candidates) * len(t.folds)
        t.fits = outcomes[at : at + size]
        at += size


def chosen_params(tunings: list[Tuning]) -> dict[tuple[int, str, int], dict[str, ParamValue]]:
    """(design, label, seed) -> the parameters the comparison's run uses in place of the configured ones."""
    return {(t.design, t.entry.label, t.seed): {**t.entry.params, **t.chosen} for t in tunings if t.chosen}


def run_tuning(config: CompareConfig, designs: list[Design], *, local: bool, learner_url: str | None,
               oracle_url: str | None, parallel: int, console: Console, learner_token: str | None = None,
               restart_grace: float = 0.0) -> list[Tuning]:
    """Plan, fit (through the same runner as the comparison, as ``learner_token``'s caller), validate and choose;
    empty without ``[tune]``."""
    tunings = plan(config, designs)
    if not tunings or config.tune is None:
        return []
    jobs = fit_jobs(tunings, designs, config, oracle_url or "local")
    console.print(f"tuning: {len(jobs)} runs ({len(tunings)} cells x grid x folds), then "
                  f"{sum(len(t.folds) for t in tunings)} validation sessions", soft_wrap=True)
    attach_fits(tunings, execute(jobs, designs, local=local, learner_url=learner_url, parallel=parallel,
                                 console=console, run_timeout=config.run_timeout, learner_token=learner_token,
                                 restart_grace=restart_grace))
    validate(tunings, designs, config.tune, None if local else oracle_url, parallel)
    return tunings
