"""A learner restarted in the middle of ``budgetlab compare`` still lists every run of the comparison, and the
comparison goes on: every process is the real one (``budgetlab serve oracle``, ``budgetlab serve learner``,
``budgetlab compare``, ``budgetlab runs``). The learner is killed (SIGKILL) while the comparison's first run
executes and started again on its port and database; the comparison waits for it, records the killed run as
'interrupted' with its curve so far, runs the others, writes its report and exits non-zero (a run did not
complete). The learner lists, for the caller the comparison ran as, exactly the runs of its results.json."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.errors import LearnerUnavailable
from client.comparison.compare import RUNS_FAILED
from client.comparison.grid import PatientLearner
from client.services import running
from tests.helpers import BUDGETLAB
from tests.servers import cli_service

CONFIG = """
title = "a learner restarted mid-comparison"
seeds = [0, 1]
max_examples = 2000
eval_every = 200
budget = { per_example = 4 }
dataset = { name = "sparse-gaussian", params = { d = 20, n_train = 2000, n_test = 50, s_plus = 3, s_minus = 2 } }

[[algorithms]]
id = "aerr"

[[algorithms]]
id = "aelr"
"""


@contextmanager
def learner_process(env: dict[str, str], log: Path, port: int = 0) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``budgetlab serve learner --port PORT`` as users start it; yields its URL and the process."""
    args = ["serve", "learner", "--port", str(port)]
    with log.open("w") as sink:
        process = subprocess.Popen([BUDGETLAB, *args], env={**os.environ, **env}, stdout=sink,
                                   stderr=subprocess.STDOUT, cwd=log.parent)
        with running(process, args, log, time.monotonic() + 60) as url:
            yield url, process


def runs_cli(learner: str, token: str, *args: str) -> str:
    env = {**os.environ, "LEARNER_URL": learner, "BUDGETLAB_LEARNER_TOKEN": token}
    done = subprocess.run([BUDGETLAB, "runs", *args], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.process
@pytest.mark.timeout(600)  # two learners start a Dask worker each; on busy shared cores that took past 300 s
def test_a_learner_restarted_mid_comparison_lists_every_run_and_the_comparison_goes_on(tmp_path: Path,
                                                                                        http: httpx.Client) -> None:
    config, out = tmp_path / "restart.toml", tmp_path / "report"
    config.write_text(CONFIG)
    with cli_service(["serve", "oracle", "--database-url", f"sqlite:///{tmp_path / 'ledger.db'}"],
                     cwd=tmp_path) as oracle:
        env = {"LEARNER_DATABASE_URL": f"sqlite:///{tmp_path / 'runs.db'}", "ORACLE_URL": oracle,
               "BUDGETLAB_LEARNER_MAX_RUNNING": "1", "BUDGETLAB_WORKERS": "1"}
        with learner_process(env, tmp_path / "learner-1.log") as (learner, first):
            token = runs_cli(learner, "", "token").strip()
            auth = {"Authorization": f"Bearer {token}"}
            with (tmp_path / "compare.log").open("w") as log:
                compare = subprocess.Popen(
                    [BUDGETLAB, "compare", str(config), "--out", str(out), "--parallel", "1", "--learner", learner,
                     "--oracle", oracle], env={**os.environ, "BUDGETLAB_LEARNER_TOKEN": token, "COLUMNS": "200"},
                    stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 180  # the learner's worker processes start first
                while True:  # the comparison's first run executes and has drawn part of its curve
                    listed = http.get(f"{learner}/v1/runs", headers=auth).json()["runs"]
                    # Its second point stored: a listing's last point is the learner's once it is written, while
                    # its example count runs ahead of what is stored (a kill right after 400 examples left one
                    # point once the polls and the learners got faster).
                    going = [r for r in listed if r["status"] == "running"
                             and (r["last_point"] or {}).get("examples", 0) >= 400]
                    if going:
                        break
                    assert compare.poll() is None, (tmp_path / "compare.log").read_text()
                    assert not [r for r in listed if r["status"] == "finished"], "the first run ended before the kill"
                    assert time.monotonic() < deadline, f"the comparison's first run did not get going: {listed}"
                    time.sleep(0.05)
                (killed,) = going
                first.kill()  # SIGKILL: no shutdown code runs
                first.wait(timeout=10)
            except BaseException:
                compare.kill()
                raise
        port = int(learner.rsplit(":", 1)[1])
        with learner_process(env, tmp_path / "learner-2.log", port) as (again, _):
            assert again == learner
            try:
                code = compare.wait(timeout=300)
            finally:
                compare.kill()
            printed = (tmp_path / "compare.log").read_text()
            listed_json = json.loads(runs_cli(learner, token, "list", "--json"))["runs"]
            listed_table = runs_cli(learner, token, "list")

    assert code == RUNS_FAILED, printed  # the report is written; one run did not complete
    assert "cannot reach the learner" in printed and "answers again" in printed, printed
    assert "3/4 runs completed" in printed, printed
    results = json.loads((out / "results.json").read_text())
    runs = {r["run_id"]: (a["id"], r) for a in results["designs"][0]["algorithms"] for r in a["runs"]}
    assert len(runs) == 4 and None not in runs
    # The learner lists every run of the comparison, and they are the comparison's runs, as they ended.
    assert {r["id"]: r["status"] for r in listed_json} == {i: r["result"]["status"] for i, (_, r) in runs.items()}
    assert all(run_id in listed_table for run_id in runs)
    algorithm, interrupted = runs[killed["id"]]
    assert (algorithm, interrupted["seed"]) == ("aerr", 0)
    result = interrupted["result"]
    assert result["status"] == "interrupted" and len(result["curve"]) >= 2
    assert result["examples"] >= result["curve"][-1]["examples"] >= 400 and result["attributes"] > 0
    # What it paid before the kill is in the oracle's ledger, its session closed by the new learner, and it adds up.
    assert interrupted["audit"] == "compliant"
    others = [r for i, (_, r) in runs.items() if i != killed["id"]]
    assert [r["result"]["status"] for r in others] == ["finished"] * 3
    assert all(r["audit"] == "compliant" and r["result"]["examples"] == 2000 for r in others)
    # The report's per-seed table shows where the interrupted run had got to: its curve's last point.
    last = result["curve"][-1]
    assert f"| aerr | 0 | interrupted | {last['test_mse']:.4g} |" in (out / "report.md").read_text()


def test_only_requests_that_cannot_have_reached_the_learner_are_sent_again() -> None:
    """A refused connection is tried again until the learner answers; a run's POST cut off after it was sent is
    not (the learner may have started the run: a second one would run twice); past the grace it is an error."""
    request = RunCreate(dataset="sparse-gaussian", algorithm="aer", budget=Budget(per_example=3))
    info = {"id": "r1", "status": "running", "request": request.model_dump(mode="json")}
    failures = {"GET": [httpx.ReadError("reset"), httpx.ConnectError("refused")],
                "POST": [httpx.ConnectError("refused")]}
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        if failures[request.method]:
            raise failures[request.method].pop(0)
        return httpx.Response(200 if request.method == "GET" else 201, json=info)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    said: list[str] = []
    with PatientLearner("http://learner", grace=30, token="t", say=said.append,
                        transport=httpx.MockTransport(answer)) as learner:
        assert learner.get("r1").id == "r1"  # a reset GET, then a refused one, then the answer
        assert learner.start(request).id == "r1"  # refused: nothing was sent, so it is sent again
        failures["POST"].append(httpx.ReadError("reset"))
        with pytest.raises(LearnerUnavailable):
            learner.start(request)  # cut off after it was sent: not sent again
    assert sent == ["GET", "GET", "GET", "POST", "POST", "POST"]
    assert said[0].startswith("cannot reach the learner at http://learner") and "answers again" in said[1]
    assert len(said) == 4  # the second outage is said too
    with PatientLearner("http://learner", grace=0, token="t", transport=httpx.MockTransport(refuse)) as gone:
        with pytest.raises(LearnerUnavailable):
            gone.get("r1")
