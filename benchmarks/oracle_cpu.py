"""The oracle's CPU per step (issue 36, item 2), here and at a baseline commit, measured in the same run.

A ``git worktree`` of the baseline commit (default ``f1662c7``) is made in a temporary directory; its oracle and
this tree's run side by side, each as ``budgetlab serve oracle`` in a child process whose ``PYTHONPATH`` is its
tree, on a SQLite ledger of its own. One client (this process, the SDK of this tree) drives a session of each
with ``step`` requests of 5 attributes, one request in flight at a time, in blocks that alternate between the two
oracles, so that both see the same machine load; what is measured is the oracle process's CPU time (user and
system, from /proc) per step, never wall time; first with one client, then with 4 clients stepping sessions of their
own at once (threads of this process). Two transports:

- ``http``: each step a ``POST /v1/sessions/ID/step`` (``OracleClient(stream=False)``);
- ``stream``: each step a message on the session's WebSocket (``OracleClient(stream=True)``).

The figure of each is the median over the blocks of the oracle's CPU per step. Targets: at most 0.5 ms per HTTP
step and 0.25 ms per streamed step here.

Then, of this tree's oracle alone (the baseline has no ``steps``): the CPU per step inside ``steps`` requests of
100 rounds, of 5 and of 50 attributes a round, over both transports, beside the same steps sent one ``step``
request each in the same blocks (one client).

Last, the full-information figure (the references that read every attribute, issue 36 item 4): the CPU a value
paid for, of the oracle and of this client (the SDK sending the request and parsing its answer), in ``steps``
requests of 100 rounds of all 784 attributes of a session of d = 784, over both transports (this tree only).

Usage: ``python benchmarks/oracle_cpu.py [--json] [--smoke] [--baseline COMMIT]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _harness import ADMIN_TOKEN, Report, progress, tree_cpu

from budgetlab.oracle_client import OracleClient, OracleSession
from client.services import running

BASELINE = "f1662c7"
HTTP_TARGET_MS = 0.5
STREAM_TARGET_MS = 0.25
ROOT = Path(__file__).resolve().parent.parent
ATTRIBUTES = 5
# One client stepping back to back, then several at once (sessions of their own; steps ready together share a
# commit where the oracle groups them).
CLIENTS = (1, 4)
D = 100


# The attributes a round of the ``steps`` figures (a session's local budget k is as many).
ROUND_ATTRIBUTES = (5, 50)


@dataclass(frozen=True)
class Sizes:
    blocks: int
    steps: int  # per block
    warmup: int
    rounds: int  # a steps request's
    full_requests: int  # per block of the full-information figure


FULL = Sizes(blocks=6, steps=1200, warmup=400, rounds=100, full_requests=10)
SMOKE = Sizes(blocks=2, steps=20, warmup=8, rounds=10, full_requests=1)
# The attributes of the full-information figure's session, every one paid for each round (MNIST's).
FULL_D = 784


@contextmanager
def worktree(commit: str) -> Iterator[Path]:
    """A detached ``git worktree`` of ``commit`` in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="budgetlab-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), commit],
                       check=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


@dataclass
class Oracle:
    name: str
    url: str
    pid: int


@contextmanager
def oracle_of(name: str, tree: Path, workdir: Path) -> Iterator[Oracle]:
    """``budgetlab serve oracle`` of the code in ``tree`` (its ``PYTHONPATH``), one worker, SQLite under ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "DATABASE_URL": f"sqlite:///{workdir / 'ledger.db'}",
           "BUDGETLAB_DATA_DIR": str(workdir / "data"), "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN}
    args = ["serve", "oracle", "--port", "0"]
    log_path = workdir / "oracle.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-c", "from client.cli import app; app()", *args], env=env,
                                   cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
        with running(process, args, log_path, time.monotonic() + 90) as url:
            yield Oracle(name, url, process.pid)


def session_of(client: OracleClient, examples: int, attributes: int = ATTRIBUTES) -> OracleSession:
    return client.open_session("sparse-gaussian", dataset_params={"d": D, "n_train": examples, "n_test": 50},
                               order="stream", budget={"per_example": attributes})


def cpu_per_step(oracle: Oracle, sessions: list[OracleSession], attributes: np.ndarray) -> float:
    """Milliseconds of the oracle's CPU per step over these steps (one row of attributes each), the sessions' clients
    stepping at once (one thread each; one request in flight per session)."""

    def drive(session: OracleSession) -> None:
        for row in attributes:
            session.step(row.tolist())

    before = tree_cpu(oracle.pid)
    with ThreadPoolExecutor(len(sessions)) as pool:
        list(pool.map(drive, sessions))
    return (tree_cpu(oracle.pid) - before) * 1e3 / (len(attributes) * len(sessions))


def measure(oracles: list[Oracle], sizes: Sizes, stream: bool, clients: int = 1) -> dict[str, list[float]]:
    """Per oracle, the CPU per step of each block, the blocks interleaved oracle by oracle."""
    rng = np.random.default_rng(7)
    examples = sizes.warmup + sizes.blocks * sizes.steps + 10
    figures: dict[str, list[float]] = {oracle.name: [] for oracle in oracles}
    with ExitStack() as stack:
        sessions: list[list[OracleSession]] = []
        for oracle in oracles:
            client = stack.enter_context(OracleClient(oracle.url, stream=stream))
            mine = [session_of(client, examples) for _ in range(clients)]
            for session in mine:
                for _ in range(sizes.warmup // clients):
                    session.step(rng.choice(D, ATTRIBUTES, replace=False).tolist())
                if (session.transport == "websocket") != stream:
                    raise RuntimeError(f"{oracle.name}: the session's transport is {session.transport}")
            sessions.append(mine)
        for block in range(sizes.blocks):
            attributes = np.stack([rng.choice(D, ATTRIBUTES, replace=False) for _ in range(sizes.steps // clients)])
            # Alternate which oracle goes first, so neither always follows the other's load.
            order = list(zip(oracles, sessions, strict=True))
            for oracle, mine in order if block % 2 == 0 else order[::-1]:
                figures[oracle.name].append(cpu_per_step(oracle, mine, attributes))
    return figures


def measure_steps(oracle: Oracle, sizes: Sizes, stream: bool, attributes: int) -> dict[str, list[float]]:
    """The oracle's CPU per step of each block, its steps sent in ``steps`` requests of ``sizes.rounds`` rounds, and
    the same steps sent one ``step`` request each to a twin session, right after."""
    rng = np.random.default_rng(8)
    examples = sizes.warmup + sizes.blocks * sizes.steps + 10
    figures: dict[str, list[float]] = {"steps": [], "step": []}
    with OracleClient(oracle.url, stream=stream) as client:
        together, single = (session_of(client, examples, attributes) for _ in range(2))
        warmup = [rng.choice(D, attributes, replace=False).tolist() for _ in range(sizes.warmup)]
        together.steps(warmup[: sizes.rounds])
        single.step(warmup[0])
        for _ in range(sizes.blocks):
            rows = np.stack([rng.choice(D, attributes, replace=False) for _ in range(sizes.steps)])
            before = tree_cpu(oracle.pid)
            for start in range(0, len(rows), sizes.rounds):
                together.steps(rows[start : start + sizes.rounds].tolist())
            figures["steps"].append((tree_cpu(oracle.pid) - before) * 1e3 / len(rows))
            figures["step"].append(cpu_per_step(oracle, [single], rows))
        if (together.transport == "websocket") != stream:
            raise RuntimeError(f"{oracle.name}: the session's transport is {together.transport}")
    return figures


def add_steps_figures(report: Report, here: Oracle, sizes: Sizes) -> None:
    """The CPU per step inside a ``steps`` request, and per ``step`` request in the same blocks (this tree only)."""
    for transport, stream in (("http", False), ("stream", True)):
        for attributes in ROUND_ATTRIBUTES:
            progress(f"{transport} steps of {sizes.rounds} rounds, {attributes} attributes a round ...")
            figures = measure_steps(here, sizes, stream, attributes)
            together, single = (float(np.median(figures[kind])) for kind in ("steps", "step"))
            name = f"{transport}_{attributes}_attributes"
            report.add(f"{name}_in_steps_of_{sizes.rounds}_oracle_cpu_ms", together, "ms")
            report.add(f"{name}_one_step_each_oracle_cpu_ms", single, "ms")
            if single:  # a smoke run's blocks may take less than a tick of /proc's CPU time
                report.add(f"{name}_steps_to_step", together / single, "x")
    report.note(f"steps figures: this tree only ({BASELINE} has no steps), {sizes.blocks} blocks of {sizes.steps} "
                f"steps a transport and size, sent in steps requests of {sizes.rounds} rounds, then one step "
                "request each to a twin session; one client")


def measure_full(oracle: Oracle, sizes: Sizes, stream: bool) -> dict[str, list[float]]:
    """Microseconds of the oracle's and of this process's CPU a value paid for, each block ``sizes.full_requests``
    ``steps`` requests of ``sizes.rounds`` rounds of every attribute."""
    rounds = [list(range(FULL_D))] * sizes.rounds
    examples = (sizes.blocks * sizes.full_requests + 1) * sizes.rounds + 10
    values = sizes.full_requests * sizes.rounds * FULL_D
    figures: dict[str, list[float]] = {"oracle": [], "client": []}
    with OracleClient(oracle.url, stream=stream) as client:
        session = client.open_session("sparse-gaussian", order="stream", budget={"per_example": FULL_D},
                                      dataset_params={"d": FULL_D, "n_train": examples, "n_test": 50})
        session.steps(rounds)  # warm-up: the dataset read, the session's first write
        for _ in range(sizes.blocks):
            before, mine = tree_cpu(oracle.pid), time.process_time()
            for _ in range(sizes.full_requests):
                session.steps(rounds)
            figures["oracle"].append((tree_cpu(oracle.pid) - before) * 1e6 / values)
            figures["client"].append((time.process_time() - mine) * 1e6 / values)
        if (session.transport == "websocket") != stream:
            raise RuntimeError(f"{oracle.name}: the session's transport is {session.transport}")
    return figures


def add_full_figures(report: Report, here: Oracle, sizes: Sizes) -> None:
    """The CPU a value of full-information ``steps`` requests, oracle and client (this tree only)."""
    for transport, stream in (("http", False), ("stream", True)):
        progress(f"{transport} full-information steps: {sizes.rounds} rounds of {FULL_D} attributes ...")
        figures = measure_full(here, sizes, stream)
        for side in ("oracle", "client"):
            report.add(f"{transport}_full_steps_{side}_cpu_us_per_value", float(np.median(figures[side])), "us")
    report.note(f"full-information figures: this tree only, a session of d = {FULL_D}, {sizes.blocks} blocks of "
                f"{sizes.full_requests} steps requests of {sizes.rounds} rounds of every attribute; CPU per value "
                "paid, the oracle's (/proc) and this process's (the SDK), median over the blocks; one client")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script runs")
    parser.add_argument("--baseline", default=BASELINE, help=f"the commit to compare with (default {BASELINE})")
    args = parser.parse_args()
    sizes = SMOKE if args.smoke else FULL
    report = Report("oracle_cpu", "smoke" if args.smoke else "full")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="budgetlab-oracle-cpu-")))
        base_tree = stack.enter_context(worktree(args.baseline))
        progress(f"starting the oracles (here and {args.baseline}) ...")
        here = stack.enter_context(oracle_of("here", ROOT, tmp / "here"))
        base = stack.enter_context(oracle_of("baseline", base_tree, tmp / "baseline"))
        for transport, stream, target in (("http", False, HTTP_TARGET_MS), ("stream", True, STREAM_TARGET_MS)):
            for clients in CLIENTS:
                progress(f"{transport} steps, {clients} client(s) at once ...")
                figures = measure([here, base], sizes, stream, clients)
                mine, theirs = float(np.median(figures["here"])), float(np.median(figures["baseline"]))
                name = f"{transport}_step_oracle_cpu_ms" + ("" if clients == 1 else f"_{clients}_clients")
                report.add(name, mine, "ms", f"<= {target}", mine <= target)
                report.add(f"{name}_{args.baseline}", theirs, "ms")
                report.add(f"{name}_here_to_{args.baseline}", mine / theirs, "x")
        add_steps_figures(report, here, sizes)
        add_full_figures(report, here, sizes)
    report.note(f"{ATTRIBUTES} attributes a step, {sizes.blocks} blocks of {sizes.steps} steps per oracle, "
                "interleaved; the oracle process's CPU time (/proc), median over the blocks")
    report.emit(args.json)


if __name__ == "__main__":
    main()
