"""Background runs of the learner service: each run has its own oracle session and its own thread."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from budgetlab.errors import OracleError, OracleUnavailable
from budgetlab.models import CurvePoint, RunCreate, RunInfo, RunResult, RunStatus
from learner.http_oracle import HttpOracle
from learner.runner import Progress
from learner.scoring import run_and_score, session_opener


@dataclass
class Run:
    id: str
    request: RunCreate
    oracle: HttpOracle
    status: RunStatus = "pending"
    examples: int = 0
    attributes: int = 0
    curve: list[CurvePoint] = field(default_factory=list)
    result: RunResult | None = None
    message: str = ""
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def info(self) -> RunInfo:
        return RunInfo(
            id=self.id, status=self.status, request=self.request, progress_examples=self.examples,
            progress_attributes=self.attributes,
            max_examples=min(self.request.max_examples or self.oracle.n_examples, self.oracle.n_examples),
            session=self.oracle.session_id, result=self.result, curve=list(self.curve), message=self.message,
        )


def execute(run: Run) -> None:
    """Body of a run's thread: never raises; every outcome ends as a status and the curve so far."""
    req = run.request
    run.status = "running"

    def progress(p: Progress) -> None:
        run.examples, run.attributes = p.examples, p.attributes
        if p.point is not None:
            run.curve.append(p.point)

    try:
        result = run_and_score(req, run.oracle, session_opener(req, req.oracle_url), progress=progress,
                               cancel=run.cancel)
        run.result = result
        run.curve = list(result.curve)
        run.status, run.message = result.status, result.message
    except OracleUnavailable as exc:
        run.status, run.message = "oracle_unavailable", str(exc)
    except (OracleError, ValueError) as exc:
        run.status, run.message = "failed", str(exc)
    except Exception as exc:  # a run must end with a status, whatever the algorithm raised
        run.status, run.message = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        run.oracle.close()


class RunManager:
    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self.lock = threading.Lock()

    def start(self, request: RunCreate, oracle: HttpOracle) -> Run:
        run = Run(id=secrets.token_hex(8), request=request, oracle=oracle)
        run.thread = threading.Thread(target=execute, args=(run,), name=f"run-{run.id}", daemon=True)
        with self.lock:
            self.runs[run.id] = run
        run.thread.start()
        return run

    def get(self, run_id: str) -> Run | None:
        return self.runs.get(run_id)
