"""No input, however odd, gets a 5xx, on SQLite and on PostgreSQL: Schemathesis over the oracle's own OpenAPI
document (with non-ASCII header values and bearers mixed in), then the hostile inputs that once got a 500 or the
wrong refusal: a loss that cannot be finite, control characters in ids, malformed and non-ASCII bearers."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from budgetlab.service_client import tls_context
from budgetlab.session_stream import stream_url
from tests.helpers import ADMIN
from tests.servers import oracle_server

pytestmark = pytest.mark.filterwarnings("ignore")

CONTROL_IDS = ["\x00", "\x01", "\x1f", "\x7f", "\x85"]
MALFORMED_BEARERS = [b"Bearer \xc3\xa9t\xc3\xa9", b"Bearer tok\x01en", b"Bearer \xff\xfe", b"Bearer " + b"a" * 300,
                     b"Bearer", b"Basic dXNlcjpwYXNz", b"\xe9"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'ledger.db'}"
        return
    base = os.environ.get("BUDGETLAB_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("BUDGETLAB_TEST_POSTGRES_URL is not set (.ci/run starts a PostgreSQL server and sets it)")
    import psycopg

    name = f"budgetlab_fuzz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield base.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def fuzz_target(database_url: str):
    with oracle_server(database_url) as url:
        created = httpx.post(f"{url}/v1/sessions", json={
            "dataset": "sparse-gaussian",
            "dataset_params": {"d": 10, "n_train": 50, "n_test": 10, "s_plus": 2, "s_minus": 2},
            "budget": {"per_example": 3, "total": 100},
        }, verify=tls_context()).json()
        httpx.post(f"{url}/v1/sessions/{created['id']}/next",
                   headers={"Authorization": f"Bearer {created['token']}"}, verify=tls_context())
        yield url, created["id"], created["token"]


def test_no_server_errors(fuzz_target) -> None:
    # Schemathesis and Hypothesis are imported here, not at the top: every xdist worker collects every file, and
    # the imports cost ~1.1 CPU-s, paid only by the worker that runs the fuzzing.
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    # Header values with at least one byte that is not ASCII (obs-text), and no control character or leading space the
    # client library itself would refuse to send.
    non_ascii = st.tuples(
        st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=30),
        st.characters(min_codepoint=0x80, max_codepoint=0xFF),
    ).map(lambda parts: (parts[0].lstrip() + parts[1]).encode("latin-1"))  # requests refuses leading whitespace
    url, session_id, token = fuzz_target
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    failures: list[str] = []
    calls: list[int] = []

    def fuzz(op) -> None:
        # Half the cases aim at the live session with its token so the fuzzer reaches past the 404 of auth; some
        # carry a non-ASCII header, or a non-ASCII bearer instead of the token.
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                  database=None)
        @given(case=op.as_strategy(), aim=st.booleans(), noise=non_ascii,
               where=st.sampled_from(["none", "header", "bearer"]))
        def check(case, aim: bool, noise: bytes, where: str) -> None:
            if aim and case.path_parameters and "session_id" in case.path_parameters:
                case.path_parameters["session_id"] = session_id
            headers: dict[str, str | bytes] = {"Authorization": f"Bearer {token}"}
            if where == "header":
                headers["X-Fuzz"] = noise
            elif where == "bearer":
                headers["Authorization"] = b"Bearer " + noise
            response = case.call(headers=headers)
            calls.append(response.status_code)
            if response.status_code >= 500:
                failures.append(f"{op.method.upper()} {op.path}: {response.status_code} {response.text[:200]}")
            elif where == "bearer" and response.status_code in (403, 404) and "{session_id}" in op.path:
                failures.append(f"{op.method.upper()} {op.path}: a malformed bearer got {response.status_code}")

        check()

    for operation in schema.get_all_operations():
        fuzz(operation.ok())
    assert len(calls) > 100, "the fuzzer barely ran"
    assert any(200 <= code < 300 for code in calls), "no fuzzed request ever succeeded: the fuzzer is not reaching in"
    assert not failures, "\n".join(failures[:5])


def test_a_prediction_whose_loss_cannot_be_finite_is_refused_and_changes_nothing(fuzz_target) -> None:
    url = fuzz_target[0]
    with httpx.Client(base_url=url, timeout=30, verify=tls_context()) as http:
        created = http.post("/v1/sessions", json={"dataset": "online-sparse", "dataset_params": {"d": 10, "k": 2},
                                                  "protocol": "online", "budget": {"per_example": 2}}).json()
        auth = {"Authorization": f"Bearer {created['token']}", "content-type": "application/json"}
        path = f"/v1/sessions/{created['id']}"
        for _ in range(3):
            assert http.post(f"{path}/next", headers=auth).status_code == 200
        overflow = http.post(f"{path}/predict", content='{"example": 0, "prediction": 1e200}', headers=auth)
        assert overflow.status_code == 422 and overflow.json()["error"] == "invalid_prediction"
        for body in ('{"example": 0, "prediction": Infinity}', '{"example": 0, "prediction": NaN}'):
            assert http.post(f"{path}/predict", content=body, headers=auth).status_code == 422
        # Each loss finite on its own, their sum not: the second is refused.
        assert http.post(f"{path}/predict", json={"example": 1, "prediction": 1e154}, headers=auth).status_code == 200
        second = http.post(f"{path}/predict", json={"example": 2, "prediction": 1e154}, headers=auth)
        assert second.status_code == 422 and second.json()["error"] == "invalid_prediction"
        info = http.get(path, headers=auth).json()
        assert info["predictions"] == 1 and isinstance(info["cumulative_loss"], float)
        assert http.get(f"{path}/audit", headers=auth).json()["compliant"]


def test_ids_with_control_characters_get_422(fuzz_target) -> None:
    url, session_id, token = fuzz_target
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, timeout=30, verify=tls_context()) as http:
        for char in CONTROL_IDS:
            bad = quote(session_id[:8] + char + session_id[8:], safe="")
            for method, path in [("GET", f"/v1/sessions/{bad}"), ("GET", f"/v1/sessions/{bad}/audit"),
                                 ("GET", f"/v1/sessions/{bad}/ledger?format=ndjson"),
                                 ("POST", f"/v1/sessions/{bad}/next"), ("DELETE", f"/v1/sessions/{bad}"),
                                 ("GET", f"/v1/datasets/{bad}")]:
                answer = http.request(method, path, headers=auth)
                assert answer.status_code == 422, (method, path, answer.status_code, answer.text[:200])
                assert answer.json()["error"] == "invalid_request"
            with pytest.raises(InvalidStatus) as refused:
                connect(stream_url(url, "ID").replace("ID", bad), additional_headers=auth, legacy=True,
                        open_timeout=10)
            assert refused.value.response.status_code == 422, (char, refused.value.response.body)
            assert json.loads(bytes(refused.value.response.body or b""))["error"] == "invalid_request"
        assert http.get(f"/v1/sessions/{session_id}", headers=auth).status_code == 200


def test_malformed_bearers_get_401_everywhere(fuzz_target) -> None:
    url, session_id, _ = fuzz_target
    with httpx.Client(base_url=url, timeout=30, verify=tls_context()) as http:
        for bearer in MALFORMED_BEARERS:
            for method, path in [("GET", f"/v1/sessions/{session_id}"), ("POST", f"/v1/sessions/{session_id}/next"),
                                 ("GET", f"/v1/sessions/{session_id}/audit"), ("POST", "/v1/admin/close-idle"),
                                 ("DELETE", "/v1/datasets/mine")]:
                answer = http.request(method, path, headers={"Authorization": bearer})
                if b"\x01" in bearer:  # not a valid HTTP header value: the HTTP parser refuses it, in JSON too
                    assert (answer.status_code, answer.json()["error"]) == (400, "bad_request"), answer.text[:200]
                    assert answer.headers["content-type"] == "application/json"
                    continue
                assert answer.status_code == 401, (bearer, method, path, answer.status_code, answer.text[:200])
                assert answer.json()["error"] == "unauthorized"
            if b"\x01" in bearer:  # the WebSocket client will not send a control character
                continue
            with pytest.raises(InvalidStatus) as refused:
                connect(stream_url(url, session_id), additional_headers={"Authorization": bearer.decode("latin-1")},
                        legacy=True, open_timeout=10)
            # The handshake's refusal is the HTTP one, JSON body included.
            assert refused.value.response.status_code == 401, (bearer, refused.value.response.body)
            assert json.loads(bytes(refused.value.response.body or b""))["error"] == "unauthorized"
        # A well-formed token that is not the admin's is still a 403, and the admin's own still works.
        assert http.post("/v1/admin/close-idle", headers={"Authorization": "Bearer nope"}).status_code == 403
        assert http.post("/v1/admin/close-idle?idle_seconds=1000000", headers=ADMIN).status_code == 200
