"""What a comparison is: the TOML config of ``budgetlab compare`` (and of the presets), and its designs.

A config names the dataset, the budget, the seeds and the algorithms; optional ``[[designs]]`` repeat the
comparison on several datasets or budgets (the papers' alphas, scenarios and digit pairs), each reported in its own
section. ``resolve_designs`` turns a config into those sections; ``quick_config`` applies its ``[quick]`` overrides.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from budgetlab.contract.algorithms import DEFAULTS_DESCRIPTION, Defaults
from budgetlab.contract.base import ParamValue, Strict
from budgetlab.contract.budgets import Budget
from budgetlab.datasets import describe
from client.comparison.config_errors import ConfigError, shape_errors

Metric = Literal["test_mse", "normalized_mse"]


class DatasetSpec(Strict):
    name: str
    params: dict[str, ParamValue] = Field(default_factory=dict)


class AlgorithmEntry(Strict):
    """One line of the comparison: an algorithm id with its label, parameters and (optionally) its own budget.

    ``defaults = "theory"`` fills the parameters not in ``params`` with the theorems' constants instead of the
    practical defaults; unset, the config's top-level ``defaults`` applies (``resolve_designs`` fills it in).
    """

    id: str
    label: str = ""
    params: dict[str, ParamValue] = Field(default_factory=dict)
    defaults: Defaults | None = Field(None, description=DEFAULTS_DESCRIPTION + "; default: the config's")
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


ClaimKind = Literal["ordering", "value", "ratio", "difference", "rho"]
# Words that claim more than an order: such an ordering needs a margin.
APART = re.compile(r"\b(considerabl[ey]|substantial(ly)?|significant(ly)?|much)\b", re.IGNORECASE)
ClaimMetric = Literal["test_mse", "normalized_mse", "zero_one", "regret", "attributes"]


class ClaimSpec(Strict):
    """One ``[[claims]]`` entry: a result the paper reports, and how ``client.comparison.claims`` checks it in ours.

    ``ordering``: the algorithms of ``order`` have increasing ``metric`` (best first); an entry may be a list of
    labels, a tier: every member of a tier lies below every member of the next (``["A1", ["A2", "A3"], ["G", "U"]]``:
    A1 below A2 and A3, both below G and U), the members of a tier unordered. ``value``: ``metric`` of
    ``algorithm`` lies below ``below`` / above ``above``. ``ratio``: the same for ``algorithm`` over ``over``;
    ``difference``: for ``algorithm`` minus ``over`` (a gap in points of 0-1 error, as a paper quotes two rates).
    ``rho``: the improvement ratio of Kukliansky & Shamir (eqs. (11)-(12)) of the design's data is within
    ``tolerance`` of ``target``. A ``design`` that names a group (``datasets = [...]``) takes the median over it.
    A claim is never loosened to hold: one that fails here keeps the paper's statement and names its ``cause``.

    Every claim about runs is decided by paired tests over the seeds (``client.comparison.verdicts``); an ordering that
    says its algorithms are "considerably", "substantially" or "significantly" apart states the ``margin`` it needs.
    """

    claim: str = Field(..., description="the paper's words, shortened")
    source: str = Field(..., description="where in the paper: 'Fig. 1', 'Table 3, (10, 2, 4)'")
    paper: str = Field(..., description="the paper's figure as printed, e.g. '17.19 < 20.59 < 26.88'")
    quote: str = Field("", description="the sentence or table cell of the paper the claim stands for, verbatim "
                       "(every preset's claims have one; the report shows it)")
    cause: str = Field("", description="why the claim does not hold here, with numbers: data size, regime, a "
                       "detail the paper leaves unstated. A claim with a cause is expected to fail; the report "
                       "shows the cause under the table when it does")
    kind: ClaimKind
    design: str | None = Field(None, description="a design or group name; default the only design")
    metric: ClaimMetric = "test_mse"
    at: Literal["end", "equal_attributes"] = Field("end", description="final values, or each curve read at the "
                                                   "attributes the most frugal of the compared algorithms paid")
    order: list[str | list[str]] = Field(default_factory=list, description="labels best first; a list is a tier")
    margin: float = Field(0.0, ge=0, lt=1, description="an ordering holds only where each better algorithm lies "
                          "below (1 - margin) times the next, by a paired test over seeds: 0.1 asks for 10 % lower "
                          "(a claim that says 'considerably' states one)")
    margin_se: float = Field(0.0, ge=0, description="an ordering holds only where, besides its test, each pair's mean "
                             "difference paired by seed is more than this many standard errors")
    algorithm: str | None = None
    over: str | None = None
    below: float | None = None
    above: float | None = None
    rho: Literal["ridge", "lasso"] | None = None
    target: float | None = None
    tolerance: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _complete(self) -> ClaimSpec:
        needs = {"ordering": ("order",), "value": ("algorithm",), "ratio": ("algorithm", "over"),
                 "difference": ("algorithm", "over"), "rho": ("rho", "target", "tolerance")}[self.kind]
        missing = [name for name in needs if not getattr(self, name)]
        if missing or (self.kind == "ordering" and len(self.order) < 2):
            raise ValueError(f"claim {self.claim!r} ({self.kind}) needs {', '.join(needs)}"
                             + (" with two or more labels" if self.kind == "ordering" else ""))
        if self.kind in ("value", "ratio", "difference") and self.below is None and self.above is None:
            raise ValueError(f"claim {self.claim!r} needs a bound: below and/or above")
        if self.kind == "ordering" and not self.margin and APART.search(self.claim):
            raise ValueError(f"claim {self.claim!r} says its algorithms are far apart: state the margin it needs "
                             "(margin = 0.1: each lies at least 10 % below the next, by a paired test over seeds)")
        return self

    @property
    def labels(self) -> list[str]:
        return [*(label for tier in self.tiers for label in tier), *(x for x in (self.algorithm, self.over) if x)]

    @property
    def tiers(self) -> list[list[str]]:
        return [[tier] if isinstance(tier, str) else tier for tier in self.order]


class TuneSpec(Strict):
    """``[tune]``: a grid over named parameters of some algorithms, each point run on the training folds and scored
    on the held-out part of the examples the comparison's run would see (``client.comparison.tune``)."""

    grid: dict[str, dict[str, list[ParamValue]]] = Field(
        ..., description="algorithm label (or id) -> parameter -> values to try")
    folds: int = Field(1, ge=1, le=20, description="1: one validation part at the end of the run's examples; "
                       "k >= 2: k-fold cross-validation over them")
    validation: float = Field(0.2, gt=0, lt=1, description="the share held out when folds = 1")
    validation_attributes: int | None = Field(
        None, ge=1, description="score each validation example from the candidate's K largest weights only "
                                "(default: every attribute its weights use)")


class MeasuredTime(Strict):
    """``measured``: how long the full comparison took when last timed (``benchmarks/preset_times.py`` writes it), so
    that ``compare --list`` and the report quote a measurement with its date, not a guess."""

    date: str = Field(..., pattern=r"^\d{4}-\d{2}-\d{2}$", description="the day of the measurement (YYYY-MM-DD)")
    cores: int = Field(..., ge=1, description="the machine's cores")
    parallel: int = Field(..., ge=1, description="runs at a time (--parallel)")
    local_minutes: float = Field(..., gt=0, description="wall time of compare --local")
    cpu_minutes: float = Field(..., gt=0, description="CPU time of compare --local, its worker processes included")
    services_minutes: float | None = Field(None, gt=0, description="wall time through the services compare starts")
    services_parallel: int | None = Field(None, ge=1, description="runs at a time through the services (compare's "
                                          "default there: the learner's worker processes times their threads)")
    load: float | None = Field(None, ge=0, description="the machine's mean 1-minute load average during the --local "
                               "run, its own runs included: above the cores, other jobs shared them")

    def text(self) -> str:
        services = ", through the services not measured"
        if self.services_minutes:
            ratio = self.services_minutes / self.local_minutes
            at_a_time = f", {self.services_parallel} at a time" if self.services_parallel else ""
            services = f", {self.services_minutes:.1f} through the services ({ratio:.1f}x{at_a_time})"
        load = f", load average {self.load:.1f}" if self.load is not None else ""
        return (f"measured {self.date} on {self.cores} cores, {self.parallel} at a time: {self.local_minutes:.1f} min "
                f"--local ({self.cpu_minutes:.1f} CPU-min{load}){services}")


class CompareConfig(Strict):
    title: str
    description: str = ""
    expected_time: str = Field("", description="how long the full comparison takes (presets state it)")
    measured: MeasuredTime | None = None
    dataset: DatasetSpec | None = None
    budget: Budget = Field(default_factory=Budget)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    max_examples: int | None = Field(None, ge=1)
    eval_every: int | None = Field(None, ge=1)
    test_budget: int | None = Field(None, ge=1)
    defaults: Defaults = Field("practical", description=DEFAULTS_DESCRIPTION + ", for every [[algorithms]] entry "
                               "that does not say")
    metric: Metric = "test_mse"
    log_x: bool | None = Field(None, description="log-scale the attributes axis of the plots (false: linear); "
                               "default: each axis turns logarithmic when its curves' spans differ a lot")
    regret_k: int | None = Field(None, ge=1)
    run_timeout: float = Field(3600.0, gt=0, description="seconds a run through the learner service may take; "
                               "a run still going then is cancelled and reported with its curve so far")
    algorithms: list[AlgorithmEntry] = Field(default_factory=list)
    designs: list[DesignSpec] = Field(default_factory=list)
    quick: QuickSpec = Field(default_factory=QuickSpec)
    claims: list[ClaimSpec] = Field(default_factory=list)
    tune: TuneSpec | None = None

    @model_validator(mode="after")
    def _complete(self) -> CompareConfig:
        if not self.designs and self.dataset is None:
            raise ValueError("name a [dataset] or at least one [[designs]] entry")
        if not self.algorithms and any(d.algorithms is None for d in self.designs or [DesignSpec(name="")]):
            raise ValueError("list the [[algorithms]] to compare")
        for design in self.designs:
            if design.dataset is None and not design.datasets and self.dataset is None:
                raise ValueError(f"design {design.name!r} names no dataset")
        for claim in self.claims:
            self._check_claim(claim)
        return self

    def _check_claim(self, claim: ClaimSpec) -> None:
        specs = {d.name: d for d in self.designs}
        if claim.design is None and len(self.designs) > 1:
            raise ValueError(f"claim {claim.claim!r}: name its design, one of {sorted(specs)}")
        if claim.design is not None and claim.design not in specs and not (not self.designs
                                                                            and claim.design == self.title):
            raise ValueError(f"claim {claim.claim!r}: no design {claim.design!r}; designs: {sorted(specs)}")
        spec = specs.get(claim.design or "")
        entries = spec.algorithms if spec is not None and spec.algorithms is not None else self.algorithms
        labels = {e.label for e in entries}
        unknown = [label for label in claim.labels if label not in labels]
        if unknown:
            raise ValueError(f"claim {claim.claim!r}: no algorithm labelled {unknown[0]!r} in its design; "
                             f"labels: {sorted(labels)}")


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
    """The config in ``path``; ``ConfigError`` says what is wrong with it, at which line of the file."""
    text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+), column \d+\)$", str(exc))
        raise ConfigError(f"{path}:{at.group(1)}: not valid TOML: {str(exc)[: at.start()].strip()}" if at
                          else f"{path}: not valid TOML: {exc}") from None
    try:
        return CompareConfig.model_validate(data)
    except ValidationError as exc:
        raise shape_errors(exc, CompareConfig, str(path), text) from None


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
    accepted = {p.name for p in describe(dataset.name, dataset.params).accepted_params}
    return DatasetSpec(name=dataset.name, params={**dataset.params, **{k: v for k, v in params.items()
                                                                       if k in accepted}})


def entry_defaults(config: CompareConfig, entry: AlgorithmEntry) -> Defaults:
    """Which defaults an entry's runs take: its own ``defaults``, else the config's."""
    return entry.defaults or config.defaults


def resolve_designs(config: CompareConfig) -> list[Design]:
    specs = config.designs or [DesignSpec(name=config.title)]
    designs: list[Design] = []
    for spec in specs:
        budget = spec.budget or config.budget
        entries = [e.model_copy(update={"defaults": entry_defaults(config, e)})
                   for e in (spec.algorithms if spec.algorithms is not None else config.algorithms)]
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


def parse_value(text: str) -> ParamValue:
    """A parameter value typed from its text on a command line: true/false, an int, a float, else the text. Only
    the two words are typed here; the parameter's declared type decides the rest (a boolean parameter reads its
    text by ``budgetlab.params.parse_bool``, which refuses what is not a boolean)."""
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
