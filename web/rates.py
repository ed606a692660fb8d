"""Request rates a stranger may not pass, as token buckets: per client address for the requests that create something
(an oracle session, a learner caller), and for every request per client address and per key (the bearer token it
carries: an account's API key, a session's token, the admin's). Past one a request is answered 429 ``rate_limited``
with Retry-After (the seconds until a token is back) before the app sees it, so nothing is done. Each message of a
session's stream takes a token of its key's bucket too (the same bucket as its HTTP requests), so a stream is no
way around the rate: past it the message is answered 429 on the stream, nothing done.

Each worker process counts for itself (N workers: up to N times the rate), and an address behind a proxy is the
proxy's. The buckets of one address or key are forgotten once ``MAX_ADDRESSES`` others are newer.
"""

from __future__ import annotations

import hashlib
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


    def refusal(self, who: str, what: str, of: str) -> tuple[float, str] | None:
        """None when ``who`` took a token; else the seconds until one is back and the refusal's detail."""
        wait = self.take(who)
        if wait <= 0:
            return None
        rate = self.rate
        return wait, (f"more than {rate.per_second:g} {what} a second from this {of} (bursts of {rate.burst:g}; "
                      f"{rate.setting}): nothing was done, retry after Retry-After")


def key_of(token: bytes) -> str:
    """The bucket of a bearer token: its digest (the token itself is not kept)."""
    return hashlib.blake2b(token, digest_size=16).hexdigest()


def bearer_key(scope: Scope) -> str | None:
    """The bucket of the request's bearer token, if it carries one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return key_of(token.strip())
    return None


def limited_keys(rate: Rate) -> Buckets | None:
    """The buckets of every key at ``rate`` (None: no limit), shared by the HTTP middleware and the streams."""
    return Buckets(rate) if rate.per_second > 0 else None


class RateLimits:
    """ASGI middleware: ``limits`` maps (method, path) to the rate of such requests per client address;
    ``per_address`` and ``per_key`` bound every request (None: no such bound)."""

    def __init__(self, app: ASGIApp, limits: dict[tuple[str, str], Rate], per_address: Rate | None = None,
                 per_key: Buckets | None = None) -> None:
        self.app = app
        self.buckets = {route: Buckets(rate) for route, rate in limits.items() if rate.per_second > 0}
        self.per_address = Buckets(per_address) if per_address and per_address.per_second > 0 else None
        self.per_key = per_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client = scope.get("client")
            address = client[0] if client else ""
            checks = [(self.buckets.get((scope["method"], scope["path"])), address, "such requests", "address"),
                      (self.per_address, address, "requests", "address")]
            if self.per_key is not None:
                key = bearer_key(scope)
                if key is not None:
                    checks.append((self.per_key, key, "requests", "key"))
            for buckets, who, what, of in checks:
                refused = buckets.refusal(who, what, of) if buckets is not None else None
                if refused is not None:
                    wait, detail = refused
                    await refuse_http(send, Code.RATE_LIMITED.status, error_body(Code.RATE_LIMITED.value, detail),
                                      retry_after=wait)
                    return
        await self.app(scope, receive, send)

