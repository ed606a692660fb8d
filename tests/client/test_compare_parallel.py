"""How many runs a comparison keeps going at once when ``--parallel`` is not given, and how many runs each worker
process of the learner's own LocalCluster executes (``BUDGETLAB_WORKER_THREADS``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.comparison.compare import CompareOptions, default_parallel
from client.comparison.config import MeasuredTime
from learner.cluster import HTTP_RUNS_PER_WORKER, WORKER_THREADS_ENV, default_workers, http_worker_threads
from learner.service.settings import LearnerSettings


def test_through_services_started_here_a_comparison_keeps_every_learner_thread_busy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKER_THREADS_ENV, raising=False)
    options = CompareOptions(preset="cost-aware-priced", out=Path("out"), workers=3)
    assert default_parallel(options) == 3 * HTTP_RUNS_PER_WORKER
    monkeypatch.setenv(WORKER_THREADS_ENV, "2")
    assert default_parallel(options) == 6


def test_a_learner_or_scheduler_of_someone_else_gets_one_run_per_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKER_THREADS_ENV, "4")
    running = CompareOptions(preset="cost-aware-priced", out=Path("out"), learner="http://l", oracle="http://o")
    cluster = CompareOptions(preset="cost-aware-priced", out=Path("out"), workers=2, scheduler="tcp://s:8786")
    assert default_parallel(cluster) == 2
    assert default_parallel(running) == default_workers()


def test_the_learner_gives_each_worker_process_the_threads_the_setting_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKER_THREADS_ENV, raising=False)
    assert LearnerSettings().worker_threads == HTTP_RUNS_PER_WORKER
    monkeypatch.setenv(WORKER_THREADS_ENV, "3")
    assert LearnerSettings().worker_threads == 3
    monkeypatch.setenv(WORKER_THREADS_ENV, "0")
    with pytest.raises(ValueError, match=f"{WORKER_THREADS_ENV} must be at least 1"):
        http_worker_threads()
    with pytest.raises(ValueError, match=WORKER_THREADS_ENV):
        LearnerSettings()


def test_a_measured_line_says_how_many_runs_went_at_once_each_way() -> None:
    measured = MeasuredTime(date="2026-11-29", cores=2, parallel=2, local_minutes=0.5, cpu_minutes=0.7,
                            services_minutes=1.5, services_parallel=4)
    assert measured.text() == ("measured 2026-11-29 on 2 cores, 2 at a time: 0.5 min --local (0.7 CPU-min), 1.5 "
                               "through the services (3.0x, 4 at a time)")
    assert "at a time)" not in measured.model_copy(update={"services_parallel": None}).text()


def test_a_measured_line_says_how_loaded_the_machine_was() -> None:
    measured = MeasuredTime(date="2026-11-29", cores=2, parallel=2, local_minutes=7.1, cpu_minutes=3.9, load=4.7)
    assert measured.text() == ("measured 2026-11-29 on 2 cores, 2 at a time: 7.1 min --local (3.9 CPU-min, load "
                               "average 4.7), through the services not measured")
