"""Bounded memory: the body limit (HTTP and the session stream), the cap on cells and examples per request (HTTP,
the stream and ``LocalSession`` alike, nothing charged) and a runtime cache that frees the datasets the dataset
cache lets go of."""

from __future__ import annotations

import gc
import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.sync.client import connect

from budgetlab.datasets.base import Dataset
from budgetlab.datasets.powerlaw import PowerLaw
from budgetlab.datasets.registry import CACHE_BYTES, CACHE_ENTRIES, cache_limits, load_dataset
from budgetlab.errors import OracleError, RateLimited
from budgetlab.local_session import LocalSession
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context
from budgetlab.session_stream import stream_url
from server.app import create_app
from server.config import Settings
from tests.helpers import session_auth
from tests.servers import serve_in_thread

LIMIT = 64 << 10
MAX_CELLS, MAX_EXAMPLES = 50, 4
POOL = {"dataset": "sparse-gaussian", "order": "pool",
        "dataset_params": {"d": 60, "n_train": 40, "n_test": 10, "s_plus": 2, "s_minus": 2}}


@pytest.fixture
def limited_oracle(sqlite_url: str) -> Iterator[str]:
    settings = Settings(database_url=sqlite_url, max_body_bytes=LIMIT, max_cells=MAX_CELLS, max_examples=MAX_EXAMPLES)
    with serve_in_thread(create_app(settings)) as url:
        yield url


def test_a_body_declared_too_large_is_refused_before_any_of_it_is_sent(limited_oracle: str) -> None:
    # Headers announcing 50 MB and not one byte of body: the answer comes at once, so nothing was waited for or read.
    address = urlsplit(limited_oracle)
    with socket.create_connection((address.hostname, address.port), timeout=5) as sock:
        sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: oracle\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 50000000\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert json.loads(body)["error"] == "too_large"


def test_bodies_over_the_limit_get_413_with_or_without_a_length_and_smaller_ones_pass(limited_oracle: str) -> None:
    with httpx.Client(base_url=limited_oracle, timeout=30, verify=tls_context()) as http:
        created = http.post("/v1/sessions", json=POOL).json()
        path = f"/v1/sessions/{created['id']}/observe/batch"
        padding = json.dumps({"items": [{"example": 0, "attributes": [1]}]}).replace("{", "{" + " " * LIMIT, 1)
        sized = http.post(path, content=padding.encode(), headers={**session_auth(created),
                                                                    "content-type": "application/json"})
        assert sized.status_code == 413 and sized.json()["error"] == "too_large"

        def chunks(size: int) -> Iterator[bytes]:  # no Content-Length: sent chunked
            body = json.dumps(POOL).replace("{", "{" + " " * (size - len(json.dumps(POOL))), 1).encode()
            for start in range(0, len(body), 4096):
                yield body[start : start + 4096]

        chunked = http.post("/v1/sessions", content=chunks(LIMIT + 1), headers={"content-type": "application/json"})
        assert chunked.status_code == 413 and chunked.json()["error"] == "too_large"
        fits = http.post("/v1/sessions", content=chunks(LIMIT), headers={"content-type": "application/json"})
        assert fits.status_code == 201, fits.text
        info = http.get(f"/v1/sessions/{created['id']}", headers=session_auth(created)).json()
        assert info["spent"]["attributes"] == 0 and info["ledger_rows"] == 1  # only the open row


def test_a_stream_message_over_the_limit_is_answered_413_and_the_stream_goes_on(limited_oracle: str) -> None:
    created = httpx.post(f"{limited_oracle}/v1/sessions", json=POOL, verify=tls_context()).json()
    with connect(stream_url(limited_oracle, created["id"]), additional_headers=session_auth(created),
                 legacy=True) as ws:
        ws.send(json.dumps({"op": "observe", "body": {"example": 0, "attributes": [1]}, "pad": " " * LIMIT}))
        code, _, body = ws.recv(timeout=10).partition(" ")
        assert (code, json.loads(body)["error"]) == ("413", "too_large")
        ws.send(json.dumps({"op": "observe", "body": {"example": 0, "attributes": [1]}}))
        code, _, body = ws.recv(timeout=10).partition(" ")
        assert code == "200" and json.loads(body)["charged"] == 1.0


def test_the_cells_and_examples_caps_refuse_whole_requests_over_http_and_the_stream(limited_oracle: str) -> None:
    over = [
        ("observe/batch", {"items": [{"example": e, "attributes": [0]} for e in range(MAX_EXAMPLES + 1)]}),
        ("observe/batch", {"items": [{"example": e, "attributes": list(range(26))} for e in range(2)]}),
        ("observe", {"example": 0, "attributes": list(range(MAX_CELLS + 1))}),
    ]
    with httpx.Client(base_url=limited_oracle, timeout=30, verify=tls_context()) as http:
        pool = http.post("/v1/sessions", json=POOL).json()
        stream = http.post("/v1/sessions", json={**POOL, "order": "stream"}).json()
        for path, body in over:
            answer = http.post(f"/v1/sessions/{pool['id']}/{path}", json=body, headers=session_auth(pool))
            assert answer.status_code == 413 and answer.json()["error"] == "too_many_cells", answer.text
        step = http.post(f"/v1/sessions/{stream['id']}/step", json={"attributes": list(range(MAX_CELLS + 1))},
                         headers=session_auth(stream))
        assert step.status_code == 413 and step.json()["error"] == "too_many_cells"
        with connect(stream_url(limited_oracle, pool["id"]), additional_headers=session_auth(pool), legacy=True) as ws:
            for path, body in over:
                ws.send(json.dumps({"op": path.replace("/", "_"), "body": body}))
                code, _, answer_body = ws.recv(timeout=10).partition(" ")
                assert (code, json.loads(answer_body)["error"]) == ("413", "too_many_cells")
        for created in (pool, stream):  # nothing was charged, issued or recorded
            info = http.get(f"/v1/sessions/{created['id']}", headers=session_auth(created)).json()
            assert (info["spent"]["attributes"], info["spent"]["examples_issued"], info["ledger_rows"]) == (0, 0, 1)
        at_cap = {"items": [{"example": e, "attributes": list(range(25))} for e in range(2)]}
        answer = http.post(f"/v1/sessions/{pool['id']}/observe/batch", json=at_cap, headers=session_auth(pool))
        assert answer.status_code == 200 and answer.json()["fresh"] == MAX_CELLS
        assert http.get(f"/v1/sessions/{pool['id']}/audit", headers=session_auth(pool)).json()["compliant"]


def test_local_sessions_have_the_same_caps() -> None:
    from budgetlab.engine import MAX_CELLS as DEFAULT_CELLS
    from budgetlab.engine import MAX_EXAMPLES as DEFAULT_EXAMPLES

    session = LocalSession.open("powerlaw", dataset_params={"d": 500, "n_train": DEFAULT_EXAMPLES + 1, "n_test": 10},
                                order="pool")
    too_wide = [(e, range(500)) for e in range(DEFAULT_CELLS // 500 + 1)]
    for items in ([(e, [0]) for e in range(DEFAULT_EXAMPLES + 1)], too_wide):
        with pytest.raises(OracleError) as refused:
            session.observe_batch(items)
        assert (refused.value.status, refused.value.error) == (413, "too_many_cells")
    assert session.get().spent.attributes == 0
    assert session.observe_batch([(e, [0]) for e in range(DEFAULT_EXAMPLES)]).fresh == DEFAULT_EXAMPLES


def live_datasets(n_train: int) -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects()
               if isinstance(obj, Dataset) and obj.name == "powerlaw" and obj.params.get("n_train") == n_train)


@pytest.mark.process
def test_sessions_do_not_keep_datasets_the_dataset_cache_has_evicted(sqlite_url: str) -> None:
    """Eight sessions on distinct seeds of a 2 MB dataset, with a dataset cache of two: at most two stay in memory."""
    n_train, seeds = 20_011, 8  # an n_train no other test uses, to count only this test's datasets
    params = {"d": 100, "n_train": n_train, "n_test": 10}
    settings = Settings(database_url=sqlite_url, dataset_cache_bytes=5 << 20)
    try:
        with serve_in_thread(create_app(settings)) as url, OracleClient(url, stream=False) as client:
            sessions = [client.open_session("powerlaw", dataset_params=params, order="pool", seed=seed)
                        for seed in range(seeds)]
            first = [s.observe(0, [0, 1, 2, 3]).values for s in sessions]
            assert live_datasets(n_train) <= 2
            # An evicted session's dataset is built again on its next request, identical.
            assert sessions[0].observe(0, [0, 1, 2, 3]).values == first[0]
            assert sessions[0].observe(1, [5]).charged == 1.0
            assert live_datasets(n_train) <= 2
    finally:
        cache_limits(CACHE_ENTRIES, CACHE_BYTES)


@pytest.mark.process
def test_the_dataset_of_a_session_in_use_stays_cached_while_other_sessions_come_and_go(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for two datasets, a session observing between the openings of six others on other seeds keeps its
    dataset: a use counts as a load in the cache's LRU, so the idle sessions' datasets are the ones evicted (they
    were once evicted in build order, and a running session's dataset was built again and again)."""
    built: list[int] = []
    original = PowerLaw.build

    def counted(self: PowerLaw, args: tuple[int, ...], params: dict, seed: int):
        built.append(seed)
        return original(self, args, params, seed)

    monkeypatch.setattr(PowerLaw, "build", counted)
    params = {"d": 100, "n_train": 20_021, "n_test": 10}  # 2 MB, an n_train no other test uses
    settings = Settings(database_url=sqlite_url, dataset_cache_bytes=5 << 20)
    try:
        with serve_in_thread(create_app(settings)) as url, OracleClient(url, stream=False) as client:
            busy = client.open_session("powerlaw", dataset_params=params, order="pool", seed=0)
            for seed in range(1, 7):
                client.open_session("powerlaw", dataset_params=params, order="pool", seed=seed).observe(0, [0])
                busy.observe(seed, [0, 1])
            assert built.count(0) == 1, built
            assert live_datasets(20_021) <= 2
    finally:
        cache_limits(CACHE_ENTRIES, CACHE_BYTES)


def test_one_dataset_is_built_at_a_time() -> None:
    """Builds in flight are not counted by the cache's byte bound: concurrent builds of many keys (sessions opened on
    many seeds at once) would each take their memory at the same time."""
    import threading
    import time as _time

    from budgetlab.datasets.registry import _LRU

    cache, running, most = _LRU(4, 1 << 30), [0], [0]
    lock = threading.Lock()

    def build(seed: int) -> Dataset:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        _time.sleep(0.05)
        with lock:
            running[0] -= 1
        return load_dataset("digits-3v5", seed=seed)

    threads = [threading.Thread(target=cache.get, args=(seed, lambda seed=seed: build(seed))) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1 and len(cache._entries) == 4


@pytest.mark.process
def test_sessions_past_the_rate_of_one_address_get_429_with_retry_after_and_nothing_is_created(
        sqlite_url: str) -> None:
    # A token back every 20 s: the five requests take far less on any machine, however loaded.
    settings = Settings(database_url=sqlite_url, sessions_per_second=0.05, sessions_burst=3, batch_process=False)
    with serve_in_thread(create_app(settings)) as url:
        answers = [httpx.post(f"{url}/v1/sessions", json=POOL, verify=tls_context()) for _ in range(5)]
        assert [a.status_code for a in answers] == [201, 201, 201, 429, 429]
        refused = answers[3]
        assert refused.json()["error"] == "rate_limited"
        assert "BUDGETLAB_SESSIONS_PER_SECOND" in refused.json()["detail"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 20
        # Other requests are not counted: the sessions opened go on.
        created = answers[0].json()
        for _ in range(5):
            assert httpx.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created),
                             verify=tls_context()).status_code == 200


def _trickle(sock: socket.socket, data: bytes, every: float = 0.1, give_up: float = 30.0) -> bytes:
    """Send ``data`` a byte at a time, ``every`` seconds apart, until the server answers or closes; its answer."""
    sock.settimeout(every)
    deadline = time.monotonic() + give_up
    for byte in data:
        assert time.monotonic() < deadline, "the server never dropped the slow client"
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return b""
        try:
            answer = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return b""
        while chunk := sock.recv(65536):  # the rest of the answer, up to the close
            answer += chunk
        return answer
    raise AssertionError("the server took the whole trickle")


@pytest.mark.process
def test_slow_clients_are_dropped_a_trickle_of_headers_with_408_a_trickle_of_body_without_effect(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUDGETLAB_HEADER_TIMEOUT", "1")
    monkeypatch.setenv("BUDGETLAB_BODY_TIMEOUT", "1")
    with serve_in_thread(create_app(Settings(database_url=sqlite_url))) as url:
        address = ("127.0.0.1", urlsplit(url).port)
        # Headers a byte at a time (each byte in time for an idle timeout, all of them far too late).
        with socket.create_connection(address) as slow:
            answer = _trickle(slow, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 1000)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"connection: close" in head.lower()
        assert json.loads(body)["error"] == "request_timeout"
        # A connection that sends nothing at all gets the same.
        with socket.create_connection(address) as silent:
            silent.settimeout(30)
            assert silent.recv(65536).startswith(b"HTTP/1.1 408")
        # A body a byte at a time: the connection is closed and nothing of the request is done.
        before = httpx.get(f"{url}/v1/dashboard/sessions", verify=tls_context()).json()["counts"]["sessions"]
        payload = json.dumps(POOL).encode()
        with socket.create_connection(address) as slow:
            slow.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(payload))
            assert _trickle(slow, payload) == b""
        assert httpx.get(f"{url}/v1/dashboard/sessions", verify=tls_context()).json()["counts"]["sessions"] == before
        # Clients that send in time are served as before, over the same connection.
        with httpx.Client(base_url=url, verify=tls_context()) as client:
            assert [client.get("/healthz").status_code for _ in range(3)] == [200] * 3
            assert client.post("/v1/sessions", json=POOL).status_code == 201


@pytest.mark.process
def test_requests_past_the_rate_of_one_key_or_one_address_get_429_with_retry_after(sqlite_url: str) -> None:
    # A token back every 20 s: nothing comes back while the test runs, however loaded the machine.
    settings = Settings(database_url=sqlite_url, batch_process=False, requests_per_second=0.05, requests_burst=6,
                        key_requests_per_second=0.05, key_requests_burst=3)
    with serve_in_thread(create_app(settings)) as url:
        # Two addresses of the loopback (not 127.0.0.1, which the start's health checks used): two clients.
        here, there = (httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address=address,
                                                                                verify=tls_context()))
                       for address in ("127.0.0.2", "127.0.0.3"))
        created = here.post("/v1/sessions", json=POOL).json()  # 1 of the address's 6
        auth = session_auth(created)
        keyed = [here.post(f"/v1/sessions/{created['id']}/observe", headers=auth,
                           json={"example": 0, "attributes": [a]}) for a in range(4)]
        assert [r.status_code for r in keyed] == [200, 200, 200, 429]
        assert keyed[3].json()["error"] == "rate_limited"
        assert "from this key" in keyed[3].json()["detail"]
        assert "BUDGETLAB_KEY_REQUESTS_PER_SECOND" in keyed[3].json()["detail"]
        assert 1 <= int(keyed[3].headers["Retry-After"]) <= 20
        # The key is limited from any address; the other address is not limited by this one's requests.
        elsewhere = there.get(f"/v1/sessions/{created['id']}", headers=auth)
        assert elsewhere.status_code == 429 and "from this key" in elsewhere.json()["detail"]
        assert there.get("/healthz").status_code == 200
        # This address has spent 1 + 4 of its 6: one more request, then 429s whatever the key.
        assert here.get("/healthz").status_code == 200
        by_address = here.get("/healthz")
        assert by_address.status_code == 429 and "from this address" in by_address.json()["detail"]
        assert "BUDGETLAB_REQUESTS_PER_SECOND" in by_address.json()["detail"]
        # The refused observe charged nothing: the session spent its three attributes.
        assert there.get("/v1/dashboard/sessions", headers={}).json()["counts"]["sessions"] == 1
        here.close()
        there.close()


SMALL = {"d": 10, "n_train": 20, "n_test": 5, "s_plus": 2, "s_minus": 2}


@pytest.mark.process
def test_the_sdk_waits_out_a_rate_limit_and_sends_again_having_paid_once(sqlite_url: str) -> None:
    """A 429 charged nothing, so the SDK's session requests send it again after its Retry-After, as they do a busy
    session; with no retries left the refusal is the caller's, ``RateLimited`` (a 429)."""
    settings = Settings(database_url=sqlite_url, key_requests_per_second=4, key_requests_burst=2)
    with serve_in_thread(create_app(settings)) as url:
        with OracleClient(url, stream=False) as client:
            session = client.open_session("sparse-gaussian", dataset_params=SMALL, order="pool",
                                          budget={"per_example": 2})
            for example in range(6):  # three times the key's burst, back to back
                assert session.observe(example, [0, 1]).charged == 2.0
            assert session.get().spent.attributes == 12
        with OracleClient(url, stream=False, busy_retries=0) as impatient:
            other = impatient.open_session("sparse-gaussian", dataset_params=SMALL, order="pool",
                                          budget={"per_example": 2})
            paid = 0
            with pytest.raises(RateLimited) as refused:
                for example in range(6):
                    other.observe(example, [0])
                    paid += 1
            assert refused.value.status == 429 and refused.value.error == "rate_limited"
        with OracleClient(url, stream=False) as client:
            spent = client.session(other.id, other.token).get().spent.attributes
        assert 2 <= paid < 6 and spent == paid  # the refused observe charged nothing


@pytest.mark.process
def test_a_streams_messages_take_their_tokens_rate_as_its_http_requests_do(sqlite_url: str) -> None:
    """A stream is no way around the per-key rate: each message takes a token of its session token's bucket (the one
    its HTTP requests take too); past it the message is answered 429 with retry_after, nothing done, the stream
    open. The SDK over the stream waits and sends again, paying once."""
    # A token back every 20 s: nothing comes back while the raw part runs, however loaded the machine.
    settings = Settings(database_url=sqlite_url, key_requests_per_second=0.05, key_requests_burst=3)
    with serve_in_thread(create_app(settings)) as url:
        created = httpx.post(f"{url}/v1/sessions", json=POOL, verify=tls_context()).json()
        auth = session_auth(created)
        assert httpx.get(f"{url}/v1/sessions/{created['id']}", headers=auth,
                         verify=tls_context()).status_code == 200  # 1 of 3
        with connect(stream_url(url, created["id"]), additional_headers=auth, legacy=True) as ws:
            answers = []
            for attribute in range(3):
                ws.send(json.dumps({"op": "observe", "body": {"example": 0, "attributes": [attribute]}}))
                code, _, body = ws.recv(timeout=10).partition(" ")
                answers.append((code, json.loads(body)))
        assert [code for code, _ in answers] == ["200", "200", "429"]
        refused = answers[2][1]
        assert refused["error"] == "rate_limited" and "from this key" in refused["detail"]
        assert 1 < refused["retry_after"] <= 20
        # The key is spent for its HTTP requests too: one bucket.
        assert httpx.get(f"{url}/v1/sessions/{created['id']}", headers=auth, verify=tls_context()).status_code == 429
    with serve_in_thread(create_app(Settings(database_url=sqlite_url, key_requests_per_second=4,
                                             key_requests_burst=2))) as url:
        with OracleClient(url) as client:
            session = client.open_session("sparse-gaussian", dataset_params=SMALL, order="pool",
                                          budget={"per_example": 2})
            for example in range(6):  # three times the key's burst, back to back, over the stream
                assert session.observe(example, [0, 1]).charged == 2.0
            assert session.transport == "websocket"
        with OracleClient(url, stream=False) as client:
            assert client.session(session.id, session.token).get().spent.attributes == 12
