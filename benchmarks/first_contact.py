"""First contact (issue 20): how soon the README's first commands say something, and how long they stay silent.

- ``cli_import``: seconds to ``import client.cli`` in a fresh interpreter (median of a few), what every
  ``budgetlab`` command pays before it can print anything.
- ``run_terminal_{cold,warm}``: the README's ``budgetlab run --algorithm aer --dataset mnist-3v5 --per-example 4
  --test-budget 4 --local`` on a pseudo-terminal (100 columns), as a user at a shell sees it: seconds from the
  command to its first visible character (ANSI control sequences do not count), the longest stretch without a
  visible character (start and exit included; a progress bar redrawing counts as output), and the total. Cold: an
  empty dataset cache (``BUDGETLAB_CACHE_DIR``, a fresh temporary directory); warm: the same command again.
- ``run_json``: the same with ``--json``, stdout and stderr piped (a script's view), warm cache: seconds to the
  first line on stderr, the longest silence on stderr, and whether stdout is exactly one JSON document.
- ``mnist_load_{cold,warm}``: seconds for ``load_dataset("mnist-3v5")`` in a fresh interpreter, every training
  pixel read once (a memory-mapped cache must not look fast by reading nothing), cold and warm cache.
- ``algorithms_list``: seconds for ``budgetlab algorithms --json`` (imports every algorithm to describe it).
- ``oracle_start_cpu``: CPU seconds of ``budgetlab serve oracle`` (its process tree) from its start on a fresh SQLite
  ledger to its first ``/healthz`` answer (median of a few); ``learner_healthz_cpu``: the same for ``budgetlab serve
  learner`` (fresh SQLite runs database), and ``learner_start_cpu`` until its 2 Dask worker processes are up too
  (the tree's CPU no longer growing). CPU, not wall time: what every service start costs on shared cores, the test
  suite's dozens of them included.
- With ``--install``: ``make`` of the quick start's install step into a fresh virtual environment (pip's own cache
  and index as configured), first output and longest silence. Takes a minute or more; off by default.

The benchmark always points ``BUDGETLAB_CACHE_DIR`` at temporary directories, so it neither uses nor fills the
user's cache. Usage: ``python benchmarks/first_contact.py [--json] [--smoke] [--install]``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _harness import (
    Report,
    arguments,
    budgetlab_command,
    descendants,
    learner_process,
    oracle_process,
    progress,
    tree_cpu,
)

ROOT = Path(__file__).resolve().parents[1]
README_RUN = ["run", "--algorithm", "aer", "--dataset", "mnist-3v5", "--per-example", "4", "--test-budget", "4",
              "--local"]
LEARNER_WORKERS = 2
# The learner's start is over once its tree's CPU grows less than this in a second (its Dask workers up and idle).
IDLE_CPU_PER_SECOND = 0.05
FIRST_OUTPUT_TARGET = 2.0  # seconds: the "shows progress within 2 s"
SILENCE_TARGET = 5.0  # seconds: "no step of the quick start is silent for more than a few seconds"
# CSI and OSC escape sequences, and the carriage returns and backspaces a progress bar redraws with.
_CONTROL = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\r\b]")
IMPORT_SNIPPET = "import time; t = time.perf_counter(); import client.cli; print(time.perf_counter() - t)"
LOAD_SNIPPET = """
import time
import numpy as np
from budgetlab.datasets import load_dataset
t = time.perf_counter()
ds = load_dataset("mnist-3v5")
np.asarray(ds.X[ds.train_rows]).sum()
print(time.perf_counter() - t)
"""


@dataclass
class Transcript:
    """When each visible piece of output arrived (seconds since the command started) and how it ended."""

    arrivals: list[float]
    total: float
    returncode: int
    stdout: bytes = b""

    @property
    def first_output(self) -> float:
        return self.arrivals[0] if self.arrivals else self.total

    @property
    def longest_silence(self) -> float:
        marks = [0.0, *self.arrivals, self.total]
        return max(b - a for a, b in zip(marks, marks[1:], strict=False))


def visible(chunk: bytes) -> bool:
    return bool(_CONTROL.sub(b"", chunk).strip())


def on_terminal(argv: list[str], env: dict[str, str], columns: int = 100) -> Transcript:
    """Run ``argv`` with stdin, stdout and stderr on a fresh pseudo-terminal; record when visible output arrives."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"},
                               close_fds=True)
    os.close(slave)
    arrivals: list[float] = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal's other end has closed it
            break
        if not chunk:
            break
        if visible(chunk):
            arrivals.append(time.perf_counter() - start)
    returncode = process.wait()
    total = time.perf_counter() - start
    os.close(master)
    return Transcript(arrivals, total, returncode)


def piped(argv: list[str], env: dict[str, str]) -> Transcript:
    """Run ``argv`` with stdout and stderr on pipes; record when visible stderr arrives, keep stdout whole."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env)
    assert process.stdout is not None and process.stderr is not None
    streams = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    arrivals: list[float] = []
    while streams:
        ready, _, _ = select.select(list(streams), [], [])
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                if fd == process.stdout.fileno():
                    stdout = bytes(streams[fd])
                del streams[fd]
                continue
            streams[fd] += chunk
            if fd == process.stderr.fileno() and visible(chunk):
                arrivals.append(time.perf_counter() - start)
    returncode = process.wait()
    return Transcript(arrivals, time.perf_counter() - start, returncode, stdout)


def seconds_printed(snippet: str, env: dict[str, str]) -> float:
    done = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(done.stdout.split()[-1])


def add_transcript(report: Report, name: str, run: Transcript, argv: list[str]) -> None:
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {run.returncode}")
    report.add(f"{name}_first_output", run.first_output, "s", f"<= {FIRST_OUTPUT_TARGET:g}",
               run.first_output <= FIRST_OUTPUT_TARGET)
    report.add(f"{name}_longest_silence", run.longest_silence, "s", f"<= {SILENCE_TARGET:g}",
               run.longest_silence <= SILENCE_TARGET)
    report.add(f"{name}_total", run.total, "s")


def oracle_start_cpu(workdir: Path) -> float:
    with oracle_process(workdir) as oracle:  # yields once /healthz answers
        return tree_cpu(oracle.process.pid)


def learner_start_cpu(workdir: Path) -> tuple[float, float]:
    """CPU seconds of ``budgetlab serve learner``'s tree at its first /healthz answer, and once its workers are up."""
    with learner_process(workdir, workers=LEARNER_WORKERS) as learner:
        pid = learner.process.pid
        healthz = before = tree_cpu(pid)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(1.0)
            now = tree_cpu(pid)
            workers = [p for p in descendants(pid) if b"spawn_main" in _cmdline(p)]
            if len(workers) >= LEARNER_WORKERS and now - before < IDLE_CPU_PER_SECOND:
                return healthz, before
            before = now
        raise RuntimeError(f"the learner's {LEARNER_WORKERS} workers did not start within 120 s (log: "
                           f"{workdir / 'learner.log'})")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def install(report: Report, tmp: Path) -> None:
    venv = tmp / "venv"
    argv = ["make", "-C", str(ROOT), f"VENV={venv}", f"{venv}/.installed"]
    progress(f"{' '.join(argv)} (a minute or more) ...")
    run = on_terminal(argv, {**os.environ})
    add_transcript(report, "install", run, argv)


def main() -> None:
    parser_args = arguments(__doc__.splitlines()[0], {
        "install": "also time the quick start's install step into a fresh virtual environment (a minute or more)"})
    smoke = parser_args.smoke
    report = Report("first_contact", "smoke" if smoke else "full")
    repeats = 1 if smoke else 3
    budgetlab = budgetlab_command()
    command = [*budgetlab, *README_RUN, *(["--max-examples", "30"] if smoke else [])]
    with tempfile.TemporaryDirectory(prefix="budgetlab-first-contact-") as name:
        tmp = Path(name)
        base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}

        def fresh_cache(label: str) -> dict[str, str]:
            directory = tmp / label
            directory.mkdir()
            return {**base, "BUDGETLAB_CACHE_DIR": str(directory)}

        progress("import client.cli ...")
        imports = [seconds_printed(IMPORT_SNIPPET, base) for _ in range(repeats)]
        report.add("cli_import", statistics.median(imports), "s")

        progress("load_dataset('mnist-3v5'), cold then warm cache ...")
        env = fresh_cache("load")
        report.add("mnist_load_cold", seconds_printed(LOAD_SNIPPET, env), "s")
        report.add("mnist_load_warm", statistics.median(seconds_printed(LOAD_SNIPPET, env) for _ in range(repeats)),
                   "s")

        progress(f"{' '.join(README_RUN)} on a terminal, cold then warm cache ...")
        env = fresh_cache("run")
        add_transcript(report, "run_terminal_cold", on_terminal(command, env), command)
        add_transcript(report, "run_terminal_warm", on_terminal(command, env), command)

        progress("the same with --json, piped ...")
        json_command = [*command, "--json"]
        run = piped(json_command, env)
        add_transcript(report, "run_json", run, json_command)
        try:
            json.loads(run.stdout)
            valid = True
        except ValueError:
            valid = False
        report.add("run_json_stdout_is_one_json_document", valid, "", "yes", valid)

        progress("budgetlab algorithms --json ...")
        start = time.perf_counter()
        listed = subprocess.run([*budgetlab, "algorithms", "--json"], env=base, capture_output=True, timeout=300)
        report.add("algorithms_list", time.perf_counter() - start, "s")
        if listed.returncode != 0:
            raise RuntimeError(listed.stderr.decode()[-2000:])

        progress("budgetlab serve oracle, then learner, each from its start to ready (CPU) ...")
        report.add("oracle_start_cpu", statistics.median(oracle_start_cpu(tmp / f"oracle-{i}") for i in range(repeats)),
                   "CPU-s")
        learners = [learner_start_cpu(tmp / f"learner-{i}") for i in range(repeats)]
        report.add("learner_healthz_cpu", statistics.median(h for h, _ in learners), "CPU-s")
        report.add("learner_start_cpu", statistics.median(r for _, r in learners), "CPU-s")

        if parser_args.install:
            install(report, tmp)
    report.emit(parser_args.json)


if __name__ == "__main__":
    main()
