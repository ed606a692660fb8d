"""The comparisons the learner's dashboard shows: the report folders ``budgetlab compare --out DIR`` writes.

A comparison runs on the learner, but its report (``report.md``, ``results.json``, the plots) is written where
``compare`` ran, which the learner does not know. The dashboard lists the folders under one directory,
``BUDGETLAB_REPORTS_DIR`` (default: the learner's working directory, where ``budgetlab sandbox`` writes its
report): each subfolder with a ``results.json`` is a comparison. Only those files are read, and only the plots
a ``results.json`` names are served.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from budgetlab.contract.base import UtcTime
from budgetlab.contract.results import SCORES, ComparisonResults, ResultsError, Stat
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
from budgetlab.errors import Code, learner_refusal

log = logging.getLogger(__name__)

REPORTS_ENV = "BUDGETLAB_REPORTS_DIR"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
PLOT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,200}\.(png|svg)")
SUMMARY_METRICS = ("test_mse", "normalized_mse", "zero_one", "attributes", "examples")


STAT_EXAMPLE = {"mean": 0.6289, "std": 0.0412, "n": 5}
CLAIM_EXAMPLE = {"claim": "AELR below AER at equal attributes paid", "source": "Fig. 1",
                 "design": "MNIST subset, 3 vs 5", "paper": "AELR < AER over the whole budget",
                 "ours": "AELR 0.412 < AER 0.587; normalized MSE read at 20,000 attributes paid (the most frugal's); "
                         "AELR − AER = -0.175 [-0.21, -0.14], 10 seeds, p = 3.1e-07 (Holm 9.3e-07)",
                 "verdict": "holds", "seeds": 10, "p_value": 9.3e-07}
ROW_EXAMPLE = {"label": "AELR", "id": "aelr", "per_example": 4,
               "summary": {"test_mse": {"mean": 1.2034, "std": 0.0412, "n": 5}, "normalized_mse": STAT_EXAMPLE,
                           "zero_one": None, "attributes": {"mean": 20000.0, "std": 0.0, "n": 5},
                           "examples": {"mean": 5000.0, "std": 0.0, "n": 5}},
               "runs": 5, "completed": 5}
PLOT_EXAMPLE = "/v1/dashboard/comparisons/hk-fig1/plots/00-mnist-3-vs-5-attributes.png"
DESIGN_EXAMPLE = {"name": "MNIST subset, 3 vs 5", "description": "Fig. 1 of Hazan & Koren (2012)",
                  "dataset": "mnist-3v5", "dataset_params": {}, "budget": {"per_example": 4},
                  "metrics": ["test_mse", "normalized_mse"], "plots": [PLOT_EXAMPLE], "algorithms": [ROW_EXAMPLE]}
SUMMARY_EXAMPLE = {"name": "hk-fig1", "title": "Hazan & Koren 2012, Figure 1: AELR and AER with k = 4 vs offline lasso",
                   "mode": "learner http://127.0.0.1:8001, oracle http://127.0.0.1:8000", "preset": "hazan-koren-fig1",
                   "written_at": "2025-01-31T09:45:00Z", "wall_time": 672.4, "runs": 30, "completed": 30, "claims": 3,
                   "claims_held": 2, "report": "/home/me/budgetlab/reports/hk-fig1/report.md"}


class ClaimRow(BaseModel):
    """One claim of a paper, checked against the comparison's results (the report's claims table)."""

    claim: str = Field("", description="the paper's words, shortened",
                       examples=["AELR below AER at equal attributes paid"])
    source: str = Field("", description="where in the paper", examples=["Fig. 1"])
    design: str = Field("", description="the design (or group of designs) it is checked on",
                        examples=["MNIST subset, 3 vs 5"])
    paper: str = Field("", description="the paper's figure as printed", examples=["AELR < AER over the whole budget"])
    ours: str = Field("", description="what this comparison measured, in words",
                      examples=["AELR 0.412 < AER 0.587"])
    verdict: str = Field("", description="holds or fails (decided by paired tests over the seeds), inconclusive (the "
                                         "tests decided neither), indicative (too few seeds, or --quick), not run (no "
                                         "design for it) or no result (no completed run)", examples=["holds"])
    seeds: int = Field(0, description="the seeds paired in its tests", examples=[10])
    p_value: float | None = Field(None, description="the largest Holm-adjusted p-value of its tests (null: not "
                                                    "decided by a test)", examples=[9.3e-07])


class AlgorithmRow(BaseModel):
    """One algorithm of a design, over its seeds (mean and sd as the report computes them)."""

    label: str = Field(description="its name in the report (the config's label, else its id)", examples=["AELR"])
    id: str = Field(description="the algorithm's id", examples=["aelr"])
    per_example: int | None = Field(None, description="its local budget k: its own, else the design's (null: no "
                                                      "local limit)", examples=[4])
    summary: dict[str, Stat | None] = Field(
        default_factory=dict, description="final test_mse, normalized_mse, zero_one, attributes and examples over "
                                          "the completed runs; null where no run completed",
        examples=[{"test_mse": {"mean": 1.2034, "std": 0.0412, "n": 5}, "zero_one": None}])
    runs: int = Field(0, description="runs of it in the comparison (one per seed)", examples=[5])
    completed: int = Field(0, description="of those, the ones that finished or exhausted their budget", examples=[5])
    diagnosis: str | None = Field(
        None, description="why its runs stayed near the zero predictor and what to try (learner.diagnosis), with how "
                          "many seeds did; null when they learned",
        examples=["aer ended at 0.97 of the zero predictor's test MSE: with about 3.93 of d = 784 attributes per "
                  "example over 900 examples, each attribute was observed 4.5 times on average; try a larger "
                  "--per-example, more examples or --tune aer:lam=2.5,25,2.5e+02 (3 of 5 seeds)"])


class DesignReport(BaseModel):
    """One design of a comparison: a dataset and a budget, the algorithms run on it, its plots."""

    name: str = Field(description="the design's name", examples=["power-law attributes, d = 100"])
    description: str = Field("", description="what it is, in words", examples=["Fig. 2 of Hazan & Koren (2012)"])
    dataset: str = Field("", description="the dataset's name", examples=["powerlaw"])
    dataset_params: dict[str, Any] = Field(default_factory=dict, description="the dataset's parameters",
                                           examples=[{"d": 100}])
    budget: dict[str, Any] = Field(default_factory=dict, description="its budget (the fields of Budget)",
                                   examples=[{"per_example": 4, "total": None, "costs": None, "label_cost": 0.0,
                                              "part": None}])
    metrics: list[str] = Field(default=list(SCORES), description="the final scores that fit the design's task, "
                               "as its report's table shows them: no 0-1 error for a regression, no normalized MSE "
                               "where it equals the test MSE (labels ±1)", examples=[["test_mse", "zero_one"]])
    plots: list[str] = Field(default_factory=list, description="URLs of the design's plots", examples=[[PLOT_EXAMPLE]])
    algorithms: list[AlgorithmRow] = Field(default_factory=list, description="each algorithm over its seeds",
                                           examples=[[ROW_EXAMPLE]])


class ReportSummary(BaseModel):
    """One comparison in the listing: its title, when it was written, how many runs completed and claims held."""

    name: str = Field(..., description="the report's folder under the reports directory", examples=["hk-fig1"])
    title: str = Field(description="the comparison's title (its folder's name if it has none)",
                       examples=["Hazan & Koren 2012, Figure 1: AELR and AER with k = 4 vs offline lasso"])
    mode: str = Field("", description="where its runs ran: in-process, or which learner and oracle",
                      examples=["learner http://127.0.0.1:8001, oracle http://127.0.0.1:8000"])
    preset: str | None = Field(None, description="the preset it ran, if any", examples=["hazan-koren-fig1"])
    written_at: UtcTime = Field(description="when its results.json was last written (UTC)",
                                 examples=["2025-01-31T09:45:00Z"])
    wall_time: float = Field(0.0, description="seconds the comparison took", examples=[672.4])
    runs: int = Field(0, description="runs over every design, algorithm and seed", examples=[30])
    completed: int = Field(0, description="of those, the ones that finished or exhausted their budget",
                           examples=[30])
    claims: int = Field(0, description="the paper's claims it checks", examples=[3])
    claims_held: int = Field(0, description="of those, the ones that hold", examples=[2])
    report: str = Field(..., description="path of its report.md on the learner's machine",
                        examples=["/home/me/budgetlab/reports/hk-fig1/report.md"])


class ReportDetail(ReportSummary):
    """One comparison in full: its claims table and, per design, its plots and per-algorithm results."""

    fallback: str | None = Field(None, description="what the comparison used instead of what it asked for, and why",
                                 examples=[None])
    headline: list[str] = Field(default_factory=list, description="the lines that say what it found (the sandbox "
                                "demo's: its numbers as its tables print them, and the claims that do not hold)",
                                examples=[["Claims: 6 of 6 hold."]])
    claim_rows: list[ClaimRow] = Field(default_factory=list, description="the claims table",
                                       examples=[[CLAIM_EXAMPLE]])
    designs: list[DesignReport] = Field(default_factory=list, description="its designs, in the config's order",
                                        examples=[[DESIGN_EXAMPLE]])


class ReportList(BaseModel):
    """The comparisons under the learner's reports directory, newest first."""

    directory: str = Field(..., description=f"where the learner looks ({REPORTS_ENV})",
                           examples=["/home/me/budgetlab/reports"])
    reports: list[ReportSummary] = Field(description="one per folder holding a readable results.json, newest first",
                                         examples=[[SUMMARY_EXAMPLE]])


def reports_dir() -> Path:
    return Path(os.environ.get(REPORTS_ENV) or Path.cwd()).resolve()


class Reports:
    """Reads report folders, each ``results.json`` parsed once per change of the file."""

    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[tuple[int, int], ReportDetail]] = {}
        self._lock = threading.Lock()

    def listing(self) -> ReportList:
        root = reports_dir()
        found: list[ReportSummary] = []
        if root.is_dir():
            for folder in root.iterdir():
                if NAME.fullmatch(folder.name) and (folder / "results.json").is_file():
                    detail = self._read(folder)
                    if isinstance(detail, ReportDetail):
                        found.append(ReportSummary(**detail.model_dump(include=set(ReportSummary.model_fields))))
        found.sort(key=lambda r: r.written_at, reverse=True)
        return ReportList(directory=str(root), reports=found)

    def detail(self, name: str) -> ReportDetail:
        detail = self._read(self._folder(name))
        if isinstance(detail, str):
            raise learner_refusal(Code.NOT_FOUND, f"the report {name} cannot be read: {detail}")
        return detail

    def plot(self, name: str, plot: str) -> Path:
        """The file of a plot the report names (nothing else under the folder is served)."""
        folder = self._folder(name)
        detail = self.detail(name)
        named = {url.rsplit("/", 1)[-1] for design in detail.designs for url in design.plots}
        if not PLOT.fullmatch(plot) or plot not in named or not (folder / plot).is_file():
            raise learner_refusal(Code.NOT_FOUND, f"the report {name} has no plot {plot}")
        return folder / plot

    def _folder(self, name: str) -> Path:
        folder = reports_dir() / name
        if not NAME.fullmatch(name) or not (folder / "results.json").is_file():
            raise learner_refusal(Code.NOT_FOUND, f"there is no report {name} in the reports directory")
        return folder

    def _read(self, folder: Path) -> ReportDetail | str:
        """The folder's report, or why it cannot be read."""
        path = folder / "results.json"
        try:
            stat = path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            with self._lock:
                cached = self._parsed.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            detail = parse(folder.name, ComparisonResults.parse(path.read_text(), f"{folder.name}/results.json"),
                           stat.st_mtime, folder / "report.md")
        except (OSError, ResultsError) as exc:
            log.info("report %s not shown: %s", folder, exc)
            return str(exc)
        with self._lock:
            self._parsed[path] = (stamp, detail)
        return detail


def parse(name: str, results: ComparisonResults, mtime: float, report: Path) -> ReportDetail:
    """What the dashboard shows of one comparison's results (written by ``client.comparison.report.write_report``)."""
    designs, runs, completed = [], 0, 0
    for design in results.designs:
        rows = []
        for algorithm in design.algorithms:
            done = sum(r.result.status in COMPLETED_RUN_STATUSES for r in algorithm.runs)
            runs, completed = runs + len(algorithm.runs), completed + done
            rows.append(AlgorithmRow(label=algorithm.label or algorithm.id, id=algorithm.id,
                                     per_example=algorithm.per_example,
                                     summary={m: getattr(algorithm.summary, m) for m in SUMMARY_METRICS},
                                     runs=len(algorithm.runs), completed=done,
                                     diagnosis=algorithm.diagnosis))
        designs.append(DesignReport(
            name=design.name, description=design.description, dataset=design.dataset.name,
            dataset_params=design.dataset.params, budget=design.budget.model_dump(),
            metrics=[m for m in design.metrics if m in SCORES],
            plots=[f"/v1/dashboard/comparisons/{name}/plots/{p}" for p in design.plots if PLOT.fullmatch(p)],
            algorithms=rows))
    claims = [ClaimRow.model_validate(c.model_dump(include=set(ClaimRow.model_fields))) for c in results.claims]
    return ReportDetail(
        name=name, title=results.title or name, mode=results.mode, preset=results.preset,
        written_at=datetime.fromtimestamp(mtime, UTC), wall_time=results.wall_time, runs=runs, completed=completed,
        claims=len(claims), claims_held=sum(c.verdict == "holds" for c in claims), report=str(report),
        claim_rows=claims, designs=designs, fallback=results.fallback or None, headline=results.headline)
