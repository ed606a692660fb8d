"""``budgetlab sense`` once its options are read: check them, run the evaluation dataset by dataset and seed by seed
(``learner.sensing.evaluation``), and write the report (``client.sensing.report``)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from budgetlab.contract.base import ParamValue
from client.console import UsageError, call, console
from learner.sensing.evaluation import POLICIES, Point, Settings, Training, evaluate

DATASETS = ("cube", "digits-3v5", "diabetes")
QUICK = Settings(budgets=(1, 2, 4), examples=30, train_examples=300, rl_episodes=100)
AUDIT_FAILED = 3


@dataclass(frozen=True)
class SenseOptions:
    """The command's options as given (None: the default, or ``--quick``'s)."""

    out: Path
    datasets: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    seeds: str | None = None
    budgets: str | None = None
    examples: int | None = None
    train_examples: int | None = None
    rl_episodes: int | None = None
    quick: bool = False
    oracle: str | None = None
    stream: bool = False
    api_key: str | None = None


def parse_seeds(text: str) -> tuple[int, ...]:
    """``0-4`` or ``0,1,2``."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            found = tuple(range(low, high + 1))
        else:
            found = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--seeds {text!r}: give 0-4 or 0,1,2") from None
    if not found or min(found) < 0:
        raise UsageError(f"--seeds {text!r}: give at least one seed, none negative")
    return found


def parse_budgets(text: str) -> tuple[int, ...]:
    try:
        found = tuple(sorted({int(part) for part in text.split(",")}))
    except ValueError:
        raise UsageError(f"--budgets {text!r}: give numbers of attributes such as 1,2,4") from None
    if not found or found[0] < 1:
        raise UsageError(f"--budgets {text!r}: every k must be at least 1")
    return found


def settings_of(options: SenseOptions) -> Settings:
    """The defaults (or ``--quick``'s), with what the options give."""
    base = QUICK if options.quick else Settings()
    return Settings(budgets=base.budgets if options.budgets is None else parse_budgets(options.budgets),
                    examples=options.examples or base.examples,
                    train_examples=options.train_examples or base.train_examples,
                    rl_episodes=base.rl_episodes if options.rl_episodes is None else options.rl_episodes,
                    oracle=options.oracle, stream=options.stream, api_key=options.api_key)


def _datasets(options: SenseOptions, settings: Settings) -> list[tuple[str, dict[str, ParamValue]]]:
    """The datasets by name and parameters; each known (here or on the oracle) and with d >= the largest k."""
    from budgetlab.contract.budgets import Budget
    from budgetlab.datasets import DatasetError, parse_dataset_spec
    from budgetlab.sensing.sessions import SessionSpec, source

    found = []
    where = source(settings.oracle, stream=settings.stream, api_key=settings.api_key)
    try:
        for spec in options.datasets or DATASETS:
            try:
                name, params = parse_dataset_spec(spec)
                info = call(lambda: where.describe(SessionSpec(name, params, "test", Budget()), 0))  # noqa: B023
            except DatasetError as exc:
                raise UsageError(f"--dataset {spec}: {exc}") from None
            if info.n_attributes < max(settings.budgets):
                raise UsageError(f"--dataset {spec} has d = {info.n_attributes} attributes, fewer than k = "
                                 f"{max(settings.budgets)}")
            found.append((name, params))
    finally:
        where.close()
    return found


def run_sense(options: SenseOptions) -> int:
    """The evaluation and its report; the exit code."""
    from client.sensing.report import Sense, write_report

    try:
        import budgetlab.sensing  # noqa: F401
    except ModuleNotFoundError as exc:  # the gym extra is missing: its message names it
        raise UsageError(str(exc)) from None
    unknown = [p for p in options.policies if p not in POLICIES]
    if unknown:
        raise UsageError(f"--policy {', '.join(unknown)}: the policies are {', '.join(POLICIES)}")
    if options.stream and options.oracle is None:
        raise UsageError("--stream is a setting of a real oracle: give --oracle URL")
    settings = settings_of(options)
    seeds = parse_seeds(options.seeds or ("0-1" if options.quick else "0-4"))
    policies = options.policies or tuple(POLICIES)
    training: list[Training] = []
    points: list[Point] = []
    for name, params in _datasets(options, settings):
        for seed in seeds:
            console.print(f"{name}, seed {seed}: {len(policies)} policies, k = "
                          f"{', '.join(map(str, settings.budgets))}", highlight=False)
            fitted, found = call(lambda: evaluate(name, params, seed, policies, settings,  # noqa: B023
                                                  lambda step: console.print(f"  {step} ...", highlight=False)))
            training.append(fitted)
            points += found
    command = shlex.join(["budgetlab", *sys.argv[1:]])
    report = write_report(options.out, Sense(command, settings, seeds, options.quick, tuple(training),
                                             tuple(points)))
    failed = [p for p in points if not p.audit.compliant]
    console.print(f"report: {report}; {len(points) - len(failed)} of {len(points)} sessions pass their audit",
                  highlight=False)
    return AUDIT_FAILED if failed else 0
