"""``budgetlab sandbox``: starts both services, runs the demo, says where things are; a busy port is one clear line;
SIGTERM stops it and both services as Ctrl-C does; ``make sandbox`` takes the ports."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.servers import bound_socket


def sandbox(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    budgetlab = Path(sys.executable).with_name("budgetlab")
    return subprocess.run([str(budgetlab), "sandbox", *args], cwd=cwd, capture_output=True, text=True, timeout=240)


def test_demo_only_runs_the_demo_and_prints_the_report_path(tmp_path: Path) -> None:
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
    text = report.read_text()
    assert text.count("compliant (1 session)") == 4  # every demo run's session passed the oracle's audit
    assert len(list(out.glob("*.png"))) == 2
    # The story: one line per attribute-efficient learner against the zero predictor and ridge, and the claims.
    results = json.loads((out / "results.json").read_text())
    summaries = {a["label"]: a["summary"] for a in results["designs"][0]["algorithms"]}
    ridge = summaries["Ridge"]
    for label in ("DDAERR", "AERR", "AELR"):
        mine = summaries[label]
        share = mine["attributes"]["mean"] / ridge["attributes"]["mean"]
        assert f"{label}: 0-1 error {mine['zero_one']['mean']:.1%} (zero predictor " in done.stdout
        assert f"squared error {mine['normalized_mse']['mean']:.2f} of the zero predictor's (ridge " \
               f"{ridge['normalized_mse']['mean']:.2f})" in done.stdout
        assert f"{share:.1%} of ridge's" in done.stdout and share < 0.1
    held = sum(c["verdict"] == "holds" for c in results["claims"])
    assert f"claims: {held} of 8 hold" in done.stdout
    assert text.split("\n")[2] == f"## Claims: {held} of 8 hold"


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


def test_sigterm_stops_the_oracle_and_the_learner_as_ctrl_c_does(tmp_path: Path) -> None:
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
        urls = [line.split()[1] for line in lines if line.startswith(("oracle ", "learner "))]
        assert len(urls) == 2, "".join(lines)
        services = children(process.pid)
        assert len(services) == 2 and all(httpx.get(f"{url}/healthz").status_code == 200 for url in urls)
        pages = [httpx.get(f"{url}/").text for url in urls]  # each service's dashboard, from the top floor
        assert 'src="/dashboard/oracle.js"' in pages[0] and 'src="/dashboard/learner.js"' in pages[1]
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=30)[0]
    finally:
        process.kill()
    assert process.returncode == 0 and "stopped" in rest
    assert all(gone(pid) for pid in services)
    for url in urls:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_sandbox_takes_the_ports() -> None:
    root = Path(__file__).resolve().parent.parent
    planned = subprocess.run(["make", "-n", "-C", str(root), "sandbox", "PORT=9100", "LEARNER_PORT=9101"],
                             capture_output=True, text=True, check=True).stdout
    assert "budgetlab sandbox --oracle-port 9100 --learner-port 9101" in planned
    default = subprocess.run(["make", "-n", "-C", str(root), "sandbox"], capture_output=True, text=True,
                             check=True, env={k: v for k, v in os.environ.items() if "PORT" not in k}).stdout
    assert "budgetlab sandbox --oracle-port 8000 --learner-port 8001" in default
