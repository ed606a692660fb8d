"""What both benchmark scripts share: the command line, an oracle in its own process, and the report.

The oracle runs as ``budgetlab serve oracle`` in a subprocess (never in the benchmark's own process), so
the client's Python never competes with the server's for one GIL: the figures are those a user sees.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from client.services import running

ADMIN_TOKEN = "bench-admin"


@dataclass
class Figure:
    name: str
    value: float | bool
    unit: str = ""
    target: str = ""
    # True: the target is met, False: missed, None: an informational figure without a target.
    met: bool | None = None

    @property
    def result(self) -> str:
        return "" if self.met is None else ("PASS" if self.met else "MISS")


@dataclass
class Report:
    benchmark: str
    mode: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, value: float | bool, unit: str = "", target: str = "", met: bool | None = None) -> None:
        # Plain Python numbers, so numpy scalars never reach json.dumps.
        self.figures.append(Figure(name, value if isinstance(value, bool) else float(value), unit, target, met))

    def note(self, text: str) -> None:
        self.notes.append(text)
        progress(f"note: {text}")

    def emit(self, as_json: bool) -> None:
        if as_json:
            body = {"benchmark": self.benchmark, "mode": self.mode, "notes": self.notes,
                    "figures": {f.name: {"value": f.value, "unit": f.unit, "target": f.target, "met": f.met,
                                         "result": f.result} for f in self.figures}}
            sys.stdout.write(json.dumps(body) + "\n")
            return
        rows = [(f.name, _format(f.value), f.unit, f.target, f.result) for f in self.figures]
        header = ("figure", "value", "unit", "target", "result")
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [f"{self.benchmark} ({self.mode})", _row(header, widths), _row(tuple("-" * w for w in widths), widths)]
        lines += [_row(r, widths) for r in rows]
        lines += [f"note: {n}" for n in self.notes]
        sys.stdout.write("\n".join(lines) + "\n")


def _format(value: float | bool) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _row(cells: tuple[str, ...], widths: list[int]) -> str:
    # Names left, numbers right, so a column of figures reads at a glance.
    first, value, *rest = cells
    return "  ".join([first.ljust(widths[0]), value.rjust(widths[1]),
                      *(c.ljust(w) for c, w in zip(rest, widths[2:], strict=True))]).rstrip()


def progress(text: str) -> None:
    """Progress goes to stderr, so stdout holds only the report (one JSON object with --json)."""
    print(text, file=sys.stderr, flush=True)


def arguments(description: str, flags: dict[str, str] | None = None) -> argparse.Namespace:
    """The shared options, and ``flags`` (a name to its help) of one script, each a switch off by default."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds: checks the script runs")
    parser.add_argument("--postgres", metavar="URL", default=os.environ.get("BUDGETLAB_BENCH_POSTGRES_URL"),
                        help="also measure on this PostgreSQL database where the script says it does "
                             "(default: $BUDGETLAB_BENCH_POSTGRES_URL)")
    for name, text in (flags or {}).items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    return parser.parse_args()


def budgetlab_command() -> list[str]:
    script = Path(sys.executable).with_name("budgetlab")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from client.cli import app; app()"]


@dataclass
class OracleProcess:
    url: str
    process: subprocess.Popen
    data_dir: Path
    database: Path


@contextmanager
def oracle_process(workdir: Path, timeout: float = 90.0, database_url: str | None = None,
                   workers: int = 1) -> Iterator[OracleProcess]:
    """``budgetlab serve oracle`` (``--workers``) on a free loopback port, its ledger (SQLite unless ``database_url``
    names another database) and data directory under ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / "ledger.db"
    data_dir = workdir / "data"
    env = {**os.environ, "DATABASE_URL": database_url or f"sqlite:///{database}", "BUDGETLAB_DATA_DIR": str(data_dir),
           "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}
    log_path = workdir / "oracle.log"
    log = log_path.open("wb")
    # On a port the oracle picks and announces itself: no window for another process to take it.
    args = ["serve", "oracle", "--port", "0", "--workers", str(workers)]
    process = subprocess.Popen([*budgetlab_command(), *args], env=env, cwd=workdir, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        with running(process, args, log_path, time.monotonic() + timeout) as url:
            yield OracleProcess(url, process, data_dir, database)
    finally:
        log.close()


@contextmanager
def fresh_oracle(workdir: Path, name: str, shared: OracleProcess | None) -> Iterator[OracleProcess]:
    """A fresh oracle process under ``workdir / name`` for a part whose figures are the oracle's own, or ``shared``,
    the one oracle of a --smoke run: there the figures mean nothing, and each start costs seconds of CPU."""
    if shared is not None:
        yield shared
        return
    with oracle_process(workdir / name) as oracle:
        yield oracle


@dataclass
class LearnerProcess:
    url: str
    process: subprocess.Popen


@contextmanager
def learner_process(workdir: Path, oracle_url: str | None = None, timeout: float = 90.0,
                    workers: int | None = None) -> Iterator[LearnerProcess]:
    """``budgetlab serve learner`` on a free loopback port, using ``oracle_url`` (default: none), its runs in SQLite
    under ``workdir``, on ``workers`` worker processes (default: the learner's, one per core)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LEARNER_DATABASE_URL": f"sqlite:///{workdir / 'runs.db'}"}
    if oracle_url is not None:
        env["ORACLE_URL"] = oracle_url
    if workers is not None:
        from learner.cluster import WORKERS_ENV  # here: the learner's imports take seconds, and only this needs them

        env[WORKERS_ENV] = str(workers)
    log_path = workdir / "learner.log"
    # On a port the learner picks and announces itself, as the oracle's.
    args = ["serve", "learner", "--port", "0"]
    with log_path.open("wb") as log:
        process = subprocess.Popen([*budgetlab_command(), *args], env=env, cwd=workdir, stdout=log,
                                   stderr=subprocess.STDOUT)
        with running(process, args, log_path, time.monotonic() + timeout) as url:
            yield LearnerProcess(url, process)


def free_disk(path: Path) -> int:
    return shutil.disk_usage(path).free


def process_memory(pid: int) -> dict[str, float]:
    """Resident memory of a process in MB: VmRSS (psutil if installed), and from /proc its parts and peak."""
    figures: dict[str, float] = {}
    try:
        import psutil

        figures["VmRSS"] = psutil.Process(pid).memory_info().rss / 2**20
    except ImportError:
        pass
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        for line in status.read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                figures.setdefault(key, int(rest.split()[0]) / 1024)
    if "VmRSS" not in figures:
        raise RuntimeError(f"cannot read the memory of process {pid}: install psutil or run on Linux")
    return figures


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (the oracle's batch process, a worker master's workers), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # The parent is the 2nd field after the command, which is in parentheses and may hold spaces.
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_memory(pid: int) -> dict[str, float]:
    """``process_memory`` of a process plus every process below it (summed per key): what a service costs the
    machine, the oracle's batch process included. Summed peaks are an upper bound of the tree's peak."""
    total: dict[str, float] = {}
    for member in [pid, *descendants(pid)]:
        try:
            figures = process_memory(member)
        except (RuntimeError, OSError):  # a child that exited meanwhile
            continue
        for key, value in figures.items():
            total[key] = total.get(key, 0.0) + value
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of a process and every process below it so far, children it has waited for
    included, from /proc (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for member in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # a child that exited meanwhile (its parent's cutime counts it once waited for)
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick
