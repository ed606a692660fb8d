"""A comparison's ``[tune]`` section (and ``--tune``): its grids checked against the config, one tuning per
(design, tuned algorithm, seed) cell, the cells' fit runs executed through the comparison's grid (the same learner
and oracle as its runs), then validated and chosen.

The tuning itself (folds, fits restricted with ``Budget.part``, validation sessions, the choice and what it paid)
is ``learner.tuning``'s, which ``budgetlab run --tune`` and the estimator use too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.datasets import DatasetError, describe
from budgetlab.params import split_pair
from client.comparison.config import AlgorithmEntry, CompareConfig, Design, TuneSpec, parse_value
from client.comparison.grid import Job, RunOutcome, execute
from client.comparison.preflight import Algorithms
from learner.cluster import RunPool
from learner.scoring import session_opener
from learner.tuning import Cell, TuningError
from learner.tuning import plan as plan_cell
from learner.tuning import validate as validate_cell


class TuneError(ValueError):
    """A ``[tune]`` section that cannot run: it names an algorithm or a parameter the comparison does not have."""


def tuned_entries(tune: TuneSpec, entries: list[AlgorithmEntry]) -> dict[str, dict[str, list[ParamValue]]]:
    """label -> its grid, for the entries of one design that the grid names by label or by id."""
    return {e.label: tune.grid[e.label] if e.label in tune.grid else tune.grid[e.id]
            for e in entries if e.label in tune.grid or e.id in tune.grid}


def check_tune(config: CompareConfig, designs: list[Design], source: str, table: Algorithms | None = None) -> None:
    """Every grid key is an algorithm of the comparison and every parameter one it takes (``table``: the
    algorithms the runs can name, default this machine's), with values to try."""
    tune = config.tune
    if tune is None:
        return
    table = table or Algorithms()
    entries = {e.label: e for d in designs for e in d.algorithms}
    ids = {e.id for e in entries.values()}
    for key, grid in tune.grid.items():
        if key not in entries and key not in ids:
            raise TuneError(f"{source}: [tune] names {key!r}, which is no algorithm of this comparison; "
                            f"labels: {', '.join(sorted(entries))}; ids: {', '.join(sorted(ids))}")
        algorithm_id = entries[key].id if key in entries else key
        accepted = table.accepted(algorithm_id)
        if accepted is None:
            raise TuneError(f"{source}: [tune] {key!r}: {table.where} runs no algorithm {algorithm_id!r}")
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


@dataclass(kw_only=True)
class Tuning(Cell):
    """The tuning of one (design, algorithm, seed) cell of a comparison (``learner.tuning.Cell``)."""

    design: int
    entry: AlgorithmEntry

    def json(self) -> dict[str, Any]:
        return {"design": self.design, "label": self.entry.label, "id": self.entry.id, **super().json()}


def plan(config: CompareConfig, designs: list[Design], api_key: str | None = None) -> list[Tuning]:
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
                request = RunCreate(dataset=design.dataset.name, dataset_params=design.dataset.params,
                                    algorithm=entry.id, params=entry.params, defaults=entry.defaults,
                                    budget=_budget(design, entry), seed=seed, max_examples=config.max_examples,
                                    api_key=api_key)
                try:
                    cell = plan_cell(request, grids[entry.label], n, tune.folds, tune.validation)
                except TuningError as exc:
                    raise TuneError(f"{design.name}: {exc}") from None
                cells.append(Tuning(cell.request, cell.candidates, cell.folds, cell.horizon, design=i, entry=entry))
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
        requests = iter(t.fit_requests())
        for candidate in t.candidates:
            for f in range(len(t.folds)):
                request = next(requests).model_copy(update={"oracle_url": oracle_url})
                label = f"tune {t.entry.label} {_text(candidate)} f{f + 1}/{len(t.folds)}"
                jobs.append(Job(t.design, t.entry.model_copy(update={"label": label}), t.seed, request))
    return jobs


def validate(tunings: list[Tuning], designs: list[Design], tune: TuneSpec, oracle_url: str | None,
             parallel: int) -> None:
    """Every fold's validation session (``learner.tuning.validate``), then each cell's choice."""

    def one(t: Tuning) -> None:
        validate_cell(t, session_opener(t.request, oracle_url), tune.validation_attributes)
        if not t.chosen:
            t.message = "no candidate could be scored: the comparison runs its configured parameters"

    with ThreadPoolExecutor(max(1, parallel)) as pool:
        list(pool.map(one, tunings))


def attach_fits(tunings: list[Tuning], outcomes: list[RunOutcome]) -> None:
    """Hand the fit runs (in ``fit_jobs`` order) back to their cells."""
    at = 0
    for t in tunings:
        size = len(t.candidates) * len(t.folds)
        t.fits = list(outcomes[at : at + size])  # a list of Fits (a list of RunOutcomes is not one)
        at += size


def chosen_params(tunings: list[Tuning]) -> dict[tuple[int, str, int], dict[str, ParamValue]]:
    """(design, label, seed) -> the parameters the comparison's run uses in place of the configured ones."""
    return {(t.design, t.entry.label, t.seed): t.params() for t in tunings if t.chosen}


def run_tuning(config: CompareConfig, designs: list[Design], *, local: bool, learner_url: str | None,
               oracle_url: str | None, parallel: int, console: Console, learner_token: str | None = None,
               restart_grace: float = 0.0, pool: RunPool | None = None, api_key: str | None = None) -> list[Tuning]:
    """Plan, fit (through the same runner as the comparison, as ``learner_token``'s caller; ``local``: on the
    comparison's Dask workers, ``pool``), validate and choose; empty without ``[tune]``. The sessions draw on
    ``api_key``'s account, if given."""
    tunings = plan(config, designs, api_key)
    if not tunings or config.tune is None:
        return []
    jobs = fit_jobs(tunings, designs, config, oracle_url or "local")
    console.print(f"tuning: {len(jobs)} runs ({len(tunings)} cells x grid x folds), then "
                  f"{sum(len(t.folds) for t in tunings)} validation sessions", soft_wrap=True)
    attach_fits(tunings, execute(jobs, designs, local=local, learner_url=learner_url, parallel=parallel,
                                 console=console, run_timeout=config.run_timeout, learner_token=learner_token,
                                 restart_grace=restart_grace, pool=pool))
    validate(tunings, designs, config.tune, None if local else oracle_url, parallel)
    return tunings
