"""benchmarks/oracle_cpu.py still runs (--smoke): both oracles, this tree's and the baseline's worktree, measured."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.process
@pytest.mark.slow
def test_oracle_cpu_bench_reports_both_transports_here_and_at_the_baseline() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "oracle_cpu.py"), "--smoke", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout)["figures"]
    for transport in ("http", "stream"):
        for clients in ("", "_4_clients"):
            name = f"{transport}_step_oracle_cpu_ms{clients}"
            assert figures[name]["result"] in ("PASS", "MISS"), name
            assert figures[f"{name}_f1662c7"]["value"] >= 0, name
    # The worktree of the baseline is gone again.
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert "budgetlab-baseline-" not in listed
