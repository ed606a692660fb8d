"""``budgetlab compare``: algorithms x seeds on one dataset and budget, every run in its own oracle session.

``run_compare`` takes the command's options as one ``CompareOptions`` and goes through four steps: ``check`` the
options; ``load`` the config (a TOML file or a preset, see ``client.comparison.config``) and check it against the
services that will run it, into a ``Plan``; ``execute`` the grid (``client.comparison.grid``) through the learner
service, or with ``--local`` in-process, starting both services itself when it is given no URLs
(``client.services``); ``report`` (``client.comparison.report``). A ``[tune]`` section (or ``--tune``) first chooses
parameters on held-out training examples (``client.comparison.tune``), in sessions of their own. ``--mlflow`` then
logs the report to MLflow (``client.comparison.tracking``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
from budgetlab.datasets import describe
from budgetlab.errors import LearnerError, LearnerUnavailable, OracleError, OracleUnavailable, Unavailable
from budgetlab.learner_client import LearnerClient
from budgetlab.oracle_client import OracleClient
from client.comparison.claims import claims_table
from client.comparison.config import CompareConfig, Design, load_config, quick_config, resolve_designs
from client.comparison.config_errors import ConfigError
from client.comparison.grid import (
    NOT_STARTED,
    RESTART_GRACE_SECONDS,
    Interrupted,
    RunOutcome,
    attach_regret,
    jobs_for,
    run_comparison,
)
from client.comparison.ledger_size import ledger_lines, ledger_size, size_text
from client.comparison.preflight import Algorithms, LocalCatalog, RemoteCatalog, check_config
from client.comparison.presets import PRESET_DIR, UnknownPreset, load_preset, presets
from client.comparison.report import write_report
from client.comparison.tracking import TrackingError, log_comparison, open_experiment, require_mlflow
from client.comparison.tune import TuneError, Tuning, check_tune, chosen_params, run_tuning, with_tune_options
from client.console import UsageError
from client.services import ServiceError, managed_services, sigterm_as_interrupt
from learner.cluster import SCHEDULER_ENV, WORKERS_ENV, RunPool, default_workers, http_worker_threads

RUNS_FAILED = 3  # the report is written, but some runs did not complete
INTERRUPTED = 130  # Ctrl-C or SIGTERM: the runs were cancelled and a partial report written (128 + SIGINT)
TRACKING_FAILED = 4  # the report is written, but logging it to MLflow failed


@dataclass(frozen=True)
class CompareOptions:
    """What ``budgetlab compare`` is asked, as its command line says it.

    ``config`` or ``preset`` (``quick``: its small version) is the comparison, ``out`` its report's directory;
    ``list_presets`` lists the presets instead. Where the runs execute: ``local`` (Dask workers, ``workers`` of a
    LocalCluster started here or ``scheduler``'s), through a running ``learner`` and ``oracle`` (the runs are
    ``learner_token``'s caller's, so that ``budgetlab runs`` lists them), or, given neither, through services started
    here (on the same ``workers``/``scheduler``), ``parallel`` runs at a time. ``tune`` adds ``--tune`` grids to the
    config's (``tune_folds``: k-fold), ``mlflow`` logs the report to the ``mlflow_experiment`` (default: the title),
    and with ``api_key`` every session (its tuning's too) draws on that account's allowance on the oracle."""

    config: Path | None = None
    out: Path | None = None
    preset: str | None = None
    quick: bool = False
    list_presets: bool = False
    local: bool = False
    learner: str | None = None
    oracle: str | None = None
    parallel: int | None = None
    workers: int | None = None
    scheduler: str | None = None
    tune: tuple[str, ...] = ()
    tune_folds: int | None = None
    learner_token: str | None = None
    mlflow: bool = False
    mlflow_experiment: str | None = None
    api_key: str | None = None

    @property
    def source(self) -> str:
        """The file the config is read from (a preset's own)."""
        return str(PRESET_DIR / f"{self.preset}.toml") if self.preset else str(self.config)


@dataclass(frozen=True)
class Plan:
    """A comparison checked and ready to start: its config and designs, where its report goes, the algorithms the
    runs can name (with the packages that serve them) and the MLflow experiment it is logged to."""

    config: CompareConfig
    designs: list[Design]
    out: Path
    algorithms: Algorithms
    experiment: str


@dataclass
class Executed:
    """What the runs came to: the tunings and the runs' outcomes, where they ran (``mode``), whether they got to
    the runs (``phase``) and, when interrupted, what was stopped."""

    mode: str
    tunings: list[Tuning] = field(default_factory=list)
    outcomes: list[RunOutcome] = field(default_factory=list)
    phase: str = "tuning"
    interrupted: str | None = None
    started: float = field(default_factory=time.perf_counter)


def run_compare(options: CompareOptions, console: Console, err: Console) -> int:
    """``budgetlab compare``: check the options, load and check the config (its ``[tune]`` too) against the services
    before anything starts, tune where asked and run the grid, then write the report and print its claims; returns
    the exit code (0: every run completed, ``RUNS_FAILED``, ``INTERRUPTED``, ``TRACKING_FAILED``). Problems with the
    options, the config or the services are a ``UsageError``.

    With ``mlflow`` mlflow missing, or its tracking server out of reach, fails the command before anything starts.
    A running learner that restarts meanwhile is waited for (``client.comparison.grid.RESTART_GRACE_SECONDS``);
    services started here are not restarted by anyone, so the comparison does not wait for them."""
    if options.list_presets:
        show_presets(console)
        return 0
    check(options)
    plan = load(options, err)
    return report(options, plan, execute(options, plan, err), console, err)


def show_presets(console: Console) -> None:
    for name, cfg in presets().items():
        # Preset texts name config sections ("[tune]"): printed as text, not as rich markup.
        time_text = escape(cfg.expected_time or "run time not stated")
        measured = cfg.measured.text() if cfg.measured else "full run not timed yet (benchmarks/preset_times.py)"
        ledger = ledger_size([job.request for job in jobs_for(cfg, resolve_designs(cfg), "local")], describe)
        console.print(f"[bold]{name}[/]  ({time_text}; --quick under a minute)\n    {escape(cfg.title)}\n"
                      f"    {escape(measured)}\n    through the services, {size_text(ledger)} (--local: none)",
                      soft_wrap=True)


def check(options: CompareOptions) -> None:
    """The options make one comparison: a config or a preset, one place for the runs, an API key with the oracle it
    is an account of; and MLflow is installed when asked for. Nothing is read yet."""
    if options.mlflow:
        try:
            require_mlflow()
        except TrackingError as exc:
            raise UsageError(str(exc)) from None
    if (options.config is None) == (options.preset is None):
        raise UsageError("give a CONFIG.toml or --preset NAME (see --list)")
    if options.local and (options.learner or options.oracle):
        raise UsageError("--local runs in-process: drop --learner/--oracle")
    if bool(options.learner) != bool(options.oracle):
        raise UsageError("give both --learner and --oracle, or neither (then both services are started here)")
    if options.api_key and not options.oracle:
        raise UsageError("an API key is an account of a running oracle: give it with --oracle and --learner (the "
                         "oracle started here, and --local, open anonymous sessions)")
    if options.learner and (options.workers or options.scheduler):
        raise UsageError(f"the learner at {options.learner} runs on its own workers: drop --workers/--scheduler (its "
                         f"setting is {SCHEDULER_ENV})")
    if options.workers and options.scheduler:
        raise UsageError("--workers sizes a cluster started here; with --scheduler the runs go to that cluster's "
                         "workers")


def load(options: CompareOptions, err: Console) -> Plan:
    """Read the config and check it against what will run it: the datasets of the oracle the runs use (else of this
    machine), the algorithms of the running learner (else of this machine), the tuning's grid, the API key's
    account and the MLflow experiment. Every problem is said before anything starts."""
    config = read_config(options)
    if options.out is None:  # asked once the config is read: a misspelt preset or config is said first
        raise UsageError("give --out DIR for the report")
    # The learner's algorithms, not this machine's, are what its runs can name (a plugin may be installed there only).
    table = check_learner(options.learner, options.learner_token) if options.learner else Algorithms()
    problems = preflight(config, options.source, options.oracle, table)
    if problems:
        raise UsageError("\n".join(problems) + f"\n{len(problems)} problem(s) in {options.source}: nothing was "
                         "started")
    designs = resolve_designs(config)
    try:
        check_tune(config, designs, options.source, table)
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    if options.api_key:
        assert options.oracle is not None  # check(): an API key comes with its oracle
        err.print(escape(check_account(options.oracle, options.api_key)), soft_wrap=True, highlight=False)
    experiment = options.mlflow_experiment or config.title
    if options.mlflow:
        try:
            open_experiment(experiment)
        except TrackingError as exc:
            raise UsageError(f"{exc}: nothing was started") from None
    return Plan(config, designs, options.out, table, experiment)


def read_config(options: CompareOptions) -> CompareConfig:
    """The preset's or the file's config (``quick``: its small version) with the command line's ``--tune``."""
    try:
        if options.preset is not None:
            config = load_preset(options.preset, quick=options.quick)
        else:
            assert options.config is not None  # one of the two, checked by check()
            config = quick_config(load_config(options.config)) if options.quick else load_config(options.config)
        return with_tune_options(config, list(options.tune), options.tune_folds)
    except (UnknownPreset, ConfigError, TuneError) as exc:
        raise UsageError(str(exc)) from None
    except ValidationError as exc:
        raise UsageError(f"{options.source}: {exc}") from None


def execute(options: CompareOptions, plan: Plan, err: Console) -> Executed:
    """Tune where asked, then run the grid: on Dask workers (``local``), through the running learner, or through
    services started here. Ctrl-C or SIGTERM cancels the runs: what they did so far is kept, and why they stopped."""
    done = Executed(mode=f"learner {options.learner}, oracle {options.oracle}")
    try:
        with sigterm_as_interrupt():
            if options.local:
                with open_pool(options.workers, options.scheduler, err) as pool:
                    done.mode = f"local (LocalOracle on {pool.where}, no ledger)"
                    run_grid(options, plan, done, err, pool=pool)
            elif options.learner:
                run_grid(options, plan, done, err, options.learner, options.oracle, RESTART_GRACE_SECONDS,
                         options.learner_token)
            else:
                say_ledger_size(plan, err)
                with managed_services(plan.out, learner_env=cluster_env(options.workers, options.scheduler)) as (
                        oracle_url, learner_url, ledger):
                    done.mode = f"services started by budgetlab compare (ledger {ledger})"
                    if options.scheduler:
                        check_reach(options.scheduler, oracle_url, err)
                    run_grid(options, plan, done, err, learner_url, oracle_url)
    except Interrupted as stop:
        done.interrupted = interruption(options, plan, done, stop)
    except (ServiceError, Unavailable) as exc:
        raise UsageError(f"services unavailable: {exc}") from None
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    return done


def say_ledger_size(plan: Plan, err: Console) -> None:
    """How much the runs will write to the ledger of the services ``compare`` starts (in the output folder), before
    they start, where it is worth a line, and whether the folder's disk has the room (their datasets are this
    machine's)."""
    requests = [job.request for job in jobs_for(plan.config, plan.designs, "local")]
    for line in ledger_lines(ledger_size(requests, describe), plan.out, plan.config.tune is not None):
        err.print(escape(line), style="yellow" if line.startswith("warning") else None, soft_wrap=True,
                  highlight=False)


def run_grid(options: CompareOptions, plan: Plan, done: Executed, err: Console, learner_url: str | None = None,
             oracle_url: str | None = None, grace: float = 0.0, token: str | None = None,
             pool: RunPool | None = None) -> None:
    """The tuning's runs, then the comparison's with the parameters it chose, into ``done`` as they end."""
    parallel = options.parallel or (pool.slots() if pool else default_parallel(options))
    done.tunings.extend(run_tuning(plan.config, plan.designs, local=options.local, learner_url=learner_url,
                                   oracle_url=oracle_url, parallel=parallel, console=err, learner_token=token,
                                   restart_grace=grace, pool=pool, api_key=options.api_key))
    done.phase = "runs"
    done.outcomes.extend(run_comparison(plan.config, local=options.local, learner_url=learner_url,
                                        oracle_url=oracle_url, parallel=parallel, console=err,
                                        chosen=chosen_params(done.tunings), learner_token=token, restart_grace=grace,
                                        pool=pool, api_key=options.api_key)[1])


def default_parallel(options: CompareOptions) -> int:
    """Runs at a time through the services when ``--parallel`` is not given: as many as the learner started here
    executes at once (its LocalCluster's processes times their threads: a run waits on the oracle's answers), else
    one per worker process or core."""
    workers = options.workers or default_workers()
    return workers * http_worker_threads() if not (options.learner or options.scheduler) else workers


def interruption(options: CompareOptions, plan: Plan, done: Executed, stop: Interrupted) -> str:
    """What an interruption stopped, in words; the runs it cancelled join ``done``'s outcomes with their curves."""
    if done.phase != "runs":
        return "interrupted while tuning: no comparison run was started"
    done.outcomes.extend(stop.outcomes)
    attach_regret(done.outcomes, plan.designs)
    unstarted = sum(o.result.message == NOT_STARTED for o in done.outcomes)
    stopped = sum(o.result.status == "cancelled" for o in done.outcomes) - unstarted
    return (f"interrupted during the runs: {stopped} run(s) cancelled with their curves so far"
            + ("" if options.local else " (on the learner too)") + f", {unstarted} not started")


def report(options: CompareOptions, plan: Plan, done: Executed, console: Console, err: Console) -> int:
    """Write the report (a partial one after an interruption), print its claims, diagnoses and where it is, log it
    to MLflow when asked; the exit code."""
    written = write_report(plan.out, plan.config, plan.designs, done.outcomes, mode=done.mode, preset=options.preset,
                           quick=options.quick, wall_time=time.perf_counter() - done.started, tunings=done.tunings,
                           interrupted=done.interrupted, oracle=options.oracle, served=plan.algorithms.packages)
    if written.claims:
        console.print(claims_table(written.claims))
    for line in written.diagnoses:
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)  # folded to the terminal, as the claims are
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in done.outcomes)
    console.print(f"{len(done.outcomes) - failed}/{len(done.outcomes)} runs completed; report: {written.path}",
                  soft_wrap=True)
    tracking_failed = options.mlflow and not log_to_mlflow(plan.out, plan.experiment, console, err)
    if done.interrupted:
        err.print(f"[bold red]{done.interrupted}[/]; partial report: {written.path}", soft_wrap=True)
        return INTERRUPTED
    if failed:
        err.print(f"[bold red]{failed} run(s) did not complete[/] (see the report)", soft_wrap=True)
        return RUNS_FAILED
    return TRACKING_FAILED if tracking_failed else 0


@contextmanager
def open_pool(workers: int | None, scheduler: str | None, err: Console) -> Iterator[RunPool]:
    """The Dask workers of a ``--local`` comparison: a LocalCluster started here, or ``scheduler``'s cluster."""
    err.print(f"connecting to the Dask scheduler {escape(scheduler)} ..." if scheduler else
              f"starting {workers or default_workers()} local worker process(es) (Dask LocalCluster) ...",
              soft_wrap=True, highlight=False)
    try:
        pool = RunPool(workers=workers, scheduler=scheduler)
    except (OSError, ValueError) as exc:  # ValueError: a tls:// scheduler without its certificates, or the reverse
        raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}: nothing was started") from None
    with pool:
        yield pool


def check_reach(scheduler: str, oracle_url: str, err: Console) -> None:
    """The workers of ``scheduler`` reach the oracle the runs use (they ask it over HTTP), else a usage error."""
    err.print(f"checking that the workers of {escape(scheduler)} reach the oracle {escape(oracle_url)} ...",
              soft_wrap=True, highlight=False)
    try:
        with RunPool(scheduler=scheduler) as pool:
            unreached = pool.reach(oracle_url)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}: no run was started") from None
    if unreached:
        worker, why = next(iter(unreached.items()))
        raise UsageError(f"{len(unreached)} worker(s) of the Dask scheduler {scheduler} cannot reach the oracle at "
                         f"{oracle_url} (worker {worker}: {why}); the oracle must listen on an address the workers "
                         "can reach: no run was started")


def cluster_env(workers: int | None, scheduler: str | None) -> dict[str, str]:
    """The environment of a learner started here that runs on the same workers as ``--workers``/``--scheduler``."""
    if scheduler:
        return {SCHEDULER_ENV: scheduler}
    return {WORKERS_ENV: str(workers)} if workers else {}


def log_to_mlflow(out: Path, experiment: str, console: Console, err: Console) -> bool:
    """Log the written report to MLflow and say where it went; False (and why, on ``err``) when that failed."""
    try:
        logged = log_comparison(out, experiment)
    except TrackingError as exc:
        err.print(f"[bold red]not logged to MLflow:[/] {escape(str(exc))}", soft_wrap=True)
        return False
    console.print(escape(str(logged)), soft_wrap=True, highlight=False)
    return True


def check_learner(url: str, token: str | None) -> Algorithms:
    """The running learner answers, and takes the caller token: checked before anything starts, since during the
    grid a learner out of reach is waited for (it may be restarting) and a refused token would fail every run. The
    algorithms it runs, which the config's are checked against."""
    with LearnerClient(url, token=token) as learner:
        if not learner.health():
            raise UsageError(f"cannot reach the learner at {url}: nothing was started")
        try:
            if token is not None:
                learner.page(limit=1)
            return Algorithms.of_learner(learner.algorithms(), url)
        except LearnerError as exc:
            raise UsageError(f"the learner at {url} refuses the caller token (--learner-token or "
                             f"BUDGETLAB_LEARNER_TOKEN): {exc.error}: {exc.detail}") from None
        except LearnerUnavailable as exc:
            raise UsageError(f"services unavailable: {exc}") from None


def check_account(oracle: str, api_key: str) -> str:
    """The oracle takes the API key, checked before anything starts (a refused key would fail every run); what is
    left of its account's allowance, in words."""
    try:
        with OracleClient(oracle, api_key=api_key) as client:
            account = client.account(limit=1).account
    except OracleError as exc:
        raise UsageError(f"the oracle at {oracle} refuses the API key (--api-key or BUDGETLAB_API_KEY): "
                         f"{exc.error}: {exc.detail}") from None
    except OracleUnavailable as exc:
        raise UsageError(f"services unavailable: {exc}") from None
    if account.status == "revoked":
        raise UsageError(f"the account {account.name} was revoked: its key opens no session")
    left = account.remaining.total
    return (f"the sessions draw on the account {account.name} ({account.id})"
            + ("" if left is None else f": {left:g} cost units left"))


def preflight(config: CompareConfig, source: str, oracle: str | None, table: Algorithms) -> list[str]:
    """The config's problems (``client.comparison.preflight``), with the datasets of the oracle the runs will use when
    it is given (else of this machine) and the algorithms ``table`` says the runs can name."""
    text = Path(source).read_text()
    if oracle is None:
        return check_config(config, source, text, LocalCatalog(), table)
    try:
        with OracleClient(oracle) as client:
            return check_config(config, source, text, RemoteCatalog(client), table)
    except OracleUnavailable as exc:
        raise UsageError(f"cannot check the config's datasets: {exc}") from None
