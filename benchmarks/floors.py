"""The floor under an oracle step's CPU (issue 36, item 2): what the oracle's stack costs a step before any of
budgetlab's own work, beside what the oracle spends, measured in the same run.

The targets (at most 0.25 ms of the oracle's CPU per streamed step, 0.5 ms per HTTP step) are judged against the
parts of a step no code of ours can remove while the oracle is a uvicorn service writing SQLite:

- ``transport``: uvicorn serving a bare ASGI app with the oracle's own configuration (``client.services.serve``:
  the oracle's HTTP protocol class, uvloop, the same WebSocket implementation), in a child process, that answers each
  message a fixed 5-attribute step's answer of the oracle's size and does nothing else: over a WebSocket (the
  session's stream: a ``step`` message in, the answer out) and over HTTP (a ``POST`` of a step's body with
  keep-alive, the answer's JSON). Its process's CPU per message, from /proc, as ``oracle_cpu.py`` measures the
  oracle;
- ``sql``: the SQL a step runs on the oracle's SQLite ledger (the store's own statements, ``server.store.Statements``,
  on a ledger the oracle's migrations made, through the DB-API connection the oracle's engine configures: WAL,
  ``synchronous=NORMAL``): ``BEGIN IMMEDIATE``, the session's row read, the step's two links (its label and its
  observation) and its packed cells inserted, the counters updated, ``COMMIT``. CPU per step of this process, no
  Python of the store around them;
- ``chain``: the ledger's hashing of a step's two links (``budgetlab.ledger.Chain.record``), which the receipts and
  the audit need at the step.

Beside them, in the same run: the step inside the oracle without a transport (``SessionService.perform`` of a
``step`` in this process, on its own ledger), and the oracle itself over both transports (``budgetlab serve oracle``
in a child process, one client stepping back to back, its CPU per step from /proc).

A floor's sum against the target says how much CPU a step has left for everything else it must do (the engine's
rules and budgets, the request's parsing and validation, the answer's model, the session's lookup and lock, the rate
limits, the commit's grouping); the oracle's figure against the floor, how much of it is that.

Usage: ``python benchmarks/floors.py [--json] [--smoke]``.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from _harness import Report, arguments, progress, tree_cpu
from websockets.sync.client import connect

from budgetlab.contract.calls import StepRequest
from budgetlab.contract.sessions import SessionCreate
from budgetlab.oracle_client import OracleClient
from client.services import running

ROOT = Path(__file__).resolve().parent.parent
STREAM_TARGET_MS = 0.25
HTTP_TARGET_MS = 0.5
ATTRIBUTES = 5
D = 100


@dataclass(frozen=True)
class Sizes:
    blocks: int
    steps: int  # per block
    warmup: int


FULL = Sizes(blocks=5, steps=2000, warmup=300)
SMOKE = Sizes(blocks=1, steps=30, warmup=10)


def session_create(examples: int) -> dict[str, Any]:
    """A stream session of ``examples`` sparse-gaussian examples (d = 100) and a local budget of 5 attributes."""
    return {"dataset": "sparse-gaussian", "dataset_params": {"d": D, "n_train": examples, "n_test": 50},
            "order": "stream", "budget": {"per_example": ATTRIBUTES}}


def step_rows(steps: int, seed: int = 1) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.choice(D, ATTRIBUTES, replace=False).tolist() for _ in range(steps)]


# --- the bare app: uvicorn and nothing of ours ----------------------------------------------------------------------

# A 5-attribute step's answer as the oracle sends it (its size, 330 bytes: the transport's cost is per message).
ANSWER = json.dumps({"example": 123, "label": 0.4567, "position": 123, "attributes": [1, 22, 33, 44, 55],
                     "values": [0.1234567, -1.2345678, 0.9876543, 0.0123456, -0.5678901], "charged": 5.0,
                     "fresh": 5, "spent": 620.0, "remaining": {"total": None, "per_example": 5, "example": 123,
                                                                "example_attributes": 0},
                     "receipt": {"rows": 250, "head": "ab" * 32}}).encode()


async def bare_app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    """Answers every HTTP request and every WebSocket message with ``ANSWER``; ``/healthz`` as the oracle's does."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while (await receive())["type"] == "websocket.receive":
            await send({"type": "websocket.send", "text": ANSWER.decode()})
        return
    more = True
    while more:  # the body, read whole as the oracle reads a step's
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]})
    await send({"type": "http.response.body", "body": ANSWER})


def bare_factory() -> Callable[..., Any]:
    return bare_app


def serve_bare() -> None:
    """The child: ``bare_app`` served as ``budgetlab serve`` serves the oracle, announced as the oracle announces."""
    from client.services import serve

    sock = socket.create_server(("127.0.0.1", 0))
    print(f"oracle on http://127.0.0.1:{sock.getsockname()[1]} (docs at /docs)", flush=True)
    serve("floors:bare_factory", sock)


@contextmanager
def bare_server(workdir: Path) -> Iterator[tuple[str, int]]:
    log_path = workdir / "bare.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(ROOT)])}
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve-bare"], env=env,
                                   stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
        with running(process, ["bare", "app"], log_path, time.monotonic() + 60) as url:
            yield url, process.pid


def transport_floor(url: str, pid: int, sizes: Sizes) -> dict[str, list[float]]:
    """The bare server's CPU per message (ms), block by block, over the WebSocket and over HTTP, alternating."""
    bodies = [json.dumps({"attributes": row}) for row in step_rows(sizes.warmup + sizes.steps)]
    messages = [json.dumps({"op": "step", "body": {"attributes": row}}) for row in step_rows(sizes.steps)]
    figures: dict[str, list[float]] = {"stream": [], "http": []}
    with connect(url.replace("http", "ws", 1) + "/v1/sessions/s/stream", compression=None) as ws, \
            httpx.Client(base_url=url) as http:
        for message in messages[: sizes.warmup]:
            ws.send(message)
            ws.recv()
        for body in bodies[: sizes.warmup]:
            http.post("/v1/sessions/s/step", content=body, headers={"content-type": "application/json"})
        for _ in range(sizes.blocks):
            before = tree_cpu(pid)
            for message in messages:
                ws.send(message)
                ws.recv()
            figures["stream"].append((tree_cpu(pid) - before) * 1e3 / len(messages))
            before = tree_cpu(pid)
            for body in bodies[sizes.warmup :]:
                http.post("/v1/sessions/s/step", content=body, headers={"content-type": "application/json"})
            figures["http"].append((tree_cpu(pid) - before) * 1e3 / sizes.steps)
    return figures


# --- the ledger's SQL and hashing, and the step in one process -------------------------------------------------------


def in_process(workdir: Path, sizes: Sizes) -> dict[str, list[float]]:
    """CPU ms per step of: the step's SQL alone, its chain's hashing, and ``SessionService.perform`` of a step."""
    from budgetlab.operations import OPERATIONS
    from server.db import make_engine, upgrade
    from server.sessions import SessionService

    url = f"sqlite:///{workdir / 'ledger.db'}"
    upgrade(url)
    service = SessionService(make_engine(url))
    figures: dict[str, list[float]] = {"sql": [], "chain": [], "perform": []}
    try:
        examples = sizes.warmup + sizes.blocks * sizes.steps + 10
        created = service.create(SessionCreate.model_validate(session_create(examples)))
        step = OPERATIONS["step"]
        rows = step_rows(sizes.warmup + sizes.blocks * sizes.steps)
        for row in rows[: sizes.warmup]:
            service.perform(step, created.id, created.token, StepRequest(attributes=row))
        for block in range(sizes.blocks):
            mine = rows[sizes.warmup + block * sizes.steps :][: sizes.steps]
            started = time.process_time()
            for row in mine:
                service.perform(step, created.id, created.token, StepRequest(attributes=row))
            figures["perform"].append((time.process_time() - started) * 1e3 / len(mine))
            figures["sql"].append(sql_per_step(service, created.id, sizes.steps))
            figures["chain"].append(chain_per_step(sizes.steps))
    finally:
        service.close_connections()
    return figures


def sql_per_step(service: Any, session_id: str, steps: int) -> float:
    """CPU ms per step of the SQL a step runs: its links and cells under a ledger key of no session (the session's
    chain is left alone), its session's row read and written back as it is (the same pages as a step's)."""
    from server.store import COUNTER_COLUMNS, SESSION_COLUMNS

    sql = service.db.sql
    with service.db.engine.connect() as connection:  # as the session's last step left it, written back unchanged
        row = dict(zip(SESSION_COLUMNS, connection.exec_driver_sql(sql.load_session, (session_id,)).one(), strict=True))
    counters = [row[c] for c in COUNTER_COLUMNS[1:]]
    key = 1_000_000 + int(row["ledger_key"])
    blob = bytes(16 * ATTRIBUTES)
    raw = service.db.engine.raw_connection()
    try:
        connection = raw.driver_connection
        connection.isolation_level = None  # the oracle's own BEGIN IMMEDIATE, as the store issues it
        cursor = connection.cursor()
        seq = int(time.time_ns() % 1_000_000_000) * 1000
        started = time.process_time()
        for _ in range(steps):
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute(sql.lock_session, (session_id,))
            cursor.fetchone()
            cursor.executemany(sql.insert_links, [(key, seq, "label", seq, 1.0, 0.0, 1, None, bytes(32)),
                                                  (key, seq + 1, "observe", seq, None, 5.0, 5, None, bytes(32))])
            cursor.executemany(sql.insert_cells, [(key, seq, seq + 1, blob)])
            cursor.execute(sql.update_counters, (*counters, row["ledger_rows"], row["head_hash"], row["last_active"],
                                                 session_id))
            cursor.execute("COMMIT")
            seq += 7
        return (time.process_time() - started) * 1e3 / steps
    finally:
        raw.close()


def chain_per_step(steps: int) -> float:
    """CPU ms per step of the chain's hashing of a step's events (its label and its observation)."""
    from budgetlab.engine import Event, Observations
    from budgetlab.ledger import Chain

    events = [(Event("label", e, 1.0, 0.0, None), Observations([e] * ATTRIBUTES, list(range(ATTRIBUTES)),
                                                              [0.5] * ATTRIBUTES, [1.0] * ATTRIBUTES))
              for e in range(steps)]
    head, seq = bytes(32).hex(), 1
    started = time.process_time()
    for pair in events:  # a chain a step, continuing the last one's head, as the oracle's store makes them
        chain = Chain("floor", 1, seq, head).record(pair)
        head, seq = chain.head, chain.seq
    return (time.process_time() - started) * 1e3 / steps


# --- the oracle itself ------------------------------------------------------------------------------------------------


def oracle_figures(workdir: Path, sizes: Sizes) -> dict[str, list[float]]:
    """This tree's ``budgetlab serve oracle``: its CPU per step (ms), one client, block by block, both transports."""
    from _harness import oracle_process

    rows = step_rows(sizes.warmup + sizes.steps)
    figures: dict[str, list[float]] = {"stream": [], "http": []}
    examples = 2 * (sizes.warmup + sizes.blocks * sizes.steps) + 10
    with oracle_process(workdir / "oracle") as oracle:
        pid = oracle.process.pid
        with OracleClient(oracle.url, stream=True) as streamed, OracleClient(oracle.url, stream=False) as plain:
            sessions = {kind: client.open_session(**session_create(examples))
                        for kind, client in (("stream", streamed), ("http", plain))}
            for session in sessions.values():
                for row in rows[: sizes.warmup]:
                    session.step(row)
            for _ in range(sizes.blocks):
                for kind, session in sessions.items():
                    before = tree_cpu(pid)
                    for row in rows[sizes.warmup :]:
                        session.step(row)
                    figures[kind].append((tree_cpu(pid) - before) * 1e3 / sizes.steps)
    return figures


def main() -> None:
    if sys.argv[1:] == ["--serve-bare"]:
        serve_bare()
        return
    args = arguments(__doc__.split("\n\n")[0] if __doc__ else "")
    sizes = SMOKE if args.smoke else FULL
    report = Report("floors", "smoke" if args.smoke else "full")
    with tempfile.TemporaryDirectory(prefix="budgetlab-floors-") as tmp:
        workdir = Path(tmp)
        progress("transport: a bare app on uvicorn as the oracle is served ...")
        with bare_server(workdir) as (url, pid):
            transport = transport_floor(url, pid, sizes)
        progress("the step's SQL, its chain, and the step in one process ...")
        inside = in_process(workdir, sizes)
        progress("the oracle, both transports ...")
        oracle = oracle_figures(workdir, sizes)
    median = {name: statistics.median(values) for name, values in
              {**{f"transport_{k}": v for k, v in transport.items()}, **inside,
               **{f"oracle_{k}": v for k, v in oracle.items()}}.items()}
    for name in ("transport_stream", "transport_http", "sql", "chain", "perform", "oracle_stream", "oracle_http"):
        report.add(f"{name}_ms", median[name], "ms")
    for kind, target in (("stream", STREAM_TARGET_MS), ("http", HTTP_TARGET_MS)):
        floor = median[f"transport_{kind}"] + median["sql"] + median["chain"]
        report.add(f"floor_{kind}_ms", floor, "ms", f"< {target:g} ms leaves room", floor < target)
        report.add(f"left_for_the_rest_{kind}_ms", target - floor, "ms")
        report.add(f"oracle_{kind}_over_floor_ms", median[f"oracle_{kind}"] - floor, "ms")
    report.note(f"CPU time, median of {sizes.blocks} blocks of {sizes.steps} steps of {ATTRIBUTES} attributes "
                f"(d = {D}), one client; floor = transport + sql + chain; load average {os.getloadavg()[0]:.1f}")
    report.emit(args.json)


if __name__ == "__main__":
    main()
