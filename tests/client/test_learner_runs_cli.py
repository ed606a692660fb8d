"""``budgetlab runs token|list|show|cancel|wait`` as users run it (its own process), against the real learner and
oracle; tables stay readable at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess

from budgetlab.contract.budgets import Budget
from budgetlab.contract.runs import RunCreate
from budgetlab.learner_client import LearnerClient
from tests.helpers import BUDGETLAB, TINY


def runs(learner_url: str, *args: str, token: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80", "LEARNER_URL": learner_url, "TERM": "dumb"}
    env.pop("BUDGETLAB_LEARNER_TOKEN", None)
    if token:
        env["BUDGETLAB_LEARNER_TOKEN"] = token
    done = subprocess.run([BUDGETLAB, "runs", *args], capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def test_runs_commands_list_show_wait_and_cancel_a_callers_runs(learner_url: str) -> None:
    token = runs(learner_url, "token").stdout.strip()
    assert len(token) >= 43
    request = RunCreate(dataset="sparse-gaussian", dataset_params=TINY, algorithm="ddaelr-2phase",
                        budget=Budget(per_example=4), eval_every=20, seed=7)
    with LearnerClient(learner_url, token=token) as client:
        short = client.start(request)
        long = client.start(request.model_copy(update={"dataset_params": {**TINY, "n_train": 50_000}}))

    waited = runs(learner_url, "wait", short.id, "--timeout", "60", token=token)
    assert "finished" in waited.stdout and "60/60 examples" in waited.stdout
    # The long run is cancelled before the listing, not after it: until then its steps, which the shared oracle serves
    # in this process, cost CPU during every command.
    cancelled = runs(learner_url, "cancel", long.id, token=token).stdout
    assert "cancelled" in cancelled
    assert runs(learner_url, "wait", long.id, token=token, ok=False).returncode == 1  # ended, not completed

    listed = runs(learner_url, "list", token=token).stdout
    lines = listed.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in listed, listed  # nothing cut to an ellipsis
    assert any(short.id in line and "finished" in line and "60/60" in line for line in lines), listed
    assert any(long.id in line for line in lines), listed
    assert [r["id"] for r in json.loads(runs(learner_url, "list", "--json", token=token).stdout)["runs"]] == \
        [long.id, short.id]

    shown = runs(learner_url, "show", short.id, token=token).stdout
    assert max(map(len, shown.splitlines())) <= 80 and "…" not in shown, shown
    assert "ddaelr-2phase" in shown and "seed 7" in shown and short.session in shown
    rows = [line.split() for line in shown.splitlines()]
    curve = [row[0] for row in rows if len(row) == 5 and all(c.replace(".", "").isdigit() for c in row)]
    assert curve == ["20", "40", "60"], shown

    stranger = runs(learner_url, "token").stdout.strip()
    assert "no runs" in runs(learner_url, "list", token=stranger).stdout
    missing = runs(learner_url, "show", short.id, token=stranger, ok=False)
    assert missing.returncode == 1 and "not_found" in missing.stderr
    no_token = runs(learner_url, "list", ok=False)
    assert no_token.returncode == 1 and "BUDGETLAB_LEARNER_TOKEN" in no_token.stderr
