"""``budgetlab bench``: the quick grid end to end, its resumption (after a finished run, a torn row and ``kill -9``),
through the services, the applicability rule that builds its grid, and its statistics on examples with known answers."""

from __future__ import annotations

import math
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from rich.console import Console

from client.bench import stats as bench_stats
from client.bench.grid import FULL, QUICK, BenchGrid, BenchProblem, algorithm_ids, expand
from client.bench.run import STORE, Where, check_ids, run_bench
from client.bench.store import RunStore
from client.cli import app
from client.comparison.preflight import Algorithms, LocalCatalog
from client.console import UsageError
from learner.algorithms import get_algorithm, rescan
from learner.applicability import inapplicable
from tests.helpers import BUDGETLAB, RUNNER
from tests.plugins import ALGORITHM, EXAMPLE, write_metadata

QUICK_RUNS = 81  # 3 datasets x (4 budgeted algorithms x 2 budgets + ridge at k = d) x 3 seeds
SKIPPED = re.compile(r"([\d,]+) of ([\d,]+) runs already in the results store")


def skipped(output: str) -> tuple[int, int]:
    found = SKIPPED.search(output)
    assert found, output
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


def stored(out: Path) -> int:
    """The runs in the store; 0 while it is being created (its file exists a moment before its table)."""
    with sqlite3.connect(out / STORE) as db:
        try:
            return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return 0


def assert_real_png(path: Path) -> None:
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", path
    pixels = imread(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 300, pixels.shape
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 2, f"{path} is blank"


# --- the quick grid end to end ----------------------------------------------------------------------------------


def test_quick_writes_the_ranks_and_diagrams_and_resumes(tmp_path: Path, shared_cluster: str) -> None:
    out = tmp_path / "bench"
    first = RUNNER.invoke(app, ["bench", "--quick", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert skipped(first.output) == (0, QUICK_RUNS)
    assert stored(out) == QUICK_RUNS
    report = (out / "report.md").read_text()
    for k in (2, 5):
        section = report.split(f"### k = {k}, batch (3 datasets)")[1].split("###")[0]
        assert re.search(r"\| ddaerr \| \d\.\d\d \|", section), section
        assert re.search(r"Friedman test \(tie-corrected χ², 3 degrees of freedom\): χ² = [\d.]+, p = [\d.e-]+; "
                         r"N = 3 blocks \(digits-3v5, digits-1v7, diabetes\), k = 4 algorithms; Nemenyi critical "
                         r"difference CD = [\d.]+ at alpha = 0.05", section), section
        assert f"](cd-batch-k{k}.png)" in section
        assert_real_png(out / f"cd-batch-k{k}.png")
    # Each dataset's table: a mean and its t-interval per budget, ridge (every attribute) as the reference.
    assert re.search(r"\| aerr \| [\d.]+ \[[-\d.e]+, [\d.e]+\] \| [\d.]+ \[[-\d.e]+, [\d.e]+\] \| — \|", report)
    assert "| ridge (reference) | — | — | " in report
    assert "0-1 error, mean [95% t-interval] over the seeds" in report
    assert "normalized MSE, mean [95% t-interval]" in report
    assert_real_png(out / "budget-diabetes.png")
    assert "indicative, the more so on the quick grid" in report
    # The terminal names no winner: the lowest average rank, and whether Friedman's test shows any difference.
    for line in re.findall(r"^k = \d \(batch\): .*$", first.output, re.MULTILINE):
        p_value = float(re.search(r"Friedman p = ([\d.e-]+)", line).group(1))  # type: ignore[union-attr]
        assert ("ranks differ at 5%" if p_value < 0.05 else "no difference shown at 5%") in line, line
        assert "best" not in line

    again = RUNNER.invoke(app, ["bench", "--quick", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert skipped(again.output) == (QUICK_RUNS, QUICK_RUNS)
    assert "running the other 0" in again.output
    assert "starting" not in again.output  # no worker was started for nothing
    assert stored(out) == QUICK_RUNS

    # A torn row (a store edited by hand, a damaged disk): it does not read back as a run, and runs again.
    with sqlite3.connect(out / STORE) as db:
        db.execute("UPDATE runs SET result = substr(result, 1, 40) WHERE rowid = (SELECT min(rowid) FROM runs)")
    torn = RUNNER.invoke(app, ["bench", "--quick", "--out", str(out)])
    assert torn.exit_code == 0, torn.output
    assert skipped(torn.output) == (QUICK_RUNS - 1, QUICK_RUNS)
    assert "running the other 1 (1 stored row(s) did not read back as runs: they run again)" in torn.output
    assert stored(out) == QUICK_RUNS
    with RunStore(out / STORE) as store:
        keys = {row[0] for row in sqlite3.connect(out / STORE).execute("SELECT key FROM runs")}
        assert store.read(keys)[1] == 0


def test_kill_9_mid_grid_loses_only_the_runs_going(tmp_path: Path, shared_cluster: str) -> None:
    """A real ``budgetlab bench`` killed with SIGKILL after a few runs: a second invocation runs only the rest."""
    out = tmp_path / "bench"
    process = subprocess.Popen([BUDGETLAB, "bench", "--quick", "--out", str(out), "--parallel", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 120
        while not (out / STORE).exists() or stored(out) < 3:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    kept = stored(out)
    assert 3 <= kept < QUICK_RUNS
    resumed = RUNNER.invoke(app, ["bench", "--quick", "--out", str(out)])
    assert resumed.exit_code == 0, resumed.output
    assert skipped(resumed.output) == (kept, QUICK_RUNS)
    assert f"running the other {QUICK_RUNS - kept}" in resumed.output
    assert stored(out) == QUICK_RUNS


def test_a_file_that_is_no_store_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    out.mkdir()
    (out / STORE).write_text("not a database, " * 100)
    result = RUNNER.invoke(app, ["bench", "--quick", "--out", str(out)])
    assert result.exit_code == 1
    assert "is not a results store of budgetlab bench" in result.output


# --- through the services -----------------------------------------------------------------------------------------

TINY = BenchGrid(name="tiny", problems=(BenchProblem("digits-3v5"), BenchProblem("diabetes")), budgets=(4,),
                 seeds=(0, 1), max_examples=40, algorithms=("aerr", "ddaerr", "aer"))


def test_through_the_services_then_resumed_in_process(tmp_path: Path, learner_url: str,
                                                      shared_oracle_url: str) -> None:
    quiet = Console(file=open(os.devnull, "w"), width=200)  # noqa: SIM115 - the console's for the test
    err = Console(record=True, width=200)
    out = tmp_path / "bench"
    code = run_bench(grid=TINY, out=out, where=Where(oracle=shared_oracle_url, learner=learner_url), console=quiet,
                     err=err, show_progress=False)
    assert code == 0, err.export_text()
    assert stored(out) == 12
    report = (out / "report.md").read_text()
    assert f"through the learner {learner_url} and the oracle {shared_oracle_url}" in report
    assert "k = 3 algorithms" in report
    # The same runs, wherever they executed: in-process, nothing is run again.
    again = Console(record=True, width=200)
    assert run_bench(grid=TINY, out=out, where=Where(), console=quiet, err=again, show_progress=False) == 0
    assert skipped(again.export_text()) == (12, 12)


# --- the grid -----------------------------------------------------------------------------------------------------


def test_the_applicability_rule() -> None:
    """Protocol, full information at k = d only, prices only where they differ, and the algorithm's own refusal."""
    def why(name: str, **kwargs: object) -> str:
        problem = {"protocol": "batch", "d": 64, "k": 5, "n_examples": 300, **kwargs}
        return inapplicable(get_algorithm(name), **problem)  # type: ignore[arg-type]

    assert why("aerr") == ""
    assert "online protocol" in why("ito1")
    assert why("ito1", protocol="online", d=10) == ""
    assert "batch protocol" in why("aerr", protocol="online")
    assert "k = d = 64 only" in why("ridge")
    assert why("ridge", k=64) == ""
    assert "cost-blind twin" in why("ddaerr-cost")
    assert "cost-blind twin" in why("ddaerr-cost", costs=[1.0] * 64)
    assert why("ddaerr-cost", costs=[1.0] * 60 + [100.0] * 4) == ""
    assert "at least 4 attributes" in why("aesvr", k=2)


def test_the_full_grid_runs_every_algorithm_where_it_applies() -> None:
    ids = algorithm_ids(FULL)
    expanded = expand(FULL, LocalCatalog(), ids)
    ran = {c.algorithm for c in expanded.cells}
    assert ran == set(ids), set(ids) - ran  # each of budgetlab's algorithms applies somewhere
    problems = {p: FULL.problems[p] for p in expanded.budgets}
    for cell in expanded.cells:
        cls = get_algorithm(cell.algorithm)
        info = expanded.infos[cell.problem]
        assert info is not None
        assert cls.protocol == problems[cell.problem].protocol
        assert cell.reference == (cls.budget_kind == "full")
        assert cell.k == (info.n_attributes if cell.reference else cell.request.budget.per_example)
        assert cell.k <= info.n_attributes
        if cls.needs_costs:
            assert problems[cell.problem].dataset == "priced"
    seeds = {c.seed for c in expanded.cells}
    assert len(seeds) >= 5
    diabetes = next(p for p, problem in problems.items() if problem.dataset == "diabetes")
    assert expanded.budgets[diabetes] == [2, 5, 10]  # 20 and 50 capped at d = 10


def test_a_plugin_joins_by_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(write_metadata(tmp_path)))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    rescan()
    try:
        ids = algorithm_ids(QUICK, [ALGORITHM])
        check_ids(ids, Algorithms())
        expanded = expand(QUICK, LocalCatalog(), ids)
        assert {c.algorithm for c in expanded.cells} == {*(QUICK.algorithms or ()), ALGORITHM}
    finally:
        monkeypatch.undo()
        rescan()


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown algorithm 'aerr2'; did you mean 'aerr'"):
        check_ids(["aerr2"], Algorithms())
    result = RUNNER.invoke(app, ["bench", "--quick", "--algorithm", "ddaer"])
    assert result.exit_code == 1
    assert "unknown algorithm 'ddaer'; did you mean 'ddaerr'" in result.output
    result = RUNNER.invoke(app, ["bench", "--oracle", "http://127.0.0.1:9"])
    assert result.exit_code == 1
    assert "give both --learner and --oracle" in result.output


def test_list_and_help_print_the_measured_times() -> None:
    from client.bench.times import FULL_TIME, QUICK_TIME

    listed = RUNNER.invoke(app, ["bench", "--list"])
    assert listed.exit_code == 0, listed.output
    assert f"measured: {FULL_TIME}" in " ".join(listed.output.split())
    assert re.search(r"^quick \(--quick\): 81 runs, 5 algorithms", listed.output, re.MULTILINE)
    assert re.search(r"^    diabetes: batch, d = 10, k in \[2, 5, 10\], \d+ runs$", listed.output, re.MULTILINE)
    helped = RUNNER.invoke(app, ["bench", "--help"])
    text = " ".join(helped.output.replace("│", " ").split())
    assert FULL_TIME in text and QUICK_TIME in text


# --- the statistics -----------------------------------------------------------------------------------------------


def test_t_interval() -> None:
    v = bench_stats.t_interval([1.0, 2.0, 3.0])
    # mean 2, sd 1, t_{0.975, 2} = 4.302653
    assert v.mean == 2.0 and v.n == 3
    assert math.isclose(v.high - 2.0, 4.302653 / math.sqrt(3), rel_tol=1e-6)
    assert bench_stats.t_interval([5.0]) == bench_stats.Interval(5.0, 5.0, 5.0, 1)


def test_nemenyi_critical_values_are_demsars() -> None:
    """Demšar (2006), Table 5(a), q_0.05 for k = 2..10, and his worked example's CD = 1.25 (k = 4, N = 14)."""
    table = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    for k, q in enumerate(table, start=2):
        cd = bench_stats.critical_difference(k, 1)
        assert abs(cd / math.sqrt(k * (k + 1) / 6) - q) < 1e-3, (k, q)  # the table has 3 decimals
    assert round(bench_stats.critical_difference(4, 14), 2) == 1.25


def test_friedman_statistic_without_ties_is_demsars_formula() -> None:
    rng = np.random.default_rng(3)
    values = {f"d{b}": {a: float(x) for a, x in zip("ABCDE", rng.permutation(5) + rng.random(5) * 0.1, strict=True)}
              for b in range(8)}
    ranking = bench_stats.rank(values)
    n, k = 8, 5
    expected = 12 * n / (k * (k + 1)) * sum(r * r for r in ranking.ranks.values()) - 3 * n * (k + 1)
    assert ranking.statistic is not None and math.isclose(ranking.statistic, expected, rel_tol=1e-9)


def test_an_algorithm_that_always_wins_ranks_first() -> None:
    rng = np.random.default_rng(0)
    values = {f"d{b}": {"best": 0.1, **{a: 0.5 + rng.random() for a in ("a", "b", "c")}} for b in range(10)}
    ranking = bench_stats.rank(values)
    assert ranking.algorithms[0] == "best" and ranking.ranks["best"] == 1.0
    assert ranking.p_value is not None and ranking.p_value < 0.01 and ranking.significant
    assert ranking.cd is not None and ranking.cd == bench_stats.critical_difference(4, 10)
    # "best" is more than the CD from the worst of the others: a bar joins it to none of them on the diagram.
    assert not any("best" in group and ranking.algorithms[-1] in group for group in ranking.cliques)


def test_identical_algorithms_differ_in_nothing() -> None:
    values = {f"d{b}": dict.fromkeys(("a", "b", "c", "d"), float(b)) for b in range(6)}
    ranking = bench_stats.rank(values)
    assert set(ranking.ranks.values()) == {2.5}
    assert ranking.statistic == 0.0 and ranking.p_value == 1.0 and not ranking.significant
    assert ranking.cliques == [ranking.algorithms]


def test_too_few_blocks_or_algorithms_are_not_tested() -> None:
    one_block = bench_stats.rank({"d": {"a": 1.0, "b": 2.0, "c": 3.0}})
    assert one_block.p_value is None and "N = 1, k = 3" in one_block.untested
    two = bench_stats.rank({"d": {"a": 1.0, "b": 2.0}, "e": {"a": 1.0, "b": 2.0}})
    assert two.p_value is None and "N = 2, k = 2" in two.untested
    # Only the algorithms every block has are ranked.
    partial = bench_stats.rank({"d": {"a": 1.0, "b": 2.0, "c": 3.0, "x": 0.0}, "e": {"a": 1.0, "b": 3.0, "c": 2.0}})
    assert partial.algorithms == ["a", "b", "c"]


def test_cliques_are_the_maximal_groups_within_the_cd() -> None:
    ranks = {"a": 1.0, "b": 1.5, "c": 2.4, "d": 3.9, "e": 4.0}
    assert bench_stats.cliques(ranks, 1.0) == [["a", "b"], ["b", "c"], ["d", "e"]]
    assert bench_stats.cliques(ranks, 0.15) == [["d", "e"]]
