"""``budgetlab sandbox``: starts both services, runs the demo, says where things are; a busy port is one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
