"""``budgetlab run``: one algorithm on a dataset under a budget, in-process or against an oracle (``client.running``
executes it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from client.commands.options import ApiKeyOpt
from client.console import UsageError, console, err, print_json

if TYPE_CHECKING:
    from budgetlab.contract.base import ParamValue
    from budgetlab.contract.runs import RunResult


def run(
    algorithm: Annotated[str, typer.Option(help="algorithm id (see 'budgetlab algorithms')")],
    dataset: Annotated[str, typer.Option(help="dataset name or name:key=value,...")],
    dataset_param: Annotated[list[str] | None, typer.Option(help="dataset parameter key=value")] = None,
    per_example: Annotated[int | None, typer.Option(help="local budget: attributes per example")] = None,
    total: Annotated[float | None, typer.Option(help="global budget: total cost")] = None,
    param: Annotated[list[str] | None, typer.Option(help="algorithm parameter key=value")] = None,
    defaults: Annotated[str, typer.Option(
        "--defaults", help="what fills the parameters not given: 'practical' (adapt to the data) or 'theory' (the "
                           "theorems' constants)")] = "practical",
    seed: int = 0,
    max_examples: Annotated[int | None, typer.Option(min=1)] = None,
    eval_every: Annotated[int | None, typer.Option(min=1)] = None,
    test_budget: Annotated[int | None, typer.Option(min=1, help="also score with K attributes per test example")]
    = None,
    local: Annotated[bool, typer.Option("--local", help="run in-process on a LocalOracle")] = False,
    oracle: Annotated[str | None, typer.Option("--oracle", help="oracle URL to run against over HTTP")] = None,
    tune: Annotated[list[str] | None, typer.Option(
        "--tune", help="first tune [ALGORITHM:]PARAM=V1,V2,... on held-out training examples (repeatable; the grid "
                       "is every combination); the tuning's sessions are paid for and reported")] = None,
    tune_folds: Annotated[int, typer.Option(min=1, max=20, help="k-fold cross-validation for --tune (default: one "
                                                                 "validation part, the last 20%)")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    api_key: ApiKeyOpt = None,
) -> None:
    """Run one algorithm on a dataset under a budget, in-process (--local) or against an oracle (--oracle URL).

    Progress goes to stderr (a bar on a terminal, lines elsewhere), so that with --json stdout holds only the result.
    """
    if local == bool(oracle):
        raise UsageError("choose exactly one of --local and --oracle URL")
    if local and api_key:
        raise UsageError("an API key is an account of an oracle: give it with --oracle URL (--local has no oracle)")
    # Said before anything slow is imported: the imports below and the dataset take a second or more.
    err.print(f"{escape(algorithm)} on {escape(dataset)}: starting "
              + ("in-process" if local else f"against the oracle {escape(str(oracle))}") + " ...",
              soft_wrap=True, highlight=False)
    from pydantic import ValidationError

    from budgetlab.contract.budgets import Budget
    from budgetlab.contract.runs import RunCreate
    from client.running import execute_run

    name, params = _dataset(dataset, dataset_param)
    try:
        request = RunCreate(oracle_url=oracle, dataset=name, dataset_params=params, algorithm=algorithm,
                            params=parse_pairs(param, "--param"), defaults=defaults,
                            budget=Budget(per_example=per_example, total=total),
                            seed=seed, max_examples=max_examples, eval_every=eval_every, test_budget=test_budget,
                            api_key=api_key)
    except ValidationError as exc:
        raise UsageError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    result = execute_run(request, console=err, tune=_run_grid(algorithm, tune), tune_folds=tune_folds)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        _print_result(result, name, params, oracle)


def _dataset(spec: str, pairs: list[str] | None) -> tuple[str, dict[str, ParamValue]]:
    """``--dataset name:key=value,...`` and its ``--dataset-param key=value``s: the name and every parameter."""
    from budgetlab.datasets import DatasetError, parse_dataset_spec

    try:
        name, params = parse_dataset_spec(spec)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    params.update(parse_pairs(pairs, "--dataset-param"))
    return name, params


def parse_pairs(pairs: list[str] | None, what: str) -> dict[str, ParamValue]:
    """``key=value`` options (``what`` names them in an error) as parameters, each value read as a config's is."""
    from budgetlab.params import split_pair
    from client.comparison.config import parse_value

    out: dict[str, ParamValue] = {}
    for pair in pairs or []:
        try:
            key, value = split_pair(pair, what)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        out[key] = parse_value(value)
    return out


def _print_result(result: RunResult, name: str, params: dict[str, ParamValue], oracle: str | None) -> None:
    """The run's outcome in lines: what tuning chose and paid, the status and spend, the scores (those that mean
    something for the dataset's task), the diagnosis, the oracle session."""
    from client.comparison.tasks import dataset_task, scores_line

    if result.tuning is not None:
        t = result.tuning
        chosen = ", ".join(f"{k}={v}" for k, v in t.chosen.items()) or f"nothing ({t.message})"
        console.print(f"tuned over {len(t.candidates)} grid point(s) x {len(t.folds)} fold(s): chose {chosen}; the "
                      f"tuning's {t.sessions} sessions paid {t.attributes} attributes (cost {t.cost:g}), "
                      f"{t.attributes + result.attributes} with the run's", soft_wrap=True)
    final = result.final
    console.print(f"[bold]{result.algorithm}[/] on {result.dataset}: {result.status} after {result.examples} "
                  f"examples, {result.attributes} attributes paid" + (f" ({result.message})" if result.message else ""))
    task = dataset_task(name, params, oracle) if final is not None or result.test_budget is not None else None
    if final is not None:
        console.print(scores_line(task, final.test_mse, final.normalized_mse, final.zero_one))
    if result.test_budget is not None:
        score = result.test_budget
        console.print(f"with {score.per_example} attributes per test example: "
                      + scores_line(task, score.mse, score.normalized_mse, score.zero_one))
    if result.diagnosis:
        console.print(f"[yellow]{escape(result.diagnosis)}[/]", soft_wrap=True)
    if result.session:
        console.print(f"oracle session: {result.session}")


def _run_grid(algorithm: str, options: list[str] | None) -> dict[str, list[ParamValue]] | None:
    """``--tune`` of ``budgetlab run`` as a grid: PARAM=V1,... or ALGORITHM:PARAM=V1,... (ALGORITHM the run's)."""
    from client.comparison.tune import TuneError, parse_tune_option

    grid: dict[str, list[ParamValue]] = {}
    for option in options or []:
        text = option if ":" in option.partition("=")[0] else f"{algorithm}:{option}"
        try:
            named, name, values = parse_tune_option(text)
        except TuneError as exc:
            raise UsageError(str(exc).replace("ALGORITHM:PARAM", "[ALGORITHM:]PARAM")) from None
        if named != algorithm:
            raise UsageError(f"--tune {option!r} names {named!r}, but this run is {algorithm!r}")
        if not values:
            raise UsageError(f"--tune {option!r} lists no value to try")
        grid[name] = values
    return grid or None
