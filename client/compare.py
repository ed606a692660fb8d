"""Scripted comparisons: algorithms x seeds on one dataset and budget, every run in its own oracle session.

A TOML config names the dataset, the budget, the seeds and the algorithms; optional ``[[designs]]`` repeat the
comparison on several datasets or budgets (the papers' alphas, scenarios and digit pairs), each reported in its own
section. Runs go through the learner service (``POST /v1/runs``, polled) or, with ``local``, in-process on a
``LocalOracle``. Repetition r uses seed ``seeds[r]`` for every algorithm, so all algorithms see the same dataset
draw and the same example order.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from budgetlab.models import COMPLETED_RUN_STATUSES, Budget, ParamValue, RunCreate, RunInfo, RunResult

POLL_SECONDS = 0.2
FINISHED = {"finished", "budget_exhausted", "oracle_unavailable", "failed", "cancelled"}
Metric = Literal["test_mse", "normalized_mse"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetSpec(Strict):
    name: str
    params: dict[str, ParamValue] = Field(default_factory=dict)


class AlgorithmEntry(Strict):
    """One line of the comparison: an algorithm id with its label, parameters and (optionally) its own budget."""

    id: str
    label: str = ""
    params: dict[str, ParamValue] = Field(default_factory=dict)
    per_example: int | None = Field(None, ge=1, description="own local budget, e.g. d for full-information references")
    total: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _default_label(self) -> AlgorithmEntry:
        self.label = self.label or self.id
        return self


class DesignSpec(Strict):
    """A section of a comparison; unset fields are taken from the top level of the config."""

    name: str
    description: str = ""
    dataset: DatasetSpec | None = None
    datasets: list[str] = Field(default_factory=list, description="one design per dataset name, summarised together")
    budget: Budget | None = None
    algorithms: list[AlgorithmEntry] | None = None
    regret_k: int | None = Field(None, ge=1, description="sparsity of the comparator of the regret (online runs)")


class QuickSpec(Strict):
    """What ``--quick`` changes: fewer seeds, fewer examples, fewer designs, smaller synthetic data."""

    seeds: list[int] | None = None
    max_examples: int | None = Field(None, ge=1)
    eval_every: int | None = Field(None, ge=1)
    designs: list[str] | None = None
    max_datasets: int | None = Field(None, ge=1)
    dataset_params: dict[str, ParamValue] = Field(default_factory=dict)


class CompareConfig(Strict):
    title: str
    description: str = ""
    expected_time: str = Field("", description="how long the full comparison takes (presets state it)")
    dataset: DatasetSpec | None = None
    budget: Budget = Field(default_factory=Budget)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    max_examples: int | None = Field(None, ge=1)
    eval_every: int | None = Field(None, ge=1)
    test_budget: int | None = Field(None, ge=1)
    metric: Metric = "test_mse"
    log_x: bool = False
    regret_k: int | None = Field(None, ge=1)
    algorithms: list[AlgorithmEntry] = Field(default_factory=list)
    designs: list[DesignSpec] = Field(default_factory=list)
    quick: QuickSpec = Field(default_factory=QuickSpec)

    @model_validator(mode="after")
    def _complete(self) -> CompareConfig:
        if not self.designs and self.dataset is None:
            raise ValueError("name a [dataset] or at least one [[designs]] entry")
        if not self.algorithms and any(d.algorithms is None for d in self.designs or [DesignSpec(name="")]):
            raise ValueError("list the [[algorithms]] to compare")
        for design in self.designs:
            if design.dataset is None and not design.datasets and self.dataset is None:
                raise ValueError(f"design {design.name!r} names no dataset")
        return self


@dataclass
class Design:
    """One resolved section: a dataset, a budget and the algorithms run on it for every seed."""

    name: str
    description: str
    dataset: DatasetSpec
    budget: Budget
    algorithms: list[AlgorithmEntry]
    group: str = ""
    regret_k: int | None = None


def load_config(path: Path) -> CompareConfig:
    with path.open("rb") as f:
        return CompareConfig.model_validate(tomllib.load(f))


def quick_config(config: CompareConfig) -> CompareConfig:
    """The config with its ``[quick]`` overrides applied."""
    q = config.quick
    update: dict[str, Any] = {}
    if q.seeds is not None:
        update["seeds"] = q.seeds
    if q.max_examples is not None:
        update["max_examples"] = min(q.max_examples, config.max_examples or q.max_examples)
    if q.eval_every is not None:
        update["eval_every"] = q.eval_every
    designs = [d for d in config.designs if q.designs is None or d.name in q.designs]
    if q.max_datasets is not None:
        designs = [d.model_copy(update={"datasets": d.datasets[: q.max_datasets]}) for d in designs]
    update["designs"] = designs
    if q.dataset_params:
        if config.dataset is not None:
            update["dataset"] = _with_params(config.dataset, q.dataset_params)
        update["designs"] = [d.model_copy(update={"dataset": _with_params(d.dataset, q.dataset_params)})
                             if d.dataset is not None else d for d in designs]
    return config.model_copy(update=update)


def _with_params(dataset: DatasetSpec, params: dict[str, ParamValue]) -> DatasetSpec:
    from budgetlab.datasets import describe

    accepted = {p.name for p in describe(dataset.name, dataset.params).accepted_params}
    return DatasetSpec(name=dataset.name, params={**dataset.params, **{k: v for k, v in params.items()
                                                                       if k in accepted}})


def resolve_designs(config: CompareConfig) -> list[Design]:
    specs = config.designs or [DesignSpec(name=config.title)]
    designs: list[Design] = []
    for spec in specs:
        budget = spec.budget or config.budget
        entries = spec.algorithms if spec.algorithms is not None else config.algorithms
        regret_k = spec.regret_k or config.regret_k
        if spec.datasets:
            designs += [Design(name=f"{spec.name}: {name}", description=spec.description,
                               dataset=DatasetSpec(name=name), budget=budget, algorithms=entries, group=spec.name,
                               regret_k=regret_k) for name in spec.datasets]
        else:
            dataset = spec.dataset or config.dataset
            assert dataset is not None
            designs.append(Design(name=spec.name, description=spec.description,
                                  dataset=dataset, budget=budget, algorithms=entries, regret_k=regret_k))
    return designs


# --- the grid of runs ------------------------------------------------------------------------------


@dataclass
class RunOutcome:
    """One (design, algorithm, seed) cell: the run's result, its audit and, for online runs, its regret."""

    design: int
    entry: AlgorithmEntry
    seed: int
    result: RunResult
    audit: str = ""
    audit_compliant: bool | None = None
    regret: float | None = None
    regret_curve: list[float] = field(default_factory=list)
    run_id: str | None = None


@dataclass
class Job:
    design: int
    entry: AlgorithmEntry
    seed: int
    request: RunCreate


def jobs_for(config: CompareConfig, designs: list[Design], oracle_url: str) -> list[Job]:
    jobs = []
    for i, design in enumerate(designs):
        for seed in config.seeds:
            for entry in design.algorithms:
                budget = design.budget.model_copy(update={k: v for k, v in
                                                          (("per_example", entry.per_example), ("total", entry.total))
                                                          if v is not None})
                request = RunCreate(oracle_url=oracle_url, dataset=design.dataset.name,
                                    dataset_params=design.dataset.params, algorithm=entry.id, params=entry.params,
                                    budget=budget, seed=seed, max_examples=config.max_examples,
                                    eval_every=config.eval_every, test_budget=config.test_budget)
                jobs.append(Job(i, entry, seed, request))
    return jobs


def failed_result(request: RunCreate, message: str, status: str = "failed") -> RunResult:
    return RunResult(algorithm=request.algorithm, dataset=request.dataset, dataset_params=request.dataset_params,
                     params=request.params, seed=request.seed, status=status, message=message)  # type: ignore[arg-type]


@contextmanager
def progress_bars(console: Console, enabled: bool) -> Iterator[Progress]:
    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=not enabled)
    with bars:
        yield bars


def _label(job: Job, designs: list[Design]) -> str:
    where = f" · {designs[job.design].name[:32]}" if len(designs) > 1 else ""
    return f"{job.entry.label[:24]} · seed {job.seed}{where}"


def run_local(jobs: list[Job], designs: list[Design], *, parallel: int, bars: Progress) -> list[RunOutcome]:
    """Every job in-process on its own LocalOracle, ``parallel`` at a time."""

    def one(job: Job) -> RunOutcome:
        task = bars.add_task(_label(job, designs), total=job.request.max_examples, info="")
        result = execute_local(job.request, lambda done, total, info: bars.update(task, completed=done, total=total,
                                                                                   info=info))
        bars.update(task, info=result.status)
        return RunOutcome(job.design, job.entry, job.seed, result, audit="local (no ledger)")

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(one, jobs))


def execute_local(request: RunCreate, report: Callable[[int, int, str], None]) -> RunResult:
    """One run on a LocalOracle; whatever goes wrong ends as a failed result, never an exception."""
    from learner.algorithms import get_algorithm
    from learner.scoring import run_and_score, session_opener

    try:
        open_oracle = session_opener(request, None)
        oracle = open_oracle(split="train", protocol=get_algorithm(request.algorithm).protocol,
                             budget=request.budget)
        horizon = min(request.max_examples or oracle.n_examples, oracle.n_examples)
        try:
            return run_and_score(request, oracle, open_oracle,
                                 progress=lambda p: report(p.examples, horizon, f"attrs {p.attributes}"))
        finally:
            oracle.close()
    except Exception as exc:  # a failing run is reported as failed; the others complete
        return failed_result(request, f"{type(exc).__name__}: {exc}")


def run_service(jobs: list[Job], designs: list[Design], *, learner_url: str, parallel: int,
                bars: Progress) -> list[RunOutcome]:
    """Every job through the learner service, at most ``parallel`` in flight, polled until it ends."""
    outcomes: list[RunOutcome | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    flying: dict[int, tuple[str, TaskID]] = {}
    with httpx.Client(base_url=learner_url, timeout=60) as http:
        while pending or flying:
            while pending and len(flying) < max(1, parallel):
                i = pending.pop(0)
                job = jobs[i]
                task = bars.add_task(_label(job, designs), total=job.request.max_examples, info="")
                answer = http.post("/v1/runs", json=job.request.model_dump(mode="json"))
                if answer.status_code != 201:
                    message = _error_text(answer)
                    outcomes[i] = RunOutcome(job.design, job.entry, job.seed, failed_result(job.request, message))
                    bars.update(task, info=f"failed: {message[:60]}")
                    continue
                flying[i] = (RunInfo.model_validate_json(answer.content).id, task)
            time.sleep(POLL_SECONDS)
            for i, (run_id, task) in list(flying.items()):
                info = RunInfo.model_validate_json(http.get(f"/v1/runs/{run_id}").content)
                bars.update(task, completed=info.progress_examples, total=info.max_examples,
                            info=f"attrs {info.progress_attributes} {info.status}")
                if info.status in FINISHED:
                    job = jobs[i]
                    result = info.result or failed_result(job.request, info.message, info.status)
                    if info.result is None:
                        result.curve, result.session = info.curve, info.session
                    outcomes[i] = RunOutcome(job.design, job.entry, job.seed, result, run_id=run_id)
                    del flying[i]
        for outcome in outcomes:
            assert outcome is not None
            audit_outcome(http, outcome)
    return [o for o in outcomes if o is not None]


def _error_text(answer: httpx.Response) -> str:
    try:
        body = answer.json()
        return f"{body.get('error', answer.status_code)}: {body.get('detail', '')}"
    except ValueError:
        return f"HTTP {answer.status_code}: {answer.text[:200]}"


def audit_outcome(http: httpx.Client, outcome: RunOutcome) -> None:
    """The oracle's audit of the run's session, through the learner that holds the session's token."""
    if outcome.run_id is None or outcome.result.session is None:
        outcome.audit = "no session (the run did not start)"
        return
    answer = http.get(f"/v1/runs/{outcome.run_id}/audit")
    if answer.status_code != 200:
        outcome.audit = f"audit failed: {_error_text(answer)}"
        return
    report = answer.json()
    outcome.audit_compliant = bool(report.get("compliant"))
    outcome.audit = ("compliant" if outcome.audit_compliant
                     else "NOT compliant: " + "; ".join(report.get("reasons", [])))


def attach_regret(outcomes: list[RunOutcome], designs: list[Design]) -> None:
    """R_T against the best k-sparse predictor in hindsight (Ito et al. eq. (1)) of online runs, per curve point."""
    from budgetlab.datasets import DatasetError, load_dataset
    from learner.algorithms import get_algorithm
    from learner.regret import best_sparse, stream_arrays

    comparators: dict[tuple[int, int, int], float] = {}
    for outcome in outcomes:
        design = designs[outcome.design]
        result = outcome.result
        try:
            online = get_algorithm(outcome.entry.id).protocol == "online"
        except ValueError:
            online = False
        if not online or design.regret_k is None or result.cumulative_loss is None or not result.curve:
            continue
        try:
            dataset = load_dataset(design.dataset.name, design.dataset.params, outcome.seed)
        except DatasetError:
            continue
        X, y = stream_arrays(dataset, "train", outcome.seed, result.examples)
        # The paper's comparator lies in the unit ball (Assumption (1)); it is the same for every algorithm of a
        # design and seed, so it is found once per prefix length.
        outcome.regret_curve = []
        for p in result.curve:
            key = (outcome.design, outcome.seed, p.examples)
            if key not in comparators:
                comparators[key] = best_sparse(X[: p.examples], y[: p.examples], design.regret_k, radius=1.0).loss
            if p.cumulative_loss is not None:
                outcome.regret_curve.append(p.cumulative_loss - comparators[key])
        outcome.regret = outcome.regret_curve[-1] if outcome.regret_curve else None


def run_comparison(config: CompareConfig, *, local: bool, learner_url: str | None, oracle_url: str | None,
                   parallel: int, console: Console, show_progress: bool = True) -> tuple[list[Design],
                                                                                        list[RunOutcome]]:
    designs = resolve_designs(config)
    jobs = jobs_for(config, designs, oracle_url or "local")
    with progress_bars(console, show_progress) as bars:
        if local:
            outcomes = run_local(jobs, designs, parallel=parallel, bars=bars)
        else:
            assert learner_url is not None and oracle_url is not None
            outcomes = run_service(jobs, designs, learner_url=learner_url, parallel=parallel, bars=bars)
    attach_regret(outcomes, designs)
    return designs, outcomes


# --- the command ---------------------------------------------------------------------------------


def run_compare(*, config: Path | None, out: Path | None, preset: str | None, quick: bool, list_presets: bool,
                local: bool, learner: str | None, oracle: str | None, parallel: int, console: Console,
                err: Console, fail: Callable[[str], None]) -> Path | None:
    """``budgetlab compare``: resolve the config, run the grid where asked, write the report; returns its path."""
    from pydantic import ValidationError

    from client.presets import UnknownPreset, load_preset, presets
    from client.report import write_report
    from client.sandbox import ServiceError, managed_services

    if list_presets:
        for name, cfg in presets().items():
            console.print(f"[bold]{name}[/]  ({cfg.expected_time or 'run time not stated'}; --quick under a minute)"
                          f"\n    {cfg.title}", soft_wrap=True)
        return None
    if (config is None) == (preset is None):
        fail("give a CONFIG.toml or --preset NAME (see --list)")
    if out is None:
        fail("give --out DIR for the report")
    if local and (learner or oracle):
        fail("--local runs in-process: drop --learner/--oracle")
    if bool(learner) != bool(oracle):
        fail("give both --learner and --oracle, or neither (then both services are started here)")
    assert out is not None
    try:
        cfg = load_preset(preset, quick=quick) if preset else load_config(config)  # type: ignore[arg-type]
        if quick and not preset:
            cfg = quick_config(cfg)
    except (UnknownPreset, ValidationError, tomllib.TOMLDecodeError) as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    started = time.perf_counter()

    def grid(learner_url: str | None, oracle_url: str | None) -> tuple[list[Design], list[RunOutcome]]:
        return run_comparison(cfg, local=local, learner_url=learner_url, oracle_url=oracle_url, parallel=parallel,
                              console=err)

    try:
        if local or learner:
            designs, outcomes = grid(learner, oracle)
            mode = "local (in-process LocalOracle, no ledger)" if local else f"learner {learner}, oracle {oracle}"
        else:
            with managed_services(out) as (oracle_url, learner_url, ledger):
                designs, outcomes = grid(learner_url, oracle_url)
            mode = f"services started by budgetlab compare (ledger {ledger})"
    except (ServiceError, httpx.TransportError) as exc:
        fail(f"services unavailable: {exc}")
        raise AssertionError("unreachable") from None
    report = write_report(out, cfg, designs, outcomes, mode=mode, preset=preset, quick=quick,
                          wall_time=time.perf_counter() - started)
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} runs completed; report: {report}", soft_wrap=True)
    return report
