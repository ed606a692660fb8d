"""Admission by cost: the CPU seconds the oracle spends building datasets are charged to whoever asked for them.

A request is cheap to send and may be costly to serve: a session on a new seed of a synthetic dataset makes the
oracle generate it (1.25 CPU-s for ``sparse-gaussian`` at its defaults), and the rate of new sessions (20 a second
from one address) let one client ask for 9 CPU-seconds a second. Here every dataset built while serving a request
(opening a session, or a step of one whose dataset the cache had let go of) is charged to the request's client
address and to its bearer token (an account's key, a session's token), each a bucket of CPU seconds that fills at
``BUDGETLAB_BUILD_SECONDS_PER_SECOND`` up to ``BUDGETLAB_BUILD_SECONDS_BURST``. A build starts only when both
buckets hold some and no other build of either is under way; otherwise the request is answered 429 ``rate_limited``
with Retry-After (the seconds until the bucket is back above zero), before anything is built or recorded. A build
then takes what it cost, measured (the building thread's CPU time), so a client's long-run share of the oracle's CPU
for datasets is the rate, whatever the datasets' sizes: one that asks for bigger ones waits longer between them.
Datasets the cache holds, and memory-mapped bundled sets, cost nothing.

Builds run one at a time anyway (the registry's gate); here they run on a thread of their own at the lowest CPU
priority (nice 19), so that the requests of other clients served meanwhile come first: under a flood of new seeds
on 2 busy cores another client's p99 step latency went from 3x its idle p99 to 1.0x (``benchmarks/health_bench.py``).

Like the other rates, buckets are per worker process, and an address behind a proxy is the proxy's.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from budgetlab.datasets.base import Dataset
from budgetlab.datasets.registry import BUILD_PAYER
from budgetlab.errors import Code, refusal
from web.rates import MAX_ADDRESSES, bearer_key

SETTING = "BUDGETLAB_BUILD_SECONDS_PER_SECOND, BUDGETLAB_BUILD_SECONDS_BURST"
# The builder thread's niceness: the lowest priority, which any process may give a thread of its own.
NICENESS = 19


def _lower_priority() -> None:
    # On Linux a thread's own id takes a niceness of its own (POSIX leaves it to the whole process elsewhere).
    if hasattr(os, "setpriority") and hasattr(threading, "get_native_id"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        except OSError:  # not allowed here: builds run at the priority of the rest
            pass


@dataclass
class _Bucket:
    seconds: float  # CPU seconds left (negative: owed by the last build)
    at: float  # when ``seconds`` was last brought up to date
    building: bool = False


class CpuBuckets:
    """Buckets of CPU seconds by name (an address, a key's digest), ``per_second`` back each second up to ``burst``."""

    def __init__(self, per_second: float, burst: float) -> None:
        self.per_second, self.burst = per_second, burst
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def _bucket(self, name: str, now: float) -> _Bucket:
        bucket = self._buckets.pop(name, None) or _Bucket(self.burst, now)
        bucket.seconds = min(self.burst, bucket.seconds + (now - bucket.at) * self.per_second)
        bucket.at = now
        self._buckets[name] = bucket
        while len(self._buckets) > MAX_ADDRESSES:
            oldest = next(iter(self._buckets))
            if self._buckets[oldest].building:  # forgotten once its build is charged
                break
            del self._buckets[oldest]
        return bucket

    def admit(self, names: list[str]) -> float:
        """0 when every named bucket may start a build (each is then marked building), else the seconds to wait."""
        now = time.monotonic()
        with self._lock:
            buckets = [self._bucket(name, now) for name in names]
            if any(b.building for b in buckets):
                return 1.0  # a build of the same client is under way: it is charged when it ends
            owed = max((-b.seconds for b in buckets), default=-1.0)
            if owed >= 0:
                return max(owed / self.per_second, 0.1)
            for bucket in buckets:
                bucket.building = True
            return 0.0

    def charge(self, names: list[str], seconds: float) -> None:
        now = time.monotonic()
        with self._lock:
            for name in names:
                bucket = self._bucket(name, now)
                bucket.seconds -= seconds
                bucket.building = False


class Payer:
    """The client of one request (its address, and its key if it sent one), as ``BUILD_PAYER`` wants it."""

    def __init__(self, buckets: CpuBuckets | None, builder: ThreadPoolExecutor, scope: Scope) -> None:
        self.buckets, self.builder, self.scope = buckets, builder, scope
        self._names: list[str] | None = None

    @property
    def names(self) -> list[str]:
        """Its buckets' names, worked out at its first build only (most requests build nothing)."""
        if self._names is None:
            client = self.scope.get("client")
            self._names = [f"address:{client[0] if client else ''}"]
            key = bearer_key(self.scope)
            if key is not None:
                self._names.append(f"key:{key}")
        return self._names

    def admit(self) -> None:
        if self.buckets is None:  # no rate: every build admitted, still on the builder thread
            return
        wait = self.buckets.admit(self.names)
        if wait > 0:
            raise refusal(Code.RATE_LIMITED, "building datasets for this client has cost the oracle more CPU time "
                                             f"than its rate allows ({self.buckets.per_second:g} CPU seconds a "
                                             f"second, bursts of {self.buckets.burst:g}; {SETTING}), or another is "
                                             "being built for it: nothing was done, retry after Retry-After",
                          retry_after=wait)

    def run(self, call: Callable[[], Dataset]) -> Dataset:
        return self.builder.submit(call).result()

    def charge(self, cpu_seconds: float) -> None:
        if self.buckets is not None:
            self.buckets.charge(self.names, cpu_seconds)


class BuildCosts:
    """ASGI middleware: the requests (and streams) it passes on pay for the datasets built while they are served."""

    def __init__(self, app: ASGIApp, per_second: float, burst: float) -> None:
        self.app = app
        self.buckets = CpuBuckets(per_second, burst) if per_second > 0 else None
        # One thread: builds take turns anyway. Started with the first build; idle, it ends with the process.
        self.builder = ThreadPoolExecutor(1, thread_name_prefix="dataset-builder", initializer=_lower_priority)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        # Copied into the tasks and threads that serve the request (contextvars), wherever its build runs.
        reset = BUILD_PAYER.set(Payer(self.buckets, self.builder, scope))
        try:
            await self.app(scope, receive, send)
        finally:
            BUILD_PAYER.reset(reset)
