"""The budgetlab CLI as a user drives it: serve the oracle, add a dataset, query attributes, export, audit."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from client.cli import app
from tests.helpers import ADMIN_TOKEN, BUDGETLAB, ROOT
from tests.servers import cli_service

pytestmark = pytest.mark.usefixtures("shared_cluster")


def cli(*args: str, token: str | None = None, code: int = 0) -> str:
    env = {"BUDGETLAB_TOKEN": token} if token else {}
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """`budgetlab serve oracle` in a fresh working directory, as a user starts it."""
    cwd = tmp_path_factory.mktemp("cwd")
    data = tmp_path_factory.mktemp("user-data")
    with cli_service(["serve", "oracle"], cwd=cwd,
                     env={"BUDGETLAB_DATA_DIR": str(data), "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}) as url:
        yield url, cwd, data


def test_serve_oracle_keeps_its_ledger_in_the_working_directory(served) -> None:
    url, cwd, _ = served
    assert (cwd / "budgetlab-ledger.db").exists()
    assert "sparse-gaussian" in cli("datasets", "list", "--oracle", url)


def test_serve_learner_keeps_its_runs_where_database_url_says(served, tmp_path: Path, http: httpx.Client) -> None:
    url, _, _ = served
    runs = tmp_path / "elsewhere" / "runs.db"
    runs.parent.mkdir()
    with cli_service(["serve", "learner", "--database-url", f"sqlite:///{runs}"], cwd=tmp_path,
                     env={"ORACLE_URL": url}) as learner:
        token = http.post(f"{learner}/v1/callers").json()["token"]
        assert http.get(f"{learner}/v1/runs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert runs.exists() and not (tmp_path / "budgetlab-runs.db").exists()
    with sqlite3.connect(runs) as db:
        assert db.execute("select count(*) from learner_callers").fetchone() == (1,)


def test_single_queries_export_and_offline_audit(served, tmp_path: Path) -> None:
    url, _, _ = served
    opened = json.loads(cli("session", "open", "sparse-gaussian:d=40,n_train=50,n_test=10,s_plus=3,s_minus=2",
                            "--oracle", url, "--per-example", "3", "--total", "7", "--seed", "5"))
    sid, token = opened["id"], opened["token"]
    example = json.loads(cli("session", "next", sid, "--oracle", url, token=token))["example"]
    observed = json.loads(cli("session", "observe", sid, str(example), "17", "3", "--oracle", url, token=token))
    assert observed["charged"] == 2 and observed["remaining"]["total"] == 5 and len(observed["values"]) == 2
    out = cli("session", "observe", sid, str(example), "1", "2", "--oracle", url, token=token, code=1)
    assert "budget" in out  # 4 attributes of one example > k = 3: refused whole
    info = json.loads(cli("session", "info", sid, "--oracle", url, token=token))
    assert info["spent"]["cost"] == 2 and info["spent"]["attributes"] == 2

    export = tmp_path / "ledger.ndjson"
    cli("session", "export", sid, str(export), "--oracle", url, token=token)
    assert "compliant" in cli("audit", str(export))
    assert json.loads(cli("audit", sid, "--oracle", url, "--json", token=token))["compliant"]

    lines = export.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "observe")
    row = json.loads(lines[at])
    row["value"] = row["value"] + 1.0
    lines[at] = json.dumps(row)
    export.write_text("\n".join(lines) + "\n")
    report = json.loads(cli("audit", str(export), "--json", code=1))
    assert not report["compliant"] and report["first_bad_seq"] == row["seq"]

    cli("session", "close", sid, "--oracle", url, token=token)
    assert "error: session_closed: " in cli("session", "next", sid, "--oracle", url, token=token, code=1)


def test_added_csv_dataset_is_served_with_its_values(served, tmp_path: Path) -> None:
    url, _, data = served
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    csv = tmp_path / "clinic.csv"
    csv.write_text("a,b,c,outcome\n" + "\n".join(",".join(f"{v:.6f}" for v in (*x, x.sum())) for x in X) + "\n")
    result = CliRunner().invoke(app, ["datasets", "add", str(csv), "--target", "outcome"],
                                env={"BUDGETLAB_DATA_DIR": str(data)})
    assert result.exit_code == 0, result.output
    assert "clinic" in cli("datasets", "list", "--oracle", url)
    opened = json.loads(cli("session", "open", "clinic", "--oracle", url, "--order", "pool"))
    observed = json.loads(cli("session", "observe", opened["id"], "0", "0", "1", "2", "--oracle", url,
                              token=opened["token"]))
    train = {tuple(np.round(x, 6)) for x in X}
    assert tuple(np.round(observed["values"], 6)) in train


def test_user_errors_are_one_line_messages(served) -> None:
    url, _, _ = served
    assert "unknown dataset" in cli("session", "open", "no-such-set", "--oracle", url, code=1)
    assert "key=value" in cli("session", "open", "powerlaw:alpha", "--oracle", url, code=1)
    assert "unknown dataset" in cli("datasets", "show", "no-such-set", code=1)
    assert "not a file" in cli("audit", "no-such-file.ndjson", code=1)
    assert "cannot reach" in cli("session", "next", "abc", "--oracle", "http://127.0.0.1:9", token="t", code=1)


def test_serve_on_a_busy_port_says_so() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([BUDGETLAB, "serve", "oracle", "--port", str(port)], capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 1 and f"port {port}" in done.stderr and "Traceback" not in done.stderr


def test_serve_oracle_with_a_bad_database_url_says_so(tmp_path: Path) -> None:
    done = subprocess.run([BUDGETLAB, "serve", "oracle", "--port", "0"], capture_output=True,
                          text=True, timeout=60, env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none",
                                                      "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert done.returncode == 1 and "cannot prepare the ledger database" in done.stderr
    assert "Traceback" not in done.stderr


def test_version_names_the_release_and_the_commit() -> None:
    from importlib import metadata

    line = cli("--version").strip()
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=ROOT).stdout.strip()
    assert line.startswith(f"budgetlab {metadata.version('budgetlab')} (git {head[:12]}")
    assert line.endswith(f"Python {sys.version.split()[0]})")


@pytest.mark.parametrize("command", [["algorithms"], ["datasets", "list"]])
def test_listings_stay_readable_at_80_columns(command: list[str]) -> None:
    result = CliRunner().invoke(app, command, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    # The listing is stdout; a first parse's announcement goes to stderr, whole (its cache path may be long).
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in result.stdout  # nothing cut off
    if command == ["algorithms"]:
        from learner.algorithms import algorithms

        assert all(line.endswith(("┓", "┃", "┩", "│", "┘")) for line in lines)  # the table's right edge is there
        first_cells = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
        assert set(algorithms()) <= set(first_cells)  # every id whole, on one line
        assert len(lines) <= 3 * len(algorithms()) + 4  # at most three lines an algorithm
    else:
        from budgetlab.datasets import list_datasets

        for info in list_datasets().datasets:
            assert any(line.startswith(f"{info.name}  {info.task}, ") for line in lines)
            assert info.description.split()[0] in result.stdout


def test_the_processes_a_service_started_as_budgetlab_spawns_do_not_run_the_cli_again() -> None:
    # The learner that `compare` or `sandbox` starts (client.services.BUDGETLAB) spawns its Dask workers, and a
    # spawned process runs its parent's main module again unless that is a package's __main__: started as
    # `python -m client.cli`, each worker imported typer and rich (0.15 CPU-s) for nothing.
    from client.services import BUDGETLAB as SERVICE_COMMAND

    python, flag, module = SERVICE_COMMAND
    assert (python, flag) == (sys.executable, "-m")
    script = ("import importlib.util, multiprocessing, sys\n"
              # What `python -m MODULE` leaves as the main module's spec (a package's: its __main__'s), which a
              # spawned process reads.
              f"spec = importlib.util.find_spec({module!r})\n"
              "if spec.submodule_search_locations is not None:\n"
              f"    spec = importlib.util.find_spec({module + '.__main__'!r})\n"
              "sys.modules['__main__'].__spec__ = spec\n"
              "child = multiprocessing.get_context('spawn').Process(target=exec, args=(\"import json, sys; print(json."
              "dumps(sorted(m for m in ('typer', 'rich', 'client.cli') if m in sys.modules)))\",))\n"
              "child.start()\nchild.join(60)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []
    # And it is the budgetlab command.
    usage = subprocess.run([*SERVICE_COMMAND, "--help"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 0 and "serve" in usage.stdout
    assert "Usage: budgetlab " in usage.stdout, usage.stdout  # named as the console script, not `python -m client`
