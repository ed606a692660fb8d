"""``budgetlab compare``: algorithms x seeds on one dataset and budget, every run in its own oracle session.

The command resolves the config (a TOML file or a preset, see ``client.config``), runs the grid (``client.grid``)
through the learner service, or with ``--local`` in-process, starting both services itself when it is given no
URLs (``client.services``), and writes the report (``client.report``). A ``[tune]`` section (or ``--tune``) first
chooses parameters on held-out training examples (``client.tune``), in sessions of their own.
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
from client.claims import claims_table
from client.config import Design, load_config, quick_config, resolve_designs
from client.grid import RunOutcome, run_comparison
from client.presets import PRESET_DIR, UnknownPreset, load_preset, presets
from client.report import write_report
from client.services import ServiceError, managed_services
from client.tune import TuneError, Tuning, check_tune, chosen_params, run_tuning, with_tune_options


def _source(config: Path | None, preset: str | None) -> str:
    return str(PRESET_DIR / f"{preset}.toml") if preset else str(config)


def run_compare(*, config: Path | None, out: Path | None, preset: str | None, quick: bool, list_presets: bool,
                local: bool, learner: str | None, oracle: str | None, parallel: int, console: Console,
                err: Console, fail: Callable[[str], None], tune: list[str] | None = None,
                tune_folds: int | None = None) -> Path | None:
    """``budgetlab compare``: resolve and check the config (its ``[tune]`` too), tune where asked, run the grid,
    write the report and print its claims; returns the report's path."""
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
    source = _source(config, preset)
    try:
        cfg = load_preset(preset, quick=quick) if preset else load_config(config)  # type: ignore[arg-type]
        if quick and not preset:
            cfg = quick_config(cfg)
        cfg = with_tune_options(cfg, tune or [], tune_folds)
        check_tune(cfg, resolve_designs(cfg), source)
    except UnknownPreset as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    except (ValidationError, tomllib.TOMLDecodeError, TuneError) as exc:
        fail(str(exc) if isinstance(exc, TuneError) else f"{source}: {exc}")
        raise AssertionError("unreachable") from None
    started = time.perf_counter()

    def grid(learner_url: str | None, oracle_url: str | None) -> tuple[list[Design], list[RunOutcome],
                                                                        list[Tuning]]:
        tunings = run_tuning(cfg, resolve_designs(cfg), local=local, learner_url=learner_url,
                             oracle_url=oracle_url, parallel=parallel, console=err)
        designs, outcomes = run_comparison(cfg, local=local, learner_url=learner_url, oracle_url=oracle_url,
                                           parallel=parallel, console=err, chosen=chosen_params(tunings))
        return designs, outcomes, tunings

    try:
        if local or learner:
            designs, outcomes, tunings = grid(learner, oracle)
            mode = "local (in-process LocalOracle, no ledger)" if local else f"learner {learner}, oracle {oracle}"
        else:
            with managed_services(out) as (oracle_url, learner_url, ledger):
                designs, outcomes, tunings = grid(learner_url, oracle_url)
            mode = f"services started by budgetlab compare (ledger {ledger})"
    except (ServiceError, Unavailable) as exc:
        fail(f"services unavailable: {exc}")
        raise AssertionError("unreachable") from None
    except TuneError as exc:
        fail(str(exc))
        raise AssertionError("unreachable") from None
    written = write_report(out, cfg, designs, outcomes, mode=mode, preset=preset, quick=quick,
                           wall_time=time.perf_counter() - started, tunings=tunings)
    if written.claims:
        console.print(claims_table(written.claims))
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} runs completed; report: {written.path}", soft_wrap=True)
    return written.path
