"""``budgetlab bench``: every algorithm that applies, on the standard grid of datasets, budgets and seeds, resumable.

The grid (``client.bench.grid``) is expanded into runs, each keyed in the results store (``client.bench.store``,
``runs.sqlite`` beside the report); the runs the store holds are skipped, the others run on Dask like a comparison's
(``client.comparison.grid``: in-process on LocalOracles of a LocalCluster by default, or through running services with
``--oracle``/``--learner``), each kept in the store the moment it ends, so that Ctrl-C or ``kill -9`` loses at most
the runs still going. Then the report (``client.bench.report``): ranks per budget with the Friedman test and a
critical-difference diagram, each dataset's table and plot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from budgetlab.contract.runs import COMPLETED_RUN_STATUSES, RunResult
from budgetlab.errors import Unavailable
from budgetlab.oracle_client import OracleClient
from client.bench.grid import GRID_VERSION, GRIDS, BenchGrid, Expanded, algorithm_ids, expand
from client.bench.report import designs_of, write_report
from client.bench.store import RunStore, StoreError, run_key
from client.comparison.compare import INTERRUPTED, RUNS_FAILED, check_learner, open_pool
from client.comparison.config import AlgorithmEntry
from client.comparison.config_errors import unknown
from client.comparison.grid import RESTART_GRACE_SECONDS, Job, RunOutcome, execute
from client.comparison.preflight import Algorithms, LocalCatalog, RemoteCatalog
from client.comparison.verdicts import ALPHA
from client.console import UsageError
from client.services import ServiceError, sigterm_as_interrupt
from learner.algorithms import ParamError, algorithms, origin
from learner.cluster import RunPool

STORE = "runs.sqlite"
# A run through the learner that has not ended after this long is cancelled (the grid's runs take seconds).
RUN_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Where:
    """Where the runs execute: in-process on Dask workers (``local``), or through running services."""

    oracle: str | None = None
    learner: str | None = None
    learner_token: str | None = None
    workers: int | None = None
    scheduler: str | None = None
    parallel: int | None = None

    @property
    def local(self) -> bool:
        return self.learner is None


def check_where(where: Where) -> None:
    if bool(where.learner) != bool(where.oracle):
        raise UsageError("give both --learner and --oracle, or neither (then the runs execute in-process on Dask "
                         "workers, --local)")
    if where.learner and (where.workers or where.scheduler):
        raise UsageError(f"the learner at {where.learner} runs on its own workers: drop --workers/--scheduler")
    if where.workers and where.scheduler:
        raise UsageError("--workers sizes a cluster started here; with --scheduler the runs go to that cluster's "
                         "workers")


def check_ids(ids: list[str], table: Algorithms) -> None:
    """Every id names an algorithm installed here (its applicability is decided here) that the runs can name."""
    for name in ids:
        if name not in algorithms():
            raise UsageError(unknown("unknown algorithm", name, list(algorithms()),
                                     "see 'budgetlab algorithms'; a plugin joins by the id of its entry point"))
        if table.accepted(name) is None:
            raise UsageError(f"{table.where} runs no algorithm {name!r}: install it there, or drop it")


def show_grids(console: Console, err: Console) -> int:
    """``--list``: each grid's problems, budgets, algorithms, seeds, runs and measured time."""
    err.print("describing the grids' datasets and algorithms ...", highlight=False)
    catalog = LocalCatalog()
    for grid in GRIDS.values():
        ids = algorithm_ids(grid)
        expanded = expand(grid, catalog, ids)
        flag = " (--quick)" if grid.name == "quick" else ""
        console.print(f"[bold]{grid.name}[/]{flag}: {len(expanded.cells):,} runs, {len(ids)} algorithms, seeds "
                      f"{list(grid.seeds)}, at most {grid.max_examples:,} examples a run; measured: "
                      f"{escape(grid.measured)}", soft_wrap=True, highlight=False)
        for p, problem in enumerate(grid.problems):
            info = expanded.infos[p]
            if info is None:
                console.print(f"    {escape(problem.name)}: not run here ({escape(expanded.skipped[p])})",
                              soft_wrap=True, highlight=False)
                continue
            runs = sum(c.problem == p for c in expanded.cells)
            console.print(f"    {escape(problem.name)}: {problem.protocol}, d = {info.n_attributes}, k in "
                          f"{expanded.budgets[p]}, {runs} runs", soft_wrap=True, highlight=False)
    return 0


def _version() -> str:
    try:
        return metadata.version("budgetlab")
    except metadata.PackageNotFoundError:
        return "unknown"


def keys_of(expanded: Expanded) -> list[str]:
    """Each cell's key in the results store."""
    version = _version()
    packages: dict[str, str] = {}
    for name in {c.algorithm for c in expanded.cells}:
        found = origin(name)
        packages[name] = f"{found.package} {found.version}"
    return [run_key(c.request, budgetlab_version=version, grid_version=GRID_VERSION, package=packages[c.algorithm])
            for c in expanded.cells]


def run_bench(*, grid: BenchGrid, out: Path, where: Where, console: Console, err: Console,
              extra: list[str] | None = None, store: Path | None = None, show_progress: bool = True) -> int:
    """``budgetlab bench``: run what the store lacks of ``grid``, then write the report; the exit code (0: every run
    completed, ``RUNS_FAILED``, ``INTERRUPTED``). Bad options, ids and unreachable services are a ``UsageError``.
    ``store``: the results store (default ``out/runs.sqlite``)."""
    check_where(where)
    started = time.perf_counter()
    table = check_learner(where.learner, where.learner_token) if where.learner else Algorithms()
    ids = algorithm_ids(grid, extra or [])
    check_ids(ids, table)
    expanded = expand_grid(grid, ids, where, err)
    keys = keys_of(expanded)
    try:
        kept = RunStore(store or out / STORE)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    with kept:
        found, damaged = kept.read(set(keys))
        results: dict[int, RunResult] = {i: found[key] for i, key in enumerate(keys) if key in found}
        pending = [i for i in range(len(keys)) if i not in results]
        stored = len(results)
        err.print(f"{stored:,} of {len(keys):,} runs already in the results store {escape(str(kept.path))}: "
                  f"skipping them; running the other {len(pending):,}"
                  + (f" ({damaged} stored row(s) did not read back as runs: they run again)" if damaged else ""),
                  soft_wrap=True, highlight=False)
        outcomes: list[RunOutcome] = []
        interrupted = False
        if pending:
            try:
                outcomes = run_pending(grid, expanded, pending, keys, kept, results, where, err, show_progress)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM, during the runs or as the workers start
                interrupted = True
    if interrupted:
        err.print(f"[bold red]interrupted[/]: {len(results) - stored:,} run(s) of this invocation are in the store "
                  f"({len(results):,} of {len(keys):,} in all); the same command resumes from there",
                  soft_wrap=True)
        return INTERRUPTED
    failed = sum(o.result.status not in COMPLETED_RUN_STATUSES for o in outcomes)
    err.print("writing the report (ranks, diagrams, plots) ...", highlight=False)
    mode = ("in-process on Dask workers, LocalOracle" if where.local else
            f"through the learner {where.learner} and the oracle {where.oracle}")
    written = write_report(out, grid, expanded, results, mode=mode, stored=stored, ran=len(pending) - failed,
                           failed=failed, wall_time=time.perf_counter() - started)
    for r in written.rankings:
        if r.ranking.p_value is not None:
            shown = "ranks differ" if r.ranking.p_value < ALPHA else "no difference shown"
            console.print(f"k = {r.k} ({r.protocol}): lowest average rank {escape(r.ranking.algorithms[0])}; "
                          f"Friedman p = {r.ranking.p_value:.3g} over {len(r.ranking.blocks)} blocks ({shown} at "
                          f"{ALPHA:.0%})", highlight=False, soft_wrap=True)
    console.print(f"{len(results):,}/{len(keys):,} runs completed; report: {written.path}", soft_wrap=True,
                  highlight=False)
    if failed:
        err.print(f"[bold red]{failed} run(s) did not complete[/]: they run again next time", soft_wrap=True)
        return RUNS_FAILED
    return 0


def expand_grid(grid: BenchGrid, ids: list[str], where: Where, err: Console) -> Expanded:
    """The grid's cells for the algorithms ``ids``, its problems described by the oracle the runs use (else by this
    machine); a problem whose dataset is not served there is skipped, and said so."""
    err.print(f"the {grid.name} grid: describing its datasets and algorithms ...", highlight=False)
    try:
        if where.oracle:
            with OracleClient(where.oracle) as client:
                expanded = expand(grid, RemoteCatalog(client), ids, oracle_url=where.oracle)
        else:
            expanded = expand(grid, LocalCatalog(), ids)
    except (ParamError, Unavailable) as exc:
        raise UsageError(str(exc)) from None
    for p, why in expanded.skipped.items():
        err.print(f"[yellow]skipping {escape(grid.problems[p].name)}:[/] {escape(why)}", soft_wrap=True)
    return expanded


def run_pending(grid: BenchGrid, expanded: Expanded, pending: list[int], keys: list[str], store: RunStore,
                results: dict[int, RunResult], where: Where, err: Console, show_progress: bool) -> list[RunOutcome]:
    """Run the cells ``pending``, keeping each completed one in ``store`` (and ``results``) as it ends."""
    jobs = []
    index: dict[int, int] = {}
    for i in pending:
        cell = expanded.cells[i]
        jobs.append(Job(cell.problem, AlgorithmEntry(id=cell.algorithm, label=f"{cell.algorithm} k={cell.k}"),
                        cell.seed, cell.request))
        index[id(jobs[-1])] = i

    def keep(job: Job, outcome: RunOutcome) -> None:
        if outcome.result.status in COMPLETED_RUN_STATUSES:
            i = index[id(job)]
            store.add(keys[i], job.request, outcome.result)
            results[i] = outcome.result

    def run(pool: RunPool | None) -> list[RunOutcome]:
        return execute(jobs, designs_of(grid), local=where.local, learner_url=where.learner,
                       parallel=where.parallel, console=err, run_timeout=RUN_TIMEOUT, show_progress=show_progress,
                       learner_token=where.learner_token, restart_grace=0.0 if where.local else RESTART_GRACE_SECONDS,
                       pool=pool, done=keep)

    try:
        with sigterm_as_interrupt():
            if where.local:
                with open_pool(where.workers, where.scheduler, err) as pool:
                    return run(pool)
            return run(None)
    except (ServiceError, Unavailable) as exc:
        raise UsageError(f"services unavailable: {exc}") from None
