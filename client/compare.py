"""``budgetlab compare``: algorithms x seeds on one dataset and budget, every run in its own oracle session.

The command resolves the config (a TOML file or a preset, see ``client.config``), runs the grid (``client.grid``)
through the learner service, or with ``--local`` in-process, starting both services itself when it is given no
URLs (``client.services``), and writes the report (``client.report``).
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from budgetlab.errors import Unavailable
from budgetlab.models import COMPLETED_RUN_STATUSES
from client.config import Design, load_config, quick_config
from client.grid import RunOutcome, run_comparison
from client.presets import UnknownPreset, load_preset, presets
from client.report import write_report
from client.services import ServiceError, managed_services


def run_compare(*, config: Path | None, out: Path | None, preset: str | None, quick: bool, list_presets: bool,
                local: bool, learner: str | None, oracle: str | None, parallel: int, console: Console,
                err: Console, fail: Callable[[str], None]) -> Path | None:
    """``budgetlab compare``: resolve the config, run the grid where asked, write the report; returns its path."""
    if list_presets:
        for name, cfg in presets().items():
            console.print(f"[bold]{name}[/]  ({cfg.expected_time or 'run time not stated'}; --quick under a minute)"
                          f"\n    {cfg.title}", soft_wrap=True)
        return None
    if (config is None) == (preset is None):
        fail("give a CONFIG.toml or --preset NAME (see --list)")
    if out is None:
        fail("give --out DIR for the report")
    if local and (learner or oracle):
        fail("--local runs in-process: drop --learner/--oracle")
    if bool(learner) != bool(oracle):
        fail("give both --learner and --oracle, or neither (then both services are started here)")
    assert out is not None
    try:
        cfg = load_preset(preset, quick=quick) if preset else load_config(config)  # type: ignore[arg-type]
        if quick and not preset:
            cfg = quick_config(cfg)
    except (UnknownPreset, ValidationError, tomllib.TOMLDecodeError) as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    started = time.perf_counter()

    def grid(learner_url: str | None, oracle_url: str | None) -> tuple[list[Design], list[RunOutcome]]:
        return run_comparison(cfg, local=local, learner_url=learner_url, oracle_url=oracle_url, parallel=parallel,
                              console=err)

    try:
        if local or learner:
            designs, outcomes = grid(learner, oracle)
            mode = "local (in-process LocalOracle, no ledger)" if local else f"learner {learner}, oracle {oracle}"
        else:
            with managed_services(out) as (oracle_url, learner_url, ledger):
                designs, outcomes = grid(learner_url, oracle_url)
            mode = f"services started by budgetlab compare (ledger {ledger})"
    except (ServiceError, Unavailable) as exc:
        fail(f"services unavailable: {exc}")
        raise AssertionError("unreachable") from None
    report = write_report(out, cfg, designs, outcomes, mode=mode, preset=preset, quick=quick,
                          wall_time=time.perf_counter() - started)
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} runs completed; report: {report}", soft_wrap=True)
    return report
