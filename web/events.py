"""What the two services' live dashboards share on the server side: their event streams.

The pages themselves are the top floor's (``client.dashboards``); the services answer them with JSON and these
streams. Updates are server-sent events (``text/event-stream``): a stream polls what it shows every ``interval``
seconds (on the thread pool: the services' database calls block) and sends an event only when something changed,
and a comment now and then so that proxies keep the connection open. The pages read the stream with ``fetch``, not
``EventSource``, so that their bearer tokens travel in headers, never in URLs (which servers log). A stream ends
when its server begins to stop: uvicorn waits for every response to finish before it exits, so an open page would
otherwise keep a stopped service (Ctrl-C, SIGTERM) running for as long as the page stays open.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import StreamingResponse

from budgetlab.errors import Refused

NO_CACHE = {"Cache-Control": "no-cache"}
# A comment line this often keeps idle connections open through proxies that drop silent ones.
KEEPALIVE_SECONDS = 15.0
# What a poll sends: (event name, JSON-able data) pairs, nothing when nothing changed.
Events = list[tuple[str, Any]]


def sse(event: str, data: Any) -> str:
    """One server-sent event whose data is one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n"


def server_stopping() -> Callable[[], bool]:
    """Whether the server running this process is stopping.

    uvicorn handles SIGINT and SIGTERM with a method of its ``Server``, which sets ``should_exit``; under another
    server (or uvicorn outside the main thread, as in the tests) this never says so, and streams end with their
    clients.
    """
    server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return lambda: bool(getattr(server, "should_exit", False))


async def polled_events(request: Request, poll: Callable[[], Awaitable[Events]], interval: float,
                        ) -> AsyncIterator[str]:
    """Poll until the client goes away or the server stops; a refusal raised by a poll is sent as an ``error``
    event, then the stream ends (the page shows it and decides whether to reconnect)."""
    stopping = server_stopping()
    quiet_since = time.monotonic()
    while not stopping() and not await request.is_disconnected():
        try:
            events = await poll()
        except Refused as exc:
            yield sse("error", {"error": exc.error, "detail": exc.detail})
            return
        for name, data in events:
            yield sse(name, data)
        if events:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
            quiet_since = time.monotonic()
            yield ": keepalive\n\n"
        await asyncio.sleep(interval)


def event_stream(request: Request, poll: Callable[[], Awaitable[Events]], interval: float) -> StreamingResponse:
    # X-Accel-Buffering: a buffering reverse proxy (nginx) would hold the events back.
    return StreamingResponse(polled_events(request, poll, interval), media_type="text/event-stream",
                             headers={**NO_CACHE, "X-Accel-Buffering": "no"})
