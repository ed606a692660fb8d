"""Every preset runs with --quick and reports one section per design under its claims table; ``--list`` names them
with their run time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from client.cli import app
from client.comparison.config import resolve_designs
from client.comparison.presets import load_preset, preset_names
from tests.helpers import RUNNER
from tests.references import dangling

pytestmark = pytest.mark.usefixtures("shared_cluster")

PAPERS = {"cesa-bianchi-mnist", "cesa-bianchi-fashion", "hazan-koren-fig1", "hazan-koren-fig2", "kukliansky-synthetic",
          "kukliansky-mnist", "ito-synthetic", "murata-synthetic"}
CAUSES = ("data size: ", "regime: ", "unstated detail: ")
# ito-synthetic goes through the services that compare starts itself (subprocesses, SQLite ledger); the rest local.
THROUGH_SERVICES = "ito-synthetic"


def test_every_experiment_of_the_papers_has_a_preset() -> None:
    assert PAPERS <= set(preset_names())


def test_list_names_every_preset_with_its_run_time() -> None:
    result = RUNNER.invoke(app, ["compare", "--list"])
    assert result.exit_code == 0, result.output
    for name in preset_names():
        assert name in result.output
        assert load_preset(name).expected_time in result.output
        measured = load_preset(name).measured  # the last measurement, with its date, or that there is none
        assert (measured.text() if measured else "full run not timed yet") in result.output
    # what each leaves in the ledger through the services: fashion's 90 full-information runs read 784 pixels an image
    assert ("through the services, at most 851,040,000 paid values in 2,160,000 steps of 180 runs: a ledger of about "
            "13.9 GB" in " ".join(result.output.split()))


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_every_claim_quotes_its_paper_and_every_expected_failure_names_its_cause_with_numbers(name: str) -> None:
    for claim in load_preset(name).claims:
        assert len(claim.quote) >= 40, claim.claim  # a sentence or a table's cells, not a word
        if claim.cause:
            assert claim.cause.startswith(CAUSES) and re.search(r"\d", claim.cause), claim.cause


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_quick_preset_runs_with_a_section_per_design(name: str, tmp_path: Path) -> None:
    quick = load_preset(name, quick=True)
    designs = resolve_designs(quick)
    runs = len(designs[0].algorithms) * len(quick.seeds)
    assert len(designs) >= 1 and runs >= 3
    args = ["compare", "--preset", name, "--quick", "--out", str(tmp_path)]
    result = RUNNER.invoke(app, args if name == THROUGH_SERVICES else [*args, "--local"])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "report.md").read_text()
    results = json.loads((tmp_path / "results.json").read_text())
    assert [d["name"] for d in results["designs"]] == [d.name for d in designs]
    for design in results["designs"]:
        assert f"## {design['name']}\n" in report
        assert design["plots"] and all((tmp_path / p).is_file() for p in design["plots"])
        for algorithm in design["algorithms"]:
            assert [r["result"]["status"] for r in algorithm["runs"]] == ["finished"] * len(quick.seeds)
            assert algorithm["summary"]["test_mse"]["mean"] >= 0
    assert load_preset(name).expected_time in report
    assert dangling(report) == []  # every file or section the report points at is in the project
    # The claims table opens the report, one row per claim the preset declares, each with a verdict; a quick run
    # decides none (#34: a quick verdict is only indicative) and says that its description is the full preset's.
    claims = results["claims"]
    assert len(claims) == len(quick.claims) >= 2
    assert report.split("\n")[2].startswith(f"## Claims: 0 of {len(claims)} hold; ")
    assert "**A quick run** (--quick): seeds " in report and "every verdict is indicative" in report
    for claim in claims:
        assert claim["verdict"] in {"indicative", "not run", "no result"}
        assert f"| {claim['claim']} ({claim['source']}; " in report
        if claim["verdict"] in ("fails", "no result"):
            where = ", ".join(x for x in (claim["source"], claim["design"]) if x)
            assert f"- {claim['claim']} ({where}): the paper has" in report
    assert "Claims" in result.output and "verdict" in result.output
    if name == THROUGH_SERVICES:
        audits = {r["audit"] for d in results["designs"] for a in d["algorithms"] for r in a["runs"]}
        assert audits == {"compliant"}
        # Regret as R_T, eq. (1), the unit the preset quotes the paper's cells in (the tables print R_T / 10^2).
        assert "| R_T |" in report and "Tables 2-3 print R_T / 10^2" in report
        assert all(d["regret_k"] for d in results["designs"])
        assert all(r["regret"] is not None for d in results["designs"] for a in d["algorithms"] for r in a["runs"])
    if name == "cesa-bianchi-mnist":
        assert "median over" in report  # the paper's table over digit pairs
    if "mnist" in name or "hazan" in name:
        assert "mnist-3v5" in report and "fashion-" in report  # the subset and the Fashion-MNIST stand-in
