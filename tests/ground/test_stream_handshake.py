"""A session stream's handshake refused with nothing done (429 rate_limited, 503 busy) is that refusal, for the SDK
to wait and ask again as for a request, not a silent fall back to HTTP: with two oracles on one database, the
second's first look at a session builds its dataset, charged to the client (admission by cost), and a 429 there left
streaming clients on HTTP. Any other refused handshake still means no stream (HTTP carries the requests)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from websockets.datastructures import Headers
from websockets.http11 import Response
from websockets.sync.server import ServerConnection, serve

from budgetlab.errors import RateLimited, SessionBusy
from budgetlab.oracle_client import ORACLE
from budgetlab.session_stream import open_stream

ANSWERS = {"limited": (429, "rate_limited"), "busy": (503, "busy"), "unknown": (404, "not_found")}


@pytest.fixture(scope="module")
def refusing() -> Iterator[str]:
    """A WebSocket server that refuses every handshake with the answer its path names, as the oracle does."""

    def deny(connection: ServerConnection, request: object) -> Response:
        status, error = ANSWERS[next(name for name in ANSWERS if name in request.path)]  # type: ignore[attr-defined]
        body = json.dumps({"error": error, "detail": f"refused: {error}"}).encode()
        return Response(status, "refused", Headers({"Content-Type": "application/json", "Retry-After": "2",
                                                    "Content-Length": str(len(body))}), body)

    with serve(lambda connection: None, "127.0.0.1", 0, process_request=deny) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}"
        server.shutdown()


def test_a_rate_limited_or_busy_handshake_is_the_refusal_to_retry(refusing: str) -> None:
    with pytest.raises(RateLimited) as limited:
        open_stream(ORACLE, refusing, "limited", "token", 5.0)
    assert limited.value.retry_after == 2.0 and limited.value.detail == "refused: rate_limited"
    with pytest.raises(SessionBusy) as busy:
        open_stream(ORACLE, refusing, "busy", "token", 5.0)
    assert busy.value.error == "busy" and busy.value.retry_after == 2.0


def test_another_refused_handshake_leaves_the_requests_to_http(refusing: str) -> None:
    assert open_stream(ORACLE, refusing, "unknown", "token", 5.0) is None
