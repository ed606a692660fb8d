"""Oracle health benchmarks (issue 37): the write-ahead log under load, what a stopped oracle leaves of it, the
ledger's headroom per million values, and a flood of new-seed sessions against another client's latency and the
oracle's memory.

Each part talks to a real ``budgetlab serve oracle`` process on a loopback port, its SQLite ledger in a temporary
directory (``$TMPDIR``):

- write-ahead log: 16 clients (4 processes of 4 threads, each thread its own session) send ``step`` requests of 5
  attributes back to back for ``wal_seconds``; the ``-wal`` file's size is sampled every 20 ms. Target: at most
  8 MB. The oracle is then stopped as ``budgetlab sandbox`` stops it (SIGTERM) and the log it leaves is measured.
  Target: at most 1 MB.
- headroom: the database's bytes on disk after that run (checkpointed), per million values observed, 5 a step: what
  a ledger needs per million values besides the log's bound and the oracle's reserve
  (``BUDGETLAB_LEDGER_RESERVE_BYTES``). ``oracle_bench.py``'s ``ledger_bytes_per_value`` is the same for steps of
  every attribute (100 a step).
- new-seed flood: a client opens sessions on new seeds of ``sparse-gaussian`` at its defaults (90,000 x 500,
  1.25 CPU-s to build each) as fast as the oracle lets it, from ``flood_threads`` threads at once: each refusal
  (429) waited out for its Retry-After, then the next seed. Meanwhile another client steps its own session, 5
  attributes a step, one at a time; its p99 is compared with its p99 before the flood. Targets: at most 3x, and
  the oracle's peak RSS (its process and its batch process) under 1 GB.

``--smoke``: tiny sizes, a few seconds (it checks that every part runs and prints its figures, which mean nothing
at that size).

Usage: ``python benchmarks/health_bench.py [--json] [--smoke] [--wal | --flood]`` (one part alone).
"""

from __future__ import annotations

import multiprocessing
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path

import httpx
import numpy as np
from _harness import Report, arguments, oracle_process, progress, tree_memory

WAL_TARGET_MB = 8.0
LEFT_TARGET_MB = 1.0
FLOOD_TARGET = 3.0
RSS_TARGET_MB = 1024.0
STEP = {"attributes": [0, 1, 2, 3, 4]}
LONG = {"d": 20, "n_train": 1_000_000, "n_test": 10, "s_plus": 2, "s_minus": 2}


@dataclass(frozen=True)
class Sizes:
    wal_processes: int
    wal_threads: int
    wal_seconds: float
    latency_steps: int
    flood_threads: int
    flood_seconds: float
    flood_params: dict[str, int] | None  # None: the dataset's defaults


FULL = Sizes(wal_processes=4, wal_threads=4, wal_seconds=30.0, latency_steps=2000, flood_threads=4,
             flood_seconds=60.0, flood_params=None)
SMOKE = Sizes(wal_processes=1, wal_threads=2, wal_seconds=1.0, latency_steps=50, flood_threads=2, flood_seconds=2.0,
              flood_params={"d": 20, "n_train": 2000, "n_test": 10, "s_plus": 2, "s_minus": 2})


def opened(http: httpx.Client, body: dict) -> dict:
    answer = http.post("/v1/sessions", json=body)
    if answer.status_code != 201:
        raise RuntimeError(f"POST /v1/sessions -> {answer.status_code}: {answer.text[:500]}")
    return answer.json()


def stepper(url: str, threads: int, seconds: float, results: Queue) -> None:
    """One client process: ``threads`` sessions stepped back to back for ``seconds``; puts its steps' count."""
    counts: list[int] = []

    def one() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            created = opened(http, {"dataset": "sparse-gaussian", "dataset_params": LONG,
                                    "budget": {"per_example": 5}})
            path, headers = f"/v1/sessions/{created['id']}/step", {"Authorization": f"Bearer {created['token']}"}
            steps, end = 0, time.monotonic() + seconds
            while time.monotonic() < end:
                answer = http.post(path, json=STEP, headers=headers)
                if answer.status_code != 200:
                    raise RuntimeError(f"step -> {answer.status_code}: {answer.text[:500]}")
                steps += 1
            counts.append(steps)

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put(sum(counts))


def write_ahead_log(workdir: Path, sizes: Sizes, report: Report) -> None:
    clients = sizes.wal_processes * sizes.wal_threads
    progress(f"write-ahead log under {clients} clients for {sizes.wal_seconds:g} s ...")
    with oracle_process(workdir / "wal") as oracle:
        wal = oracle.database.with_name(oracle.database.name + "-wal")
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        processes = [context.Process(target=stepper, args=(oracle.url, sizes.wal_threads, sizes.wal_seconds, results))
                     for _ in range(sizes.wal_processes)]
        for process in processes:
            process.start()
        peak = 0
        while any(p.is_alive() for p in processes):
            try:
                peak = max(peak, wal.stat().st_size)
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        if any(p.exitcode for p in processes):
            raise RuntimeError("a client process failed (its traceback is above)")
        steps = sum(results.get(timeout=60) for _ in processes)
        oracle.process.send_signal(signal.SIGTERM)  # as the sandbox stops it; the harness waits for the exit
        oracle.process.wait(timeout=60)
    left = wal.stat().st_size if wal.exists() else 0
    database = oracle.database.stat().st_size
    values = steps * len(STEP["attributes"])
    report.add("wal_clients", clients, "clients")
    report.add("wal_steps_per_s", steps / sizes.wal_seconds, "steps/s")
    report.add("wal_peak_mb", peak / 2**20, "MB", f"<= {WAL_TARGET_MB:g}", peak / 2**20 <= WAL_TARGET_MB)
    report.add("wal_left_after_stop_mb", left / 2**20, "MB", f"<= {LEFT_TARGET_MB:g}", left / 2**20 <= LEFT_TARGET_MB)
    report.add("ledger_mb_per_million_values_5_a_step", database / values * 1e6 / 2**20, "MB")


def step_latencies(http: httpx.Client, session: dict, count: int) -> list[float]:
    path, headers = f"/v1/sessions/{session['id']}/step", {"Authorization": f"Bearer {session['token']}"}
    seconds = []
    for _ in range(count):
        start = time.perf_counter()
        answer = http.post(path, json=STEP, headers=headers)
        seconds.append(time.perf_counter() - start)
        if answer.status_code != 200:
            raise RuntimeError(f"step -> {answer.status_code}: {answer.text[:500]}")
    return seconds


def flood(url: str, params: dict[str, int] | None, seeds: range, stop: threading.Event,
          tally: dict[str, int]) -> None:
    """New seeds, one after the other, each refusal waited out for its Retry-After."""
    seed = seeds.start
    with httpx.Client(base_url=url, timeout=600) as http:
        while not stop.is_set():
            body = {"dataset": "sparse-gaussian", "seed": seed, "budget": {"per_example": 5}}
            if params is not None:
                body["dataset_params"] = params
            answer = http.post("/v1/sessions", json=body)
            if answer.status_code == 201:
                tally["opened"] += 1  # one thread's increments at a time: the GIL keeps them whole
                seed += 1
            elif answer.status_code == 429:
                tally["refused"] += 1
                stop.wait(float(answer.headers.get("Retry-After", "1")))
            else:
                raise RuntimeError(f"POST /v1/sessions -> {answer.status_code}: {answer.text[:500]}")


def new_seed_flood(workdir: Path, sizes: Sizes, report: Report) -> None:
    progress(f"a flood of new-seed sessions for {sizes.flood_seconds:g} s against another client's steps ...")
    with oracle_process(workdir / "flood") as oracle, httpx.Client(base_url=oracle.url, timeout=600) as http:
        mine = opened(http, {"dataset": "sparse-gaussian", "dataset_params": LONG, "budget": {"per_example": 5}})
        step_latencies(http, mine, sizes.latency_steps // 4)  # warm-up
        idle = step_latencies(http, mine, sizes.latency_steps)
        stop, tally = threading.Event(), {"opened": 0, "refused": 0}
        flooders = [threading.Thread(target=flood, args=(oracle.url, sizes.flood_params,
                                                         range(1000 + 100_000 * i, 1000 + 100_000 * (i + 1)), stop,
                                                         tally))
                    for i in range(sizes.flood_threads)]
        start = time.monotonic()
        for flooder in flooders:
            flooder.start()
        busy: list[float] = []
        while time.monotonic() - start < sizes.flood_seconds or len(busy) < sizes.latency_steps:
            busy += step_latencies(http, mine, 50)
        stop.set()
        for flooder in flooders:
            flooder.join(timeout=600)
        seconds = time.monotonic() - start
        memory = tree_memory(oracle.process.pid)
    idle_p99, busy_p99 = float(np.percentile(idle, 99)) * 1e3, float(np.percentile(busy, 99)) * 1e3
    report.add("flood_sessions_opened_per_s", tally["opened"] / seconds, "sessions/s")
    report.add("flood_refusals", tally["refused"], "429s")
    report.add("flood_idle_step_p99", idle_p99, "ms")
    report.add("flood_busy_step_p99", busy_p99, "ms")
    report.add("flood_busy_to_idle_p99", busy_p99 / idle_p99, "x", f"<= {FLOOD_TARGET:g}",
               busy_p99 / idle_p99 <= FLOOD_TARGET)
    report.add("flood_peak_rss", memory["VmHWM"], "MB", f"< {RSS_TARGET_MB:g}", memory["VmHWM"] < RSS_TARGET_MB)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], {"wal": "only the write-ahead log's part (and the headroom)",
                                                "flood": "only the new-seed flood"})
    sizes = SMOKE if args.smoke else FULL
    report = Report("health_bench", "smoke" if args.smoke else "full")
    with tempfile.TemporaryDirectory(prefix="budgetlab-bench-") as tmp:
        if not args.flood:
            write_ahead_log(Path(tmp), sizes, report)
        if not args.wal:
            new_seed_flood(Path(tmp), sizes, report)
    report.emit(args.json)


if __name__ == "__main__":
    main()
