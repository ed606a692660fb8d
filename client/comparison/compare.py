"""``budgetlab compare``: algorithms x seeds on one dataset and budget, every run in its own oracle session.

The command resolves the config (a TOML file or a preset, see ``client.comparison.config``), runs the grid
(``client.comparison.grid``) through the learner service, or with ``--local`` in-process, starting both services itself
when it is given no URLs (``client.services``), and writes the report (``client.comparison.report``). A ``[tune]``
section (or ``--tune``) first chooses parameters on held-out training examples (``client.comparison.tune``), in sessions
of their own. ``--mlflow`` then logs the report to MLflow (``client.comparison.tracking``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES
from budgetlab.errors import LearnerError, LearnerUnavailable, OracleError, OracleUnavailable, Unavailable
from budgetlab.learner_client import LearnerClient
from budgetlab.oracle_client import OracleClient
from client.comparison.claims import claims_table
from client.comparison.config import CompareConfig, load_config, quick_config, resolve_designs
from client.comparison.config_errors import ConfigError
from client.comparison.grid import (
    NOT_STARTED,
    RESTART_GRACE_SECONDS,
    Interrupted,
    RunOutcome,
    attach_regret,
    run_comparison,
)
from client.comparison.preflight import Algorithms, LocalCatalog, RemoteCatalog, check_config
from client.comparison.presets import PRESET_DIR, UnknownPreset, load_preset, presets
from client.comparison.report import write_report
from client.comparison.tracking import TrackingError, log_comparison, open_experiment, require_mlflow
from client.comparison.tune import TuneError, Tuning, check_tune, chosen_params, run_tuning, with_tune_options
from client.console import UsageError
from client.services import ServiceError, managed_services, sigterm_as_interrupt
from learner.cluster import SCHEDULER_ENV, WORKERS_ENV, RunPool, default_workers

RUNS_FAILED = 3  # the report is written, but some runs did not complete
INTERRUPTED = 130  # Ctrl-C or SIGTERM: the runs were cancelled and a partial report written (128 + SIGINT)
TRACKING_FAILED = 4  # the report is written, but logging it to MLflow failed


def _source(config: Path | None, preset: str | None) -> str:
    return str(PRESET_DIR / f"{preset}.toml") if preset else str(config)


def run_compare(*, config: Path | None, out: Path | None, preset: str | None, quick: bool, list_presets: bool,
                local: bool, learner: str | None, oracle: str | None, parallel: int | None, console: Console,
                err: Console, tune: list[str] | None = None,
                tune_folds: int | None = None, learner_token: str | None = None, mlflow: bool = False,
                mlflow_experiment: str | None = None, workers: int | None = None,
                scheduler: str | None = None, api_key: str | None = None) -> int:
    """``budgetlab compare``: resolve and check the config (its ``[tune]`` too) before anything starts, tune where
    asked, run the grid, write the report and print its claims; returns the exit code (0: every run completed,
    ``RUNS_FAILED``, ``INTERRUPTED``, ``TRACKING_FAILED``). Problems with the config or the services are a
    ``UsageError``.
    With ``mlflow`` the report is logged to MLflow (``client.comparison.tracking``): mlflow missing, or its tracking
    server out of reach, fails the command before anything starts.

    Through a running learner (``learner``) the runs are ``learner_token``'s caller's (``budgetlab runs`` lists
    them), and a learner that restarts meanwhile is waited for (``client.comparison.grid.RESTART_GRACE_SECONDS``);
    services started here are not restarted by anyone, so the comparison does not wait for them. With ``api_key`` every
    session of the comparison (its tuning's too) draws on that account's allowance on the oracle."""
    if list_presets:
        for name, cfg in presets().items():
            # Preset texts name config sections ("[tune]"): printed as text, not as rich markup.
            time_text = escape(cfg.expected_time or "run time not stated")
            console.print(f"[bold]{name}[/]  ({time_text}; --quick under a minute)\n    {escape(cfg.title)}",
                          soft_wrap=True)
        return 0
    if mlflow:
        try:
            require_mlflow()
        except TrackingError as exc:
            raise UsageError(str(exc)) from None
    if (config is None) == (preset is None):
        raise UsageError("give a CONFIG.toml or --preset NAME (see --list)")
    if local and (learner or oracle):
        raise UsageError("--local runs in-process: drop --learner/--oracle")
    if bool(learner) != bool(oracle):
        raise UsageError("give both --learner and --oracle, or neither (then both services are started here)")
    if api_key and not oracle:
        raise UsageError("an API key is an account of a running oracle: give it with --oracle and --learner (the "
                         "oracle started here, and --local, open anonymous sessions)")
    if learner and (workers or scheduler):
        raise UsageError(f"the learner at {learner} runs on its own workers: drop --workers/--scheduler (its "
                         f"setting is {SCHEDULER_ENV})")
    if workers and scheduler:
        raise UsageError("--workers sizes a cluster started here; with --scheduler the runs go to that cluster's "
                         "workers")
    source = _source(config, preset)
    try:
        if preset is not None:
            cfg = load_preset(preset, quick=quick)
        else:
            assert config is not None  # one of the two, checked above
            cfg = quick_config(load_config(config)) if quick else load_config(config)
        cfg = with_tune_options(cfg, tune or [], tune_folds)
    except (UnknownPreset, ConfigError, TuneError) as exc:
        raise UsageError(str(exc)) from None
    except ValidationError as exc:
        raise UsageError(f"{source}: {exc}") from None
    if out is None:  # asked once the config is read: a misspelt preset or config is said first
        raise UsageError("give --out DIR for the report")
    # The learner's algorithms, not this machine's, are what its runs can name (a plugin may be installed there only).
    table = check_learner(learner, learner_token) if learner else Algorithms()
    problems = preflight(cfg, source, oracle, table)
    if problems:
        raise UsageError("\n".join(problems) + f"\n{len(problems)} problem(s) in {source}: nothing was started")
    try:
        check_tune(cfg, resolve_designs(cfg), source, table)
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    if api_key:
        assert oracle is not None
        err.print(escape(check_account(oracle, api_key)), soft_wrap=True, highlight=False)
    experiment = mlflow_experiment or cfg.title
    if mlflow:
        try:
            open_experiment(experiment)
        except TrackingError as exc:
            raise UsageError(f"{exc}: nothing was started") from None
    started = time.perf_counter()
    designs = resolve_designs(cfg)
    tunings: list[Tuning] = []
    outcomes: list[RunOutcome] = []
    phase = "tuning"

    def grid(learner_url: str | None, oracle_url: str | None, grace: float = 0.0, token: str | None = None,
             pool: RunPool | None = None) -> None:
        nonlocal phase
        tunings.extend(run_tuning(cfg, designs, local=local, learner_url=learner_url, oracle_url=oracle_url,
                                  parallel=parallel or (pool.slots() if pool else workers or default_workers()),
                                  console=err, learner_token=token, restart_grace=grace, pool=pool, api_key=api_key))
        phase = "runs"
        outcomes.extend(run_comparison(cfg, local=local, learner_url=learner_url, oracle_url=oracle_url,
                                       parallel=parallel, console=err, chosen=chosen_params(tunings),
                                       learner_token=token, restart_grace=grace, pool=pool, api_key=api_key)[1])

    mode = f"learner {learner}, oracle {oracle}"
    interrupted: str | None = None
    try:
        with sigterm_as_interrupt():
            if local:
                with open_pool(workers, scheduler, err) as pool:
                    mode = f"local (LocalOracle on {pool.where}, no ledger)"
                    grid(None, None, pool=pool)
            elif learner:
                grid(learner, oracle, RESTART_GRACE_SECONDS, learner_token)
            else:
                with managed_services(out, learner_env=cluster_env(workers, scheduler)) as (oracle_url, learner_url,
                                                                                            ledger):
                    mode = f"services started by budgetlab compare (ledger {ledger})"
                    if scheduler:
                        check_reach(scheduler, oracle_url, err)
                    grid(learner_url, oracle_url)
    except Interrupted as stop:
        if phase == "runs":
            outcomes.extend(stop.outcomes)
            attach_regret(outcomes, designs)
        unstarted = sum(o.result.message == NOT_STARTED for o in outcomes)
        stopped = sum(o.result.status == "cancelled" for o in outcomes) - unstarted
        interrupted = (f"interrupted during the runs: {stopped} run(s) cancelled with their curves so far"
                       + ("" if local else " (on the learner too)") + f", {unstarted} not started"
                       if phase == "runs" else "interrupted while tuning: no comparison run was started")
    except (ServiceError, Unavailable) as exc:
        raise UsageError(f"services unavailable: {exc}") from None
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    written = write_report(out, cfg, designs, outcomes, mode=mode, preset=preset, quick=quick,
                           wall_time=time.perf_counter() - started, tunings=tunings, interrupted=interrupted,
                           oracle=oracle, served=table.packages)
    if written.claims:
        console.print(claims_table(written.claims))
    for line in written.diagnoses:
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)  # folded to the terminal, as the claims are
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} runs completed; report: {written.path}", soft_wrap=True)
    tracking_failed = mlflow and not log_to_mlflow(out, experiment, console, err)
    if interrupted:
        err.print(f"[bold red]{interrupted}[/]; partial report: {written.path}", soft_wrap=True)
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
    except OSError as exc:
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
    except OSError as exc:
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
