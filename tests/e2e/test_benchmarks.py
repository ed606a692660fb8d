"""The benchmark scripts still run: each in its --smoke mode (tiny sizes), as a user runs it, from its own file."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from client.comparison.config import MeasuredTime
from tests.helpers import ROOT

BENCHMARKS = ROOT / "benchmarks"
ORACLE_FIGURES = ("observe_p50", "healthz_p50", "observe_to_healthz_p50", "batch_observe_values_per_s",
                  "raw_sqlite_row_per_value_values_per_s", "batch_to_raw_sqlite_row_per_value",
                  "raw_sqlite_packed_values_per_s", "batch_to_raw_sqlite_packed", "hol_busy_to_idle_p99",
                  "ledger_bytes_per_value", "export_ndjson_rows_per_s", "export_csv_rows_per_s", "mapped_oracle_rss",
                  "attack_body_peak_rss", "attack_batch_at_caps_seconds", "attack_batch_peak_rss",
                  "attack_seeds_peak_rss", "attack_runs_peak_rss", "dashboard_attack_all_audits_cpu",
                  "dashboard_attack_max_get_cpu", "dashboard_attack_cached_get_cpu")
LEARNER_FIGURES = ("aerr_d1000_examples_per_s", "aelr_d1000_examples_per_s", "aerr_d100000_examples_per_s",
                   "aelr_d100000_examples_per_s", "aerr_mnist_stream_examples_per_s", "aerr_mnist_http_examples_per_s",
                   "aerr_mnist_in_process_examples_per_s", "aerr_mnist_4_runs_at_once_examples_per_s")


def run(script: str, *flags: str, timeout: float = 180) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke", *flags], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.process
@pytest.mark.slow
def test_oracle_bench_table_names_every_figure_with_its_verdict() -> None:
    out = run("oracle_bench.py")
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in ORACLE_FIGURES:
        assert name in lines, out
    for name in ("observe_to_healthz_p50", "batch_to_raw_sqlite_row_per_value", "hol_busy_to_idle_p99",
                 "ledger_bytes_per_value", "export_ndjson_rows_per_s", "mapped_oracle_rss", "attack_body_peak_rss",
                 "attack_batch_peak_rss", "attack_seeds_peak_rss", "attack_runs_peak_rss"):
        assert lines[name].endswith(("PASS", "MISS")), lines[name]


@pytest.mark.process
@pytest.mark.slow
def test_learner_bench_json_holds_every_figure_as_a_positive_rate() -> None:
    report = json.loads(run("learner_bench.py", "--json"))
    assert report["mode"] == "smoke"
    for name in LEARNER_FIGURES:
        assert report["figures"][name]["value"] > 0, name
    # The same seed learns the same weights over the stream and over HTTP as in-process (one session engine under
    # both, learner/oracle.py), even at smoke size, in the batch and the online protocol.
    for name in ("aerr_mnist_stream", "aerr_mnist_http", "ito1_online"):
        assert report["figures"][f"{name}_weights_equal_in_process"]["value"] is True, name
    assert report["figures"]["aerr_mnist_stream_added_ms_per_example"]["result"] in ("PASS", "MISS")


@pytest.mark.process
@pytest.mark.slow
def test_first_contact_bench_json_holds_every_figure() -> None:
    report = json.loads(run("first_contact.py", "--json"))
    figures = report["figures"]
    for name in ("cli_import", "mnist_load_cold", "mnist_load_warm", "algorithms_list", "oracle_start_cpu",
                 "learner_healthz_cpu"):
        assert figures[name]["value"] > 0, name
    # The learner is ready once its workers are up too: its tree's CPU then holds theirs as well.
    assert figures["learner_start_cpu"]["value"] > figures["learner_healthz_cpu"]["value"]
    for run_name in ("run_terminal_cold", "run_terminal_warm", "run_json"):
        first, silence, total = (figures[f"{run_name}_{f}"]["value"] for f in ("first_output", "longest_silence",
                                                                               "total"))
        assert 0 < first <= total and 0 < silence <= total, run_name
        assert figures[f"{run_name}_first_output"]["result"] in ("PASS", "MISS")
    assert figures["run_json_stdout_is_one_json_document"]["value"] is True


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.timeout(600)  # four Dask clusters and two pairs of services start, each taking seconds on busy cores
def test_scaling_bench_json_holds_both_speedups_and_the_workers_memory() -> None:
    report = json.loads(run("scaling.py", "--json", timeout=540))
    figures = report["figures"]
    for mode in ("local", "services"):
        for workers in (1, 2):
            assert figures[f"{mode}_{workers}_workers_runs_per_minute"]["value"] > 0
        assert figures[f"{mode}_speedup_2_workers"]["result"] in ("PASS", "MISS")
        assert figures[f"{mode}_2_workers_worker1_rss"]["value"] > 0  # two worker processes, measured
    for workers in (1, 2):  # the oracle's CPU over the grid, per example step
        assert figures[f"services_{workers}_workers_oracle_cpu_ms_per_step"]["value"] > 0
    # What the machine's two cores give at all, beside the grid's speed-ups.
    assert all(figures[f"machine_speedup_2_processes_at_{when}"]["value"] > 0.5 for when in ("start", "end"))
    # The one worker met both seeds' datasets and built each once, for the two runs of each.
    assert figures["local_1_workers_worker0_datasets_built"]["value"] == 2
    assert figures["local_1_workers_worker0_runs"]["value"] == 4
    assert figures["local_2_workers_worker0_runs"]["value"] + figures["local_2_workers_worker1_runs"]["value"] == 4


@pytest.mark.process
@pytest.mark.slow
def test_health_bench_json_holds_the_logs_bound_the_headroom_and_the_floods_figures() -> None:
    report = json.loads(run("health_bench.py", "--json"))
    figures = report["figures"]
    for name in ("wal_peak_mb", "wal_left_after_stop_mb", "flood_busy_to_idle_p99", "flood_peak_rss"):
        assert figures[name]["result"] in ("PASS", "MISS"), name
    for name in ("wal_steps_per_s", "ledger_mb_per_million_values_5_a_step", "flood_idle_step_p99",
                 "flood_busy_step_p99"):
        assert figures[name]["value"] > 0, name
    # The oracle stopped as the sandbox stops it leaves an empty log, whatever the machine (the last checkpoint).
    assert figures["wal_left_after_stop_mb"]["value"] == 0


@pytest.mark.process
@pytest.mark.slow
def test_preset_times_json_holds_the_wall_and_cpu_minutes_with_their_verdict() -> None:
    report = json.loads(run("preset_times.py", "--json", "--local-only"))
    figures = report["figures"]
    assert figures["cost-aware-priced_local_minutes"]["result"] in ("PASS", "MISS")
    assert 0 < figures["cost-aware-priced_local_cpu_minutes"]["value"]
    assert any(note.startswith("cost-aware-priced: claims ") for note in report["notes"])


def test_preset_times_writes_the_measured_line_that_list_and_the_config_read(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import preset_times
    finally:
        sys.path.remove(str(BENCHMARKS))
    preset = tmp_path / "p.toml"
    preset.write_text('title = "t"\nexpected_time = "about a minute"\nseeds = [0]\n\n[[algorithms]]\nid = "aerr"\n')
    monkeypatch.setattr(preset_times, "PRESET_DIR", tmp_path)
    fields = {"date": "2026-11-29", "cores": 2, "parallel": 2, "local_minutes": 4.5, "cpu_minutes": 8.1}
    preset_times.write_measured("p", fields)
    preset_times.write_measured("p", {**fields, "services_minutes": 9.0})  # measured again: replaced, not added
    text = preset.read_text()
    assert text.count("measured = ") == 1 and text.index("expected_time") < text.index("measured") < text.index("[[")
    measured = tomllib.loads(text)["measured"]
    assert MeasuredTime(**measured).text() == ("measured 2026-11-29 on 2 cores, 2 at a time: 4.5 min --local "
                                               "(8.1 CPU-min), 9.0 through the services (2.0x)")


@pytest.mark.process
@pytest.mark.slow
def test_overhead_bench_json_holds_the_overhead_and_aerr_beside_f1662c7_with_the_same_weights() -> None:
    report = json.loads(run("overhead_bench.py", "--json"))
    figures = report["figures"]
    for scenario in ("mnist", "sparse"):
        assert figures[f"overhead_{scenario}_us_per_example"]["result"] in ("PASS", "MISS")
        assert figures[f"overhead_{scenario}_steps_only_us_per_example"]["value"] > 0
        if f"aerr_{scenario}_to_f1662c7" in figures:  # a clone without f1662c7's history has only the figures here
            assert figures[f"aerr_{scenario}_to_f1662c7"]["result"] in ("PASS", "MISS")
            assert figures[f"aerr_{scenario}_same_weights_as_f1662c7"]["result"] == "PASS"


@pytest.mark.process
@pytest.mark.slow
def test_floors_bench_measures_each_floor_and_the_oracle_beside_them() -> None:
    figures = json.loads(run("floors.py", "--json"))["figures"]
    for name in ("sql", "chain", "perform"):  # this process's CPU time: fine-grained
        assert figures[f"{name}_ms"]["value"] > 0, name
    for name in ("transport_stream", "transport_http", "oracle_stream", "oracle_http"):  # /proc's ticks of 10 ms
        assert figures[f"{name}_ms"]["value"] >= 0, name
    for kind in ("stream", "http"):
        floor = sum(figures[f"{part}_ms"]["value"] for part in (f"transport_{kind}", "sql", "chain"))
        assert figures[f"floor_{kind}_ms"]["value"] == pytest.approx(floor)
        assert figures[f"floor_{kind}_ms"]["result"] in ("PASS", "MISS")
