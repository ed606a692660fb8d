"""The learner end to end: the same run in-process and over real HTTP, the learner service, the CLI."""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context
from learner.http_oracle import HttpOracle
from learner.oracle import LocalOracle
from learner.prediction_budget import score_with_test_budget, top_k_attributes
from learner.runner import run_algorithm
from tests.helpers import BUDGETLAB, caller
from tests.servers import learner_server, oracle_server, serve_in_thread

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

GAUSS = {"d": 30, "n_train": 300, "n_test": 100, "s_plus": 3, "s_minus": 2}
SAME_SEED_CASES = [
    ("aerr", "sparse-gaussian", GAUSS, 5, {}),
    ("aelr", "sparse-gaussian", GAUSS, 5, {}),
    ("ddaelr-2phase", "sparse-gaussian", GAUSS, 5, {}),
    ("hybrid", "sparse-gaussian", GAUSS, 10, {"batch": 10}),  # small batches, so 300 examples make several stages
    ("ito1", "online-sparse", {"d": 10, "k": 2, "n_train": 300, "n_test": 100}, 4, {}),
]


@pytest.fixture(scope="module")
def auth(learner_url: str) -> dict[str, str]:
    return caller(learner_url)


# The waits look through one client each: httpx.get makes a new one a call, ~45-60 ms of CPU (its TLS settings).
def wait_run(learner_url: str, run_id: str, auth: dict[str, str], timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while time.monotonic() < deadline:
            info = http.get(f"{learner_url}/v1/runs/{run_id}", headers=auth).json()
            if info["status"] not in ("queued", "running"):
                return info
            time.sleep(0.05)
    raise TimeoutError(f"run {run_id} did not end")


def wait_progress(learner_url: str, run_id: str, examples: int, auth: dict[str, str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=60, verify=tls_context()) as http:
        while http.get(f"{learner_url}/v1/runs/{run_id}", headers=auth).json()["progress_examples"] < examples:
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} did not reach {examples} examples in {timeout} s")
            time.sleep(0.05)


def audit(http: httpx.Client, learner_url: str, run_id: str, auth: dict[str, str]) -> dict:
    # The run's token stays inside the learner, which asks the oracle for the session's audit.
    r = http.get(f"{learner_url}/v1/runs/{run_id}/audit", headers=auth)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize(("algorithm", "dataset", "params", "k", "algorithm_params"), SAME_SEED_CASES,
                         ids=[c[0] for c in SAME_SEED_CASES])
def test_same_seed_same_weights_in_process_and_over_http(shared_oracle_url: str, algorithm: str, dataset: str,
                                                         params: dict, k: int, algorithm_params: dict) -> None:
    protocol = "online" if algorithm == "ito1" else "batch"
    budget = Budget(per_example=k)
    local = run_algorithm(algorithm, LocalOracle(dataset, dataset_params=params, budget=budget, seed=4,
                                                 protocol=protocol), params=algorithm_params, seed=4, eval_every=100)
    remote_oracle = HttpOracle(shared_oracle_url, dataset, dataset_params=params, budget=budget, seed=4,
                               protocol=protocol)
    remote = run_algorithm(algorithm, remote_oracle, params=algorithm_params, seed=4, eval_every=100)
    remote_oracle.close()
    assert local.status == remote.status == "finished"
    assert np.any(np.asarray(local.weights) != 0), "a run that never moves proves nothing"
    np.testing.assert_array_equal(local.weights, remote.weights)
    assert [p.test_mse for p in local.curve] == pytest.approx([p.test_mse for p in remote.curve], rel=1e-12)
    assert local.attributes == remote.attributes and remote.attributes <= k * 300
    if protocol == "online":
        assert local.cumulative_loss == pytest.approx(remote.cumulative_loss, rel=1e-12)


@pytest.mark.parametrize("total", [None, 1500.0])
def test_a_run_that_chooses_ahead_pays_many_examples_a_request_over_http(shared_oracle_url: str,
                                                                         total: float | None) -> None:
    """Exploration chooses the attributes of a mini-batch's examples ahead: through ``HttpOracle`` it pays for them in
    ``steps`` requests, far fewer than its examples, learns the weights of the run in-process, and its session's
    ledger audits compliant. With a global budget that runs out inside a request, the refused request is paid for
    again one ``step`` each, and the run ends where the run in-process does."""
    budget, params = Budget(per_example=10, total=total), {"batch": 10}
    local = run_algorithm("exploration", LocalOracle("sparse-gaussian", dataset_params=GAUSS, budget=budget, seed=4),
                          params=params, seed=4, eval_every=100)
    counting = CountingTransport()
    with OracleClient(shared_oracle_url, transport=counting) as client:
        remote_oracle = HttpOracle(shared_oracle_url, "sparse-gaussian", dataset_params=GAUSS, budget=budget, seed=4,
                                   client=client)
        opened = len(counting.paths)
        remote = run_algorithm("exploration", remote_oracle, params=params, seed=4, eval_every=100)
        sent = [path.rsplit("/", 1)[1] for path in counting.paths[opened:]]
        report = remote_oracle.session.audit()
    assert (local.status, local.examples, local.message) == (remote.status, remote.examples, remote.message)
    assert np.any(np.asarray(local.weights) != 0), "a run that never moves proves nothing"
    assert [w.hex() for w in local.weights] == [w.hex() for w in remote.weights]
    assert (local.attributes, local.cost) == (remote.attributes, remote.cost)
    assert report.compliant and report.attributes_recomputed == remote.attributes
    assert 3 <= sent.count("steps") < GAUSS["n_train"] / 10
    if total is None:
        assert remote.status == "finished" and remote.examples == GAUSS["n_train"] and "step" not in sent
    else:  # the refused request's examples one step each, up to the one refused: the run's last requests
        assert remote.status == "budget_exhausted" and remote.examples < GAUSS["n_train"]
        first = sent.index("step")
        assert sent[first - 1] == "steps" and set(sent[first:]) == {"step", "evaluate"}
        assert 2 <= sent.count("step") <= 80  # a mini-batch's examples at most (8 blocks of 10)


def test_learner_service_runs_several_at_once_and_each_session_is_compliant(shared_oracle_url: str,
                                                                            learner_url: str, auth: dict,
                                                                                    http: httpx.Client) -> None:
    algorithms = ["aerr", "aelr", "hybrid", "exploration"]
    ids = []
    for algorithm in algorithms:
        r = http.post(f"{learner_url}/v1/runs", json={
            "oracle_url": shared_oracle_url, "dataset": "sparse-gaussian", "dataset_params": GAUSS,
            "algorithm": algorithm, "budget": {"per_example": 10}, "seed": 1, "eval_every": 50,
        }, headers=auth)
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    listed = {run["id"] for run in http.get(f"{learner_url}/v1/runs", headers=auth).json()["runs"]}
    assert set(ids) <= listed
    for run_id, algorithm in zip(ids, algorithms, strict=True):
        info = wait_run(learner_url, run_id, auth)
        assert info["status"] == "finished", info["message"]
        assert info["progress_examples"] == 300 and info["max_examples"] == 300
        result = info["result"]
        assert result["algorithm"] == algorithm and [p["examples"] for p in info["curve"]] == [50, 100, 150, 200,
                                                                                              250, 300]
        report = audit(http, learner_url, run_id, auth)
        assert report["compliant"] and report["session_id"] == info["session"], report
        assert report["attributes_recomputed"] == result["attributes"] == info["progress_attributes"] <= 10 * 300


class Seen:
    """An ASGI app behind a record of every HTTP request (method, path) and WebSocket connection (path) it gets."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.http: list[tuple[str, str]] = []
        self.websockets: list[str] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.http.append((scope["method"], scope["path"]))
        elif scope["type"] == "websocket":
            self.websockets.append(scope["path"])
        await self.app(scope, receive, send)


def test_the_learner_services_runs_drive_their_sessions_over_the_websocket(tmp_path: Path, http: httpx.Client) -> None:
    """Nothing in a run's record names its transport, so the oracle's side is watched: every request of the run's
    training session and of its test-budget session came over one stream each, none over plain HTTP."""
    from server.app import create_app
    from server.config import Settings

    oracle = Seen(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}")))
    with serve_in_thread(oracle) as oracle_url, \
            learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle_url) as learner_url:
        auth = caller(learner_url)
        r = http.post(f"{learner_url}/v1/runs", json={
            "oracle_url": oracle_url, "dataset": "sparse-gaussian", "dataset_params": GAUSS, "algorithm": "aerr",
            "budget": {"per_example": 5}, "seed": 1, "eval_every": 100, "test_budget": 3,
        }, headers=auth)
        assert r.status_code == 201, r.text
        info = wait_run(learner_url, r.json()["id"], auth)
        assert info["status"] == "finished", info["message"]
        assert info["progress_examples"] == 300 and info["result"]["test_budget"]["per_example"] == 3
        sessions = [info["session"], info["result"]["test_budget"]["session"]]
        for session in sessions:
            path = f"/v1/sessions/{session}"
            assert oracle.websockets.count(f"{path}/stream") == 1
            # Plain HTTP carried at most the session's close (a DELETE of its own path), none of its requests.
            assert [call for call in oracle.http if call[1].startswith(f"{path}/")] == []
        assert sorted(oracle.websockets) == sorted(f"/v1/sessions/{s}/stream" for s in sessions)


class CountingTransport(httpx.HTTPTransport):
    """Plain HTTP that records the path of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


def _scored_in_three_requests(oracle: LocalOracle, weights: np.ndarray, bias: float, k: int) -> tuple[float, ...]:
    """What scoring on a test budget did before the step request: next, observe, predict for each example."""
    attributes = top_k_attributes(weights, k)
    squared = zero = wrong = 0.0
    for _ in range(oracle.n_examples):
        example, _ = oracle.next()
        prediction = float(np.dot(weights[attributes], oracle.observe(example, attributes))) + bias
        y = oracle.predict(example, prediction)
        squared, zero, wrong = squared + (prediction - y) ** 2, zero + y**2, wrong + ((prediction >= 0) != (y >= 0))
    n = oracle.n_examples
    return squared / n, squared / zero, wrong / n


def test_scoring_on_a_test_budget_takes_two_requests_per_example_and_scores_as_before(shared_oracle_url: str) -> None:
    weights, bias, k = np.linspace(-1.0, 0.8, GAUSS["d"]), 0.1, 3
    session = {"dataset_params": GAUSS, "split": "test", "protocol": "online", "budget": Budget(per_example=k),
               "seed": 4}
    counting = CountingTransport()
    with OracleClient(shared_oracle_url, transport=counting) as client:
        remote = HttpOracle(shared_oracle_url, "sparse-gaussian", client=client, **session)  # type: ignore[arg-type]
        opened = len(counting.paths)
        score = score_with_test_budget(remote, weights, bias, k)
        sent = [path.rsplit("/", 1)[1] for path in counting.paths[opened:]]
    # The online protocol's floor: the step (next + observe) and the prediction, for each of the test examples.
    assert sent == ["step", "predict"] * GAUSS["n_test"]
    before = _scored_in_three_requests(LocalOracle("sparse-gaussian", **session), weights, bias, k)  # type: ignore[arg-type]
    assert (score.mse, score.normalized_mse, score.zero_one) == before and score.session == remote.session_id
    assert score.mse > 0 and 0 < score.zero_one < 1


def test_algorithms_endpoint_lists_every_paper_algorithm_with_parameters(learner_url: str, http: httpx.Client) -> None:
    listed = {a["id"]: a for a in http.get(f"{learner_url}/v1/algorithms").json()["algorithms"]}
    assert {"aer", "aer-baseline", "aerr", "aelr", "aesvr", "gaerr", "gaelr", "ddaerr", "ddaelr", "ddaerr-2phase",
            "ddaelr-2phase", "ito1", "ito2", "ito3", "greedy", "uniform", "exploration", "exploitation", "hybrid",
            "ridge", "lasso", "ogd-ridge", "eg-lasso"} <= set(listed)
    aerr = listed["aerr"]
    assert "Hazan" in aerr["paper"] and {"B", "eta"} <= {p["name"] for p in aerr["params"]}
    aesvr = listed["aesvr"]
    assert aesvr["algorithm"] == "Algorithm 4" and {"delta", "epsilon"} <= {p["name"] for p in aesvr["params"]}


def test_budget_running_out_ends_the_run_with_its_curve(shared_oracle_url: str, learner_url: str,
                                                        auth: dict, http: httpx.Client) -> None:
    r = http.post(f"{learner_url}/v1/runs", json={
        "oracle_url": shared_oracle_url, "dataset": "sparse-gaussian", "dataset_params": GAUSS,
        "algorithm": "aerr", "budget": {"per_example": 5, "total": 200}, "seed": 2, "eval_every": 10,
    }, headers=auth)
    info = wait_run(learner_url, r.json()["id"], auth)
    assert info["status"] == "budget_exhausted" and "budget" in info["message"]
    assert info["result"]["cost"] <= 200 and info["result"]["cost"] > 190
    assert info["curve"] and info["curve"][-1]["examples"] == info["result"]["examples"] < 300
    assert audit(http, learner_url, info["id"], auth)["compliant"]


def test_cancel_ends_a_run_with_the_curve_so_far(shared_oracle_url: str, learner_url: str, auth: dict,
                                                 http: httpx.Client) -> None:
    big = {**GAUSS, "n_train": 50_000}
    run_id = http.post(f"{learner_url}/v1/runs", json={
        "oracle_url": shared_oracle_url, "dataset": "sparse-gaussian", "dataset_params": big,
        "algorithm": "aelr", "budget": {"per_example": 5}, "eval_every": 20,
    }, headers=auth).json()["id"]
    wait_progress(learner_url, run_id, 40, auth)
    cancelled = http.delete(f"{learner_url}/v1/runs/{run_id}", headers=auth).json()
    assert cancelled["status"] == "cancelled"
    assert 40 <= cancelled["result"]["examples"] < 50_000 and cancelled["curve"]


def test_oracle_going_down_ends_the_run_cleanly(tmp_path: Path, http: httpx.Client) -> None:
    with ExitStack() as stack:
        oracle = stack.enter_context(ExitStack())
        url = oracle.enter_context(oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}"))
        learner_url = stack.enter_context(learner_server(f"sqlite:///{tmp_path / 'runs.db'}", url))
        auth = caller(learner_url)
        run_id = http.post(f"{learner_url}/v1/runs", json={
            "dataset": "sparse-gaussian", "dataset_params": {**GAUSS, "n_train": 50_000},
            "algorithm": "aerr", "budget": {"per_example": 5}, "eval_every": 20,
        }, headers=auth).json()["id"]
        wait_progress(learner_url, run_id, 20, auth)
        oracle.close()  # the oracle goes down; the learner stays up
        info = wait_run(learner_url, run_id, auth)
        assert info["status"] == "oracle_unavailable", info
        assert info["progress_examples"] >= 20 and info["curve"]
        assert http.get(f"{learner_url}/healthz").status_code == 200


@pytest.mark.parametrize(("body", "status", "error"), [
    ({"algorithm": "no-such"}, 422, "invalid_params"),
    ({"algorithm": "aerr", "params": {"no_such_param": 1}}, 422, "invalid_params"),
    ({"algorithm": "aerr", "params": {"eta": "fast"}}, 422, "invalid_params"),  # a value its type cannot read
    ({"algorithm": "ddaerr", "params": {"x_draws": 2.5}}, 422, "invalid_params"),
    ({"algorithm": "aerr", "dataset": "no-such-dataset"}, 422, "oracle_rejected"),
    ({"algorithm": "aerr", "oracle_url": "http://127.0.0.1:9"}, 502, "oracle_unavailable"),  # not an allowed oracle
    ({"algorithm": "aerr", "seed": -1}, 422, "invalid_request"),
])
def test_bad_run_requests_get_a_json_error_and_start_nothing(shared_oracle_url: str, learner_url: str, auth: dict,
                                                             body: dict, status: int, error: str,
                                                                     http: httpx.Client) -> None:
    before = len(http.get(f"{learner_url}/v1/runs", headers=auth).json()["runs"])
    request = {"oracle_url": shared_oracle_url, "dataset": "sparse-gaussian", "dataset_params": GAUSS, **body}
    r = http.post(f"{learner_url}/v1/runs", json=request, headers=auth)
    assert r.status_code == status and r.json()["error"] == error and r.json()["detail"], r.text
    assert len(http.get(f"{learner_url}/v1/runs", headers=auth).json()["runs"]) == before
    missing = http.get(f"{learner_url}/v1/runs/nope", headers=auth)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def run_cli(*args: str) -> dict:
    done = subprocess.run([BUDGETLAB, "run", *args, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cli_run_json_local_and_over_http_agree_and_score_with_a_test_budget(shared_oracle_url: str) -> None:
    common = ["--algorithm", "aerr", "--dataset", "sparse-gaussian:d=30,n_train=300", "--dataset-param", "n_test=100",
              "--dataset-param", "s_plus=3", "--dataset-param", "s_minus=2", "--per-example", "5", "--seed", "3",
              "--eval-every", "100", "--test-budget", "3"]
    local = run_cli(*common, "--local")
    remote = run_cli(*common, "--oracle", shared_oracle_url)
    for out in (local, remote):
        assert {"algorithm", "dataset", "params", "seed", "weights", "curve", "final", "session"} <= set(out)
        assert [p["examples"] for p in out["curve"]] == [100, 200, 300]
        assert {"examples", "attributes", "test_mse", "normalized_mse", "zero_one"} <= set(out["curve"][0])
        assert out["test_budget"]["per_example"] == 3
    assert local["session"] is None and remote["session"]
    assert local["weights"] == remote["weights"] and local["final"]["test_mse"] == pytest.approx(
        remote["final"]["test_mse"], rel=1e-12)
    # At most 3 of 30 attributes per test example: a score of its own (not the full-information one of the same
    # weights, which it need not exceed when the weights are noisy), the same in-process and over HTTP.
    assert remote["test_budget"]["mse"] == pytest.approx(local["test_budget"]["mse"], rel=1e-12)
    assert remote["test_budget"]["mse"] != pytest.approx(remote["final"]["test_mse"], rel=1e-3)


def test_cli_run_rejects_bad_input_with_a_message() -> None:
    done = subprocess.run([BUDGETLAB, "run", "--algorithm", "nope", "--dataset", "diabetes", "--local"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "unknown algorithm" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([BUDGETLAB, "run", "--algorithm", "aerr", "--dataset", "diabetes"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--local" in done.stderr and "Traceback" not in done.stderr
