"""What the dashboard tests share: a real comparison report, written by ``budgetlab compare --local``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from client.cli import app

CONFIG = """
title = "dashboard demo"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }
seeds = [0]
max_examples = 40
eval_every = 10

[[algorithms]]
id = "aer"
label = "AER"

[[algorithms]]
id = "ridge"
label = "Ridge"
per_example = 64

[[claims]]
claim = "full information beats four attributes per example"
source = "this test"
paper = "Ridge < AER"
kind = "ordering"
order = ["Ridge", "AER"]
"""


def write_report(reports: Path, name: str = "demo") -> dict:
    """``budgetlab compare`` (in-process oracles) into ``reports/name``; its results.json."""
    reports.mkdir(parents=True, exist_ok=True)
    config = reports / "demo.toml"
    config.write_text(CONFIG)
    result = CliRunner().invoke(app, ["compare", str(config), "--out", str(reports / name), "--local"])
    assert result.exit_code == 0, result.output
    return json.loads((reports / name / "results.json").read_text())
