"""Request rates a stranger may not pass: a token bucket per client address for the requests that create something
(an oracle session, a learner caller). Past it a request is answered 429 ``rate_limited`` with Retry-After (the
seconds until a token is back) before the app sees it, so nothing is created.

Each worker process counts for itself (N workers: up to N times the rate), and an address behind a proxy is the
proxy's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from budgetlab.errors import Code, error_body
from web.limits import refuse_http

# Addresses remembered at once: the oldest is forgotten first (a forgotten address starts with a full bucket).
MAX_ADDRESSES = 65536


@dataclass(frozen=True)
class Rate:
    """``per_second`` tokens back each second, up to ``burst``; 0 per second: no limit."""

    per_second: float
    burst: float
    setting: str  # the environment variable that sets it, named in the refusal


class Buckets:
    def __init__(self, rate: Rate) -> None:
        self.rate = rate
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address: tokens, when
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when a token was taken, else the seconds until one is back."""
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.pop(key, (self.rate.burst, now))
            tokens = min(self.rate.burst, tokens + (now - then) * self.rate.per_second)
            if tokens >= 1:
                self._buckets[key] = (tokens - 1, now)
                wait = 0.0
            else:
                self._buckets[key] = (tokens, now)
                wait = (1 - tokens) / self.rate.per_second
            while len(self._buckets) > MAX_ADDRESSES:
                self._buckets.popitem(last=False)
        return wait


class RateLimits:
    """ASGI middleware: ``limits`` maps (method, path) to the rate of such requests per client address."""

    def __init__(self, app: ASGIApp, limits: dict[tuple[str, str], Rate]) -> None:
        self.app = app
        self.buckets = {route: Buckets(rate) for route, rate in limits.items() if rate.per_second > 0}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            buckets = self.buckets.get((scope["method"], scope["path"]))
            if buckets is not None:
                client = scope.get("client")
                wait = buckets.take(client[0] if client else "")
                if wait > 0:
                    rate = buckets.rate
                    detail = (f"more than {rate.per_second:g} such requests a second from this address (bursts of "
                              f"{rate.burst:g}; {rate.setting}): nothing was done, retry after Retry-After")
                    await refuse_http(send, Code.RATE_LIMITED.status, error_body(Code.RATE_LIMITED.value, detail),
                                      retry_after=wait)
                    return
        await self.app(scope, receive, send)
