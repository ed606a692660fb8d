"""``budgetlab sense`` (issue #38 item 3): the report, its figures and every session's audit; the usage errors; and
through a real oracle (HTTP and the session stream) the same curves as in memory for the same policies and seeds,
each session audited by the oracle's ledger."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from client.cli import app
from tests.helpers import RUNNER

SMALL = ["--dataset", "cube", "--policy", "random", "--policy", "greedy", "--policy", "q-learning", "--budgets", "1,2",
         "--examples", "12", "--train-examples", "80", "--rl-episodes", "20", "--seeds", "0"]


def sense(out: Path, *args: str, output: list[str] | None = None) -> dict[str, Any]:
    result = RUNNER.invoke(app, ["sense", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    if output is not None:
        output.append(result.output)
    found: dict[str, Any] = json.loads((out / "results.json").read_text())
    return found


@pytest.mark.process  # the report's provenance asks git for the commit
def test_the_quick_report_has_each_datasets_curves_comparisons_figure_and_audit(tmp_path: Path) -> None:
    output: list[str] = []
    results = sense(tmp_path, "--quick", "--dataset", "cube", "--dataset", "diabetes", "--policy", "random",
                    "--policy", "greedy", "--seeds", "0-1", "--examples", "15", "--budgets", "1,2", output=output)
    # Every stage is announced before it starts: no stage of a full evaluation is silent for long.
    assert "  reading 300 training examples in full ..." in output[0] and "  fitting greedy ..." in output[0]
    assert "  k = 2: 15 test examples for each of random, greedy ..." in output[0]
    report = (tmp_path / "report.md").read_text()
    assert "## cube (classification)" in report and "## diabetes (regression)" in report
    assert "| greedy | 2 | 2.00 | 2.00 |" in report
    assert "indicative only (2 seeds paired" in report  # --quick decides nothing
    assert "16 of 16 sessions pass" in report
    assert (tmp_path / "sense-cube.png").stat().st_size > 10_000 and (tmp_path / "sense-diabetes.png").exists()
    sessions = results["sessions"]
    assert len(sessions) == 2 * 2 * 2 * 2  # datasets x policies x seeds x k = 1, 2
    assert all(s["compliant"] and s["reads"] == s["paid"] and s["max_per_example"] <= s["k"] for s in sessions)
    curves = {(c["dataset"], c["policy"], c["budget"]): c for c in results["curves"]}
    assert curves["cube", "greedy", 2]["metric"] == "accuracy"
    assert curves["diabetes", "greedy", 2]["metric"] == "normalised MSE"
    assert curves["cube", "greedy", 1]["seeds"] == [0, 1] and len(curves["cube", "greedy", 1]["interval"]) == 2
    assert len((tmp_path / "audit.csv").read_text().splitlines()) == 1 + len(sessions)
    # An accuracy's t-interval over two seeds may run past 0 or 1: the table holds it to [0, 100 %] and says so.
    assert "accuracy (95 % t-interval over seeds, held to [0, 100 %])" in report
    bounds = [float(x) for pair in re.findall(r"\| [\d.]+% \[(-?[\d.]+)%, (-?[\d.]+)%\] \|", report) for x in pair]
    assert bounds and min(bounds) >= 0.0 and max(bounds) <= 100.0
    # The training split read in full: 300 examples of d attributes at 1 each.
    assert [(t["examples"], t["cost"]) for t in results["training"]] == [(300, 6000.0)] * 2 + [(300, 3000.0)] * 2


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "oracle-peeker"], "--policy oracle-peeker: the policies are random, static, greedy"),
    (["--dataset", "no-such-set"], "--dataset no-such-set:"),
    (["--budgets", "0,2"], "every k must be at least 1"),
    (["--dataset", "diabetes", "--budgets", "12"], "d = 10 attributes, fewer than k = 12"),
    (["--seeds", "a-b"], "--seeds 'a-b': give 0-4 or 0,1,2"),
    (["--stream"], "--stream is a setting of a real oracle"),
])
def test_a_usage_error_is_one_line_and_nothing_runs(tmp_path: Path, args: list[str], message: str) -> None:
    result = RUNNER.invoke(app, ["sense", "--quick", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_without_the_gym_extra_the_command_says_which_extra_to_install(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "budgetlab.sensing")
    result = RUNNER.invoke(app, ["sense", "--quick", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert "pip install 'budgetlab[gym]'" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("stream", [False, True], ids=["http", "stream"])
def test_through_a_real_oracle_the_curves_are_those_in_memory_and_the_ledger_audits_each_session(
        tmp_path: Path, shared_oracle_url: str, stream: bool) -> None:
    memory = sense(tmp_path / "memory", *SMALL)
    oracle = sense(tmp_path / "oracle", *SMALL, "--oracle", shared_oracle_url, *(["--stream"] if stream else []))
    assert oracle["curves"] == memory["curves"]
    assert [s["score"] for s in oracle["sessions"]] == [s["score"] for s in memory["sessions"]]
    assert {s["where"] for s in oracle["sessions"]} == {"oracle"}
    assert [t["audited"] for t in oracle["training"]] == [True] and [t["audited"] for t in memory["training"]] == [None]
    assert all(s["compliant"] and s["reads"] == s["paid"] > 0 for s in oracle["sessions"])
    report = (tmp_path / "oracle" / "report.md").read_text()
    assert f"through the oracle at {shared_oracle_url} ({'stream' if stream else 'HTTP'})" in report
