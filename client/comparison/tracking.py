"""A comparison's output directory logged to MLflow, for users who keep their experiments there (``compare --mlflow``,
``budgetlab mlflow-log DIR``).

Everything comes from the directory's ``results.json``, so a comparison written long ago logs the same as one just
finished. One parent run per comparison carries the provenance as tags and the report, results.json, curves.csv and
plots as artifacts; one nested run per (design, algorithm, seed) carries the parameters in effect and the learning
curve, one step per evaluation (step = examples seen). The tracking server is MLflow's own choice
(``MLFLOW_TRACKING_URI``). mlflow is an extra (``pip install 'budgetlab[mlflow]'``), imported only here and only
when asked for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from budgetlab.contract.results import (
    SCORES,
    AlgorithmRecord,
    ComparisonResults,
    DesignRecord,
    ResultsError,
    RunRecord,
)
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES

EXTRA = "pip install 'budgetlab[mlflow]'"
# MLflow refuses larger batches (mlflow.utils.validation: 1000 metrics, 100 params or tags per log_batch).
METRICS_PER_BATCH, PARAMS_PER_BATCH = 1000, 100
# Provenance's fields and the tags they go to.
PROVENANCE_TAGS = {"budgetlab": "budgetlab.version", "git_commit": "budgetlab.git_commit",
                   "git_modified": "budgetlab.git_modified", "python": "python", "numpy": "numpy",
                   "scikit_learn": "scikit-learn", "scipy": "scipy", "host": "host", "platform": "platform"}


class TrackingError(Exception):
    """mlflow is missing, or the tracking server refused or failed; the message says which, in words."""


def require_mlflow() -> Any:
    """The mlflow module, or a TrackingError naming the extra that installs it."""
    try:
        import mlflow
    except ImportError:
        raise TrackingError(f"logging to MLflow needs mlflow, which is not installed: {EXTRA}") from None
    return mlflow


@dataclass
class Logged:
    """Where the comparison went: the parent run, its experiment and the tracking URI."""

    run_id: str
    experiment: str
    experiment_id: str
    tracking_uri: str
    children: int

    def __str__(self) -> str:
        return (f"MLflow: run {self.run_id} ({self.children} nested) in experiment '{self.experiment}' at "
                f"{self.tracking_uri}")


def open_experiment(name: str) -> str:
    """The id of the experiment ``name`` on the tracking server, created if new; checked before a comparison
    starts, so that a tracking server out of reach fails the command before its runs rather than after."""
    mlflow = require_mlflow()
    from mlflow.exceptions import MlflowException

    try:
        client = mlflow.MlflowClient()
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            return str(client.create_experiment(name))
    except MlflowException as exc:
        raise TrackingError(f"MLflow at {mlflow.get_tracking_uri()}: {exc.message}") from None
    if experiment.lifecycle_stage == "deleted":
        raise TrackingError(f"MLflow experiment '{name}' is deleted (restore it, or give --mlflow-experiment)")
    return str(experiment.experiment_id)


def log_comparison(out: Path, experiment: str | None = None) -> Logged:
    """Log the comparison written to ``out`` to the experiment named ``experiment`` (default: its title)."""
    mlflow = require_mlflow()
    from mlflow.exceptions import MlflowException

    try:
        results = ComparisonResults.read(out / "results.json")
    except (OSError, ResultsError) as exc:
        raise TrackingError(f"cannot read {out / 'results.json'}: {exc}" if isinstance(exc, OSError)
                            else str(exc)) from None
    name = experiment or results.title or out.name
    experiment_id = open_experiment(name)
    try:
        run_id, children = _log(mlflow.MlflowClient(), experiment_id, out, results)
    except (MlflowException, OSError) as exc:
        raise TrackingError(f"MLflow at {mlflow.get_tracking_uri()}: {getattr(exc, 'message', exc)}") from None
    return Logged(run_id, name, experiment_id, mlflow.get_tracking_uri(), children)


def _log(client: Any, experiment_id: str, out: Path, results: ComparisonResults) -> tuple[str, int]:
    origin = results.provenance
    tags = {tag: _text(value) for key, tag in PROVENANCE_TAGS.items()
            if (value := getattr(origin, key)) is not None}
    if origin.git_commit:
        tags["mlflow.source.git.commit"] = origin.git_commit  # MLflow's UI shows this one beside the run
    tags.update({"budgetlab.mode": results.mode, "budgetlab.output": str(out.resolve()),
                 "budgetlab.results_version": str(results.version)})
    if results.interrupted:
        tags["budgetlab.interrupted"] = results.interrupted
    parent = client.create_run(experiment_id, tags=tags, run_name=results.title or out.name).info.run_id
    config = results.config
    params = {"preset": results.preset, "quick": results.quick, "seeds": config.seeds or None,
              "max_examples": config.max_examples, "eval_every": config.eval_every}
    _batch(client, parent, params={k: v for k, v in params.items() if v is not None},
           metrics=[("wall_time", results.wall_time, 0)])
    designs = results.designs
    children, failed = 0, 0
    for design in designs:
        for algorithm in design.algorithms:
            for run in algorithm.runs:
                failed += _log_run(client, experiment_id, parent, design, algorithm, run, len(designs) > 1)
                children += 1
    artifacts = ["report.md", "results.json", "curves.csv", *(p for d in designs for p in d.plots)]
    for artifact in artifacts:
        if (out / artifact).is_file():
            client.log_artifact(parent, str(out / artifact))
    client.set_tag(parent, "budgetlab.runs_completed", f"{children - failed}/{children}")
    client.set_terminated(parent, "KILLED" if results.interrupted else "FINISHED")
    return parent, children


def _log_run(client: Any, experiment_id: str, parent: str, design: DesignRecord, algorithm: AlgorithmRecord,
             run: RunRecord, several_designs: bool) -> bool:
    """One (design, algorithm, seed) as a nested run; True when the run did not complete."""
    result = run.result
    label = algorithm.label or algorithm.id
    name = f"{label} seed {run.seed}" + (f" ({design.name})" if several_designs else "")
    tags = {"mlflow.parentRunId": parent, "budgetlab.design": design.name, "budgetlab.status": result.status,
            "budgetlab.audit": run.audit or "", "budgetlab.session": result.session or "",
            "budgetlab.learner_run": run.run_id or ""}
    if result.message:
        tags["budgetlab.message"] = result.message
    child = client.create_run(experiment_id, tags=tags, run_name=name).info.run_id
    # The run's own budget: the design's, with the algorithm's per_example where it has one.
    budget = {**design.budget.model_dump(), **({"per_example": algorithm.per_example}
                                               if algorithm.per_example is not None else {})}
    params: dict[str, Any] = {"algorithm": result.algorithm, "label": label, "seed": result.seed,
                              "design": design.name, "dataset": result.dataset}
    params.update({f"dataset.{k}": v for k, v in result.dataset_params.items()})
    params.update({f"budget.{k}": v for k, v in budget.items() if v is not None})
    # The parameters in effect (the given ones and the defaults the algorithm resolved); the given ones are there.
    params.update(result.resolved_params or result.params)
    if result.test_budget:
        params["test_budget.per_example"] = result.test_budget.per_example
    # normalized MSE is logged even where it equals the test MSE (±1 labels): it compares across datasets.
    keys = [k for k in SCORES if k in design.metrics or k == "normalized_mse"]
    metrics: list[tuple[str, float, int]] = []
    regrets = iter(run.regret_curve)
    for point in result.curve:
        step = point.examples
        metrics += [(k, getattr(point, k), step) for k in keys]
        metrics += [("attributes_paid", point.attributes, step), ("cost", point.cost, step)]
        if point.cumulative_loss is not None:
            metrics.append(("cumulative_loss", point.cumulative_loss, step))
            regret = next(regrets, None)
            if regret is not None:
                metrics.append(("regret", regret, step))
    end = result.examples
    if result.final:
        metrics += [(f"final_{k}", getattr(result.final, k), end) for k in keys]
    metrics += [("examples", end, end), ("final_attributes_paid", result.attributes, end),
                ("wall_time", result.wall_time, end)]
    if run.regret is not None:
        metrics.append(("final_regret", run.regret, end))
    if result.test_budget:
        test = result.test_budget
        metrics += [(f"test_budget_{k}", getattr(test, k), end) for k in ("mse", "normalized_mse", "zero_one")]
    _batch(client, child, params=params, metrics=metrics)
    done = result.status in COMPLETED_RUN_STATUSES
    client.set_terminated(child, "FINISHED" if done else "KILLED" if result.status == "cancelled" else "FAILED")
    return not done


def _batch(client: Any, run_id: str, params: dict[str, Any], metrics: Sequence[tuple[str, float, int]]) -> None:
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    items = [Param(k, _text(v)) for k, v in params.items()]
    for chunk in _chunks(items, PARAMS_PER_BATCH):
        client.log_batch(run_id, params=chunk)
    values = [Metric(k, float(v), now, step) for k, v, step in metrics]
    for chunk in _chunks(values, METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=chunk)


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _text(value: Any) -> str:
    """A parameter as MLflow keeps it (a string): text as is, anything else as JSON (1, 0.5, true, [0, 1])."""
    return value if isinstance(value, str) else json.dumps(value)
