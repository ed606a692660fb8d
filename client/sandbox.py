"""``budgetlab sandbox``: both services on this machine (SQLite ledger), a demo comparison, then serve until Ctrl-C.

The oracle and the learner run as their own processes (``client.services``), exactly as a user would start them.
The demo ends with a line per learner that says the story (how far below the zero predictor, how close to ridge, at
what share of ridge's attributes) and the demo's claims table, which opens its report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from budgetlab.datasets import DatasetError, describe, load_dataset
from budgetlab.errors import Unavailable
from client.config import CompareConfig
from client.grid import run_comparison
from client.report import Written, write_report
from client.services import ServiceError, managed_services, sigterm_as_interrupt

# The story of the papers in miniature: with 5 of 784 pixels per image and their default (theoretical) parameters,
# attribute-efficient learners classify almost as well as ridge, which sees every pixel, their squared error falls
# below the zero predictor's on its way towards ridge's, and at equal attributes paid they are ahead of ridge, all
# at a small fraction of ridge's attributes. Ridge gets a global budget of 200 fully observed images: more would
# only cost ledger rows (and time) to show the same. Fashion-MNIST trousers vs ankle boots has the thousands of
# images these learners need (the MNIST subset has 900 per pair); within the demo's ~20 s they see 1,000.
DEMO_EXAMPLES = 1000
RIDGE_IMAGES = 200
AE_LEARNERS = ("DDAERR", "AERR", "AELR")
DEMO: dict[str, Any] = {
    "title": "Sandbox demo: attribute-efficient regression with 5 pixels per image",
    "description": "DDAERR (Kukliansky & Shamir 2015), AERR and AELR (Hazan & Koren 2012) see 5 pixels of each "
                   f"training image; offline ridge sees all of them, for {RIDGE_IMAGES} images. Fashion-MNIST "
                   "trousers vs ankle boots, default (theoretical) parameters.",
    "dataset": {"name": "fashion-1v9"},
    "budget": {"per_example": 5},
    "seeds": [0],
    "max_examples": DEMO_EXAMPLES,
    "eval_every": DEMO_EXAMPLES // 10,
    "log_x": True,
    "metric": "normalized_mse",
    "algorithms": [
        {"id": "ddaerr", "label": "DDAERR"},
        {"id": "aerr", "label": "AERR"},
        {"id": "aelr", "label": "AELR"},
        {"id": "ridge", "label": "Ridge", "per_example": 784, "total": 784 * RIDGE_IMAGES},
    ],
    "claims": [
        *({"claim": f"{label} classifies almost as well as ridge", "source": "Cesa-Bianchi et al. section 7",
           "paper": "4 pixels: 3.5% 0-1 error; all 784: 1.1-1.3%", "kind": "value", "metric": "zero_one",
           "algorithm": label, "below": 0.02} for label in AE_LEARNERS),
        {"claim": "DDAERR's squared error below the zero predictor's", "source": "Kukliansky & Shamir Fig. 3",
         "paper": "normalized test error well below 1", "kind": "value", "metric": "normalized_mse",
         "algorithm": "DDAERR", "below": 0.9},
        *({"claim": f"{label} below ridge at equal attributes paid", "source": "Hazan & Koren Figs. 1-2",
           "paper": "attribute-efficient < full information at equal attributes", "kind": "ordering",
           "metric": "normalized_mse", "at": "equal_attributes", "order": [label, "Ridge"]} for label in AE_LEARNERS),
        {"claim": "DDAERR with a small fraction of ridge's attributes", "source": "the budgeted setting",
         "paper": "k + 1 = 5 of d = 784 per example", "kind": "ratio", "metric": "attributes",
         "algorithm": "DDAERR", "over": "Ridge", "below": 0.1},
    ],
}
DEMO_FALLBACK = ("digits-1v7", 64)  # where Debian's Fashion-MNIST is not installed: 8x8 digits


def demo_config(examples: int | None = None) -> CompareConfig:
    config = CompareConfig.model_validate({**DEMO, **({"max_examples": examples, "eval_every": max(1, examples // 10)}
                                                      if examples else {})})
    try:
        describe(DEMO["dataset"]["name"])
    except DatasetError:
        name, d = DEMO_FALLBACK
        config = config.model_copy(update={"dataset": config.dataset.model_copy(update={  # type: ignore[union-attr]
            "name": name})})
        config.algorithms[-1].per_example, config.algorithms[-1].total = d, d * RIDGE_IMAGES
    return config


def constant_guess_error(config: CompareConfig) -> float:
    """The 0-1 error of the zero predictor (sign 0 counts as +1) on the demo's test set."""
    assert config.dataset is not None
    dataset = load_dataset(config.dataset.name, config.dataset.params, config.seeds[0])
    labels = dataset.labels("test", np.arange(dataset.n("test")))
    return float(np.mean(labels < 0))


def story(written: Written, results: dict[str, Any], zero_one: float) -> list[str]:
    """One line per attribute-efficient learner: its 0-1 and squared errors against the zero predictor's and
    ridge's, and its share of ridge's attributes."""
    algorithms = {a["label"]: a["summary"] for a in results["designs"][0]["algorithms"]}
    ridge = algorithms["Ridge"]
    if not ridge["normalized_mse"] or not ridge["attributes"]:
        return ["ridge did not complete: see the report"]
    lines = []
    for label in AE_LEARNERS:
        mine = algorithms[label]
        if not mine["normalized_mse"]:
            lines.append(f"{label}: no completed run (see the report)")
            continue
        share = mine["attributes"]["mean"] / ridge["attributes"]["mean"]
        paid = mine["attributes"]["mean"]
        lines.append(f"{label}: 0-1 error {mine['zero_one']['mean']:.1%} (zero predictor {zero_one:.0%}, ridge "
                     f"{ridge['zero_one']['mean']:.1%}); squared error {mine['normalized_mse']['mean']:.2f} of the "
                     f"zero predictor's (ridge {ridge['normalized_mse']['mean']:.2f}); {paid:,.0f} attributes, "
                     f"{share:.1%} of ridge's {ridge['attributes']['mean']:,.0f}")
    held = sum(c.verdict == "holds" for c in written.claims)
    return [*lines, f"claims: {held} of {len(written.claims)} hold (table at the top of the report)"]


def run_sandbox(*, demo_only: bool, oracle_port: int, learner_port: int, out: Path, examples: int | None,
                console: Console, fail: Callable[[str], None]) -> None:
    """``budgetlab sandbox``: start, demo, print where everything is, serve until Ctrl-C or SIGTERM (or exit with
    --demo-only); either signal stops both services before it returns."""
    config = demo_config(examples)

    def say(text: str) -> None:
        console.print(text, soft_wrap=True, highlight=False)

    try:
        with (sigterm_as_interrupt(),
              managed_services(out, oracle_port, learner_port, announce=say) as (oracle, learner, ledger)):
            console.print(f"oracle  {oracle}  (API docs {oracle}/docs)\nlearner {learner}  (API docs {learner}/docs)"
                          f"\nledger  {ledger}", soft_wrap=True)
            started = time.perf_counter()
            designs, outcomes = run_comparison(config, local=False, learner_url=learner, oracle_url=oracle,
                                               parallel=2, console=console)
            written = write_report(out, config, designs, outcomes, mode=f"sandbox: learner {learner}, oracle {oracle}",
                                   wall_time=time.perf_counter() - started)
            report = written.path
            for line in story(written, json.loads((out / "results.json").read_text()), constant_guess_error(config)):
                console.print(line, soft_wrap=True)
            console.print(f"demo report: {report.resolve()}\nresults:     {(out / 'results.json').resolve()}"
                          f"\nAPI docs:    {oracle}/docs and {learner}/docs\nledger:      {ledger}", soft_wrap=True)
            if demo_only:
                return
            console.print("services keep running; Ctrl-C (or SIGTERM) stops them")
            while True:
                time.sleep(1)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the with block has stopped both services
        console.print("stopped")
    except (ServiceError, Unavailable) as exc:
        fail(str(exc))
