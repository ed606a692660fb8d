"""Where runs execute: worker processes of Dask distributed, on this machine or on a lab's cluster.

A run is a pure function of its request (algorithm, parameters, dataset name and parameters, budget, seed, and the
oracle session it works in, or none): ``RunPool.run`` ships that to a worker, never data. The worker builds a
dataset itself, once per worker process (``load_dataset``'s cache keeps it for the next run of the same set), or
works over HTTP in the oracle session the caller opened. The algorithms' small numpy steps hold the GIL, so runs in
threads of one process share one core; worker processes use them all.

Without a scheduler address the pool starts a ``LocalCluster`` of ``workers`` single-threaded processes (the
machine's cores by default); with one (``tcp://HOST:8786``, ``BUDGETLAB_SCHEDULER``) it sends the runs to that
scheduler's workers, started however the lab starts them (``dask worker``, dask-jobqueue); they need budgetlab
installed, and must reach the oracle (``check_reach``). A Dask scheduler runs whatever code a client sends it, on
every worker: one that listens beyond the machine takes ``tls://`` with certificates (``scheduler_security``), so
that only the holders of a certificate its CA signed may send it anything.

A worker reports a run's progress as events on a topic (``Worker.log_event``; the pool subscribes to it): every
curve point, the examples seen at most every ``PROGRESS_SECONDS``, and each session it opens itself (a test
session), before it uses it. They are handed to the caller's ``progress`` and ``opened`` in the caller's thread, as
the runner would call it in-process. A cancel is a mark set on every worker
(``Client.run``): the run stops at its next example, with its curve so far; one that has not started yet returns
at once without starting. A run whose caller is gone (a learner or a comparison killed, on a cluster that outlives
it: the scheduler then lets go of the run, and the worker marks it cancelled) stops too, within ``PROGRESS_SECONDS``,
and opens no test session: nobody would record it, close it or read the result.
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from budgetlab.contract.runs import CurvePoint, RunCreate, RunResult
from budgetlab.errors import OracleError, OracleUnavailable
from learner import worker_start
from learner.algorithms import get_algorithm
from learner.held import OpenSession
from learner.http_oracle import HttpOracle
from learner.oracle import Oracle
from learner.runner import Progress
from learner.scoring import run_and_score, session_opener
from web.environment import env_int

if TYPE_CHECKING:
    from distributed import LocalCluster
    from distributed.security import Security

log = logging.getLogger(__name__)

SCHEDULER_ENV = "BUDGETLAB_SCHEDULER"
# The files of a tls:// scheduler's TLS (PEM): the CA that signed its certificate (and the workers'), and this
# client's certificate and key, which the scheduler requires (Dask's --tls-ca-file, --tls-cert, --tls-key).
SCHEDULER_CA_ENV, SCHEDULER_CERT_ENV, SCHEDULER_KEY_ENV = (
    "BUDGETLAB_SCHEDULER_CA", "BUDGETLAB_SCHEDULER_CERT", "BUDGETLAB_SCHEDULER_KEY")
WORKERS_ENV = "BUDGETLAB_WORKERS"
# Runs a worker process of the learner's own LocalCluster executes at once (its threads). A run over HTTP spends much
# of each step waiting for the oracle's answer, the GIL released, so more than one may pay where the oracle has cores
# of its own. Not on 2 cores shared with the oracle: cost-aware-priced through the services took 127 and 143 s with 1
# (2 runs in flight, the oracle at 78-86 % of a core), 137 and 172 s with 2 (4 in flight: the learner's and the
# runs' own CPU took the oracle's core).
WORKER_THREADS_ENV = "BUDGETLAB_WORKER_THREADS"
HTTP_RUNS_PER_WORKER = 1
TOPIC = "budgetlab-runs"
PROGRESS_SECONDS = 0.25
# How long a caller's thread waits for an event before it looks at its run's future and its cancel again.
WAIT_SECONDS = 0.1
# Put in a run's queue of events when its future is done.
_ENDED: dict[str, Any] = {}
# Runs cancelled before they started, remembered by every worker (the marks of runs that never come are dropped).
CANCEL_MARKS = 10_000


@dataclass
class Ended:
    """How a run ended on its worker: its result, or the error it raised, or that it never started (cancelled first).

    ``opened`` are the sessions it opened itself (its test session), for the caller to close."""

    result: RunResult | None = None
    started: bool = True
    error: str = ""  # the exception's class name
    message: str = ""
    unavailable: bool = False  # the oracle was out of reach
    refused: bool = False  # an OracleError or ValueError: the request's fault, said without the class name
    opened: list[OpenSession] = field(default_factory=list)
    worker: str = ""  # the address of the worker it ran on (it now holds the run's dataset)


# --- on the worker --------------------------------------------------------------------------------------


class _Marks:
    """The cancel flags of this worker process: one per run executing here, and the marks of runs not yet started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, threading.Event] = {}
        self.early: OrderedDict[str, None] = OrderedDict()
        self.executed = 0  # runs started here, for the operator (``RunPool.executed``)

    def start(self, key: str) -> threading.Event | None:
        """The run's cancel flag, or None if it was cancelled before it started."""
        with self.lock:
            if key in self.early:
                del self.early[key]
                return None
            flag = self.running[key] = threading.Event()
            self.executed += 1
            return flag

    def end(self, key: str) -> None:
        with self.lock:
            self.running.pop(key, None)

    def cancel(self, key: str) -> None:
        with self.lock:
            flag = self.running.get(key)
            if flag is not None:
                flag.set()
                return
            self.early[key] = None
            while len(self.early) > CANCEL_MARKS:
                self.early.popitem(last=False)


_MARKS = _Marks()


def _cancel_here(key: str) -> None:
    _MARKS.cancel(key)


def _reach_here(url: str) -> str | None:
    """None if this worker reaches the oracle at ``url``, else why not."""
    from budgetlab.oracle_client import OracleClient

    try:
        with OracleClient(url, timeout=10.0) as client:
            return None if client.health() else f"the oracle at {url} does not answer its health check"
    except Exception as exc:  # whatever stops a worker from reaching it is the answer
        return f"{type(exc).__name__}: {exc}"


def _executed_here() -> int:
    return _MARKS.executed


def _rss_here() -> int:
    """This worker process's resident memory, in bytes."""
    import psutil  # a dependency of distributed

    return int(psutil.Process().memory_info().rss)


def execute(key: str, request: RunCreate, session: OpenSession | None, topic: str) -> Ended:
    """The task: run ``request`` on this worker, in ``session`` over HTTP, or in-process when it is None."""
    from distributed import get_worker

    ended = _execute(key, request, session, topic)
    ended.worker = get_worker().address
    return ended


def _abandoned(worker: Any, key: str) -> bool:
    """Whether no caller waits for this run any more: the scheduler let go of its key (its client went away), and the
    worker marked the task it still executes cancelled."""
    task = worker.state.tasks.get(key)
    return task is None or task.state in ("cancelled", "released", "forgotten")


def _execute(key: str, request: RunCreate, session: OpenSession | None, topic: str) -> Ended:
    from distributed import get_worker

    cancel = _MARKS.start(key)
    if cancel is None:
        return Ended(started=False)
    worker = get_worker()
    opened: list[OpenSession] = []
    last = looked = 0.0

    def report(p: Progress) -> None:
        nonlocal last, looked
        now = time.monotonic()
        if now - looked >= PROGRESS_SECONDS:
            looked = now
            if _abandoned(worker, key):
                cancel.set()
        if p.point is not None or p.examples >= p.max_examples or now - last >= PROGRESS_SECONDS:
            last = now
            worker.log_event(topic, {"key": key, "examples": p.examples, "attributes": p.attributes,
                                     "cost": p.cost, "max_examples": p.max_examples,
                                     "point": None if p.point is None else p.point.model_dump(mode="json")})

    try:
        worker.log_event(topic, {"key": key, "started": True})
        oracle: Oracle
        if session is None:
            open_oracle = session_opener(request, None)
            oracle = open_oracle(split="train", protocol=get_algorithm(request.algorithm).protocol,
                                 budget=request.budget)
        else:
            open_http = session_opener(request, session.oracle_url)

            def open_oracle(**kwargs: Any) -> Oracle:
                if _abandoned(worker, key):
                    raise RuntimeError("the run's caller is gone: no test session is opened for it")
                test = open_http(**kwargs)
                assert isinstance(test, HttpOracle)
                held = OpenSession(session.oracle_url, test.session.id, test.session.token)
                opened.append(held)
                # Before its first use: the caller records it, and closes it even if it never hears of this run again.
                worker.log_event(topic, {"key": key, "opened": asdict(held)})
                return test

            oracle = HttpOracle.attach(session.oracle_url, session.id, session.token)
        try:
            result = run_and_score(request, oracle, open_oracle, progress=report, cancel=cancel)
        finally:
            oracle.close()
        return Ended(result=result, opened=opened)
    except OracleUnavailable as exc:
        return Ended(error=type(exc).__name__, message=str(exc), unavailable=True, opened=opened)
    except (OracleError, ValueError) as exc:
        return Ended(error=type(exc).__name__, message=str(exc), refused=True, opened=opened)
    except Exception as exc:  # a run ends with a status, whatever the algorithm raised
        return Ended(error=type(exc).__name__, message=str(exc), opened=opened)
    finally:
        _MARKS.end(key)


# --- on the caller's side -------------------------------------------------------------------------------


# Dask's own monitoring at its defaults keeps an idle LocalCluster busy: two workers doing nothing took 4.8 CPU s in
# 30 s (a statistical profiler sampling each worker thread every 10 ms, event-loop ticks every 20 ms, memory and system
# monitors), where a learner service or a comparison waits for minutes. What they measure is shown only on Dask's
# dashboard, which ours does not have (bokeh is not a dependency). A cluster of a lab's (``--scheduler``) keeps its
# own settings.
QUIET_LOCAL_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
}


def default_workers() -> int:
    return os.cpu_count() or 1


def http_worker_threads() -> int:
    """The threads of each process of the learner's own LocalCluster: ``BUDGETLAB_WORKER_THREADS``, else
    ``HTTP_RUNS_PER_WORKER`` (ValueError below 1)."""
    threads = env_int(WORKER_THREADS_ENV, HTTP_RUNS_PER_WORKER)
    if threads < 1:
        raise ValueError(f"{WORKER_THREADS_ENV} must be at least 1")
    return threads


def scheduler_security(address: str) -> Security | None:
    """What the Dask client presents to the scheduler at ``address``: for ``tls://``, the files that
    ``BUDGETLAB_SCHEDULER_CA``, ``_CERT`` and ``_KEY`` name (else Dask's own ``distributed.comm.tls`` settings), with
    encryption required; None for another address, which takes none (ValueError if they are set: a client that
    thinks it speaks TLS to a plain scheduler would send its runs in the clear)."""
    from distributed.security import Security

    files = {name: os.environ.get(name) or None for name in (SCHEDULER_CA_ENV, SCHEDULER_CERT_ENV, SCHEDULER_KEY_ENV)}
    named = [name for name, path in files.items() if path is not None]
    if not address.startswith("tls://"):
        if named:
            raise ValueError(f"{', '.join(named)} are set, for a tls:// scheduler, but {address} is not one: give "
                             "its tls:// address, or unset them")
        return None
    if named:
        missing = [name for name, path in files.items() if path is None]
        if missing:
            raise ValueError(f"a tls:// scheduler takes a CA, a certificate and its key: {', '.join(missing)} "
                             "not set")
        unreadable = [f"{name}={path}" for name, path in files.items() if path and not os.access(path, os.R_OK)]
        if unreadable:
            raise ValueError(f"cannot read {', '.join(unreadable)}")
        return Security(tls_ca_file=files[SCHEDULER_CA_ENV], tls_client_cert=files[SCHEDULER_CERT_ENV],
                        tls_client_key=files[SCHEDULER_KEY_ENV], require_encryption=True)
    security = Security(require_encryption=True)  # from Dask's configuration (DASK_DISTRIBUTED__COMM__TLS__...)
    if security.get_tls_config_for_role("client").get("ca_file") is None:
        raise ValueError(f"{address} is a TLS scheduler: set {SCHEDULER_CA_ENV}, {SCHEDULER_CERT_ENV} and "
                         f"{SCHEDULER_KEY_ENV} to the CA's certificate and this client's certificate and key (PEM "
                         "files), or Dask's distributed.comm.tls settings")
    return security


class RunPool:
    """A Dask client that runs requests on its workers: its own ``LocalCluster``, or a scheduler's workers."""

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None, threads: int = 1) -> None:
        """``threads``: runs each process of a LocalCluster started here executes at once (a scheduler's workers
        have their own)."""
        # Imported here: distributed takes seconds to import on a busy machine, and the CLI and the services start
        # without it.
        from distributed import Client, LocalCluster

        self.scheduler = scheduler
        self.cluster: LocalCluster | None = None
        if scheduler:
            self.client = Client(scheduler, timeout="10s", security=scheduler_security(scheduler))
        else:
            # Single-threaded worker processes unless asked (a run in-process holds the GIL). No dashboard (bokeh
            # is not a dependency); distributed's own log stays quiet below errors, so that a comparison's terminal
            # shows its bars. The workers' nannies hand them the configuration in effect here.
            import dask

            with dask.config.set(QUIET_LOCAL_CLUSTER):
                self.cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=threads,
                                            processes=True, dashboard_address="127.0.0.1:0",
                                            worker_dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR,
                                            preload=[worker_start.__name__])
            self.client = Client(self.cluster)
        self.topic = f"{TOPIC}-{secrets.token_hex(4)}"
        self._queues: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.client.subscribe_topic(self.topic, self._event)

    def __enter__(self) -> RunPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    @property
    def where(self) -> str:
        slots = self.slots()
        return (f"the Dask scheduler {self.scheduler} ({slots} worker thread(s))" if self.scheduler
                else f"{slots} local worker process(es) (Dask LocalCluster)")

    def slots(self) -> int:
        """How many runs the workers execute at once (their threads)."""
        threads: dict[str, int] = self.client.nthreads()
        return max(1, sum(threads.values()))

    def reach(self, url: str) -> dict[str, str]:
        """Workers that cannot reach the oracle at ``url``, with why."""
        answers = self.client.run(_reach_here, url)
        return {worker: why for worker, why in answers.items() if why is not None}

    def executed(self) -> dict[str, int]:
        """How many runs each worker has started (since it started)."""
        executed: dict[str, int] = self.client.run(_executed_here)
        return executed

    def rss(self) -> dict[str, int]:
        """Each worker's resident memory, in bytes."""
        rss: dict[str, int] = self.client.run(_rss_here)
        return rss

    def cancel(self, key: str) -> None:
        try:
            self.client.run(_cancel_here, key)
        except Exception as exc:  # a worker gone meanwhile: its runs are gone with it
            log.warning("cancel of %s: %s", key, exc)

    def _event(self, event: tuple[float, dict[str, Any]]) -> None:
        msg = event[1]
        with self._lock:
            waiting = self._queues.get(msg.get("key", ""))
        if waiting is not None:
            waiting.put(msg)

    def run(self, request: RunCreate, *, session: OpenSession | None = None,
            progress: Callable[[Progress], None] | None = None, started: Callable[[], None] | None = None,
            cancel: threading.Event | None = None, opened: Callable[[OpenSession], None] | None = None) -> Ended:
        """Run ``request`` on a worker (in ``session`` over HTTP, else in-process there) and wait for its end,
        calling ``progress``, ``started`` and ``opened`` (a session the run opened itself) in this thread; setting
        ``cancel`` stops it."""
        key = f"run-{secrets.token_hex(8)}"
        events: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._queues[key] = events
        future = self.client.submit(execute, key, request, session, self.topic, key=key, pure=False, retries=0)
        # Woken the moment the run ends, not at the next look: a worker waits for its next run meanwhile.
        future.add_done_callback(lambda _: events.put(_ENDED))
        cancelled = False
        try:
            while True:
                done = future.done()
                try:
                    msg = events.get(timeout=0 if done else WAIT_SECONDS)
                except queue.Empty:
                    if done:
                        break
                else:
                    if msg is not _ENDED:
                        self._hand_over(msg, progress, started, opened)
                if cancel is not None and cancel.is_set() and not cancelled:
                    cancelled = True
                    self.cancel(key)
            return future.result()
        finally:
            with self._lock:
                del self._queues[key]
            future.release()

    @staticmethod
    def _hand_over(msg: dict[str, Any], progress: Callable[[Progress], None] | None,
                   started: Callable[[], None] | None, opened: Callable[[OpenSession], None] | None) -> None:
        if msg.get("started"):
            if started is not None:
                started()
            return
        if "opened" in msg:
            if opened is not None:
                opened(OpenSession(**msg["opened"]))
            return
        if progress is not None:
            point = msg["point"]
            progress(Progress(msg["examples"], msg["attributes"], msg["cost"], msg["max_examples"],
                              None if point is None else CurvePoint.model_validate(point)))
