"""Learner authentication on the real learner and oracle: runs belong to the caller token that started them, no
other caller can list, read, audit or cancel them (404, as for a run that does not exist), the admin token sees
everything, tokens are 256-bit and stored only as digests, and any malformed bearer is a 401, never a 500."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.learner_client import LearnerClient
from budgetlab.service_client import tls_context
from tests.helpers import LONG, new_caller
from tests.servers import learner_server

ADMIN = "learner-admin-token-for-tests"
RUN = {"dataset": "sparse-gaussian", "dataset_params": LONG, "algorithm": "aerr", "budget": {"per_example": 4},
       "eval_every": 1000}


@pytest.fixture(scope="module")
def learner(shared_oracle_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    runs = tmp_path_factory.mktemp("learner") / "runs.db"
    with learner_server(f"sqlite:///{runs}", shared_oracle_url, admin_token=ADMIN) as url:
        yield url, runs


def wait_progress(url: str, run_id: str, auth: dict[str, str]) -> None:
    deadline = time.monotonic() + 30
    # One client for the looks: httpx.get makes a new one a call, ~45-60 ms of CPU (its TLS settings).
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while http.get(f"{url}/v1/runs/{run_id}", headers=auth).json()["progress_examples"] < 5:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)


def test_another_caller_cannot_list_read_audit_or_cancel_a_run_and_the_admin_can(learner: tuple[str, Path],
                                                                                 http: httpx.Client) -> None:
    url = learner[0]
    _, alice = new_caller(url)
    _, mallory = new_caller(url)
    run_id = http.post(f"{url}/v1/runs", json=RUN, headers=alice).json()["id"]
    wait_progress(url, run_id, alice)

    assert run_id in {r["id"] for r in http.get(f"{url}/v1/runs", headers=alice).json()["runs"]}
    assert run_id not in {r["id"] for r in http.get(f"{url}/v1/runs", headers=mallory).json()["runs"]}
    for method, suffix in (("GET", ""), ("GET", "/audit"), ("DELETE", "")):
        theirs = http.request(method, f"{url}/v1/runs/{run_id}{suffix}", headers=mallory)
        nobody = http.request(method, f"{url}/v1/runs/{'0' * 16}{suffix}", headers=mallory)
        assert theirs.status_code == nobody.status_code == 404, theirs.text
        assert theirs.json()["error"] == nobody.json()["error"] == "not_found"
        assert theirs.json()["detail"].replace(run_id, "0" * 16) == nobody.json()["detail"]
    assert http.get(f"{url}/v1/runs/{run_id}", headers=alice).json()["status"] == "running", \
        "another caller's DELETE stopped the run"

    admin = {"Authorization": f"Bearer {ADMIN}"}
    assert run_id in {r["id"] for r in http.get(f"{url}/v1/runs", headers=admin).json()["runs"]}
    assert http.get(f"{url}/v1/runs/{run_id}/audit", headers=admin).json()["compliant"]
    assert http.delete(f"{url}/v1/runs/{run_id}", headers=admin).json()["status"] == "cancelled"
    assert http.get(f"{url}/v1/runs/{run_id}", headers=alice).json()["status"] == "cancelled"


BAD_BEARERS: list[tuple[str, dict[str, str | bytes]]] = [
    ("missing", {}),
    ("not bearer", {"Authorization": "Basic dXNlcjpwYXNz"}),
    ("no token", {"Authorization": "Bearer"}),
    ("unknown", {"Authorization": "Bearer " + "A" * 43}),
    ("non-ascii", {"Authorization": "Bearer tökén".encode()}),
    ("latin-1 bytes", {"Authorization": b"Bearer \xff\xfe\xfd"}),
    ("control character", {"Authorization": "Bearer abc\x01def"}),
    ("two tokens", {"Authorization": "Bearer abc def"}),
    ("very long", {"Authorization": "Bearer " + "a" * 10_000}),
]


@pytest.mark.parametrize(("case", "headers"), BAD_BEARERS, ids=[c for c, _ in BAD_BEARERS])
def test_a_missing_malformed_or_unknown_bearer_is_refused_on_every_run_endpoint(
        learner: tuple[str, Path], case: str, headers: dict, http: httpx.Client) -> None:
    url = learner[0]
    for method, path in (("GET", "/v1/runs"), ("POST", "/v1/runs"), ("GET", "/v1/runs/abc"),
                         ("GET", "/v1/runs/abc/audit"), ("DELETE", "/v1/runs/abc")):
        r = http.request(method, f"{url}{path}", headers=headers, json=RUN if method == "POST" else None)
        if case == "control character":  # not a valid HTTP header value: the HTTP parser refuses it, in JSON too
            assert (r.status_code, r.json()["error"]) == (400, "bad_request"), (method, path, r.text)
            continue
        assert r.status_code == 401, (case, method, path, r.text)
        assert r.json()["error"] == "unauthorized" and r.json()["detail"]


def test_tokens_are_256_bit_and_the_learner_keeps_only_their_digests(learner: tuple[str, Path]) -> None:
    url, runs = learner
    tokens = [new_caller(url)[0] for _ in range(3)]
    assert len(set(tokens)) == 3 and all(len(t) >= 43 for t in tokens)  # 32 random bytes, base64url
    with sqlite3.connect(runs) as db:
        stored = {row[0] for row in db.execute("select token_hash from learner_callers")}
        dump = "\n".join(db.iterdump())
    assert {hashlib.sha256(t.encode()).hexdigest() for t in tokens} <= stored
    assert not any(t in dump for t in tokens)


def test_the_sdk_gets_a_caller_token_of_its_own_and_sees_only_its_runs(learner: tuple[str, Path],
                                                                       shared_oracle_url: str) -> None:
    url = learner[0]
    request = RunCreate(dataset="sparse-gaussian", dataset_params={**LONG, "n_train": 40}, algorithm="aerr",
                        budget=Budget(per_example=4), eval_every=20)
    with LearnerClient(url) as mine, LearnerClient(url) as other:
        run = mine.start(request)
        assert mine.token and mine.wait(run.id, timeout=60).status == "finished"
        assert mine.audit(run.id).compliant
        assert run.id in {r.id for r in mine.list()}
        assert other.list() == [] and other.token and other.token != mine.token
        with LearnerClient(url, token=mine.token) as again:
            assert again.get(run.id).status == "finished"


def test_openapi_declares_an_http_bearer_scheme_on_the_run_routes(learner: tuple[str, Path],
                                                                  http: httpx.Client) -> None:
    spec = http.get(f"{learner[0]}/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert [s for s in schemes.values() if s == {**s, "type": "http", "scheme": "bearer"}]
    name = next(iter(schemes))
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            secured = {"security": [{name: []}]}.items() <= operation.items()
            assert secured == path.startswith("/v1/runs"), (method, path)
            if secured:
                assert "401" in operation["responses"], (method, path)


@pytest.fixture(params=["sqlite", "postgresql"])
def learner_on(request: pytest.FixtureRequest, shared_oracle_url: str, tmp_path: Path) -> Iterator[str]:
    """A learner on each database: PostgreSQL's text cannot hold a NUL, which once made a run id with one a 500."""
    url = (request.getfixturevalue("postgres_url") if request.param == "postgresql"
           else f"sqlite:///{tmp_path / 'runs.db'}")
    with learner_server(url, shared_oracle_url, admin_token=ADMIN) as learner_url:
        yield learner_url


def test_a_run_id_with_a_control_character_is_a_422_on_every_database(learner_on: str, http: httpx.Client) -> None:
    _, auth = new_caller(learner_on)
    run_id = http.post(f"{learner_on}/v1/runs", json=RUN, headers=auth).json()["id"]
    for char in ("%00", "%01", "%1f", "%7f", "%C2%85"):
        for method, suffix in (("GET", ""), ("GET", "/audit"), ("DELETE", "")):
            r = http.request(method, f"{learner_on}/v1/runs/ab{char}cd{suffix}", headers=auth)
            assert r.status_code == 422, (char, method, suffix, r.text)
            assert r.json()["error"] == "invalid_request" and "control character" in r.json()["detail"]
        r = http.get(f"{learner_on}/v1/dashboard/comparisons/ab{char}cd")
        assert r.status_code == 422, (char, r.text)
    assert http.get(f"{learner_on}/v1/runs/{run_id}", headers=auth).json()["status"] in {"queued", "running"}, \
        "a refused request changed the run"
    http.delete(f"{learner_on}/v1/runs/{run_id}", headers=auth)


def test_a_body_past_the_learners_limit_is_a_413_and_starts_nothing(learner: tuple[str, Path],
                                                                    http: httpx.Client) -> None:
    url = learner[0]
    _, auth = new_caller(url)
    huge = {**RUN, "params": {"padding": "x" * (2 << 20)}}
    r = http.post(f"{url}/v1/runs", json=huge, headers=auth)
    assert r.status_code == 413, r.text
    assert r.json()["error"] == "too_large" and "BUDGETLAB_LEARNER_MAX_BODY_BYTES" in r.json()["detail"]
    assert http.get(f"{url}/v1/runs", headers=auth).json()["runs"] == []


def test_callers_past_the_rate_of_one_address_get_429_with_retry_after(shared_oracle_url: str,
                                                                       tmp_path: Path, http: httpx.Client) -> None:
    with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", shared_oracle_url, callers_per_second=0.5,
                        callers_burst=2) as url:
        answers = [http.post(f"{url}/v1/callers") for _ in range(4)]
        assert [a.status_code for a in answers] == [201, 201, 429, 429]
        assert answers[2].json()["error"] == "rate_limited"
        assert 1 <= int(answers[2].headers["Retry-After"]) <= 2
        with sqlite3.connect(tmp_path / "runs.db") as db:
            stored = db.execute("SELECT COUNT(*) FROM learner_callers").fetchone()[0]
        assert stored == 2, "no caller created past the rate"


def test_a_caller_past_its_queued_runs_gets_429_with_retry_after_and_no_oracle_session(shared_oracle_url: str,
                                                                                       tmp_path: Path,
                                                                                       http: httpx.Client) -> None:
    def sessions() -> int:
        return http.get(f"{shared_oracle_url}/v1/dashboard/sessions").json()["counts"]["sessions"]

    with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", shared_oracle_url, max_queued=2, max_running=1) as url:
        _, auth = new_caller(url)
        started = [http.post(f"{url}/v1/runs", json={**RUN, "seed": s}, headers=auth) for s in range(2)]
        assert [r.status_code for r in started] == [201, 201]
        before = sessions()
        refused = http.post(f"{url}/v1/runs", json=RUN, headers=auth)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"] == "too_many_runs" and "BUDGETLAB_LEARNER_MAX_QUEUED" in refused.json()["detail"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert sessions() == before, "the refused run opened no oracle session"
        assert len(http.get(f"{url}/v1/runs", headers=auth).json()["runs"]) == 2
        _, other = new_caller(url)  # the limit is each caller's
        third = http.post(f"{url}/v1/runs", json=RUN, headers=other)
        assert third.status_code == 201, third.text
        # A run that ends makes room.
        assert http.delete(f"{url}/v1/runs/{started[1].json()['id']}", headers=auth).json()["status"] == "cancelled"
        again = http.post(f"{url}/v1/runs", json=RUN, headers=auth)
        assert again.status_code == 201, again.text
        for run, headers in ((started[0], auth), (third, other), (again, auth)):
            http.delete(f"{url}/v1/runs/{run.json()['id']}", headers=headers)
