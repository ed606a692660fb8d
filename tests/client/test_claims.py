"""The claims table: checked against a real (in-process) comparison, opening the report, in results.json and on
the terminal within 80 columns; a failing claim is shown with its numbers; a claim naming nothing real is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from budgetlab.datasets import load_dataset
from client.cli import app
from client.comparison.claims import improvement_ratio
from tests.helpers import RUNNER, made_once
from tests.servers import shared_cluster_env

pytestmark = pytest.mark.usefixtures("shared_cluster")

CONFIG = """
title = "claims test"
budget = { per_example = 4 }
seeds = [0, 1, 2, 3, 4]
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


def test_claims_are_decided_by_paired_tests_over_the_seeds(compared: dict) -> None:
    holds, reverse, ratio, rho, equal, gap = compared["claims"]
    assert holds["verdict"] == "holds" and reverse["verdict"] == "fails"
    ridge, aerr = holds["values"]["Ridge"], holds["values"]["AERR"]
    assert ridge < 0.5 < 0.95 < aerr  # eta = 1e-9 keeps AERR at the zero predictor
    # The means, then the test of each pair: its mean difference, interval, seeds and p-values.
    assert holds["ours"].startswith(f"Ridge {ridge:.4g} < AERR {aerr:.4g}; Ridge − AERR = -0.")
    assert "], 5 seeds, p = " in holds["ours"] and "(Holm " in holds["ours"]
    assert holds["seeds"] == 5 and holds["p_value"] < 0.05
    assert holds["test"] == "one-sided paired t-test over seeds, Holm's correction over the report's 5 tests"
    (check,) = holds["checks"]
    assert check["n"] == 5 and check["high"] < 0 and check["p"] <= check["p_holm"] < 0.05
    assert reverse["ours"].startswith(f"AERR {aerr:.4g} ≥ Ridge {ridge:.4g}; AERR − Ridge = 0.")
    assert ", 5 seeds, the reverse: p = " in reverse["ours"]
    # AERR pays at most its 4 of the 64 attributes of each example that ridge pays in full, at every seed.
    assert ratio["verdict"] == "holds" and 0 < ratio["values"]["ratio"] <= 4 / 64
    assert ratio["design"] == "pairs (median over 2 datasets at each seed)"
    assert rho["verdict"] == "holds" and rho["values"]["rho"] == pytest.approx(0.552, abs=0.005)
    assert rho["values"]["low"] < rho["values"]["rho"] < rho["values"]["high"]
    assert 0.53 < rho["values"]["low"] and rho["values"]["high"] < 0.57
    assert "95 % bootstrap interval" in rho["ours"] and "over the 20,000 training examples" in rho["ours"]
    # At the ~232 attributes AERR paid (at most 4 of each of 60 examples), ridge (64 per example, first evaluated
    # after 20 examples) is read between the zero predictor at 0 attributes and that first evaluation, and the claim
    # says where it was read.
    assert equal["values"]["AERR"] == pytest.approx(aerr, abs=0.05)
    assert ridge < equal["values"]["Ridge"] < 1.1
    (paid,) = equal["attributes"]
    assert 200 < paid <= 240 and f"test MSE read at {paid:,.0f} attributes paid (the most frugal's)" in equal["ours"]
    assert "Ridge read before the first evaluation" in equal["ours"]
    # AERR's tiny weights still point the right way on most images, but far from as often as ridge's.
    mine, ridges = gap["values"]["AERR"], gap["values"]["Ridge"]
    assert gap["values"]["difference"] == pytest.approx(mine - ridges) and mine - ridges > 0.2
    assert gap["verdict"] in ("fails", "inconclusive")  # AERR at the zero predictor: its 0-1 error is erratic
    assert gap["ours"].startswith(f"AERR − Ridge = {mine:.4g} − {ridges:.4g} = {mine - ridges:.4g} (needs < 0.2); "
                                  "AERR − Ridge − 0.2 = 0.")


def test_the_claims_table_opens_the_report_and_failures_show_their_numbers(compared: dict) -> None:
    report = compared["report"]
    assert report.index("## Claims: ") < report.index("- mode:") < report.index("## digits")
    assert report.split("\n")[2].startswith("## Claims: 3 of 6 hold; ")
    reverse = compared["claims"][1]
    assert f"| the reverse, which must fail (Fig. 9; digits; test MSE) | AERR < Ridge | {reverse['ours']} | 5 " \
           f"| {reverse['p_value']:.2g} | **fails** |" in report
    assert f"- the reverse, which must fail (Fig. 9, digits): the paper has AERR < Ridge; we get {reverse['ours']}. " \
           "Cause: eta = 1e-9 keeps AERR at the zero predictor (normalised MSE about 1)" in report
    assert reverse["cause"].startswith("eta = 1e-9") and reverse["expected"] == "fails"
    assert "How the verdicts are reached: each claim about runs is a one-sided paired t-test over seeds" in report
    assert "Holm's correction over the report's tests (5 here)" in report
    # The results tables: means with their 95 % intervals.
    assert "with its 95 % t-interval in brackets" in report
    # The paper's words each claim stands for, under the table, numbered as the table's rows.
    holds = compared["claims"][0]
    assert holds["quote"] and holds["expected"] == "holds"
    assert '1. Fig. 9: "Ridge regression performs best on this data set."' in report
    assert report.index("| 1 | ridge beats a learner that cannot move") < report.index("1. Fig. 9: ")


def test_claims_of_a_written_comparison_are_decided_again_from_its_results(compared: dict, tmp_path: Path,
                                                                            tmp_path_factory: pytest.TempPathFactory
                                                                            ) -> None:
    """``budgetlab claims DIR`` decides a written comparison's claims from its results.json alone, as its report
    did; ``--preset`` takes a preset's current claims instead; a folder without results is a usage error."""
    out = made_once(tmp_path_factory, "claims", lambda tmp: None) / "out"
    again = RUNNER.invoke(app, ["claims", str(out), "--json", "--markdown", str(tmp_path / "claims.md")])
    assert again.exit_code == 0, again.output
    decided = json.loads(again.stdout)
    assert [(c["verdict"], c["ours"], c["p_value"]) for c in decided] == \
        [(c["verdict"], c["ours"], c["p_value"]) for c in compared["claims"]]
    written = (tmp_path / "claims.md").read_text()
    assert written.startswith("## Claims: 3 of 6 hold") and written in compared["report"]
    other = RUNNER.invoke(app, ["claims", str(out), "--preset", "murata-synthetic"])
    assert other.exit_code == 1 and f"those claims do not fit the comparison in {out}" in " ".join(other.output.split())
    refused = RUNNER.invoke(app, ["claims", str(tmp_path)])
    assert refused.exit_code == 1 and f"cannot read the comparison in {tmp_path}" in " ".join(refused.output.split())


def test_with_fewer_than_five_seeds_or_quick_no_claim_holds_or_fails(tmp_path: Path) -> None:
    """The same comparison on 2 seeds decides nothing: every claim about runs, and the data's ρ, is indicative,
    and says why; --quick likewise, whatever its seeds."""
    (tmp_path / "c.toml").write_text(CONFIG.replace("seeds = [0, 1, 2, 3, 4]", "seeds = [0, 1]"))
    result = RUNNER.invoke(app, ["compare", str(tmp_path / "c.toml"), "--out", str(tmp_path / "out"), "--local"],
                           env=shared_cluster_env())
    assert result.exit_code == 0, result.output
    claims = json.loads((tmp_path / "out" / "results.json").read_text())["claims"]
    assert [c["verdict"] for c in claims] == ["indicative"] * 6
    assert all("indicative: 2 seeds paired, fewer than the 5 a verdict needs" in c["ours"] for c in claims
               if c["claim"] != "rho of the power law")
    assert all(c["p_value"] is None for c in claims)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Claims: 0 of 6 hold; 6 indicative" in report

    from client.comparison.claims import evaluate_claims

    regrets = {"A1": [10.0, 12.0, 11.0, 10.5, 11.5], "A2": [20.0, 22.0, 21.0, 20.5, 21.5]}
    claim = {"claim": "A1 below A2", "source": "Table 2", "paper": "p", "kind": "ordering", "metric": "regret",
             "order": ["A1", "A2"]}
    (decided,) = evaluate_claims(*regret_design(regrets, [claim]))
    (quick,) = evaluate_claims(*regret_design(regrets, [claim]), quick=True)
    assert decided.verdict == "holds" and quick.verdict == "indicative"
    assert quick.ours.endswith("indicative: --quick: fewer seeds and examples than the full comparison")


def test_compare_prints_the_claims_within_80_columns(compared: dict) -> None:
    output = compared["output"]
    table = output[output.index("Claims"):output.index("runs completed")]
    assert "holds" in table and "fails" in table and "rho of the power" in table
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
    from client.comparison.config import CompareConfig, resolve_designs
    from client.comparison.grid import RunOutcome
    from client.comparison.summary import summarize

    config = CompareConfig.model_validate({
        "title": "regrets", "dataset": {"name": "online-sparse"}, "seeds": list(range(len(regrets["A1"]))),
        "algorithms": [{"id": "ito1", "label": label} for label in regrets], "claims": claims})
    designs = resolve_designs(config)
    point = CurvePoint(examples=5000, attributes=20000, test_mse=0.1, normalized_mse=0.5, zero_one=0.3)
    outcomes = [RunOutcome(0, entry, seed, RunResult(algorithm="ito1", dataset="online-sparse", seed=seed,
                                                     status="finished", final=point), regret=value)
                for entry in designs[0].algorithms for seed, value in enumerate(regrets[entry.label])]
    return config, designs, [summarize(0, designs[0], outcomes)]


def test_an_ordering_of_tiers_tests_every_pair_of_adjacent_tiers() -> None:
    from client.comparison.claims import evaluate_claims

    regrets = {"A1": [10.0, 12.0, 11.0, 10.0, 11.0], "A2": [20.0, 22.0, 21.0, 21.0, 20.0],
               "A3": [19.0, 25.0, 20.0, 22.0, 21.0], "G": [40.0, 41.0, 39.0, 40.0, 41.0],
               "U": [50.0, 52.0, 13.0, 51.0, 50.0]}
    tiers = {"claim": "A1 below A2 and A3, both below G and U", "source": "Table 2", "paper": "p", "kind": "ordering",
             "metric": "regret", "order": ["A1", ["A2", "A3"], ["G", "U"]]}
    holds, fails = evaluate_claims(*regret_design(regrets, [tiers, {**tiers, "order": [["A2", "A3"], "A1"]}]))
    # U's 13 at seed 2 puts it below A2 and A3 there: its pairs are not decided, so neither is the claim.
    assert holds.verdict == "inconclusive" and holds.values["U"] == pytest.approx(216 / 5)
    assert holds.ours.startswith("A1 10.8 < {A2 20.8, A3 21.4} < {G 40.2, U 43.2}; A1 − A2 = -10 [")
    assert [c.text for c in holds.checks] == ["A1 − A2", "A1 − A3", "A2 − G", "A2 − U", "A3 − G", "A3 − U"]
    decided = {c.text: c.p_holm < 0.05 for c in holds.checks}
    assert decided == {"A1 − A2": True, "A1 − A3": True, "A2 − G": True, "A2 − U": False, "A3 − G": True,
                       "A3 − U": False}
    assert fails.verdict == "fails" and fails.ours.startswith("{A2 20.8, A3 21.4} ≮ A1 10.8; A2 − A1 = 10 [")
    # Holm over the report's 8 tests: the smallest p-value times 8, the next times 7, ...
    ps = sorted(c.test.p(c.direction) for c in holds.checks + fails.checks if c.test)
    assert min(c.p_holm for c in holds.checks) == pytest.approx(min(1.0, 8 * ps[0]))


def test_a_margin_asks_the_better_to_lie_that_far_below() -> None:
    from client.comparison.claims import evaluate_claims

    close = {"A1": [30.5, 30.0, 31.0, 29.0, 30.0], "A2": [28.0, 27.5, 28.6, 26.9, 27.4]}  # about 8 % lower
    claim = {"claim": "A2 considerably below A1", "source": "Table 3", "paper": "p", "kind": "ordering",
             "metric": "regret", "order": ["A2", "A1"]}
    plain, margin = evaluate_claims(*regret_design(close, [{**claim, "claim": "A2 below A1"},
                                                            {**claim, "margin": 0.1}]))
    assert plain.verdict == "holds"
    # 8 % lower is not 10 % lower: A2 - 0.9 A1 is above 0 at every seed, so the claim is refuted, not just undecided
    assert margin.verdict == "fails" and "A2 − 0.9 × A1 = " in margin.ours
    with pytest.raises(ValueError, match="says its algorithms are far apart: state the margin it needs"):
        regret_design(close, [claim])


def test_a_margin_in_standard_errors_still_applies_beside_the_test() -> None:
    from client.comparison.claims import evaluate_claims

    apart = {"A1": [30.5, 30.0, 31.0, 29.0, 30.0], "A2": [29.0, 29.6, 30.1, 28.4, 29.8]}
    claim = {"claim": "A2 below A1", "source": "Table 3", "paper": "p", "kind": "ordering", "metric": "regret",
             "order": ["A2", "A1"]}
    test_only, with_se = evaluate_claims(*regret_design(apart, [claim, {**claim, "margin_se": 4.0}]))
    assert test_only.verdict == "holds"
    assert with_se.verdict == "inconclusive" and with_se.ours.endswith(
        "each mean difference must also exceed 4 standard error(s)")


def test_one_algorithm_against_itself_never_holds(tmp_path: Path) -> None:
    """Done when (#34): the same algorithm under two labels, 5 seeds, runs for real: neither order holds."""
    text = CONFIG.split("[[algorithms]]")[0].replace('title = "claims test"', 'title = "itself"') + """
dataset = { name = "digits-3v5" }

[[algorithms]]
id = "aerr"
label = "AERR one"

[[algorithms]]
id = "aerr"
label = "AERR two"

[[claims]]
claim = "one below two"
source = "x"
paper = "one < two"
kind = "ordering"
order = ["AERR one", "AERR two"]

[[claims]]
claim = "two below one at equal attributes"
source = "x"
paper = "two < one"
kind = "ordering"
at = "equal_attributes"
order = ["AERR two", "AERR one"]
"""
    (tmp_path / "c.toml").write_text(text)
    result = RUNNER.invoke(app, ["compare", str(tmp_path / "c.toml"), "--out", str(tmp_path / "out"), "--local"],
                           env=shared_cluster_env())
    assert result.exit_code == 0, result.output
    claims = json.loads((tmp_path / "out" / "results.json").read_text())["claims"]
    assert [c["verdict"] for c in claims] == ["inconclusive", "inconclusive"]
    assert all(c["seeds"] == 5 and c["checks"][0]["mean"] == 0.0 for c in claims)


def test_the_test_holds_a_true_tie_at_its_level() -> None:
    """Two labels whose results at each seed are independent draws of one distribution: over 4,000 such claims
    (fixed seed), "holds" comes out at the test's 5 % (within 1.2 points: 3 binomial standard errors), and with
    Holm over 10 claims a report holds any of them at most 5 % of the time."""
    from client.comparison.verdicts import holm, paired_test

    rng = np.random.default_rng(7)
    single = [paired_test(rng.normal(size=5)) for _ in range(4000)]
    rate = np.mean([t is not None and t.p_less < 0.05 for t in single])
    assert abs(rate - 0.05) < 0.012
    reports = [holm([t.p_less for t in (paired_test(rng.normal(size=5)) for _ in range(10)) if t])
               for _ in range(1000)]
    assert np.mean([min(r) < 0.05 for r in reports]) <= 0.05 + 0.02
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_a_rho_interval_holds_its_own_estimate() -> None:
    """ρ is a concave function of the attributes' means, biased low in resamples: at alpha = -2 the percentile and
    basic bootstrap intervals both missed ρ itself; the normal interval is centred on it, and the bias is said."""
    from client.comparison.claims import improvement_ratio, improvement_ratios
    from client.comparison.verdicts import bootstrap_interval

    dataset = load_dataset("powerlaw", {"alpha": -2.0, "scenario": "ridge", "n_train": 2000, "n_test": 10}, 0)
    squares = np.concatenate([X * X for X, _ in dataset.iter_split("train")])
    rho = improvement_ratio(dataset.second_moments(), "ridge")
    low, high, bias = bootstrap_interval(len(squares), lambda w: improvement_ratios(w @ squares, "ridge"), rho,
                                         resamples=400)
    assert low < rho < high and high - low < 0.5 * rho
    assert rho - low == pytest.approx(high - rho) and bias < 0  # biased low in resamples, as the sample is itself
    resampled = improvement_ratios(np.full((1, len(squares)), 1 / len(squares)) @ squares, "ridge")
    assert resampled[0] == pytest.approx(rho)  # the weights' form of the whole sample is the sample
