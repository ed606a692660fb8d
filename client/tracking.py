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

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES

EXTRA = "pip install 'budgetlab[mlflow]'"
# MLflow refuses larger batches (mlflow.utils.validation: 1000 metrics, 100 params or tags per log_batch).
METRICS_PER_BATCH, PARAMS_PER_BATCH = 1000, 100
PROVENANCE_TAGS = {"budgetlab": "budgetlab.version", "git_commit": "budgetlab.git_commit",
                   "git_modified": "budgetlab.git_modified", "python": "python", "numpy": "numpy",
                   "scikit-learn": "scikit-learn", "scipy": "scipy", "host": "host", "platform": "platform"}


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

    path = out / "results.json"
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TrackingError(f"cannot read {path}: {exc}") from None
    if not isinstance(results, dict):
        raise TrackingError(f"{path} is not a comparison's results (a JSON object)")
    name = experiment or results.get("title") or out.name
    experiment_id = open_experiment(name)
    try:
        run_id, children = _log(mlflow.MlflowClient(), experiment_id, out, results)
    except (MlflowException, OSError) as exc:
        raise TrackingError(f"MLflow at {mlflow.get_tracking_uri()}: {getattr(exc, 'message', exc)}") from None
    return Logged(run_id, name, experiment_id, mlflow.get_tracking_uri(), children)


def _log(client: Any, experiment_id: str, out: Path, results: dict[str, Any]) -> tuple[str, int]:
    origin = results.get("provenance") or {}
    tags = {tag: _text(origin[key]) for key, tag in PROVENANCE_TAGS.items() if origin.get(key) is not None}
    if origin.get("git_commit"):
        tags["mlflow.source.git.commit"] = origin["git_commit"]  # MLflow's UI shows this one beside the run
    tags.update({"budgetlab.mode": results.get("mode") or "", "budgetlab.output": str(out.resolve())})
    if results.get("interrupted"):
        tags["budgetlab.interrupted"] = results["interrupted"]
    parent = client.create_run(experiment_id, tags=tags, run_name=results.get("title") or out.name).info.run_id
    config = results.get("config") or {}
    params = {"preset": results.get("preset"), "quick": results.get("quick"), "seeds": config.get("seeds"),
              "max_examples": config.get("max_examples"), "eval_every": config.get("eval_every")}
    _batch(client, parent, params={k: v for k, v in params.items() if v is not None},
           metrics=[("wall_time", results.get("wall_time") or 0.0, 0)])
    designs = results.get("designs", [])
    children, failed = 0, 0
    for design in designs:
        for algorithm in design.get("algorithms", []):
            for run in algorithm.get("runs", []):
                failed += _log_run(client, experiment_id, parent, design, algorithm, run, len(designs) > 1)
                children += 1
    artifacts = ["report.md", "results.json", "curves.csv", *(p for d in designs for p in d.get("plots", []))]
    for artifact in artifacts:
        if (out / artifact).is_file():
            client.log_artifact(parent, str(out / artifact))
    client.set_tag(parent, "budgetlab.runs_completed", f"{children - failed}/{children}")
    client.set_terminated(parent, "KILLED" if results.get("interrupted") else "FINISHED")
    return parent, children


def _log_run(client: Any, experiment_id: str, parent: str, design: dict[str, Any], algorithm: dict[str, Any],
             run: dict[str, Any], several_designs: bool) -> bool:
    """One (design, algorithm, seed) as a nested run; True when the run did not complete."""
    result = run["result"]
    label = algorithm.get("label") or algorithm["id"]
    name = f"{label} seed {run['seed']}" + (f" ({design['name']})" if several_designs else "")
    tags = {"mlflow.parentRunId": parent, "budgetlab.design": design["name"], "budgetlab.status": result["status"],
            "budgetlab.audit": run.get("audit") or "", "budgetlab.session": result.get("session") or "",
            "budgetlab.learner_run": run.get("run_id") or ""}
    if result.get("message"):
        tags["budgetlab.message"] = result["message"]
    child = client.create_run(experiment_id, tags=tags, run_name=name).info.run_id
    # The run's own budget: the design's, with the algorithm's per_example where it has one.
    budget = {**design.get("budget", {}), **({"per_example": algorithm["per_example"]}
                                             if algorithm.get("per_example") is not None else {})}
    params: dict[str, Any] = {"algorithm": result["algorithm"], "label": label, "seed": result["seed"],
                              "design": design["name"], "dataset": result["dataset"]}
    params.update({f"dataset.{k}": v for k, v in result.get("dataset_params", {}).items()})
    params.update({f"budget.{k}": v for k, v in budget.items() if v is not None})
    # The parameters in effect (the given ones and the defaults the algorithm resolved); the given ones are there.
    params.update(result.get("resolved_params") or result.get("params") or {})
    if result.get("test_budget"):
        params["test_budget.per_example"] = result["test_budget"]["per_example"]
    scores = design.get("metrics") or ["test_mse", "normalized_mse", "zero_one"]
    # normalized MSE is logged even where it equals the test MSE (±1 labels): it compares across datasets.
    keys = [k for k in ("test_mse", "normalized_mse", "zero_one") if k in scores or k == "normalized_mse"]
    metrics: list[tuple[str, float, int]] = []
    regrets = iter(run.get("regret_curve") or [])
    for point in result.get("curve", []):
        step = point["examples"]
        metrics += [(k, point[k], step) for k in keys]
        metrics += [("attributes_paid", point["attributes"], step), ("cost", point["cost"], step)]
        if point.get("cumulative_loss") is not None:
            metrics.append(("cumulative_loss", point["cumulative_loss"], step))
            regret = next(regrets, None)
            if regret is not None:
                metrics.append(("regret", regret, step))
    end = result.get("examples", 0)
    final = result.get("final")
    if final:
        metrics += [(f"final_{k}", final[k], end) for k in keys]
    metrics += [("examples", end, end), ("final_attributes_paid", result.get("attributes", 0), end),
                ("wall_time", result.get("wall_time", 0.0), end)]
    if run.get("regret") is not None:
        metrics.append(("final_regret", run["regret"], end))
    if result.get("test_budget"):
        test = result["test_budget"]
        metrics += [(f"test_budget_{k}", test[k], end) for k in ("mse", "normalized_mse", "zero_one")]
    _batch(client, child, params=params, metrics=metrics)
    done = result["status"] in COMPLETED_RUN_STATUSES
    client.set_terminated(child, "FINISHED" if done else "KILLED" if result["status"] == "cancelled" else "FAILED")
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
