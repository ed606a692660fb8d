"""The grid of a comparison: every (design, algorithm, seed) cell as one run in its own oracle session.

Runs go through the learner service (``run_service``) or on a ``LocalOracle`` in a worker process of Dask
(``run_local``, ``learner.cluster``), a few at a time, each with a progress bar. Repetition r uses seed
``seeds[r]`` for every algorithm, so all algorithms see the same dataset draw and the same example order. Online
runs get their regret against the best sparse predictor in hindsight (``attach_regret``). A learner that goes away
during the grid may be restarting (``PatientLearner``): its runs persist, so the grid waits for it and carries on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from budgetlab.contract.base import ParamValue
from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunCreate, RunInfo, RunResult
from budgetlab.datasets import DatasetError, load_dataset
from budgetlab.errors import LearnerError, LearnerUnavailable, RunTimeout
from budgetlab.learner_client import POLL_SECONDS, LearnerClient
from budgetlab.service_client import Call, M
from client.comparison.config import AlgorithmEntry, CompareConfig, Design, resolve_designs
from client.comparison.placement import Placement, dataset_key
from learner.cluster import Ended, RunPool, default_workers
from learner.regret import best_sparse, stream_arrays


@dataclass
class RunOutcome:
    """One (design, algorithm, seed) cell: the run's result, its audit and, for online runs, its regret."""

    design: int
    entry: AlgorithmEntry
    seed: int
    result: RunResult
    audit: str = ""
    audit_compliant: bool | None = None
    regret: float | None = None
    regret_curve: list[float] = field(default_factory=list)
    regret_missing: str = ""  # why an online run has no regret (the report says it)
    run_id: str | None = None


@dataclass
class Job:
    design: int
    entry: AlgorithmEntry
    seed: int
    request: RunCreate


Chosen = dict[tuple[int, str, int], dict[str, ParamValue]]
# Told of each run of a grid as it ends (its job and outcome), in the thread that followed it.
Done = Callable[[Job, RunOutcome], None]


NOT_STARTED = "not started: the comparison was interrupted"
# How long a grid waits for a learner it cannot reach (a restart: docker compose restart, a redeploy) before it
# gives up. The learner keeps its runs: the one it was executing comes back 'interrupted' with its curve so far.
RESTART_GRACE_SECONDS = 120.0


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a grid: its runs were stopped; ``outcomes`` is what every cell came to."""

    def __init__(self, outcomes: list[RunOutcome]) -> None:
        super().__init__("interrupted")
        self.outcomes = outcomes


def jobs_for(config: CompareConfig, designs: list[Design], oracle_url: str, chosen: Chosen | None = None,
             api_key: str | None = None) -> list[Job]:
    """Every (design, seed, algorithm) cell; ``chosen`` gives a cell's tuned parameters by (design, label, seed);
    ``api_key``: the account whose allowance the runs' sessions draw on."""
    jobs = []
    for i, design in enumerate(designs):
        for seed in config.seeds:
            for entry in design.algorithms:
                budget = design.budget.model_copy(update={k: v for k, v in
                                                          (("per_example", entry.per_example), ("total", entry.total))
                                                          if v is not None})
                params = (chosen or {}).get((i, entry.label, seed), entry.params)
                request = RunCreate(oracle_url=oracle_url, dataset=design.dataset.name,
                                    dataset_params=design.dataset.params, algorithm=entry.id, params=params,
                                    defaults=entry.defaults, budget=budget, seed=seed,
                                    max_examples=config.max_examples,
                                    eval_every=config.eval_every, test_budget=config.test_budget, api_key=api_key)
                jobs.append(Job(i, entry, seed, request))
    return jobs


def failed_result(request: RunCreate, message: str, status: str = "failed") -> RunResult:
    return RunResult(algorithm=request.algorithm, dataset=request.dataset, dataset_params=request.dataset_params,
                     params=request.params, defaults=request.defaults, seed=request.seed, status=status,
                     message=message)


# Where the output is not a terminal (a log file, a batch job), rich draws no bar until the end: a line saying how
# many runs are done comes instead, at most this often.
PLAIN_EVERY_SECONDS = 10.0


class GridBars:
    """A grid's progress: one bar for all its runs, and one for each run while it goes.

    A run's bar goes when the run ends (one that did not complete leaves a line saying how it ended): rich draws
    every bar again on each update, so a grid of 1,880 runs that kept a bar each spent its time drawing them. On an
    output that is not a terminal, a line ``runs: N of M done ...`` every ``PLAIN_EVERY_SECONDS`` and at the last."""

    def __init__(self, bars: Progress, runs: int) -> None:
        self.bars = bars
        self.all = bars.add_task("all runs", total=runs, info="")
        self.runs = runs
        self.done = 0
        self.incomplete = 0
        self.began = self.said = time.monotonic()
        self.plain = not bars.disable and not bars.console.is_terminal
        self._lock = threading.Lock()

    def start(self, label: str, total: int | None) -> TaskID:
        return self.bars.add_task(label, total=total, info="")

    def show(self, task: TaskID, completed: int, total: int | None, info: str) -> None:
        self.bars.update(task, completed=completed, total=total, info=info)

    def end(self, task: TaskID, label: str, result: RunResult) -> None:
        self.bars.remove_task(task)
        self.bars.advance(self.all)
        completed = result.status in COMPLETED_RUN_STATUSES
        if not completed:
            self.bars.console.print(f"{escape(label)}: {result.status} {escape(result.message[:100])}",
                                    soft_wrap=True)
        with self._lock:
            self.done += 1
            self.incomplete += not completed
            now = time.monotonic()
            if self.plain and (now - self.said >= PLAIN_EVERY_SECONDS or self.done == self.runs):
                self.said = now
                minutes, seconds = divmod(int(now - self.began), 60)
                others = f", {self.incomplete} did not complete" if self.incomplete else ""
                self.bars.console.print(f"runs: {self.done} of {self.runs} done{others}, {minutes}:{seconds:02d} "
                                        "elapsed", soft_wrap=True)


@contextmanager
def progress_bars(console: Console, enabled: bool, runs: int) -> Iterator[GridBars]:
    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=not enabled)
    with bars:
        yield GridBars(bars, runs)


def _label(job: Job, designs: list[Design]) -> str:
    where = f" · {designs[job.design].name[:32]}" if len(designs) > 1 else ""
    return f"{job.entry.label[:24]} · seed {job.seed}{where}"


def gather(cells: list[Future[RunOutcome]], jobs: list[Job], stop: Callable[[], None]) -> list[RunOutcome]:
    """The cells' outcomes in job order. On Ctrl-C: start no further run, ``stop`` the running ones (they end
    cancelled, with their curves so far) and raise ``Interrupted`` with what every cell came to."""
    try:
        return [cell.result() for cell in cells]
    except KeyboardInterrupt:
        for cell in cells:
            cell.cancel()
        stop()
        raise Interrupted([cell.result() if not cell.cancelled() else not_started(job)
                           for cell, job in zip(cells, jobs, strict=True)]) from None


def not_started(job: Job) -> RunOutcome:
    """The outcome of a cell whose run an interruption kept from starting."""
    return RunOutcome(job.design, job.entry, job.seed, failed_result(job.request, NOT_STARTED, "cancelled"),
                      audit="no session (the run did not start)")


def twins(jobs: list[Job]) -> dict[int, list[int]]:
    """The grid's runs named more than once: the first job of each request, with the later jobs of the same request.

    Designs may share a run (in cesa-bianchi-mnist Fig. 4's design and the 45-pair table both run ridge, lasso and
    Baseline on 3 vs 5 with the same seeds: 30 of its 1,880 runs), and a local run is a function of its request
    (its seed fixes the stream and every draw; tests/learner/algorithms/test_pinned_weights.py holds each algorithm to
    it), so a ``--local`` grid runs it once and gives each of its cells the result.
    """
    first: dict[str, int] = {}
    later: dict[int, list[int]] = {}
    for i, job in enumerate(jobs):
        j = first.setdefault(job.request.model_dump_json(), i)
        if j != i:
            later.setdefault(j, []).append(i)
    return later


def run_local(jobs: list[Job], designs: list[Design], *, pool: RunPool, parallel: int,
              bars: GridBars, done: Done | None = None) -> list[RunOutcome]:
    """Every job on a LocalOracle of a worker of ``pool``, ``parallel`` at a time, a freed worker taking a job of a
    dataset it holds first (``client.comparison.placement``), a request named twice run once (``twins``); ``done``
    is told of each cell as its run ends."""
    cancel = threading.Event()
    copies = twins(jobs)
    runs = sorted(set(range(len(jobs))) - {i for later in copies.values() for i in later})
    placement = Placement([jobs[i] for i in runs], lambda job: dataset_key(job.request))
    cells: list[Future[RunOutcome]] = [Future() for _ in jobs]

    def one(job: Job) -> tuple[RunOutcome, str]:
        label = _label(job, designs)
        task = bars.start(label, job.request.max_examples)
        ended = pool.run(job.request, cancel=cancel,
                         progress=lambda p: bars.show(task, p.examples, p.max_examples, f"attrs {p.attributes}"))
        result = local_result(job.request, ended)
        bars.end(task, label, result)
        outcome = RunOutcome(job.design, job.entry, job.seed, result,
                             audit="local (no ledger)" if ended.started else "no session (the run did not start)")
        return outcome, ended.worker

    def runner() -> None:
        worker: str | None = None
        while not cancel.is_set() and (taken := placement.take(worker)) is not None:
            i = runs[taken]
            group = [i, *copies.get(i, [])]
            started = [j for j in group if cells[j].set_running_or_notify_cancel()]
            if len(started) < len(group):  # cancelled by Ctrl-C meanwhile
                for j in started:
                    cells[j].set_result(not_started(jobs[j]))
                continue
            try:
                outcome, worker = one(jobs[i])
            except BaseException as exc:  # the cell's, as a thread pool's future would hold it
                placement.ran(taken, "")  # its dataset is no longer being built for it
                for j in group:
                    cells[j].set_exception(exc)
                continue
            placement.ran(taken, worker)
            for j in group:
                cell = outcome if j == i else twin_outcome(outcome, jobs[j], designs, bars)
                if done is not None:
                    done(jobs[j], cell)
                cells[j].set_result(cell)

    return run_threads(runner, parallel, cells, jobs, cancel, lambda: [j for t in placement.drop()
                                                                       for j in [runs[t], *copies.get(runs[t], [])]])


def twin_outcome(outcome: RunOutcome, job: Job, designs: list[Design], bars: GridBars) -> RunOutcome:
    """``job``'s cell from the outcome of the run of the same request, counted on the grid's bar as a run done."""
    twin = replace(outcome, design=job.design, entry=job.entry, result=outcome.result.model_copy(deep=True))
    label = _label(job, designs)
    bars.end(bars.start(label, job.request.max_examples), label, twin.result)
    return twin


def run_threads(runner: Callable[[], None], parallel: int, cells: list[Future[RunOutcome]], jobs: list[Job],
                cancel: threading.Event, dropped: Callable[[], list[int]]) -> list[RunOutcome]:
    """``parallel`` threads of ``runner`` until every cell is done; on the way out (Ctrl-C too) no thread starts another
    run and the cells of the ``dropped`` jobs are cancelled."""
    threads = [threading.Thread(target=runner, name=f"grid-{n}", daemon=True) for n in range(max(1, parallel))]
    for thread in threads:
        thread.start()
    try:
        return gather(cells, jobs, cancel.set)
    finally:
        cancel.set()  # no thread starts another run
        for i in dropped():
            cells[i].cancel()
        for thread in threads:
            thread.join()


def local_result(request: RunCreate, ended: Ended) -> RunResult:
    """A local run's result; whatever went wrong ends as a failed result, never an exception."""
    if not ended.started:
        return failed_result(request, NOT_STARTED, "cancelled")
    if ended.result is None:
        return failed_result(request, f"{ended.error}: {ended.message}")
    return ended.result


class PatientLearner(LearnerClient):
    """A grid's learner client, which waits out a learner restart.

    A request that cannot reach the learner is sent again once a second while the learner has been out of reach
    for less than ``grace`` seconds, one outage for all the grid's threads; past that, or once ``stopped`` is set
    (Ctrl-C), it raises ``LearnerUnavailable`` as any client would. A POST cut off after it was sent is not sent
    again (it may have started a run): only one whose connection was refused is. ``say`` tells the user that the
    learner went away and that it is back.
    """

    def __init__(self, base_url: str, *, grace: float, token: str | None = None,
                 say: Callable[[str], None] = lambda _: None, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, token=token, transport=transport)
        self.grace = grace
        self.stopped = threading.Event()
        self._say = say
        self._outage = threading.Lock()
        self._gone_since: float | None = None

    def send(self, call: Call[M]) -> M:
        while True:
            try:
                answer = super().send(call)
            except LearnerUnavailable as exc:
                if self._wait_for_restart(call, exc):
                    continue
                raise
            if self._gone_since is not None:
                with self._outage:
                    if self._gone_since is not None:
                        self._gone_since = None
                        self._say(f"the learner at {self.base_url} answers again")
            return answer

    def _wait_for_restart(self, call: Call[Any], exc: LearnerUnavailable) -> bool:
        """Whether to send ``call`` again (after a second's wait) rather than raise ``exc``."""
        cause = exc.__cause__
        unsent = isinstance(cause, httpx.ConnectError)
        if self.grace <= 0 or not (unsent or (call.method in ("GET", "DELETE")
                                              and isinstance(cause, httpx.TransportError))):
            return False
        with self._outage:
            if self._gone_since is None:
                self._gone_since = time.monotonic()
                self._say(f"cannot reach the learner at {self.base_url}; waiting up to {self.grace:.0f} s for it to "
                          "come back")
            gone_for = time.monotonic() - self._gone_since
        return gone_for < self.grace and not self.stopped.wait(1.0)


def run_service(jobs: list[Job], designs: list[Design], *, learner_url: str, parallel: int, bars: GridBars,
                run_timeout: float, learner_token: str | None = None, restart_grace: float = 0.0,
                done: Done | None = None) -> list[RunOutcome]:
    """Every job through the learner service, ``parallel`` at a time, each followed until it ends and audited.

    The runs belong to ``learner_token``'s caller (a new caller when None). A run still going after ``run_timeout``
    seconds is cancelled and reported with its curve so far. A learner that cannot be reached for
    ``restart_grace`` seconds ends the comparison (``LearnerUnavailable``); one that comes back sooner (a restart)
    has kept its runs, the one it was executing as 'interrupted', and the grid goes on. A run the learner refuses
    is one failed cell. ``done`` is told of each run as it ends, audited.
    """
    def say(text: str) -> None:
        bars.bars.console.print(escape(text), soft_wrap=True)

    with PatientLearner(learner_url, grace=restart_grace, token=learner_token, say=say) as learner:
        runs = ServiceRuns(learner, designs, bars, run_timeout, done)
        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            cells = [pool.submit(runs.one, job) for job in jobs]
            try:
                return gather(cells, jobs, runs.stop)
            except Interrupted:
                raise
            except BaseException:
                for cell in cells:  # the learner is gone (or Ctrl-C): start no further run
                    cell.cancel()
                learner.stopped.set()
                raise


class ServiceRuns:
    """The runs of one grid on the learner service, from the grid's threads: each started, followed until it ends
    (at most ``run_timeout`` seconds) and audited; ``stop`` cancels those started, and any started after it."""

    def __init__(self, learner: PatientLearner, designs: list[Design], bars: GridBars, run_timeout: float,
                 done: Done | None) -> None:
        self.learner, self.designs, self.bars, self.run_timeout, self.done = learner, designs, bars, run_timeout, done
        self.started: list[str] = []
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def stop(self) -> None:
        self.learner.stopped.set()  # the cancels below, and every thread, stop waiting for a learner that is gone
        with self.lock:
            self.stopping.set()
            ids = list(self.started)
        for run_id in ids:
            cancel_quietly(self.learner, run_id)

    def one(self, job: Job) -> RunOutcome:
        outcome = self.run(job)
        if self.done is not None:
            self.done(job, outcome)
        return outcome

    def run(self, job: Job) -> RunOutcome:
        label = _label(job, self.designs)
        task = self.bars.start(label, job.request.max_examples)

        def show(info: RunInfo) -> None:
            self.bars.show(task, info.progress_examples, info.max_examples,
                           f"attrs {info.progress_attributes} {info.status}")

        try:
            run_id = self.learner.start(job.request).id
        except LearnerError as exc:
            refused = RunOutcome(job.design, job.entry, job.seed,
                                 failed_result(job.request, f"{exc.error}: {exc.detail}"))
            self.bars.end(task, label, refused.result)
            audit_outcome(self.learner, refused)
            return refused
        with self.lock:
            self.started.append(run_id)
            late_start = self.stopping.is_set()  # started while the grid was being stopped
        if late_start:
            cancel_quietly(self.learner, run_id)
        late = ""
        try:
            info = self.learner.wait(run_id, timeout=self.run_timeout, poll=POLL_SECONDS, progress=show)
        except RunTimeout as exc:
            info, late = self.learner.cancel(run_id), f"{exc}; cancelled"
            show(info)
        result = ended_result(job, info, late)
        outcome = RunOutcome(job.design, job.entry, job.seed, result, run_id=run_id)
        # The oracle recomputes the session's chain: seconds for a full-information run's 100,000s of rows.
        self.bars.show(task, info.progress_examples, info.max_examples, f"{info.status}; auditing its session")
        audit_outcome(self.learner, outcome)
        self.bars.end(task, label, result)
        return outcome


def ended_result(job: Job, info: RunInfo, late: str) -> RunResult:
    """The result of a run that ended on the learner; one that ended without a result (interrupted) has what it had
    done by then. ``late``: why it was cancelled, when it ran past its time."""
    result = info.result or failed_result(job.request, info.message, info.status)
    if info.result is None:
        result.curve, result.session = info.curve, info.session
        result.examples, result.attributes = info.progress_examples, info.progress_attributes
        result.cost = info.curve[-1].cost if info.curve else 0.0
    if late:
        result.message = f"{late} ({result.message})" if result.message else late
    return result


def cancel_quietly(learner: LearnerClient, run_id: str) -> None:
    """Cancel a run; one that has already ended (or a learner that is gone) is no error here."""
    try:
        learner.cancel(run_id)
    except (LearnerError, LearnerUnavailable):
        pass


def audit_outcome(learner: LearnerClient, outcome: RunOutcome) -> None:
    """The oracle's audit of the run's session, through the learner that holds the session's token."""
    if outcome.run_id is None or outcome.result.session is None:
        outcome.audit = "no session (the run did not start)"
        return
    try:
        report = learner.audit(outcome.run_id)
    except LearnerError as exc:
        outcome.audit = f"audit failed: {exc.error}: {exc.detail}"
        return
    except LearnerUnavailable as exc:
        outcome.audit = f"audit failed: {exc}"
        return
    outcome.audit_compliant = report.compliant
    outcome.audit = "compliant" if report.compliant else "NOT compliant: " + "; ".join(report.reasons)


def attach_regret(outcomes: list[RunOutcome], designs: list[Design]) -> None:
    """R_T against the best k-sparse predictor in hindsight (Ito et al. eq. (1)) of online runs, per curve point."""
    comparators: dict[tuple[int, int, int], float] = {}
    for outcome in outcomes:
        design = designs[outcome.design]
        result = outcome.result
        # Only the online protocol's runs carry a cumulative loss: the run says its protocol, wherever it ran (an
        # algorithm a learner serves may be installed nowhere else).
        if design.regret_k is None or result.cumulative_loss is None or not result.curve:
            continue
        try:
            dataset = load_dataset(design.dataset.name, design.dataset.params, outcome.seed)
        except DatasetError as exc:
            # The comparator is fitted here, on the data: an oracle elsewhere may serve a set this machine lacks.
            outcome.regret_missing = f"R_T not computed: the best k-sparse predictor in hindsight needs the data " \
                                     f"on this machine ({exc})"
            continue
        X, y = stream_arrays(dataset, "train", outcome.seed, result.examples)
        # The paper's comparator lies in the unit ball (Assumption (1)); it is the same for every algorithm of a
        # design and seed, so it is found once per prefix length.
        outcome.regret_curve = []
        for p in result.curve:
            key = (outcome.design, outcome.seed, p.examples)
            if key not in comparators:
                comparators[key] = best_sparse(X[: p.examples], y[: p.examples], design.regret_k, radius=1.0).loss
            if p.cumulative_loss is not None:
                outcome.regret_curve.append(p.cumulative_loss - comparators[key])
        outcome.regret = outcome.regret_curve[-1] if outcome.regret_curve else None


def execute(jobs: list[Job], designs: list[Design], *, local: bool, learner_url: str | None, parallel: int | None,
            console: Console, run_timeout: float, show_progress: bool = True, learner_token: str | None = None,
            restart_grace: float = 0.0, pool: RunPool | None = None, done: Done | None = None) -> list[RunOutcome]:
    """The jobs on LocalOracles of ``pool``'s workers (``local``; a LocalCluster started for them when ``pool`` is
    None) or through the learner service (``run_service``), in job order; ``parallel`` runs at a time (by default
    as many as the workers execute at once, else the machine's cores). ``done`` is told of each run as it ends, in
    the thread that followed it (``budgetlab bench`` keeps each one then, so that an interruption loses none)."""
    if local and pool is None:
        with RunPool() as own:
            return execute(jobs, designs, local=local, learner_url=learner_url, parallel=parallel, console=console,
                           run_timeout=run_timeout, show_progress=show_progress, pool=own, done=done)
    with progress_bars(console, show_progress, len(jobs)) as bars:
        if local:
            assert pool is not None
            return run_local(jobs, designs, pool=pool, parallel=parallel or pool.slots(), bars=bars, done=done)
        parallel = parallel or default_workers()
        assert learner_url is not None
        return run_service(jobs, designs, learner_url=learner_url, parallel=parallel, bars=bars,
                           run_timeout=run_timeout, learner_token=learner_token, restart_grace=restart_grace,
                           done=done)


def run_comparison(config: CompareConfig, *, local: bool, learner_url: str | None, oracle_url: str | None,
                   parallel: int | None, console: Console, show_progress: bool = True, chosen: Chosen | None = None,
                   learner_token: str | None = None, restart_grace: float = 0.0, pool: RunPool | None = None,
                   api_key: str | None = None) -> tuple[list[Design], list[RunOutcome]]:
    designs = resolve_designs(config)
    jobs = jobs_for(config, designs, oracle_url or "local", chosen, api_key)
    outcomes = execute(jobs, designs, local=local, learner_url=learner_url, parallel=parallel, console=console,
                       run_timeout=config.run_timeout, show_progress=show_progress, learner_token=learner_token,
                       restart_grace=restart_grace, pool=pool)
    attach_regret(outcomes, designs)
    return designs, outcomes
