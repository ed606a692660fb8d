"""The one line that says why a run stayed near the zero predictor, and what to try (issue 20).

A run that completed with a final normalised test MSE of at least ``NEAR_ZERO`` learned next to nothing: its
predictor does about as well as predicting 0. Every place that shows a run's result (``budgetlab run``, ``compare``
and its report and results.json, the learner's dashboard) shows this line, and this function is the only one that
writes it: the runner stores it in ``RunResult.diagnosis``.

The reason is the first that applies, from what the run itself records:

- it ran with the theorems' constants (``defaults = "theory"``): worst-case choices that barely move w;
- each attribute was observed fewer than ``FEW_OBSERVATIONS`` times on average (attributes paid / d): the
  budget and the examples are too few for the dimension (checked before divergence: with so few observations a
  run's noisy steps are what the data make of any step size);
- it ended above the zero predictor (normalised MSE > ``DIVERGED``): its steps were too large or too noisy;
- otherwise its parameters do not fit the data.

What to try names the run's own parameters, as ``--tune ALGORITHM:PARAM=V1,V2,V3`` around the values it used
(``Algorithm.tuning_hint``), and more budget or examples where they were the reason. For the estimator, whose users
write Python, the same advice is in its words (``python=True``): ``tune={"PARAM": [V1, V2, V3]}``, ``per_example``.
"""

from __future__ import annotations

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunResult

NEAR_ZERO = 0.95


class NearZeroPredictor(UserWarning):
    """Warned by ``BudgetedRegressor.fit`` with the line of ``diagnose``: the fitted model is about the zero
    predictor (filter it as any warning: ``warnings.simplefilter("ignore", NearZeroPredictor)``)."""

DIVERGED = 1.05
FEW_OBSERVATIONS = 10.0


def _values(values: list[float]) -> str:
    return ",".join(f"{v:.2g}" for v in values)


def _tune(algorithm: str, hint: dict[str, list[float]] | None, python: bool) -> str:
    if not hint:
        return "tuning its parameters (" + ("tune={...}" if python else "--tune") + ")"
    if python:
        grid = ", ".join(f'"{name}": [{", ".join(f"{v:.2g}" for v in values)}]' for name, values in hint.items())
        return f"tune={{{grid}}}"
    return "--tune " + " --tune ".join(f"{algorithm}:{name}={_values(values)}" for name, values in hint.items())


def diagnose(result: RunResult, hint: dict[str, list[float]] | None = None, python: bool = False) -> str | None:
    """The line for a run near the zero predictor, or None when it learned (or did not complete); ``python``: the
    advice in the estimator's words rather than the CLI's."""
    final = result.final
    if final is None or result.status not in COMPLETED_RUN_STATUSES or final.normalized_mse < NEAR_ZERO:
        return None
    d = max(len(result.weights), 1)
    per_attribute = result.attributes / d
    tune = _tune(result.algorithm, hint, python)
    per_example_option = "per_example" if python else "--per-example"
    head = f"{result.algorithm} ended at {final.normalized_mse:.2f} of the zero predictor's test MSE: "
    if result.defaults == "theory":
        return (head + "the theorems' constants (defaults = theory) are worst-case choices that barely move w in "
                f"{result.examples:,} examples; try the practical defaults or {tune}")
    if per_attribute < FEW_OBSERVATIONS:
        per_example = result.attributes / max(result.examples, 1)
        return (head + f"with about {per_example:.3g} of d = {d:,} attributes per example over {result.examples:,} "
                f"examples, each attribute was observed {per_attribute:.2g} times on average; try a larger "
                f"{per_example_option}, more examples or {tune}")
    if final.normalized_mse > DIVERGED:
        return head + f"it ended worse than predicting 0, its steps too large or too noisy for this data; try {tune}"
    return head + f"its parameters do not fit this data; try {tune}"
