"""Runs of the learner service: worker processes of Dask execute them (``learner.cluster``), a bounded number at a
time; the others wait as 'queued'.

The workers start with the learner, in the background (a LocalCluster of ``workers`` processes, or the workers of
the Dask scheduler of ``BUDGETLAB_SCHEDULER``). The learner opens each run's oracle session, the worker runs in it
over HTTP and reports its progress, which a thread of the learner records as it comes.

Every step of a run reaches the database as it happens (created, running, each curve point, its end), so a
restarted learner lists every run; one that was queued or executing when the learner died shows as
'interrupted' with its curve so far. Runs that are queued or executing live in memory; of the ended ones only the
``retained`` most recent stay there, the others are read back from the database. A run that ends, however it
ends, closes the oracle sessions it opened.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from budgetlab.contract.runs import CurvePoint, RunCreate, RunInfo, RunPage, RunResult, RunStatus
from budgetlab.errors import Code, learner_refusal
from learner.cluster import Ended, RunPool
from learner.held import OpenSession
from learner.http_oracle import HttpOracle
from learner.runner import Progress, run_horizon
from learner.service.closing import SessionCloser
from learner.service.store import RunStore, StoredRun

log = logging.getLogger(__name__)

STOPPED = "the learner stopped before this run ended"
CANCELLED_QUEUED = "cancelled before it started"
CANCEL_WAIT = 10.0
# The Retry-After of a caller refused for having too many runs unended: about when one of them may have ended.
RETRY_QUEUED = 10.0
# How often a learner on a cluster looks at how many threads its workers have.
FOLLOW_SECONDS = 2.0


def outcome(ended: Ended, stopping: bool) -> tuple[RunStatus, str]:
    """A run's status and message from how it ended on its worker (``stopping``: the learner is stopping)."""
    status: RunStatus
    if not ended.started:
        status, message = "cancelled", CANCELLED_QUEUED
    elif ended.result is not None:
        status, message = ended.result.status, ended.result.message
    elif ended.unavailable:
        status, message = "oracle_unavailable", ended.message
    elif ended.refused:
        status, message = "failed", ended.message
    else:
        status, message = "failed", f"{ended.error}: {ended.message}"
    if status == "cancelled" and stopping:
        return "interrupted", STOPPED
    return status, message


def session_of(oracle: HttpOracle, url: str) -> OpenSession:
    return OpenSession(url, oracle.session.id, oracle.session.token)


@dataclass
class Run:
    id: str
    owner: str
    request: RunCreate
    session: OpenSession
    max_examples: int
    oracle: HttpOracle | None  # released when the run ends
    status: RunStatus = "queued"
    examples: int = 0
    attributes: int = 0
    curve: list[CurvePoint] = field(default_factory=list)
    result: RunResult | None = None
    message: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)

    def info(self) -> RunInfo:
        return RunInfo(id=self.id, status=self.status, request=self.request, progress_examples=self.examples,
                       progress_attributes=self.attributes, max_examples=self.max_examples, session=self.session.id,
                       result=self.result, curve=list(self.curve), message=self.message)


class RunManager:
    def __init__(self, store: RunStore, *, max_running: int | None, retained: int, workers: int | None = None,
                 threads: int = 1, scheduler: str | None = None, oracle_url: str | None = None,
                 max_queued: int | None = None) -> None:
        self.store = store
        self.max_queued = max_queued
        self._unended: Counter[str] = Counter()  # by owner: runs queued or executing, and starts under way
        # Every oracle session a run opened is recorded as it opens and closed, by the closer, however the run
        # ended; one still open when the learner died is closed by the next learner (``recover``).
        self.closer = SessionCloser(on_closed=store.closed)
        self.oracle_url = oracle_url
        self.retained = retained
        self.live: dict[str, Run] = {}
        self.recent: OrderedDict[str, tuple[str, RunInfo]] = OrderedDict()
        self.lock = threading.Lock()
        self.stopping = False
        self._queue: queue.Queue[Run | None] = queue.Queue()  # None: a run thread's mark to stop
        self._threads = 0
        self.ready = threading.Event()  # set once the workers are up (or failed to start: the runs then say why)
        self.max_running = max_running
        self.workers, self.threads = workers, threads
        self.scheduler = scheduler
        self.pool: RunPool | None = None
        self.pool_error = ""
        self._workers_started = False

    def recover(self) -> int:
        """Mark the runs a previous learner left unended as 'interrupted' and close every session it left open,
        theirs and those of runs it had no time to close (in the background: an oracle that is down must not delay
        the start); how many runs were interrupted."""
        interrupted = self.store.interrupt_unended(STOPPED)
        sessions = {s.id: s for s in [*interrupted, *self.store.unclosed()]}
        if sessions:
            threading.Thread(target=self.closer.close, args=(list(sessions.values()),), name="close-interrupted",
                             daemon=True).start()
        return len(interrupted)

    def start_workers(self) -> None:
        """Start the Dask workers in the background, once: when the served learner starts, or at its first run (an
        app that is only built, for its OpenAPI say, starts no process). Runs queue meanwhile."""
        with self.lock:
            if self._workers_started or self.stopping:
                return
            self._workers_started = True
        # Daemon threads: a learner that is killed takes its runs with it; the next one marks them interrupted.
        threading.Thread(target=self._start_workers, name="run-workers", daemon=True).start()

    def _start_workers(self) -> None:
        """The Dask workers (a LocalCluster takes seconds to start), then the threads that keep ``max_running`` runs
        going on them."""
        pool: RunPool | None = None
        try:
            pool = RunPool(workers=self.workers, scheduler=self.scheduler, threads=self.threads)
            log.info("runs execute on %s", pool.where)
            if self.scheduler and self.oracle_url:
                for worker, why in pool.reach(self.oracle_url).items():
                    log.warning("Dask worker %s cannot reach the oracle %s: %s", worker, self.oracle_url, why)
        except Exception as exc:  # every run then fails saying why
            self.pool_error = f"the learner cannot start its workers ({self.scheduler or 'LocalCluster'}): {exc}"
            log.exception("starting the workers")
        with self.lock:
            stopped = self.stopping
            if not stopped:
                self.pool = pool
        if stopped:  # the learner stopped while its workers started: nothing will run on them
            if pool is not None:
                pool.close()
            return
        running = self.max_running or (pool.slots() if pool is not None else 1)
        self._add_threads(running)
        self.ready.set()
        if pool is not None and self.scheduler and self.max_running is None:
            self._follow(pool)

    def _follow(self, pool: RunPool) -> None:
        """A cluster's workers come and go (``--scale worker=3``, a batch system's jobs): keep as many runs going as
        its threads, growing with them (a worker that leaves takes no thread away: its runs wait in the
        scheduler's queue for the others)."""
        lost = False
        while not self.stopping:
            time.sleep(FOLLOW_SECONDS)
            try:
                slots = pool.slots()
            except Exception as exc:  # the scheduler is out of reach: the runs say so when they fail
                # Dask's client between two connections fails with whatever it half holds ("'NoneType' object has
                # no attribute 'ncores'"), which says nothing to a reader: say what could not be done, once.
                if not lost:
                    log.warning("cannot count the workers of the Dask scheduler %s (restarting or out of reach?); "
                                "retrying every %g s: %s: %s", self.scheduler, FOLLOW_SECONDS, type(exc).__name__, exc)
                lost = True
                continue
            if lost:
                log.warning("the Dask scheduler %s answers again: %d worker threads", self.scheduler, slots)
                lost = False
            self._add_threads(slots)

    def _add_threads(self, total: int) -> None:
        """Run threads up to ``total`` (each keeps one run going on the workers)."""
        with self.lock:
            if self.stopping:
                return
            for i in range(self._threads, total):
                threading.Thread(target=self._work, name=f"run-worker-{i}", daemon=True).start()
            self._threads = max(self._threads, total)

    @contextmanager
    def admitted(self, owner: str) -> Iterator[None]:
        """A run of ``owner`` may start inside: it counts as one of the caller's unended runs from here (refused
        429 ``too_many_runs`` past ``max_queued``, before anything is opened), until it ends or fails to start."""
        with self.lock:
            if self.max_queued is not None and self._unended[owner] >= self.max_queued:
                raise learner_refusal(Code.TOO_MANY_RUNS,
                                      f"this caller has {self._unended[owner]} runs queued or executing, as many as "
                                      f"one caller may (BUDGETLAB_LEARNER_MAX_QUEUED={self.max_queued}); nothing "
                                      "was started: retry once one ends", retry_after=RETRY_QUEUED)
            self._unended[owner] += 1
        try:
            yield
        except BaseException:
            self._release(owner)
            raise

    def _release(self, owner: str) -> None:
        with self.lock:
            self._unended[owner] -= 1
            if self._unended[owner] <= 0:
                del self._unended[owner]

    def start(self, owner: str, request: RunCreate, oracle: HttpOracle) -> RunInfo:
        assert request.oracle_url is not None
        run = Run(id=secrets.token_hex(8), owner=owner, request=request, session=session_of(oracle, request.oracle_url),
                  max_examples=run_horizon(request.max_examples, oracle.n_examples), oracle=oracle)
        try:
            self.store.insert(owner, run.info(), run.session)
        except BaseException:
            oracle.close()
            self.closer.close([run.session])
            raise
        with self.lock:
            self.live[run.id] = run
        self._queue.put(run)
        self.start_workers()
        return run.info()

    def find(self, run_id: str) -> tuple[str, RunInfo] | None:
        """(owner, info) of a run, from memory or else from the database."""
        with self.lock:
            run = self.live.get(run_id)
            if run is not None:
                return run.owner, run.info()
            if run_id in self.recent:
                return self.recent[run_id]
        stored = self.store.load(run_id)
        return None if stored is None else (stored.owner, stored.info)

    def stored(self, run_id: str) -> StoredRun | None:
        return self.store.load(run_id)

    def progress_of(self, run_ids: Iterable[str]) -> dict[str, RunInfo]:
        """The in-memory state of those runs that are queued or executing, or ended lately: fresher than the
        database's, and one snapshot. A listing's rows, read a moment before, may still say 'running' of a run that
        has ended since (its end is written first) while the run after it already runs: without the ended ones
        here, a pool of one showed two runs executing at once."""
        ids = list(run_ids)
        with self.lock:
            fresh = {i: self.live[i].info() for i in ids if i in self.live}
            fresh.update((i, self.recent[i][1]) for i in ids if i not in fresh and i in self.recent)
            return fresh

    def freshen(self, page: RunPage) -> dict[str, RunInfo]:
        """Bring a page of runs read from the database up to date from memory (the database lags behind an executing
        run; memory does not): each run's status, progress and last point. The in-memory state of its runs, by id."""
        live = self.progress_of(run.id for run in page.runs)
        for run in page.runs:
            if run.id in live:
                info = live[run.id]
                run.status, run.progress_examples = info.status, info.progress_examples
                run.progress_attributes = info.progress_attributes
                run.last_point = info.curve[-1] if info.curve else run.last_point
        return live

    def cancel(self, run_id: str) -> None:
        """Stop a run: a queued one at once, an executing one at its next example (waited for, up to 10 s)."""
        with self.lock:
            run = self.live.get(run_id)
            if run is None:
                return
            run.cancel.set()
            withdrawn = run.status == "queued"
            if withdrawn:
                run.status = "cancelled"
        if withdrawn:
            self._end(run, "cancelled", CANCELLED_QUEUED, None)
        run.ended.wait(CANCEL_WAIT)

    def shutdown(self, timeout: float = CANCEL_WAIT) -> None:
        """The learner is stopping: every queued or executing run ends 'interrupted' with its curve so far."""
        self.stopping = True
        with self.lock:
            runs = list(self.live.values())
            waiting = [run for run in runs if run.status == "queued"]
            for run in runs:
                run.cancel.set()
                if run.status == "queued":
                    run.status = "interrupted"
        for run in waiting:
            self._end(run, "interrupted", STOPPED, None)
        for run in runs:
            run.ended.wait(timeout)
        with self.lock:
            pool, self.pool = self.pool, None
            for _ in range(self._threads):
                self._queue.put(None)
        if pool is not None:
            pool.close()

    # --- the pool -------------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            run = self._queue.get()
            if run is None:
                return
            with self.lock:
                if run.status != "queued":  # cancelled while it waited
                    continue
                run.status = "running"
            try:
                self._execute(run)
            except Exception:  # the pool must outlive any run; the run still ends with a status
                log.exception("run %s", run.id)
                if not run.ended.is_set():
                    self._end(run, "failed", "the learner failed to record this run", None)

    def _execute(self, run: Run) -> None:
        assert run.oracle is not None
        self.store.set_status(run.id, "running")

        def progress(p: Progress) -> None:
            run.examples, run.attributes = p.examples, p.attributes
            if p.point is not None:
                self.store.add_point(run.id, len(run.curve), p.point, p.examples, p.attributes)
                run.curve.append(p.point)

        def opened(session: OpenSession) -> None:
            try:
                self.store.hold(run.id, session)
            except Exception:  # the database is out of reach: the run goes on, and closes the session as it ends
                log.exception("run %s: its session %s was not recorded", run.id, session.id)

        ended = Ended(error="RuntimeError", message=self.pool_error or "the learner is stopping")
        pool = self.pool
        try:
            if pool is not None:
                ended = pool.run(run.request, session=run.session, progress=progress, cancel=run.cancel,
                                 opened=opened)
        except Exception as exc:  # the workers are gone: the run still ends, with a status
            ended = Ended(error=type(exc).__name__, message=f"its worker was lost: {exc}")
        finally:
            oracle, run.oracle = run.oracle, None
            oracle.close()
            for session in ended.opened:  # the worker's word on them reaches us first, unless it raced its end
                opened(session)
            self.closer.close([run.session, *ended.opened])
        status, message = outcome(ended, self.stopping)
        self._end(run, status, message, ended.result)

    def _end(self, run: Run, status: RunStatus, message: str, result: RunResult | None) -> None:
        written = len(run.curve)
        if result is not None:
            run.curve = list(result.curve)
            run.examples, run.attributes = result.examples, result.attributes
        if run.oracle is not None:  # withdrawn from the queue: it never ran, its session is closed here
            run.oracle.close()
            self.closer.close([run.session])
        try:
            self.store.finish(run.id, status=status, message=message, examples=run.examples,
                              attributes=run.attributes, result=result, curve=run.curve, written=written)
        except Exception:  # the database is unreachable: the run still ends, in memory, for its waiting callers
            log.exception("run %s: its end was not recorded", run.id)
        with self.lock:
            run.status, run.message, run.result, run.oracle = status, message, result, None
            ended_now = self.live.pop(run.id, None) is not None
            self.recent[run.id] = (run.owner, run.info())
            while len(self.recent) > self.retained:
                self.recent.popitem(last=False)
        if ended_now:
            self._release(run.owner)
        run.ended.set()
