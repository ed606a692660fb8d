"""Papers in minutes (issue 36): each full preset's wall and CPU time, ``--local`` and through the services.

For each preset named (default: every one), runs ``budgetlab compare --preset NAME --local --parallel P`` as a user
does, then (unless ``--local-only``) ``budgetlab compare --preset NAME``, which starts its own oracle and learner
and keeps as many runs going as that learner's workers execute at once (``--services-parallel`` to set it); each into
a temporary folder. It prints each one's wall minutes, its CPU minutes (the command's and every
process it waited for: its Dask workers, the services it started), the machine's mean load average while ``--local``
ran (other jobs' share of the cores), the ratio of the two wall times, and the claims' verdicts, against the issue's
targets: at most 15 minutes ``--local`` on 2 cores, at most 3x that through the services. ``--write`` records the
measurement in the preset's file (its ``measured`` line, which ``compare --list`` and the report quote with its date).

A full preset takes minutes to an hour: run it on a machine with nothing else to do, or its figures say more about
the others' load than about budgetlab. ``--smoke`` times the ``--quick`` version of one small preset both ways.

Usage: ``python benchmarks/preset_times.py [NAME ...] [--parallel 2] [--services-parallel N] [--local-only] [--write]
[--json] [--smoke]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
import threading
import time
from collections import Counter
from datetime import date
from pathlib import Path

from _harness import Report, budgetlab_command, progress

from client.comparison.compare import CompareOptions, default_parallel
from client.comparison.presets import PRESET_DIR, preset_names

LOCAL_TARGET_MINUTES = 15.0
SERVICES_TARGET_RATIO = 3.0
SMOKE_PRESET = "cost-aware-priced"
LOAD_SECONDS = 10.0


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class LoadSampler:
    """The machine's 1-minute load average, sampled every ``LOAD_SECONDS`` while a comparison runs: its mean says how
    much of the cores other jobs took (a comparison with 2 runs at a time alone on 2 cores keeps it near 2)."""

    def __init__(self) -> None:
        self.samples = [os.getloadavg()[0]]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, name="load-sampler", daemon=True)

    def _sample(self) -> None:
        while not self.stop.wait(LOAD_SECONDS):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.samples.append(os.getloadavg()[0])

    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)


def timed_compare(name: str, parallel: int | None, local: bool, quick: bool) -> tuple[float, float, float,
                                                                                      Counter[str]]:
    """Wall and CPU minutes of one comparison of the preset (``parallel`` runs at a time, None: compare's default),
    the mean load average meanwhile, and its claims' verdicts counted."""
    with tempfile.TemporaryDirectory(prefix=f"preset-{name}-") as out:
        args = ["compare", "--preset", name, *(["--parallel", str(parallel)] if parallel else []), "--out", out,
                *(["--local"] if local else []), *(["--quick"] if quick else [])]
        progress(f"{name}: budgetlab {' '.join(args)} ...")
        cpu, started = children_cpu(), time.monotonic()
        with LoadSampler() as load:
            done = subprocess.run([*budgetlab_command(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "NO_COLOR": "1"}, check=False)
        wall, cpu = (time.monotonic() - started) / 60, (children_cpu() - cpu) / 60
        if done.returncode != 0:
            raise SystemExit(f"{name}: compare exited {done.returncode}:\n{done.stderr[-3000:]}")
        results = json.loads((Path(out) / "results.json").read_text())
    verdicts = Counter(claim["verdict"] for claim in results.get("claims", []))
    progress(f"{name}: {wall:.1f} min of wall time, {cpu:.1f} CPU-min, load average {load.mean():.1f}, "
             f"claims {dict(verdicts)}")
    return wall, cpu, load.mean(), verdicts


def services_default() -> int:
    """The runs at a time of ``budgetlab compare`` through the services it starts, given no ``--parallel``."""
    return default_parallel(CompareOptions())


def write_measured(name: str, fields: dict[str, object]) -> None:
    """Put the ``measured`` line in the preset's file, after its ``expected_time`` (a top-level key, before any
    table), replacing the one it had."""
    path = PRESET_DIR / f"{name}.toml"
    text = re.sub(r"^measured = \{.*\}\n", "", path.read_text(), flags=re.MULTILINE)
    line = "measured = { " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in fields.items()) + " }\n"
    text, found = re.subn(r"^(expected_time = .*\n)", lambda m: m.group(1) + line, text, count=1, flags=re.MULTILINE)
    if not found:
        raise SystemExit(f"{path} has no expected_time line to put the measurement after")
    path.write_text(text)


def measure(report: Report, name: str, options: argparse.Namespace) -> None:
    local, cpu, load, verdicts = timed_compare(name, options.parallel, True, options.smoke)
    report.add(f"{name}_local_minutes", local, "min", f"<= {LOCAL_TARGET_MINUTES:g}", local <= LOCAL_TARGET_MINUTES)
    report.add(f"{name}_local_cpu_minutes", cpu, "CPU-min")
    report.add(f"{name}_local_load_average", load, "")
    report.note(f"{name}: claims {', '.join(f'{n} {v}' for v, n in sorted(verdicts.items())) or 'none'}")
    fields: dict[str, object] = {"date": date.today().isoformat(), "cores": os.cpu_count() or 1,
                                 "parallel": options.parallel, "local_minutes": round(local, 1),
                                 "cpu_minutes": round(cpu, 1), "load": round(load, 1)}
    if not options.local_only:
        services, _, _, _ = timed_compare(name, options.services_parallel, False, options.smoke)
        ratio = services / local
        report.add(f"{name}_services_minutes", services, "min")
        report.add(f"{name}_services_to_local", ratio, "x", f"<= {SERVICES_TARGET_RATIO:g}x",
                   ratio <= SERVICES_TARGET_RATIO)
        fields["services_minutes"] = round(services, 1)
        fields["services_parallel"] = options.services_parallel or services_default()
    if options.write and not options.smoke:
        write_measured(name, fields)
        progress(f"{name}: measured line written to its preset")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="presets to time (default: every one)")
    parser.add_argument("--parallel", type=int, default=2,
                        help="runs at a time --local (default 2, the cores of the target)")
    parser.add_argument("--services-parallel", type=int, default=None,
                        help="runs at a time through the services (default: compare's, what a user gets)")
    parser.add_argument("--local-only", action="store_true", help="time --local only")
    parser.add_argument("--write", action="store_true", help="record each measurement in its preset's file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--smoke", action="store_true", help=f"the --quick {SMOKE_PRESET}, both ways")
    options = parser.parse_args()
    names = [SMOKE_PRESET] if options.smoke else options.names or preset_names()
    unknown = sorted(set(names) - set(preset_names()))
    if unknown:
        parser.error(f"no preset {', '.join(unknown)} (see budgetlab compare --list)")
    report = Report("preset_times", "smoke" if options.smoke else "full")
    report.note(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    for name in names:
        measure(report, name, options)
    report.note(f"load average {os.getloadavg()[0]:.1f} at the end")
    report.emit(options.json)


if __name__ == "__main__":
    main()
