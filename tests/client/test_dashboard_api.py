"""The dashboards' HTTP side on the real oracle and learner: who sees which sessions and values, the event streams
(the list, a ledger's tail and learning curves as they grow), past comparisons, and pages that need nothing from
outside the package."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import httpx
import pytest

from budgetlab.service_client import tls_context
from client.services import ANNOUNCED
from learner.service.dashboard import OracleReadiness
from tests.dashboard_helpers import write_report
from tests.helpers import ADMIN, ROOT, caller
from tests.servers import learner_server, oracle_server

GAUSS = {"d": 10, "n_train": 200, "n_test": 20, "s_plus": 2, "s_minus": 2}
RUN = {"dataset": "sparse-gaussian", "dataset_params": {"d": 20, "n_train": 50_000, "n_test": 50, "s_plus": 3,
                                                        "s_minus": 2},
       "algorithm": "aerr", "budget": {"per_example": 4}, "eval_every": 100, "seed": 5}
# What a session shows without its token never includes these (nor any row's example, attribute or value).
SECRET_FIELDS = {"seed", "cumulative_loss", "head_hash", "token", "token_hash"}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("dashboard-oracle") / "ledger.db"
    with oracle_server(f"sqlite:///{path}") as url:
        yield url


class Session:
    def __init__(self, http: httpx.Client, url: str) -> None:
        self.http = http
        created = http.post(f"{url}/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": GAUSS,
                                                         "budget": {"per_example": 3, "total": 50}, "seed": 9})
        assert created.status_code == 201, created.text
        self.url, self.id, self.token = url, created.json()["id"], created.json()["token"]
        self.auth = {"Authorization": f"Bearer {self.token}"}
        self.held = {"X-Session-Tokens": f"{self.id}:{self.token}"}

    def observe(self, attributes: list[int]) -> dict[str, Any]:
        example = self.http.post(f"{self.url}/v1/sessions/{self.id}/next", headers=self.auth).json()["example"]
        r = self.http.post(f"{self.url}/v1/sessions/{self.id}/observe", headers=self.auth,
                           json={"example": example, "attributes": attributes})
        assert r.status_code == 200, r.text
        return r.json()


def keys(value: Any) -> set[str]:
    """Every key anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def events(url: str, headers: dict[str, str], until: Any, timeout: float = 20.0) -> list[tuple[str, Any]]:
    """Read server-sent events until ``until(events so far)`` holds."""
    seen: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    with httpx.stream("GET", url, headers=headers, timeout=timeout, verify=tls_context()) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                seen.append((name, json.loads(line.removeprefix("data: "))))
                if until(seen):
                    return seen
            assert time.monotonic() < deadline, f"the stream did not deliver in {timeout} s: {seen[-3:]}"
    raise AssertionError("the stream ended")


# --- the oracle ------------------------------------------------------------------------------------------------


def test_without_a_token_the_list_is_counts_only_the_admin_sees_every_session_without_values(
        oracle: str, http: httpx.Client) -> None:
    session = Session(http, oracle)
    session.observe([1, 2])
    anonymous = http.get(f"{oracle}/v1/dashboard/sessions").json()
    assert anonymous["sessions"] == [] and anonymous["held"] == {} and not anonymous["admin"]
    assert anonymous["counts"]["sessions"] >= 1 and anonymous["counts"]["open"] >= 1

    admin = http.get(f"{oracle}/v1/dashboard/sessions", headers=ADMIN).json()
    listed = {s["id"]: s for s in admin["sessions"]}
    mine = listed[session.id]
    assert mine["spent"] == {"cost": 2.0, "attributes": 2, "labels": 1, "examples_issued": 1}
    assert mine["remaining"]["total"] == 48.0 and mine["budget"]["per_example"] == 3
    assert mine["ledger_rows"] == 4 and mine["audit"] == {"compliant": True, "reasons": [], "rows": 4, "detail": ""}
    assert not keys(admin) & SECRET_FIELDS, "a value-bearing field is listed without the session's token"
    assert mine["created_at"].endswith(("Z", "+00:00")), "a time without its zone reads as local time in a browser"

    held = http.get(f"{oracle}/v1/dashboard/sessions", headers=session.held).json()
    assert [s["id"] for s in held["sessions"]] == [session.id]
    assert held["held"][session.id]["seed"] == 9 and held["held"][session.id]["head_hash"]


def test_a_wrong_token_lists_nothing_and_bad_headers_are_4xx(oracle: str, http: httpx.Client) -> None:
    session = Session(http, oracle)
    other = Session(http, oracle)
    wrong = http.get(f"{oracle}/v1/dashboard/sessions", headers={"X-Session-Tokens": f"{session.id}:{other.token}"})
    assert wrong.status_code == 200
    assert wrong.json()["sessions"] == [] and list(wrong.json()["unknown"]) == [session.id]
    for headers, status, error in [({"X-Session-Tokens": "no pair"}, 422, "invalid_request"),
                                   ({"X-Session-Tokens": f"{session.id}:tök".encode()}, 422, "invalid_request"),
                                   ({"Authorization": f"Bearer {session.token}"}, 403, "forbidden"),
                                   ({"Authorization": "Basic abc"}, 401, "unauthorized")]:
        for path in ("/v1/dashboard/sessions", "/v1/events"):
            r = http.get(f"{oracle}{path}", headers=headers)
            assert (r.status_code, r.json()["error"]) == (status, error), (path, headers, r.text)


def test_the_audit_verdict_is_the_audit_s(oracle: str, tmp_path_factory: pytest.TempPathFactory,
                                          http: httpx.Client) -> None:
    path = tmp_path_factory.mktemp("tampered") / "ledger.db"
    with oracle_server(f"sqlite:///{path}") as url:
        session = Session(http, url)
        session.observe([0, 1, 2])
        with sqlite3.connect(path) as db:  # someone removes the observed values behind the oracle's back
            db.execute("DELETE FROM cells")
        listed = http.get(f"{url}/v1/dashboard/sessions", headers=ADMIN).json()["sessions"]
        audit = http.get(f"{url}/v1/sessions/{session.id}/audit", headers=session.auth).json()
    assert not audit["compliant"]
    assert listed[0]["audit"]["compliant"] is False and listed[0]["audit"]["reasons"] == audit["reasons"]


@pytest.mark.process
def test_a_request_audits_a_bounded_number_of_rows_and_verdicts_are_kept_while_ledgers_do_not_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http: httpx.Client) -> None:
    with oracle_server(f"sqlite:///{tmp_path / 'ledger.db'}") as url:
        sessions = [Session(http, url) for _ in range(3)]
        for session in sessions:
            session.observe([0, 1, 2])
        rows = http.get(f"{url}/v1/sessions/{sessions[0].id}", headers=sessions[0].auth).json()["ledger_rows"]
        # Room for one session's audit per request (the oracle runs in this process).
        monkeypatch.setattr("server.session_overview.AUDIT_ROWS_PER_REQUEST", rows + 1)
        held = {"X-Session-Tokens": ", ".join(f"{s.id}:{s.token}" for s in sessions)}
        audited = []
        for _ in range(4):
            listed = http.get(f"{url}/v1/dashboard/sessions", headers=held).json()["sessions"]
            audited.append(sum(1 for s in listed if s["audit"]["compliant"] is True))
            pending = [s["audit"] for s in listed if s["audit"]["compliant"] is None]
            assert all("not audited yet" in verdict["detail"] for verdict in pending)
        assert audited == [1, 2, 3, 3], "one audit per request, then every verdict kept"


def test_the_admin_follows_a_ledger_as_links_and_the_token_holder_sees_its_values_live(oracle: str,
                                                                                     http: httpx.Client) -> None:
    session = Session(http, oracle)
    first = session.observe([4, 5])
    url = f"{oracle}/v1/events?follow={session.id}"

    seen = events(url, ADMIN, lambda ev: any(name == "ledger" for name, _ in ev))
    assert seen[0][0] == "sessions" and session.id in {s["id"] for s in seen[0][1]["sessions"]}
    ledger = next(data for name, data in seen if name == "ledger")
    assert ledger["values"] is False and ledger["first"] is True
    assert [(r["kind"], r["n"], r["cost"]) for r in ledger["rows"]] == [("open", 1, 0), ("label", 1, 0),
                                                                       ("observe", 2, 2)]
    assert all(set(r) == {"seq", "kind", "n", "cost"} for r in ledger["rows"]), "the admin was sent row contents"

    def observed_6(ev: list[tuple[str, Any]]) -> bool:
        tails = [data for name, data in ev if name == "ledger"]
        if len(tails) == 1 and ev[-1][0] == "ledger":  # the tail arrived: the session moves on, the stream follows
            session.observe([6])
        return any(row["attribute"] == 6 for tail in tails for row in tail["rows"])

    seen = events(url, session.held, observed_6)
    tails = [data for name, data in seen if name == "ledger"]
    assert tails[0]["values"] is True and tails[0]["first"] is True
    observed = [r for r in tails[0]["rows"] if r["kind"] == "observe"]
    assert [(r["attribute"], r["value"]) for r in observed] == list(zip(first["attributes"], first["values"],
                                                                        strict=True))
    later = [row for tail in tails[1:] for row in tail["rows"]]
    assert not any(tail["first"] for tail in tails[1:])
    assert [(r["seq"], r["kind"], r["attribute"]) for r in later] == [(4, "label", None), (5, "observe", 6)]

    refused = events(url, {}, lambda ev: any(name == "ledger" for name, _ in ev))
    assert next(data for name, data in refused if name == "ledger")["refused"]["error"] == "not_found"


def test_a_viewer_far_behind_a_ledger_skips_to_its_tail(oracle: str, http: httpx.Client) -> None:
    created = http.post(f"{oracle}/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": GAUSS,
                                                        "order": "pool"}).json()
    auth = {"Authorization": f"Bearer {created['token']}"}
    big = {"items": [{"example": e, "attributes": list(range(10))} for e in range(60)]}

    def after_a_big_request(ev: list[tuple[str, Any]]) -> bool:
        tails = [data for name, data in ev if name == "ledger"]
        if len(tails) == 1 and ev[-1][0] == "ledger":
            assert http.post(f"{oracle}/v1/sessions/{created['id']}/observe/batch", headers=auth,
                             json=big).status_code == 200
        return len(tails) >= 2

    seen = events(f"{oracle}/v1/events?follow={created['id']}",
                  {"X-Session-Tokens": f"{created['id']}:{created['token']}"}, after_a_big_request)
    first, behind = [data for name, data in seen if name == "ledger"]
    assert [r["seq"] for r in first["rows"]] == [0]
    # 600 new rows are more than a viewer is sent at once (500): it gets the last 50, the page marks the gap.
    assert [r["seq"] for r in behind["rows"]] == list(range(551, 601)) and not behind["first"]


def test_the_oracle_page_and_its_files_need_nothing_from_outside(oracle: str, http: httpx.Client) -> None:
    page = http.get(f"{oracle}/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "budgetlab" in page.text
    assert http.get(f"{oracle}/dashboard/../app.py").status_code == 404
    assert http.get(f"{oracle}/dashboard/nothing.js").json()["error"] == "not_found"
    assert "/v1/events" not in http.get(f"{oracle}/openapi.json").json()["paths"]


@pytest.mark.process
def test_an_open_page_does_not_keep_a_stopped_oracle_running(tmp_path: Path, http: httpx.Client) -> None:
    budgetlab = Path(sys.executable).with_name("budgetlab")
    log = tmp_path / "oracle.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(budgetlab), "serve", "oracle", "--port", "0", "--database-url",
                                    f"sqlite:///{tmp_path / 'ledger.db'}"], stdout=out, stderr=subprocess.STDOUT)
    try:
        url = wait_for(lambda: next((m[1] for m in map(ANNOUNCED.match, log.read_text().splitlines()) if m), None))
        wait_for(lambda: healthy(http, url))
        with httpx.stream("GET", f"{url}/v1/events", timeout=30, verify=tls_context()) as stream:
            assert next(stream.iter_lines()) == "event: sessions"
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            process.wait(timeout=20)
            stopped_in = time.monotonic() - started
    finally:
        process.kill()
        process.wait()
    assert stopped_in < 5, f"the oracle took {stopped_in:.1f} s to stop with a page open"


def wait_for(what: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return found


def healthy(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(f"{url}/healthz").status_code == 200
    except httpx.TransportError:
        return False


# --- the learner ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def learner_and_reports(oracle: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The learner, and the (empty) folder where it looks for comparison reports (read at each request)."""
    runs = tmp_path_factory.mktemp("dashboard-learner") / "runs.db"
    reports = tmp_path_factory.mktemp("reports")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BUDGETLAB_REPORTS_DIR", str(reports))
        with learner_server(f"sqlite:///{runs}", oracle) as url:
            yield url, reports


@pytest.fixture(scope="module")
def learner(learner_and_reports: tuple[str, Path]) -> str:
    return learner_and_reports[0]


def test_the_learner_streams_a_run_s_curve_as_it_grows_and_its_whole_curve_when_it_ends(learner: str,
                                                                                        http: httpx.Client) -> None:
    alice, bob = caller(learner), caller(learner)
    run = http.post(f"{learner}/v1/runs", json=RUN, headers=alice).json()
    curve: list[dict] = []
    starts: list[int] = []

    def grown(ev: list[tuple[str, Any]]) -> bool:
        name, data = ev[-1]
        if name == "curve" and data["run"] == run["id"]:
            starts.append(data["start"])
            curve[data["start"]:] = data["points"]
        return len(starts) >= 3 and len(curve) >= 3

    seen = events(f"{learner}/v1/events", alice, grown)
    assert any(name == "runs" and run["id"] in {r["id"] for r in data["runs"]} for name, data in seen)
    assert starts == sorted(starts) and starts[1] > 0, "the curve was sent again instead of growing"
    assert [p["examples"] for p in curve] == sorted(p["examples"] for p in curve)

    http.delete(f"{learner}/v1/runs/{run['id']}", headers=alice)
    final = http.get(f"{learner}/v1/runs/{run['id']}", headers=alice).json()
    assert final["status"] == "cancelled"
    seen = events(f"{learner}/v1/events", alice,
                  lambda ev: any(n == "curve" and d["run"] == run["id"] and d["ended"] for n, d in ev))
    ended = next(d for n, d in seen if n == "curve" and d["run"] == run["id"])
    assert ended["start"] == 0 and ended["points"] == final["curve"]

    others = events(f"{learner}/v1/events", bob, lambda ev: ev[-1][0] == "runs")
    assert run["id"] not in {r["id"] for r in others[-1][1]["runs"]}, "another caller's stream shows the run"
    assert http.get(f"{learner}/v1/events").status_code == 401


def test_the_learner_streams_whether_its_oracle_takes_writes(learner: str) -> None:
    """The learner's page shows what its oracle's /readyz says (the oracle's page shows it too: test_ledger_disk), and
    an oracle out of reach as such."""
    seen = events(f"{learner}/v1/events", caller(learner), lambda ev: any(name == "oracle" for name, _ in ev))
    assert next(data for name, data in seen if name == "oracle") == {"ready": True, "error": None, "detail": None}
    gone = OracleReadiness("http://127.0.0.1:9").state()
    assert (gone["ready"], gone["error"]) == (False, "oracle_unavailable") and "127.0.0.1:9" in gone["detail"]


def test_past_comparisons_list_their_claims_and_serve_only_their_own_plots(
        learner_and_reports: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory, http: httpx.Client) -> None:
    learner, root = learner_and_reports
    assert http.get(f"{learner}/v1/dashboard/comparisons").json()["reports"] == []
    results = write_report(root, tmp_path_factory)
    (root / "broken").mkdir()
    (root / "broken" / "results.json").write_text("{not json")
    listed = http.get(f"{learner}/v1/dashboard/comparisons").json()
    assert listed["directory"] == str(root.resolve())
    assert [r["name"] for r in listed["reports"]] == ["demo"], "the unreadable report should be left out"
    summary = listed["reports"][0]
    assert (summary["title"], summary["runs"], summary["completed"]) == ("dashboard demo", 10, 10)
    assert (summary["claims"], summary["claims_held"]) == (1, 1)

    detail = http.get(f"{learner}/v1/dashboard/comparisons/demo").json()
    assert detail["claim_rows"][0]["ours"] == results["claims"][0]["ours"]
    design = detail["designs"][0]
    assert [a["label"] for a in design["algorithms"]] == ["AER", "Ridge"]
    assert design["algorithms"][1]["summary"]["test_mse"] == results["designs"][0]["algorithms"][1]["summary"][
        "test_mse"]
    assert len(design["plots"]) == len(results["designs"][0]["plots"]) == 2
    # Labels ±1: the normalized MSE is the test MSE, so the table shows it once, as the report does.
    assert design["metrics"] == results["designs"][0]["metrics"] == ["test_mse", "zero_one"]
    for plot in design["plots"]:
        image = http.get(f"{learner}{plot}")
        assert image.status_code == 200 and image.content.startswith(b"\x89PNG")

    (root / "demo" / "notes.png").write_bytes(b"\x89PNG not a plot of the report")
    for path in ("/v1/dashboard/comparisons/demo/plots/notes.png", "/v1/dashboard/comparisons/demo/plots/results.json",
                 "/v1/dashboard/comparisons/..%2Fdemo", "/v1/dashboard/comparisons/.hidden",
                 "/v1/dashboard/comparisons/broken", "/v1/dashboard/comparisons/demo/plots/..%2Fdemo.toml"):
        r = http.get(f"{learner}{path}")
        assert r.status_code == 404 and r.json()["error"] == "not_found", (path, r.text)


def test_the_learner_lists_its_oracle_s_datasets_for_the_run_form(learner: str, oracle: str,
                                                                  http: httpx.Client) -> None:
    # The first listing parses the bundled sets to size their pairs (seconds on a busy machine, then cached).
    names = {d["name"] for d in http.get(f"{learner}/v1/dashboard/datasets", timeout=60).json()["datasets"]}
    assert names == {d["name"] for d in http.get(f"{oracle}/v1/datasets").json()["datasets"]}
    assert "sparse-gaussian" in names


# --- both pages ----------------------------------------------------------------------------------------------

STATIC = [ROOT / "client" / "static"]


def test_the_pages_load_nothing_from_outside_the_package_and_ship_with_it() -> None:
    files = [f for folder in STATIC for f in sorted(folder.iterdir())]
    assert {f.suffix for f in files} == {".html", ".js", ".css"}
    for f in files:
        text = f.read_text()
        external = [u for u in re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'`)]*", text)
                    if u != "http://www.w3.org/2000/svg"]
        assert not external, f"{f.name} refers to {external}"
        if f.suffix == ".js":
            assert set(re.findall(r"from \"([^\"]+)\"", text)) <= {"./dashboard.js"}
        if f.suffix == ".html":
            assert all(ref.startswith(("/", "#", "data:")) for ref in re.findall(r"(?:src|href)=\"([^\"]*)\"", text))
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for f in files:
        package, inside = f.relative_to(ROOT).parts[0], "/".join(f.relative_to(ROOT).parts[1:])
        assert any(fnmatch(inside, pattern) for pattern in package_data.get(package, [])), f"{f} is not installed"


def test_the_learner_page_is_served(learner: str, http: httpx.Client) -> None:
    page = http.get(f"{learner}/")
    assert page.status_code == 200 and 'src="/dashboard/learner.js"' in page.text
    assert http.get(f"{learner}/dashboard/dashboard.js").headers["content-type"].startswith("text/javascript")
    assert http.get(f"{learner}/dashboard/oracle.js").status_code == 404, "the learner serves the oracle's page"


@pytest.mark.postgres
def test_the_oracle_lists_and_follows_sessions_on_postgresql(postgres_url: str, http: httpx.Client) -> None:
    with oracle_server(postgres_url) as url:
        session = Session(http, url)
        session.observe([1, 2])
        listed = http.get(f"{url}/v1/dashboard/sessions", headers=ADMIN).json()
        assert listed["counts"] == {"sessions": 1, "open": 1, "closed": 0, "ledger_rows": 4}
        assert listed["sessions"][0]["audit"]["compliant"] is True
        assert listed["sessions"][0]["created_at"].endswith("Z") or "+00:00" in listed["sessions"][0]["created_at"]
        seen = events(f"{url}/v1/events?follow={session.id}", ADMIN, lambda ev: ev[-1][0] == "ledger")
        assert [r["kind"] for r in seen[-1][1]["rows"]] == ["open", "label", "observe"]
