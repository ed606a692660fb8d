"""How both services speak HTTP: uvicorn's fast (httptools) protocol, with two changes.

- A request it cannot parse (a control character in a header, a malformed request line) is refused in JSON like
  every other refusal (400 ``bad_request``), not in uvicorn's plain text.
- Slow clients are dropped: uvicorn has no read timeout of its own, so a client trickling bytes holds a connection
  (and a file descriptor) for as long as it likes. Here a request's line and headers must all have arrived
  ``BUDGETLAB_HEADER_TIMEOUT`` seconds (10) after the connection opened or the previous answer went out, else the
  client gets a 408 ``request_timeout`` and the connection is closed; its body must have arrived
  ``BUDGETLAB_BODY_TIMEOUT`` seconds (60) after its headers, else the connection is closed (the app sees the client
  gone, and nothing of the request is done). 0 turns either off.
- An answer's head goes out with its body in one write (``one_write``): uvicorn writes each ASGI message as it comes,
  so a small answer left as two TCP segments, two send calls and two wake-ups of the client (about 8 us of the
  oracle's CPU, of some 600 a small step over HTTP).
- No access line is made that the access logger would drop: uvicorn works out its arguments (the client's address,
  the path quoted again) before the logger looks at its level, 6.7 us a request under the services' ``warning``
  level. A connection opened while the logger takes INFO logs its requests as uvicorn does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from budgetlab.errors import Code, error_body

HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 60.0
HEADER_TIMEOUT_ENV = "BUDGETLAB_HEADER_TIMEOUT"
BODY_TIMEOUT_ENV = "BUDGETLAB_BODY_TIMEOUT"


def _seconds(name: str, default: float) -> float:
    text = os.environ.get(name)
    value = float(text) if text else default
    if value < 0:
        raise ValueError(f"{name} must not be negative")
    return value


def read_timeouts() -> tuple[float, float]:
    """The header and body timeouts (seconds; 0: none) of the environment."""
    return _seconds(HEADER_TIMEOUT_ENV, HEADER_TIMEOUT), _seconds(BODY_TIMEOUT_ENV, BODY_TIMEOUT)


class JsonHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout, self.body_timeout = read_timeouts()
        self._deadline: asyncio.TimerHandle | None = None
        # Each request's cycle takes the protocol's choice (uvicorn's RequestResponseCycle logs if it is set).
        self.access_log = self.access_log and self.access_logger.isEnabledFor(logging.INFO)

    def _arm(self, seconds: float, expired: Any) -> None:
        self._disarm()
        if seconds > 0:
            self._deadline = self.loop.call_later(seconds, expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    # The headers' deadline runs from the connection, and from each answer, to the end of the next headers.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout, self._headers_too_slow)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm(self.header_timeout, self._headers_too_slow)

    def on_headers_complete(self) -> None:
        self._arm(self.body_timeout, self._body_too_slow)
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a request's cycle (an upgrade to a WebSocket makes none)
            one_write(self.cycle)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the WebSocket protocol takes the connection over
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:  # an answer is under way: let it finish
            return
        detail = (f"the request's headers did not arrive within {self.header_timeout:g} s ({HEADER_TIMEOUT_ENV}); "
                  "the connection is closed")
        self._answer_and_close(408, "Request Timeout", error_body(Code.REQUEST_TIMEOUT.value, detail))

    def _body_too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.logger.info("closed a connection whose request body did not arrive within %g s (%s)",
                             self.body_timeout, BODY_TIMEOUT_ENV)
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        body = error_body(Code.BAD_REQUEST.value, f"the HTTP request is malformed: {msg}")
        self._answer_and_close(400, "Bad Request", body)

    def _answer_and_close(self, status: int, reason: str, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        head = [b"HTTP/1.1 %d %s\r\n" % (status, reason.encode())]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(payload),
                 b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + payload)
        self.transport.close()


class _HeadWithBody:
    """A cycle's transport: the answer's head, written as the cycle starts its answer, is held and goes out with
    the first part of its body; anything before the answer (a ``100 Continue``) and after that first part goes out
    as it comes. A close, or the answer's end without a body (HEAD), sends what is held first."""

    __slots__ = ("transport", "cycle", "respond", "head", "passing")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self.transport, self.cycle, self.respond = transport, cycle, cycle.on_response
        self.head = b""
        self.passing = False

    def write(self, data: bytes) -> None:
        if self.passing or not self.cycle.response_started:
            self.transport.write(data)
        elif self.head:
            self.passing = True
            self.transport.write(self.head + data)
            self.head = b""
        else:
            self.head = data

    def flush(self) -> None:
        if self.head:
            self.transport.write(self.head)
            self.head = b""
        self.passing = True

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def responded(self) -> None:
        """The cycle's answer is complete (its ``on_response``)."""
        self.flush()
        self.respond()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


def one_write(cycle: RequestResponseCycle) -> None:
    """Make ``cycle`` hold its answer's head (``http.response.start``) until the first part of the body, and write
    both at once (``_HeadWithBody``: a wrapper of each ``send`` that collected its writes cost 4.4 us a request)."""
    transport = _HeadWithBody(cycle.transport, cycle)
    cycle.transport = transport  # type: ignore[assignment]
    cycle.on_response = transport.responded
