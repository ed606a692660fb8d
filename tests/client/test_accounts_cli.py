"""A teacher's accounts from the command line (``budgetlab accounts``), and work done under an account's key: a
comparison (``compare --api-key``) and a learner service given one (``BUDGETLAB_LEARNER_API_KEY``), against a real
oracle that opens no anonymous session and a real learner, on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from budgetlab.contract.runs import RunCreate
from budgetlab.learner_client import LearnerClient
from budgetlab.oracle_client import OracleClient
from client.cli import app
from tests.helpers import ADMIN_TOKEN as ADMIN
from tests.helpers import RUNNER
from tests.servers import learner_server, oracle_server

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

DATASET = "sparse-gaussian:d=10,n_train=200,n_test=20,s_plus=2,s_minus=2"
PARAMS = {"d": 10, "n_train": 200, "n_test": 20, "s_plus": 2, "s_minus": 2}


def budgetlab(*args: str, **env: str) -> tuple[int, str]:
    result = RUNNER.invoke(app, list(args), env=env)
    return result.exit_code, result.output


def test_the_admin_creates_lists_shows_audits_and_revokes_accounts(oracle_url: str) -> None:
    admin = {"BUDGETLAB_ADMIN_TOKEN": ADMIN, "ORACLE_URL": oracle_url}
    code, out = budgetlab("accounts", "create", "student-03", "--total", "30", "--per-example", "3",
                          "--shield-test", "--evaluations", "2", **admin)
    assert code == 0, out
    key = out.split("API key (shown once; the oracle keeps only a hash of it):\n")[1].split()[0]
    assert "no limit" not in out.split("open at once")[0] and "train only (test splits shielded)" in out
    code, out = budgetlab("accounts", "list", **admin)
    assert code == 0 and "student-03" in out and "0 / 30" in out and "active" in out, out

    # The key opens sessions whose budget the account sets; its holder sees the account without the admin token.
    code, out = budgetlab("session", "open", DATASET, "--order", "pool", "--api-key", key, "--oracle", oracle_url)
    assert code == 0, out
    opened = json.loads(out)
    assert opened["session"]["budget"]["per_example"] == 3
    session = OracleClient(oracle_url).session(opened["id"], opened["token"])
    session.observe(0, [1, 2, 3])
    code, out = budgetlab("accounts", "show", "--api-key", key, "--oracle", oracle_url)
    assert code == 0 and opened["id"] in out and "3 cost units, 0 evaluations, 1 session(s) (1 open)" in out, out
    code, out = budgetlab("accounts", "audit", "--api-key", key, "--oracle", oracle_url)
    assert code == 0 and "compliant" in out and "spent 3 of 30" in out, out
    code, out = budgetlab("accounts", "show", "--json", _id(key), **admin)
    assert code == 0 and json.loads(out)["account"]["spent"]["cost"] == 3.0, out

    code, out = budgetlab("accounts", "revoke", _id(key), **admin)
    assert code == 0 and "revoked student-03" in out, out
    code, out = budgetlab("session", "open", DATASET, "--api-key", key, "--oracle", oracle_url)
    assert code == 1 and "account_revoked" in out, out
    code, out = budgetlab("accounts", "list", "--oracle", oracle_url, BUDGETLAB_ADMIN_TOKEN="")
    assert code == 1 and "--admin-token" in out, out


def _id(key: str) -> str:
    return key.split(".")[0]


def test_a_comparison_and_a_learner_draw_on_the_accounts_whose_keys_they_hold(tmp_path: Path,
                                                                              http: httpx.Client) -> None:
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}", anonymous=False) as oracle:
        with OracleClient(oracle, admin_token=ADMIN) as client:
            course = client.create_account("course", {"total": 5000, "per_example": 4})
            lab = client.create_account("lab", {"per_example": 4})
        with learner_server(f"sqlite:///{tmp_path / 'runs.db'}", oracle, api_key=SecretStr(lab.key)) as learner:
            config = tmp_path / "compare.toml"
            config.write_text('title = "under a key"\ndataset = { name = "sparse-gaussian", params = { d = 10, '
                              'n_train = 200, n_test = 20, s_plus = 2, s_minus = 2 } }\nseeds = [0]\n'
                              'max_examples = 30\ntest_budget = 2\n[[algorithms]]\nid = "aerr"\n')
            code, out = budgetlab("compare", str(config), "--out", str(tmp_path / "out"), "--learner", learner,
                                  "--oracle", oracle, "--api-key", course.key)
            assert code == 0, out
            assert "the sessions draw on the account course" in out
            (design,) = json.loads((tmp_path / "out" / "results.json").read_text())["designs"]
            (run,) = design["algorithms"][0]["runs"]
            with OracleClient(oracle, api_key=course.key) as client:
                view = client.account()
                audit = client.audit_account()
            # The run's training session and its test session are the account's, and its spend is theirs.
            assert len(view.sessions) == 2 and {s.split for s in view.sessions} == {"train", "test"}
            assert view.account.spent.cost == sum(s.spent.cost for s in view.sessions) >= run["result"]["cost"] > 0
            assert audit.compliant, audit.reasons

            # A run that brings no key draws on the learner's own account; its key is never shown back.
            with LearnerClient(learner, token=LearnerClient(learner).new_caller().token) as runs:
                started = runs.start(RunCreate(dataset="sparse-gaussian", dataset_params=PARAMS, algorithm="aerr",
                                               budget={"per_example": 2}, max_examples=20))
                ended = runs.wait(started.id, timeout=120)
                shown = http.get(f"{learner}/v1/runs/{started.id}", headers={"Authorization":
                                                                               f"Bearer {runs.token}"}).text
            assert ended.status in ("finished", "budget_exhausted"), ended.message
            assert lab.key.split(".")[1] not in shown
            with OracleClient(oracle, api_key=lab.key) as client:
                assert [s.id for s in client.account().sessions] == [ended.session]
        # Without a key of its own, the learner's run is refused by this oracle, which opens no anonymous session.
        with learner_server(f"sqlite:///{tmp_path / 'runs2.db'}", oracle) as keyless:
            caller = http.post(f"{keyless}/v1/callers").json()["token"]
            refused = http.post(f"{keyless}/v1/runs", json={"dataset": "sparse-gaussian", "algorithm": "aerr"},
                                headers={"Authorization": f"Bearer {caller}"})
        assert refused.status_code == 422 and refused.json()["error"] == "oracle_rejected"
        assert "accounts only" in refused.json()["detail"]
