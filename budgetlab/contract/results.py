"""A comparison's ``results.json``: what ``budgetlab compare`` writes beside its report, and what the learner's
dashboard and the MLflow logging read back. Written and read only through ``ComparisonResults``.

The file carries its format's ``version``. A file written before the field existed (budgetlab up to 0.1's first
releases) has none and reads as version 1, whose fields are a subset of version 2's; version 3 adds each claim's
statistics (its test, seeds, p-value and checks) and each summary's 95 % interval. A file of a version newer than
this budgetlab reads is refused by ``ResultsError`` naming both versions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from budgetlab.contract.algorithms import Defaults
from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import Task
from budgetlab.contract.runs import RunResult

RESULTS_VERSION = 3
"""The format this budgetlab writes (and the newest it reads)."""
# The final scores a design's table may show; a design names those that fit its task (version 1 files may not).
SCORES = ("test_mse", "normalized_mse", "zero_one")


class ResultsError(ValueError):
    """A results.json that cannot be read: not JSON, not a comparison's results, or of a newer format version."""


class Record(BaseModel):
    # NaN and infinities (a diverged run's error) are kept as JSON's NaN/Infinity, as json.dumps wrote them.
    model_config = ConfigDict(ser_json_inf_nan="constants")


class Stat(Record):
    """A metric over the completed runs of one algorithm, one value per seed."""

    mean: float = Field(description="the mean over the seeds", examples=[0.6289])
    std: float = Field(0.0, description="their standard deviation, ddof = 1 (0 for a single seed)",
                       examples=[0.0412])
    n: int = Field(0, description="how many seeds (completed runs) it is over", examples=[5])
    low: float | None = Field(None, description="the 95 % t-interval of the mean over the seeds: its low end (null: "
                                                "fewer than 2 seeds, or a file older than version 3)",
                              examples=[0.5778])
    high: float | None = Field(None, description="that interval's high end", examples=[0.6800])


class AlgorithmOrigin(Record):
    """Where a plugin's algorithm came from (``learner.algorithms.origin``)."""

    package: str | None = Field(None, description="the distribution that provides it (null: not installed where "
                                                  "the report was written, only on the learner that ran it)",
                                examples=["budgetlab-example-plugin"])
    version: str | None = Field(None, description="its version", examples=["0.1.0"])
    target: str | None = Field(None, description="its code, package.module:Class",
                               examples=["budgetlab_example_plugin.split_sgd:SplitSGD"])


class Provenance(Record):
    """The software and machine that produced the results."""

    model_config = ConfigDict(populate_by_name=True, ser_json_inf_nan="constants")

    budgetlab: str | None = Field(None, description="budgetlab's installed version")
    git_commit: str | None = Field(None, description="the commit of the checkout it ran from (null: not one)")
    git_modified: bool | None = Field(None, description="whether tracked files of that checkout were modified")
    python: str | None = None
    numpy: str | None = None
    scikit_learn: str | None = Field(None, alias="scikit-learn")
    scipy: str | None = None
    host: str | None = None
    platform: str | None = None
    algorithms: dict[str, AlgorithmOrigin] = Field(
        default_factory=dict, description="the algorithms the comparison ran that are not budgetlab's own (plugins, "
                                          "package.module:Class targets), by the name the config gives them")


class RecordedConfig(Record):
    """The comparison's config as it ran (``client.comparison.config.CompareConfig``); the fields readers use are typed,
    the rest is kept as written."""

    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    seeds: list[int] = Field(default_factory=list)
    max_examples: int | None = None
    eval_every: int | None = None


class CheckRecord(Record):
    """One test of a claim: the mean over seeds of a paired difference (or of a value minus its bound) is below 0
    (``less``) or above it (``greater``)."""

    text: str = Field("", examples=["DDAERR − AERR"])
    direction: str = Field("less", description="less or greater: the direction the claim asserts")
    n: int = Field(0, description="the seeds paired")
    mean: float | None = None
    low: float | None = Field(None, description="the 95 % t-interval of the mean: its low end")
    high: float | None = None
    p: float | None = Field(None, description="the one-sided p-value of the claimed direction")
    p_holm: float | None = Field(None, description="the same after Holm's correction over the report's tests "
                                                   "(null: the claim was not decided, e.g. too few seeds)")


class ClaimRecord(Record):
    """One claim of a paper checked against the comparison (``client.comparison.claims.ClaimResult``)."""

    claim: str = ""
    source: str = ""
    design: str = ""
    paper: str = ""
    ours: str = ""
    verdict: str = Field("", description="holds, fails, inconclusive, indicative, not run or no result")
    values: dict[str, float] = Field(default_factory=dict)
    quote: str = ""
    cause: str = ""
    expected: str = "holds"
    test: str = Field("", description="how the verdict was reached: the test and its correction, or the interval")
    seeds: int = Field(0, description="the seeds paired in its tests")
    p_value: float | None = Field(None, description="the largest Holm-adjusted p-value of its tests (null: none)")
    attributes: list[float] = Field(default_factory=list, description="the attributes paid at which each design "
                                    "was read, for a claim at equal attributes")
    checks: list[CheckRecord] = Field(default_factory=list)


class RunRecord(Record):
    """One run (one seed) of an algorithm of a design."""

    seed: int
    run_id: str | None = None
    audit: str | None = None
    audit_compliant: bool | None = None
    regret: float | None = None
    regret_curve: list[float] = Field(default_factory=list)
    regret_missing: str | None = None
    result: RunResult


class Summary(Record):
    """An algorithm's scores over its completed runs (null where none completed)."""

    test_mse: Stat | None = None
    normalized_mse: Stat | None = None
    zero_one: Stat | None = None
    attributes: Stat | None = None
    examples: Stat | None = None
    wall_time: Stat | None = None
    cumulative_loss: Stat | None = None
    regret: Stat | None = None


class AlgorithmRecord(Record):
    """One algorithm of a design, over its seeds."""

    label: str = ""
    id: str
    params: dict[str, ParamValue] = Field(default_factory=dict)
    defaults: Defaults | None = None
    per_example: int | None = None
    diagnosis: str | None = Field(None, description="why its runs stayed near the zero predictor (null: they learned)")
    summary: Summary = Field(default_factory=Summary)
    runs: list[RunRecord] = Field(default_factory=list)


class DatasetRecord(Record):
    name: str
    params: dict[str, ParamValue] = Field(default_factory=dict)


class DesignRecord(Record):
    """One design: a dataset, a budget, the algorithms run on it and its plots (file names in the folder)."""

    name: str
    group: str = ""
    description: str = ""
    dataset: DatasetRecord
    budget: Budget = Field(default_factory=Budget)
    regret_k: int | None = None
    task: Task | None = Field(None, description="regression or classification (null: unknown where it was written)")
    metrics: list[str] = Field(default=list(SCORES), description="the final scores its tables show")
    plots: list[str] = Field(default_factory=list)
    algorithms: list[AlgorithmRecord] = Field(default_factory=list)


class FitRecord(Record):
    candidate: int
    fold: int
    run_id: str | None = None
    session: str | None = None
    status: str = ""
    attributes: int = 0
    audit: str | None = None
    message: str = ""


class ValidationRecord(Record):
    fold: int
    session: str | None = None
    examples: int = 0
    attributes: int = 0
    cost: float = 0.0
    audit: str = ""
    errors: list[float | None] = Field(default_factory=list)
    message: str = ""


class TuningRecord(Record):
    """The tuning of one (design, algorithm, seed) cell: its grid, folds, sessions and choice."""

    design: int
    label: str
    id: str
    seed: int
    horizon: int
    folds: list[list[int]] = Field(default_factory=list)
    candidates: list[dict[str, ParamValue]] = Field(default_factory=list)
    scores: list[float | None] = Field(default_factory=list)
    chosen: dict[str, ParamValue] = Field(default_factory=dict)
    attributes: int = 0
    cost: float = 0.0
    sessions: int = 0
    message: str = ""
    fits: list[FitRecord] = Field(default_factory=list)
    validations: list[ValidationRecord] = Field(default_factory=list)


class ComparisonResults(Record):
    """Everything a comparison found, with every curve and what produced it."""

    version: int = Field(1, description=f"the format's version ({RESULTS_VERSION} is written; a file without one is "
                                        "version 1)")
    title: str = ""
    mode: str = Field("", description="where its runs ran: in-process, or which learner and oracle")
    preset: str | None = None
    quick: bool = False
    wall_time: float = 0.0
    interrupted: str | None = Field(None, description="why the report is partial")
    fallback: str | None = Field(None, description="what was used instead of what was asked, and why")
    headline: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    claims: list[ClaimRecord] = Field(default_factory=list)
    config: RecordedConfig = Field(default_factory=RecordedConfig)
    designs: list[DesignRecord] = Field(default_factory=list)
    tuning: list[TuningRecord] = Field(default_factory=list)

    def text(self) -> str:
        """The file's text (the current version)."""
        return self.model_copy(update={"version": RESULTS_VERSION}).model_dump_json(indent=1, by_alias=True)

    def write(self, path: Path) -> None:
        path.write_text(self.text())

    @classmethod
    def parse(cls, text: str, where: str = "results.json") -> ComparisonResults:
        """The results in ``text``; ``ResultsError`` says why they cannot be read (``where`` names the file)."""
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ResultsError(f"{where} is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ResultsError(f"{where} is not a comparison's results (a JSON object)")
        version = data.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ResultsError(f"{where} has no valid format version ({version!r})")
        if version > RESULTS_VERSION:
            raise ResultsError(f"{where} is of results format version {version}, written by a newer budgetlab; this "
                               f"one reads versions 1 to {RESULTS_VERSION} (upgrade budgetlab to read it)")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise ResultsError(f"{where} (format version {version}) is not a comparison's results: {at}: "
                               f"{first['msg']}" + (f" (and {exc.error_count() - 1} more)"
                                                    if exc.error_count() > 1 else "")) from None

    @classmethod
    def read(cls, path: Path) -> ComparisonResults:
        """The results in the file ``path`` (``ResultsError``, or ``OSError`` when it cannot be opened)."""
        return cls.parse(path.read_text(), str(path))
