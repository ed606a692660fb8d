"""``budgetlab sandbox``: both services on this machine (SQLite ledger), a demo comparison, then serve until Ctrl-C.

The oracle and the learner run as their own processes (``client.services``), exactly as a user would start them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from budgetlab.datasets import DatasetError, describe
from budgetlab.errors import Unavailable
from client.config import CompareConfig
from client.grid import run_comparison
from client.report import write_report
from client.services import ServiceError, managed_services

# Hazan & Koren's comparison in miniature, on a Fashion-MNIST pair easy enough that all three learners visibly
# leave the zero predictor within a minute (the MNIST subset has too few images per pair for that).
DEMO = {
    "title": "Sandbox demo: attribute-efficient ridge and lasso (Hazan & Koren 2012 style)",
    "description": "AERR and AELR (Hazan & Koren 2012) against AER (Cesa-Bianchi et al. 2011) with 5 attributes "
                   "per image, and offline ridge with all 784, on Fashion-MNIST trousers vs ankle boots.",
    "dataset": {"name": "fashion-1v9"},
    "budget": {"per_example": 5},
    "seeds": [0, 1],
    "max_examples": 400,
    "eval_every": 40,
    "log_x": True,
    "algorithms": [
        {"id": "aerr", "label": "AERR"},
        {"id": "aelr", "label": "AELR"},
        {"id": "aer", "label": "AER", "per_example": 4},
        {"id": "ridge", "label": "Offline ridge (full information)", "per_example": 784},
    ],
}
DEMO_FALLBACK_DATASET = "digits-1v7"  # where Debian's Fashion-MNIST is not installed


def demo_config(examples: int | None = None) -> CompareConfig:
    config = CompareConfig.model_validate({**DEMO, **({"max_examples": examples, "eval_every": max(1, examples // 10)}
                                                      if examples else {})})
    try:
        describe(DEMO["dataset"]["name"])  # type: ignore[index]
    except DatasetError:
        config = config.model_copy(update={"dataset": config.dataset.model_copy(update={  # type: ignore[union-attr]
            "name": DEMO_FALLBACK_DATASET})})
        config.algorithms[-1].per_example = 64
    return config


def run_sandbox(*, demo_only: bool, oracle_port: int, learner_port: int, out: Path, examples: int | None,
                console: Console, fail: Callable[[str], None]) -> None:
    """``budgetlab sandbox``: start, demo, print where everything is, serve until Ctrl-C (or exit with --demo-only)."""
    config = demo_config(examples)
    try:
        with managed_services(out, oracle_port, learner_port) as (oracle, learner, ledger):
            console.print(f"oracle  {oracle}  (API docs {oracle}/docs)\nlearner {learner}  (API docs {learner}/docs)"
                          f"\nledger  {ledger}", soft_wrap=True)
            started = time.perf_counter()
            designs, outcomes = run_comparison(config, local=False, learner_url=learner, oracle_url=oracle,
                                               parallel=2, console=console)
            report = write_report(out, config, designs, outcomes, mode=f"sandbox: learner {learner}, oracle {oracle}",
                                  wall_time=time.perf_counter() - started).path
            console.print(f"demo report: {report.resolve()}\nresults:     {(out / 'results.json').resolve()}"
                          f"\nAPI docs:    {oracle}/docs and {learner}/docs\nledger:      {ledger}", soft_wrap=True)
            if demo_only:
                return
            console.print("services keep running; Ctrl-C stops them")
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                console.print("stopping")
    except (ServiceError, Unavailable) as exc:
        fail(str(exc))
