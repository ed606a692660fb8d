"""Which scores mean something for a dataset: its task, asked of this machine or of the oracle that serves it.

A regression has no 0-1 error (the sign of a real-valued prediction says nothing), so every place that shows a
run's scores (``budgetlab run``, the comparison's report and results.json, the dashboards reading it) asks here.
"""

from __future__ import annotations

from budgetlab.contract.base import ParamValue
from budgetlab.contract.datasets import Task
from budgetlab.datasets import DatasetError, describe
from budgetlab.errors import OracleError, OracleUnavailable


def dataset_task(name: str, params: dict[str, ParamValue] | None = None, oracle: str | None = None) -> Task | None:
    """The dataset's task: from this machine's registry, else from ``oracle`` (a user dataset only it has); None
    where neither can say."""
    try:
        return describe(name, params).task
    except DatasetError:
        pass
    if oracle is None:
        return None
    from budgetlab.oracle_client import OracleClient

    spec = name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")
    try:
        with OracleClient(oracle) as client:
            return client.dataset(spec).task
    except (OracleError, OracleUnavailable):
        return None


def scores_line(task: Task | None, mse: float, normalized_mse: float, zero_one: float) -> str:
    """Test MSE, normalized MSE, and the 0-1 error unless the task is a regression."""
    line = f"test MSE {mse:.5g}  normalized {normalized_mse:.4f}"
    return line if task == "regression" else f"{line}  0-1 error {zero_one:.4f}"
