"""``budgetlab sandbox``: starts both services, runs the demo, says where things are; a busy port is one clear line;
SIGTERM stops it and both services as Ctrl-C does; ``make sandbox`` takes the ports."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from budgetlab.service_client import tls_context
from learner.service.reports import Reports
from tests.dashboard_helpers import HAVE_CHROMIUM, chromium, js, screenshots, shoot, wait
from tests.helpers import ROOT, TINY
from tests.servers import bound_socket

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)


def sandbox(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    budgetlab = Path(sys.executable).with_name("budgetlab")
    return subprocess.run([str(budgetlab), "sandbox", *args], cwd=cwd, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "COLUMNS": "100", **(env or {})})


def cells(report: str, label: str) -> list[str]:
    """The cells of an algorithm's row in the report's table of final scores."""
    row = next(line for line in report.splitlines() if line.startswith(f"| {label} (`"))
    return [c.strip() for c in row.strip("|").split("|")]


@pytest.mark.usefixtures("shared_cluster")
def test_demo_only_runs_the_demo_and_its_headline_quotes_the_tables(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = sandbox("--demo-only", "--oracle-port", "0", "--learner-port", "0", "--out", str(out), "--examples", "20",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = out / "report.md"
    assert f"demo report: {report.resolve()}" in done.stdout
    # Each service is announced as it starts (each takes seconds to answer), before the demo.
    said = [done.stdout.index(text) for text in ("sandbox: an oracle and a learner", "starting the oracle (ledger",
                                                 "starting the learner (log", "demo report:")]
    assert said == sorted(said)
    assert "/docs" in done.stdout and "ledger.db" in done.stdout
    # The stopped oracle's last checkpoint leaves no write-ahead log behind (a 10 s demo once left 67 MB of it).
    wal = out / "ledger.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    text = report.read_text()
    assert text.count("compliant (1 session)") == 5  # every demo run's session passed the oracle's audit
    assert len(list(out.glob("*.png"))) == 2
    results = json.loads((out / "results.json").read_text())
    assert results["fallback"] is None and "FALLBACK" not in done.stdout + text
    # The headline opens the report under the title, is printed as is, and quotes the table's numbers.
    headline = results["headline"]
    assert text.split("\n")[2] == " ".join(headline)
    printed = " ".join(done.stdout.split())
    assert all(" ".join(line.split()) in printed for line in headline)
    header = next(line for line in text.splitlines() if line.startswith("| algorithm | per example"))
    assert header.startswith("| algorithm | per example | test MSE | 0-1 error | attributes paid | examples |")
    (dd, aerr, aelr, online, ridge) = (cells(text, label) for label in ("DDAERR", "AERR", "AELR", "Online ridge",
                                                                          "Ridge"))
    assert headline[0] == (
        f"DDAERR, AERR and AELR, seeing 5 pixels of each of 20 images ({dd[4]}, {aerr[4]} and {aelr[4]} attributes "
        f"paid), end at test MSE {dd[2]}, {aerr[2]} and {aelr[2]}; 0-1 error {dd[3]}, {aerr[3]} and {aelr[3]}; "
        f"offline ridge, with every pixel of {ridge[5]} images ({ridge[4]} attributes paid), at test MSE {ridge[2]}; "
        f"0-1 error {ridge[3]}; the zero predictor: test MSE 1; 0-1 error 0.5.")
    assert headline[1] == (f"Online ridge, spending the same budget on every pixel of {online[5]} images ({online[4]} "
                           f"attributes paid), ends at test MSE {online[2]}; 0-1 error {online[3]}.")
    # One seed decides no claim (#34): the headline says so, and the claims table gives each claim's numbers with
    # the attributes paid where it was read.
    claims = results["claims"]
    assert [c["verdict"] for c in claims] == ["indicative"] * len(claims)
    assert headline[-1] == (f"Claims: all {len(claims)} indicative: 1 seed, and a verdict needs a paired test over at "
                            "least 5 (the claims table gives this run's numbers, each with the attributes paid where "
                            "it was read).")
    assert f"## Claims: 0 of {len(claims)} hold; {len(claims)} indicative" in text
    equal = [c for c in claims if c["attributes"]]
    assert len(equal) == 2 and all(f"read at {c['attributes'][0]:,.0f} attributes paid" in c["ours"] for c in equal)
    # The pages, signed in: the admin token after the oracle page's '#', the demo's caller token after the learner's.
    assert re.search(r"oracle page: +http://127\.0\.0\.1:\d+/\?learner=http%3A%2F%2F127\.0\.0\.1%3A\d+#admin=[\w-]{40,}",
                     done.stdout)
    assert re.search(r"learner page: +http://127\.0\.0\.1:\d+/#token=[\w-]{40,}", done.stdout)
    # Then the README's step 4, with the URLs of the services it started.
    oracle, learner = re.findall(r"^(?:oracle|learner) +(http://\S+) +\(API docs", done.stdout, flags=re.M)
    assert (f"budgetlab compare my-comparison.toml --oracle {oracle} --learner {learner} --out my-comparison"
            in done.stdout), done.stdout


@pytest.mark.usefixtures("shared_cluster")
def test_without_fashion_mnist_the_fallback_is_said_everywhere(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Fashion-MNIST's loader looks in BUDGETLAB_FASHION_DIR: an empty folder is a machine without the package."""
    (tmp_path / "no-fashion").mkdir()
    out = tmp_path / "demo"
    done = sandbox("--demo-only", "--oracle-port", "0", "--learner-port", "0", "--out", str(out), "--examples", "10",
                   cwd=tmp_path, env={"BUDGETLAB_FASHION_DIR": str(tmp_path / "no-fashion")})
    assert done.returncode == 0, done.stdout + done.stderr
    terminal = " ".join(done.stdout.split())
    assert "FALLBACK: fashion-1v9" in terminal and "sudo apt-get install dataset-fashion-mnist" in terminal
    assert "The demo runs on mnist-0v1 instead" in terminal
    results = json.loads((out / "results.json").read_text())
    title = "Sandbox demo: attribute-efficient regression with 5 of 784 pixels per image (FALLBACK to mnist-0v1: " \
            "fashion-1v9 is not installed)"
    assert results["title"] == title and (out / "report.md").read_text().startswith(f"# {title}\n")
    assert "dataset-fashion-mnist" in results["fallback"] and "mnist-0v1" in results["fallback"]
    assert results["config"]["dataset"]["name"] == "mnist-0v1"
    assert "Trouser" not in (out / "report.md").read_text()  # nothing of the data it did not use
    # The learner's page reads the same from results.json.
    monkeypatch.setenv("BUDGETLAB_REPORTS_DIR", str(tmp_path))
    detail = Reports().detail("demo")
    assert detail.title == title and detail.fallback == results["fallback"] and detail.headline == results["headline"]


@pytest.mark.usefixtures("shared_cluster")
def test_a_busy_port_gives_one_clear_line_and_exit_code_1(tmp_path: Path) -> None:
    with bound_socket() as busy:
        busy.listen()
        port = busy.getsockname()[1]
        done = sandbox("--demo-only", "--oracle-port", str(port), "--learner-port", "0", "--out",
                       str(tmp_path / "demo"), cwd=tmp_path)
    assert done.returncode == 1
    assert f"port {port} is in use" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: the sandbox's oracle and learner)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_the_pages_it_prints_show_the_demo_and_sigterm_stops_it_as_ctrl_c_does(tmp_path: Path,
                                                                                http: httpx.Client) -> None:
    budgetlab = Path(sys.executable).with_name("budgetlab")
    process = subprocess.Popen([str(budgetlab), "sandbox", "--oracle-port", "0", "--learner-port", "0", "--out",
                                str(tmp_path / "demo"), "--examples", "20"], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:  # the demo ends with this line, then the sandbox serves
            lines.append(line)
            if "services keep running" in line:
                break
        announced = re.compile(r"(?:oracle|learner) +(http://\S+) +\(API docs")
        urls = [found[1] for line in lines if (found := announced.match(line))]
        assert len(urls) == 2, "".join(lines)
        services = children(process.pid)
        assert len(services) == 2 and all(http.get(f"{url}/healthz").status_code == 200 for url in urls)
        pages = [http.get(f"{url}/").text for url in urls]  # each service's dashboard, from the top floor
        assert 'src="/dashboard/oracle.js"' in pages[0] and 'src="/dashboard/learner.js"' in pages[1]
        # The tokens the printed page links carry: the oracle's admin token lists the demo's five sessions, the
        # learner's admin token every run (the demo's five, and another caller's); without them, neither.
        text = "".join(lines)
        admin = re.search(r"oracle page: +\S+#admin=([\w-]+)", text)[1]  # type: ignore[index]
        learner_admin = re.search(r"learner page: +\S+#token=([\w-]+)", text)[1]  # type: ignore[index]
        page_token = {"Authorization": f"Bearer {learner_admin}"}
        sessions = http.get(f"{urls[0]}/v1/dashboard/sessions", headers={"Authorization": f"Bearer {admin}"}).json()
        assert sessions["admin"] and len(sessions["sessions"]) == 5
        assert http.get(f"{urls[0]}/v1/dashboard/sessions").json()["sessions"] == []
        runs = http.get(f"{urls[1]}/v1/runs", headers=page_token).json()["runs"]
        assert sorted(r["algorithm"] for r in runs) == ["aelr", "aerr", "ddaerr", "ogd-ridge", "ridge"]
        assert http.get(f"{urls[1]}/v1/runs").status_code == 401
        assert all(r["status"] in ("finished", "budget_exhausted") for r in runs)
        # The learner lists the demo's report among its comparisons.
        reports = http.get(f"{urls[1]}/v1/dashboard/comparisons").json()["reports"]
        assert [r["name"] for r in reports] == ["demo"]
        if HAVE_CHROMIUM:
            headline = json.loads((tmp_path / "demo" / "results.json").read_text())["headline"]
            the_printed_links_open_the_pages_on_the_demo(text, runs, headline, screenshots(tmp_path / "screenshots"))
        # A run of another caller (a comparison of the user's, made with a token of its own) is on that page too.
        other = {"Authorization": f"Bearer {http.post(f'{urls[1]}/v1/callers').json()['token']}"}
        started = http.post(f"{urls[1]}/v1/runs", headers=other, json={
            "dataset": "sparse-gaussian", "dataset_params": TINY, "algorithm": "aerr", "budget": {"per_example": 2}})
        assert started.status_code == 201, started.text
        listed = http.get(f"{urls[1]}/v1/runs", headers=page_token).json()["runs"]
        assert started.json()["id"] in {r["id"] for r in listed}
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=30)[0]
    finally:
        process.kill()
    assert process.returncode == 0 and "stopped" in rest
    assert all(gone(pid) for pid in services)
    for url in urls:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2, verify=tls_context())  # a new connection, not one the pool kept


def the_printed_links_open_the_pages_on_the_demo(text: str, runs: list[dict], headline: list[str],
                                                 shots: Path) -> None:
    """In a browser, the links the sandbox printed: the oracle's page lists the demo's sessions, the learner's its
    runs, finished ones in green, and its report with its headline; each page drops its token from the address
    bar."""
    from selenium.webdriver.common.by import By

    oracle_page = re.search(r"oracle page: +(\S+)", text)[1]  # type: ignore[index]
    learner_page = re.search(r"learner page: +(\S+)", text)[1]  # type: ignore[index]
    with chromium() as browser:
        browser.get(oracle_page)
        rows = "#sessions tbody tr[data-session]"
        wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, rows)) == 5, "the demo's five sessions")
        wait(lambda: all(td.text == "compliant" for td in browser.find_elements(By.CSS_SELECTOR, f"{rows} td.audit")),
             "their audits")
        assert browser.find_element(By.ID, "admin-state").text == "signed in as the admin"
        assert "#admin=" not in browser.current_url and browser.current_url == oracle_page.split("#")[0]
        assert {td.text for td in browser.find_elements(By.CSS_SELECTOR, f"{rows} td:nth-child(2)")} == \
            {"fashion-1v9"}
        shoot(browser, shots, "sandbox-oracle.png")

        browser.get(learner_page)
        wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-run]")) == 5, "the demo's runs")
        statuses = js(browser, "return [...document.querySelectorAll('#runs tr[data-run]')].map(r => r.dataset.status)")
        assert sorted(statuses) == sorted(r["status"] for r in runs)
        bars = js(browser, "return [...document.querySelectorAll('#runs .gauge-used')].map(g => g.classList.value)")
        assert bars and set(bars) == {"gauge-used done"}, bars  # ended runs are done, none looks like an error
        exhausted = statuses.count("budget_exhausted")
        assert browser.find_element(By.ID, "runs-sub").text == "5 most recent: " + ", ".join(
            f"{n} {status}" for status, n in (("budget exhausted", exhausted), ("finished", 5 - exhausted)) if n)
        assert "#token=" not in browser.current_url
        summary = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] summary"),
                       "the demo's report")[0]
        assert summary.text.startswith("Sandbox demo: attribute-efficient regression with 5 of 784 pixels per image")
        shoot(browser, shots, "sandbox-learner.png")
        summary.click()
        shown = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] p.headline"),
                     "the demo's headline")[0]
        assert shown.text == " ".join(headline)
        assert not browser.find_elements(By.CSS_SELECTOR, "details[data-report='demo'] p.fallback")
        js(browser, "document.querySelector(\"details[data-report='demo']\").scrollIntoView()")
        shoot(browser, shots, "sandbox-learner-report.png")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_sandbox_takes_the_ports() -> None:
    root = ROOT
    planned = subprocess.run(["make", "-n", "-C", str(root), "sandbox", "PORT=9100", "LEARNER_PORT=9101"],
                             capture_output=True, text=True, check=True).stdout
    assert "budgetlab sandbox --oracle-port 9100 --learner-port 9101" in planned
    default = subprocess.run(["make", "-n", "-C", str(root), "sandbox"], capture_output=True, text=True,
                             check=True, env={k: v for k, v in os.environ.items() if "PORT" not in k}).stdout
    assert "budgetlab sandbox --oracle-port 8000 --learner-port 8001" in default
