"""Your data where the oracle is: one data directory for the CLI and the oracle (per user, not the working
directory), uploads to a running oracle, prices from the CLI charged by the oracle, the split stated and settable,
and scores that follow the task. Real oracles (``budgetlab serve oracle`` processes), real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from client.cli import app
from client.comparison.tasks import dataset_task
from tests.helpers import ADMIN, ADMIN_TOKEN
from tests.servers import cli_service


def cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def clinic_csv(path: Path, rows: int = 40, labels: str = "real") -> Path:
    """a, b, c and an outcome: a real one (a regression) or its sign (a classification)."""
    X = np.random.default_rng(0).normal(size=(rows, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    y = np.where(y >= 0, 1.0, -1.0) if labels == "signs" else y
    rows = (",".join(f"{v:.6f}" for v in (*x, t)) for x, t in zip(X, y, strict=True))
    path.write_text("a,b,c,outcome\n" + "\n".join(rows) + "\n")
    return path


def observe_cost(http: httpx.Client, url: str, dataset: str, attributes: list[int]) -> float:
    opened = http.post(f"{url}/v1/sessions", json={"dataset": dataset, "order": "pool",
                                                    "budget": {"total": 100}}).json()
    answer = http.post(f"{url}/v1/sessions/{opened['id']}/observe", json={"example": 0, "attributes": attributes},
                       headers={"Authorization": f"Bearer {opened['token']}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["charged"]


@pytest.mark.process
def test_the_cli_and_an_oracle_started_elsewhere_share_the_per_user_data_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http: httpx.Client) -> None:
    monkeypatch.delenv("BUDGETLAB_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    monkeypatch.chdir(here)
    out = cli("datasets", "add", str(clinic_csv(here / "clinic.csv")), "--target", "outcome", "--cost", "b=3",
              "--test-fraction", "0.25", "--split-seed", "7")
    home = tmp_path / "xdg" / "budgetlab"
    assert str(home) in out and "30 train / 10 test" in out
    assert "25% of the rows held out for testing, fixed by split seed 7" in out and "1, 3, 1" in out
    assert not (here / "budgetlab-data").exists() and (home / "datasets" / "clinic" / "meta.json").is_file()
    with cli_service(["serve", "oracle"], cwd=there) as url:
        info = http.get(f"{url}/v1/datasets/clinic").json()
        assert info["costs"] == [1.0, 3.0, 1.0] and (info["n_train"], info["n_test"]) == (30, 10)
        assert "split seed 7" in info["description"]
        assert observe_cost(http, url, "clinic", [0, 1]) == 4.0  # the price of b, charged by the oracle


def test_a_legacy_budgetlab_data_directory_is_announced_not_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    legacy = tmp_path / "budgetlab-data" / "datasets" / "old-patients"
    legacy.mkdir(parents=True)
    (legacy / "meta.json").write_text("{}")
    out = cli("datasets", "list")
    assert "old-patients" in out and "not served" in out and "BUDGETLAB_DATA_DIR=" in out
    assert "old-patients  " not in out  # announced, not listed


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """An oracle with its own data directory, elsewhere than the CLI's."""
    data = tmp_path_factory.mktemp("oracle-data")
    with cli_service(["serve", "oracle"], cwd=tmp_path_factory.mktemp("oracle-cwd"),
                     env={"BUDGETLAB_DATA_DIR": str(data), "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}) as url:
        yield url, data


def test_datasets_add_with_oracle_uploads_into_the_data_directory_it_reads(remote, tmp_path: Path,
                                                                           http: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    url, data = remote
    prices = tmp_path / "prices.csv"
    prices.write_text("column,cost\na,0.5\nc,2\n")
    missing = cli("run", "--algorithm", "ridge", "--dataset", "ward", "--oracle", url, code=1)
    assert str(data) in missing and "--oracle URL" in missing  # names the directory the oracle reads, and the way in
    out = cli("datasets", "add", str(clinic_csv(tmp_path / "clinic.csv")), "--target", "outcome", "--name", "ward",
              "--costs", str(prices), "--oracle", url, "--admin-token", ADMIN_TOKEN)
    assert f"the oracle {url}" in out and "regression" in out and "drawn from the session's seed" in out
    assert (data / "datasets" / "ward" / "meta.json").is_file()
    assert "ward" not in cli("datasets", "list")  # the CLI's own data directory is another one
    assert observe_cost(http, url, "ward", [0, 1, 2]) == 3.5

    ran = cli("run", "--algorithm", "ridge", "--dataset", "ward", "--oracle", url)
    assert "test MSE" in ran and "0-1" not in ran  # a regression has no 0-1 error
    # A comparison's report asks the oracle its runs used for the task of a dataset this machine does not have.
    assert dataset_task("ward") is None and dataset_task("ward", None, url) == "regression"

    signs = clinic_csv(tmp_path / "signs.csv", labels="signs")
    cli("datasets", "add", str(signs), "--target", "outcome", "--oracle", url, "--admin-token", ADMIN_TOKEN)
    assert "0-1 error" in cli("run", "--algorithm", "ridge", "--dataset", "signs", "--oracle", url)


@pytest.mark.parametrize(("form", "file", "status", "error", "words"), [
    ({}, ("ward2.csv", b"a,b,outcome\n1,x,2\n2,3,4\n3,4,5\n"), 422, "invalid_dataset", "data rows"),
    ({}, ("ward2.xlsx", b"whatever"), 422, "invalid_dataset", ".csv"),
    ({"costs": "[1, 2"}, ("ward2.csv", b"a,b,outcome\n1,2,3\n2,3,4\n3,4,5\n"), 422, "invalid_dataset", "JSON"),
    ({"costs": '{"z": 2}'}, ("ward2.csv", b"a,b,outcome\n1,2,3\n2,3,4\n3,4,5\n"), 422, "invalid_dataset",
     "cannot price column 'z'"),
    ({"name": "../escape"}, ("ward2.csv", b"a,b,outcome\n1,2,3\n2,3,4\n3,4,5\n"), 422, "invalid_dataset",
     "not allowed"),
    ({"test_fraction": "1.5"}, ("ward2.csv", b"a,b,outcome\n1,2,3\n"), 422, "invalid_request", "test_fraction"),
])
def test_a_bad_upload_is_a_4xx_json_error_and_leaves_nothing(remote, form, file, status, error, words,
                                                             http: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    url, data = remote
    before = sorted(p.name for p in (data / "datasets").iterdir()) if (data / "datasets").exists() else []
    answer = http.post(f"{url}/v1/datasets/upload", data=form, files={"file": file},
                       headers=ADMIN)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["error"] == error and words in json.dumps(body)
    after = sorted(p.name for p in (data / "datasets").iterdir()) if (data / "datasets").exists() else []
    assert after == before  # no dataset, no staging copy


def test_an_upload_needs_the_admin_token(remote, tmp_path: Path,
                                         http: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    url, data = remote
    csv = ("x.csv", b"a,outcome\n1,2\n2,3\n3,4\n")
    assert http.post(f"{url}/v1/datasets/upload", files={"file": csv}).status_code == 401
    refused = http.post(f"{url}/v1/datasets/upload", files={"file": csv}, headers={"Authorization": "Bearer nope"})
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    out = cli("datasets", "add", str(clinic_csv(tmp_path / "x.csv")), "--target", "outcome", "--oracle", url,
              "--admin-token", "nope", code=1)
    assert "admin token" in out
    assert not (data / "datasets" / "x").exists()


@pytest.mark.process
def test_an_upload_past_its_own_limit_is_a_413_naming_the_setting(tmp_path: Path, http: httpx.Client) -> None:
    from server.app import create_app
    from server.config import Settings
    from tests.servers import serve_in_thread

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}", admin_token=ADMIN_TOKEN,
                        max_upload_bytes=64, max_body_bytes=1 << 20)
    with serve_in_thread(create_app(settings)) as url:
        big = clinic_csv(tmp_path / "big.csv")  # about 1.5 KB: under the body limit, past the upload limit
        answer = http.post(f"{url}/v1/datasets/upload", files={"file": ("big.csv", big.read_bytes())},
                           headers=ADMIN)
        assert answer.status_code == 413 and answer.json()["error"] == "too_large"
        assert "BUDGETLAB_MAX_UPLOAD_BYTES" in answer.json()["detail"]
        assert http.get(f"{url}/v1/datasets/big").status_code == 404


@pytest.mark.process
def test_only_the_admin_may_send_a_large_upload(tmp_path: Path, http: httpx.Client) -> None:
    """Anyone else's upload stays under the ordinary body limit: refused before it is read, not spooled first."""
    from server.app import create_app
    from server.config import Settings
    from tests.servers import serve_in_thread

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ledger.db'}", admin_token=ADMIN_TOKEN, max_body_bytes=256)
    big = clinic_csv(tmp_path / "big.csv").read_bytes()  # about 1.5 KB: past the body limit, under the upload one
    with serve_in_thread(create_app(settings)) as url:
        for token in (None, "nope"):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = http.post(f"{url}/v1/datasets/upload", files={"file": ("big.csv", big)}, headers=headers)
            assert answer.status_code == 413 and "BUDGETLAB_MAX_BODY_BYTES" in answer.json()["detail"]
        answer = http.post(f"{url}/v1/datasets/upload", files={"file": ("big.csv", big)}, data={"target": "outcome"},
                           headers=ADMIN)
        assert answer.status_code == 201, answer.text
