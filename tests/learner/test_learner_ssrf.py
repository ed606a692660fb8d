"""No SSRF through the learner: a run may use only allowed oracles, and every oracle that is not allowed, cannot be
reached or does not answer as an oracle gets one and the same 502 that echoes nothing the remote side sent; a
closed port and a port that does not speak HTTP cannot be told apart. Tested with real loopback servers: one HTTP
server holding a secret, one TCP server that is not HTTP, one closed port."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from budgetlab.errors import LearnerError
from learner.service.oracle_access import OracleAllowList
from tests.servers import learner_server, oracle_server

SECRET = "internal-secret-7f3a9c"
RUN = {"dataset": "sparse-gaussian", "dataset_params": {"d": 10, "n_train": 20, "n_test": 10, "s_plus": 2,
                                                        "s_minus": 1},
       "algorithm": "aerr", "budget": {"per_example": 2}}


class Counter:
    def __init__(self) -> None:
        self.hits = 0


@contextmanager
def secret_http_server(status: int, body: dict | str,
                       headers: dict[str, str] | None = None) -> Iterator[tuple[str, Counter]]:
    """An internal HTTP service on loopback that answers every request with ``status`` and a secret."""
    counter = Counter()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            counter.hits += 1
            payload = (json.dumps(body) if isinstance(body, dict) else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", counter
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def not_http_server() -> Iterator[tuple[str, Counter]]:
    """A TCP service on loopback that greets with a secret banner and is not HTTP (an SSH-like port)."""
    counter = Counter()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            counter.hits += 1
            with conn:
                conn.sendall(f"SSH-2.0-{SECRET}\r\n".encode())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", counter
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def closed_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def start(http: httpx.Client, learner: str, oracle_url: str) -> httpx.Response:
    token = http.post(f"{learner}/v1/callers").json()["token"]
    return http.post(f"{learner}/v1/runs", json={**RUN, "oracle_url": oracle_url},
                     headers={"Authorization": f"Bearer {token}"})


@pytest.mark.process
def test_an_oracle_off_the_allow_list_is_never_contacted_and_nothing_of_it_comes_back(tmp_path: Path,
                                                                                      http: httpx.Client) -> None:
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle, \
            secret_http_server(422, {"error": "x", "detail": SECRET}) as (secret_url, secret), \
            learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle) as learner:
        refused = start(http, learner, secret_url)
        sneaky = [f"{oracle}@{secret_url.removeprefix('http://')}", secret_url.replace("127.0.0.1", "localhost"),
                  f"{secret_url}/v1/../..", "file:///etc/passwd", "gopher://127.0.0.1:25/"]
        answers = [refused, *(start(http, learner, url) for url in sneaky)]
        assert start(http, learner, oracle + "/").status_code == 201, "the configured oracle itself is allowed"
    assert secret.hits == 0, "the learner contacted a service that is not an allowed oracle"
    for r in answers:
        assert r.status_code == 502 and SECRET not in r.text, r.text
        assert r.json() == refused.json()
    assert refused.json()["error"] == "oracle_unavailable"


@pytest.mark.process
def test_closed_not_http_and_not_oracle_ports_get_one_identical_error_echoing_nothing(tmp_path: Path,
                                                                                      http: httpx.Client) -> None:
    down = closed_port()
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle, \
            not_http_server() as (banner_url, banner), \
            secret_http_server(500, {"error": "boom", "detail": SECRET}) as (failing_url, failing), \
            secret_http_server(200, {"secret": SECRET}) as (garbage_url, garbage), \
            secret_http_server(404, f"<html>{SECRET}</html>") as (html_url, html):
        allowed = (down, banner_url, failing_url, garbage_url, html_url)
        with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle, extra_oracles=allowed) as learner:
            answers = {url: start(http, learner, url) for url in allowed}
            not_allowed = start(http, learner, closed_port().replace("127.0.0.1", "127.0.0.2"))
    assert banner.hits >= 1 and failing.hits >= 1 and garbage.hits >= 1 and html.hits >= 1, \
        "allowed oracles are contacted"
    bodies = {r.text for r in answers.values()}
    assert all(r.status_code == 502 for r in answers.values()), {u: r.text for u, r in answers.items()}
    assert len(bodies) == 1 and SECRET not in bodies.pop(), "the answers differ or echo the remote side"
    assert not_allowed.json() == answers[down].json()


@pytest.mark.process
def test_an_oracle_that_goes_down_is_a_502_not_a_422_at_start_and_at_audit(tmp_path: Path, http: httpx.Client) -> None:
    with ExitStack() as stack:
        oracle_stack = stack.enter_context(ExitStack())
        oracle = oracle_stack.enter_context(oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}"))
        learner = stack.enter_context(learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle))
        auth = {"Authorization": f"Bearer {http.post(f'{learner}/v1/callers').json()['token']}"}
        run = http.post(f"{learner}/v1/runs", json=RUN, headers=auth)
        assert run.status_code == 201, run.text
        oracle_stack.close()  # the oracle goes down; the learner stays up
        again = http.post(f"{learner}/v1/runs", json=RUN, headers=auth)
        audit = http.get(f"{learner}/v1/runs/{run.json()['id']}/audit", headers=auth)
    assert again.status_code == 502 and again.json()["error"] == "oracle_unavailable", again.text
    assert audit.status_code == 502 and audit.json() == again.json(), audit.text


@pytest.mark.process
def test_a_busy_oracle_is_a_503_with_retry_after_and_starts_nothing(tmp_path: Path, http: httpx.Client) -> None:
    """An allowed oracle that answers 'busy' (its session lock was not free; nothing was done) is a 503 the caller
    may retry, not a 502: the oracle is there."""
    busy = {"error": "busy", "detail": SECRET, "retry_after": 1}
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle, \
            secret_http_server(503, busy, {"Retry-After": "1"}) as (busy_url, counter), \
            learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle, extra_oracles=(busy_url,)) as learner:
        token = http.post(f"{learner}/v1/callers").json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        answer = http.post(f"{learner}/v1/runs", json={**RUN, "oracle_url": busy_url}, headers=auth, timeout=60)
        listed = http.get(f"{learner}/v1/runs", headers=auth).json()["runs"]
    assert counter.hits >= 1, "the allowed oracle was asked"
    assert answer.status_code == 503 and answer.json()["error"] == "oracle_busy", answer.text
    assert answer.headers["Retry-After"] == "1" and SECRET not in answer.text
    assert listed == [], "a run was started on a busy oracle"


@pytest.mark.process
def test_the_loopback_spellings_of_a_configured_loopback_oracle_are_one_oracle(tmp_path: Path,
                                                                               http: httpx.Client) -> None:
    """The README's ``--oracle http://localhost:8000`` reaches a learner configured with ``http://127.0.0.1:8000``
    (the sandbox's): ``localhost``, ``127.0.0.1`` and ``[::1]`` name one oracle, with the same port and path only;
    the run uses the configured URL, never the spelling the request chose (nothing listens on [::1] here)."""
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle, \
            secret_http_server(422, {"error": "x", "detail": SECRET}) as (secret_url, secret), \
            learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle) as learner:
        spellings = [oracle.replace("127.0.0.1", host) for host in ("localhost", "LocalHost", "[::1]")]
        accepted = [start(http, learner, url) for url in spellings]
        port = int(oracle.rsplit(":", 1)[1])
        others = [oracle.replace("127.0.0.1", "127.0.0.2"), oracle.replace("127.0.0.1", "127.1"),
                  f"http://localhost:{port + 1}", f"{oracle.replace('127.0.0.1', 'localhost')}/v1",
                  oracle.replace("http://127.0.0.1", "https://localhost"),
                  secret_url.replace("127.0.0.1", "localhost"), secret_url.replace("127.0.0.1", "[::1]")]
        refused = [start(http, learner, url) for url in others]
    for answer in accepted:
        assert answer.status_code == 201, answer.text
        assert answer.json()["request"]["oracle_url"] == f"{oracle}", "the run uses the configured URL"
    assert secret.hits == 0
    for answer in refused:
        assert answer.status_code == 502 and answer.json()["error"] == "oracle_unavailable", answer.text


def test_only_a_loopback_oracle_gains_the_other_loopback_spellings() -> None:
    allowed = OracleAllowList("http://oracle:8000", ["http://10.0.0.5:8000", "http://localhost:9000/base"])
    assert allowed.resolve("http://ORACLE:8000/") == "http://oracle:8000"
    for url in ("http://localhost:8000", "http://127.0.0.1:8000", "http://[::1]:8000", "http://10.0.0.5:8000@x",
                "http://127.0.0.1:9000", "http://127.0.0.1:9000/other", "http://user:pw@localhost:9000/base"):
        with pytest.raises(LearnerError):
            allowed.resolve(url)
    assert allowed.resolve("http://[::1]:9000/base/") == "http://localhost:9000/base"
    assert allowed.resolve("http://127.0.0.1:9000/base") == "http://localhost:9000/base"


@pytest.mark.process
def test_the_refusal_names_the_oracles_a_run_may_use_and_nothing_else(tmp_path: Path, http: httpx.Client) -> None:
    """Every refusal (off the list, closed, not an oracle) is one text, which names the configured oracles: what a
    caller may use, never credentials nor anything the remote side said (``learner.service.oracle_access``)."""
    down = closed_port()
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as oracle, \
            learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle,
                           extra_oracles=(down, "http://user:secret-pw@10.9.9.9:8000")) as learner:
        off_list = start(http, learner, "http://10.9.9.9:8000")
        closed = start(http, learner, down)
    assert off_list.status_code == closed.status_code == 502 and off_list.json() == closed.json()
    detail = off_list.json()["detail"]
    assert detail.endswith(f"BUDGETLAB_LEARNER_ORACLES: {oracle}, {down} (a loopback one also as localhost, "
                           "127.0.0.1 or [::1])"), detail
    assert "secret-pw" not in detail and "10.9.9.9" not in detail
