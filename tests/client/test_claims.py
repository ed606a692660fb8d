"""The claims table: checked against a real (in-process) comparison, opening the report, in results.json and on
the terminal within 80 columns; a failing claim is shown with its numbers; a claim naming nothing real is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlab.datasets import load_dataset
from client.claims import improvement_ratio
from client.cli import app
from tests.helpers import RUNNER, made_once
from tests.servers import shared_cluster_env

pytestmark = pytest.mark.usefixtures("shared_cluster")

CONFIG = """
title = "claims test"
budget = { per_example = 4 }
seeds = [0, 1]
max_examples = 60
eval_every = 20

[[algorithms]]
id = "aerr"
label = "AERR"
params = { eta = 1e-9 }

[[algorithms]]
id = "ridge"
label = "Ridge"
per_example = 64

[[designs]]
name = "digits"
dataset = { name = "digits-3v5" }

[[designs]]
name = "pairs"
datasets = ["digits-1v7", "digits-3v8"]

[[designs]]
name = "power law"
dataset = { name = "powerlaw", params = { alpha = -1.0, scenario = "ridge", n_train = 20000, n_test = 100 } }
algorithms = [{ id = "ridge", label = "Ridge", per_example = 500 }]

[[claims]]
claim = "ridge beats a learner that cannot move"
source = "Fig. 9"
paper = "Ridge < AERR"
quote = "Ridge regression performs best on this data set."
kind = "ordering"
design = "digits"
order = ["Ridge", "AERR"]

[[claims]]
claim = "the reverse, which must fail"
source = "Fig. 9"
paper = "AERR < Ridge"
cause = "eta = 1e-9 keeps AERR at the zero predictor (normalised MSE about 1)"
kind = "ordering"
design = "digits"
order = ["AERR", "Ridge"]

[[claims]]
claim = "a fraction of ridge's attributes"
source = "Sec. 1"
paper = "k / d"
kind = "ratio"
design = "pairs"
metric = "attributes"
algorithm = "AERR"
over = "Ridge"
below = 0.07

[[claims]]
claim = "rho of the power law"
source = "eq. (11)"
paper = "0.55"
kind = "rho"
design = "power law"
rho = "ridge"
target = 0.55
tolerance = 0.02

[[claims]]
claim = "at equal attributes"
source = "Fig. 9"
paper = "AERR < Ridge"
kind = "ordering"
design = "digits"
at = "equal_attributes"
order = ["AERR", "Ridge"]

[[claims]]
claim = "a 0-1 error within a few points of ridge's"
source = "Sec. 7"
paper = "3.5% against 1.3%"
kind = "difference"
design = "digits"
metric = "zero_one"
algorithm = "AERR"
over = "Ridge"
below = 0.2
"""


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict:
    def compare(tmp: Path) -> None:
        (tmp / "c.toml").write_text(CONFIG)
        result = RUNNER.invoke(app, ["compare", str(tmp / "c.toml"), "--out", str(tmp / "out"), "--local"],
                               terminal_width=80, env=shared_cluster_env())
        assert result.exit_code == 0, result.output
        (tmp / "output.txt").write_text(result.output)

    tmp = made_once(tmp_path_factory, "claims", compare)  # one comparison, whichever xdist worker asks first
    return {"output": (tmp / "output.txt").read_text(), "report": (tmp / "out" / "report.md").read_text(),
            "claims": json.loads((tmp / "out" / "results.json").read_text())["claims"]}


def test_claims_are_checked_against_the_results(compared: dict) -> None:
    holds, reverse, ratio, rho, equal, gap = compared["claims"]
    assert holds["verdict"] == "holds" and reverse["verdict"] == "fails"
    ridge, aerr = holds["values"]["Ridge"], holds["values"]["AERR"]
    assert ridge < 0.5 < 0.95 < aerr  # eta = 1e-9 keeps AERR at the zero predictor
    # Out of order, with the difference paired by seed that says it is no tie.
    assert reverse["ours"].startswith(f"AERR {aerr:.4g} ≥ Ridge {ridge:.4g}; AERR − Ridge = 0.8")
    assert reverse["ours"].endswith("(paired over 2 seeds, ± one standard error)")
    # AERR pays at most its 4 of the 64 attributes of each example that ridge pays in full.
    assert ratio["verdict"] == "holds" and 0 < ratio["values"]["ratio"] <= 4 / 64
    assert ratio["design"] == "pairs (median over 2 datasets)"
    assert rho["verdict"] == "holds" and rho["values"]["rho"] == pytest.approx(0.552, abs=0.005)
    assert "over the 20,000 training examples" in rho["ours"]
    # At the ~240 attributes AERR paid, ridge (64 per example, first evaluated after 20 examples) is read between
    # the zero predictor at 0 attributes and that first evaluation, and the claim says so.
    assert equal["values"]["AERR"] == pytest.approx(aerr, abs=0.05)
    assert ridge < equal["values"]["Ridge"] < 1.1
    assert "Ridge read before the first evaluation" in equal["ours"]
    # AERR's tiny weights still point the right way on most images, but far from as often as ridge's.
    mine, ridges = gap["values"]["AERR"], gap["values"]["Ridge"]
    assert gap["values"]["difference"] == pytest.approx(mine - ridges) and mine - ridges > 0.2
    assert gap["verdict"] == "fails"
    assert gap["ours"] == f"AERR − Ridge = {mine:.4g} − {ridges:.4g} = {mine - ridges:.4g} (needs < 0.2)"


def test_the_claims_table_opens_the_report_and_failures_show_their_numbers(compared: dict) -> None:
    report = compared["report"]
    assert report.index("## Claims: ") < report.index("- mode:") < report.index("## digits")
    assert report.split("\n")[2].startswith("## Claims: ")
    reverse = compared["claims"][1]
    assert f"| the reverse, which must fail (Fig. 9; digits; test MSE) | AERR < Ridge | {reverse['ours']} " \
           "| **fails** |" in report
    assert f"- the reverse, which must fail (Fig. 9, digits): the paper has AERR < Ridge; we get {reverse['ours']}. " \
           "Cause: eta = 1e-9 keeps AERR at the zero predictor (normalised MSE about 1)" in report
    assert reverse["cause"].startswith("eta = 1e-9") and reverse["expected"] == "fails"
    # The paper's words each claim stands for, under the table, numbered as the table's rows.
    holds = compared["claims"][0]
    assert holds["quote"] and holds["expected"] == "holds"
    assert '1. Fig. 9: "Ridge regression performs best on this data set."' in report
    assert report.index("| 1 | ridge beats a learner that cannot move") < report.index("1. Fig. 9: ")


def test_a_claim_failing_without_a_stated_cause_says_so_and_one_holding_against_its_cause_too(tmp_path: Path) -> None:
    """The cause lives in the preset: a claim expected to hold that fails is flagged as such, and one whose preset
    expects a failure but which holds is listed apart, so a stale cause cannot stand unnoticed."""
    text = CONFIG.replace('cause = "eta = 1e-9', 'quote = "x"\n#').replace(
        'quote = "Ridge regression performs best on this data set."',
        'cause = "stated: ridge loses here"')
    (tmp_path / "c.toml").write_text(text)
    result = RUNNER.invoke(app, ["compare", str(tmp_path / "c.toml"), "--out", str(tmp_path / "out"), "--local"])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "out" / "report.md").read_text()
    reverse_line = next(line for line in report.splitlines() if line.startswith("- the reverse, which must fail"))
    assert reverse_line.endswith("Cause not established: the preset expected this claim to hold.")
    assert "Expected to fail, but holding in this run:\n\n- ridge beats a learner that cannot move (Fig. 9): " \
           "the preset's expected cause was: stated: ridge loses here" in report


def test_compare_prints_the_claims_within_80_columns(compared: dict) -> None:
    output = compared["output"]
    table = output[output.index("Claims"):output.index("runs completed")]
    assert "holds" in table and "fails" in table and "rho of the power law" in table
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "…" not in table  # every claim, figure and verdict whole (folded onto more lines, not cut)


def test_improvement_ratio_gives_the_papers_values() -> None:
    # Kukliansky & Shamir section 5.1, as docs/papers.md reproduces them exactly: rho_lasso at alpha = -1 is 0.0136.
    dataset = load_dataset("powerlaw", {"alpha": -1.0, "scenario": "lasso", "n_train": 2000, "n_test": 10}, 0)
    assert improvement_ratio(dataset.second_moments(), "lasso") == pytest.approx(0.0136, rel=0.05)
    assert improvement_ratio([1.0, 1.0, 1.0], "ridge") == pytest.approx(1.0)
    assert improvement_ratio([4.0, 0.0, 0.0, 0.0], "ridge") == pytest.approx(0.25)


@pytest.mark.parametrize(("claim", "message"), [
    ('order = ["Ridge", "Lasso"]', "no algorithm labelled 'Lasso' in its design"),
    ('order = ["Ridge"]', "needs order with two or more labels"),
])
def test_a_claim_that_names_nothing_real_is_refused_with_the_file(tmp_path: Path, claim: str, message: str) -> None:
    text = CONFIG.split("[[claims]]")[0] + ('[[claims]]\nclaim = "x"\nsource = "y"\npaper = "z"\nkind = "ordering"\n'
                                             f'design = "digits"\n{claim}\n')
    (tmp_path / "c.toml").write_text(text)
    result = RUNNER.invoke(app, ["compare", str(tmp_path / "c.toml"), "--out", str(tmp_path / "out"), "--local"])
    assert result.exit_code == 1
    assert str(tmp_path / "c.toml") in result.output and message in " ".join(result.output.split())


# --- tiers and margins, on the regrets of online runs (Ito et al.'s tables) -------------------------------------

def regret_design(regrets: dict[str, list[float]], claims: list[dict]) -> tuple:
    """A one-design config whose runs have the given regrets per seed (seeds 0, 1, ...), and its summaries."""
    from budgetlab.contract.runs import CurvePoint, RunResult
    from client.config import CompareConfig, resolve_designs
    from client.grid import RunOutcome
    from client.summary import summarize

    config = CompareConfig.model_validate({
        "title": "regrets", "dataset": {"name": "online-sparse"}, "seeds": list(range(len(regrets["A1"]))),
        "algorithms": [{"id": "ito1", "label": label} for label in regrets], "claims": claims})
    designs = resolve_designs(config)
    point = CurvePoint(examples=5000, attributes=20000, test_mse=0.1, normalized_mse=0.5, zero_one=0.3)
    outcomes = [RunOutcome(0, entry, seed, RunResult(algorithm="ito1", dataset="online-sparse", seed=seed,
                                                     status="finished", final=point), regret=value)
                for entry in designs[0].algorithms for seed, value in enumerate(regrets[entry.label])]
    return config, designs, [summarize(0, designs[0], outcomes)]


def test_an_ordering_of_tiers_and_the_paired_difference_of_what_fails() -> None:
    from client.claims import evaluate_claims

    regrets = {"A1": [10.0, 12.0, 11.0], "A2": [20.0, 22.0, 21.0], "A3": [19.0, 25.0, 20.0],
               "G": [40.0, 41.0, 39.0], "U": [50.0, 52.0, 13.0]}
    tiers = {"claim": "A1 below A2 and A3, both below G and U", "source": "Table 2", "paper": "p", "kind": "ordering",
             "metric": "regret", "order": ["A1", ["A2", "A3"], ["G", "U"]]}
    holds, fails = evaluate_claims(*regret_design(regrets, [tiers, {**tiers, "order": [["A2", "A3"], "A1"]}]))
    assert holds.verdict == "holds" and holds.values["U"] == pytest.approx(115 / 3)
    assert holds.ours == "A1 11 < {A2 21, A3 21.33} < {G 40, U 38.33}"
    assert fails.verdict == "fails"
    # Each pair out of order, with its difference paired by seed: A2 - A1 = 10, 10, 10 has no spread.
    assert fails.ours == ("{A2 21, A3 21.33} ≮ A1 11; A2 − A1 = 10 ± 0 (paired over 3 seeds, ± one standard error); "
                          "A3 − A1 = 10.33 ± 1.333 (paired over 3 seeds, ± one standard error)")


def test_a_margin_in_standard_errors_turns_a_tie_into_a_failure() -> None:
    from client.claims import evaluate_claims

    tie = {"A1": [30.5, 30.0, 31.0, 29.0], "A2": [30.0, 31.0, 29.0, 30.0]}  # A2 - A1 = -0.5, 1, -2, 1: mean -0.125
    claim = {"claim": "A2 below A1", "source": "Table 3", "paper": "p", "kind": "ordering", "metric": "regret",
             "order": ["A2", "A1"]}
    means, margin = evaluate_claims(*regret_design(tie, [claim, {**claim, "margin_se": 1.0}]))
    assert means.verdict == "holds"  # the means' order, as a table of means shows it
    assert margin.verdict == "fails"
    assert margin.ours.startswith("A2 30 < A1 30.12; A2 − A1 = -0.125 ± 0.7181 (paired over 4 seeds")
    assert margin.ours.endswith("each pair must be apart by more than 1 standard error(s)")
    apart = {"A1": [30.5, 30.0, 31.0, 29.0], "A2": [20.0, 21.0, 19.0, 20.0]}
    (clear,) = evaluate_claims(*regret_design(apart, [{**claim, "margin_se": 1.0}]))
    assert clear.verdict == "holds" and clear.ours == "A2 20 < A1 30.12"
