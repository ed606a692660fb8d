"""Big ``observe/batch`` requests worked out before the write lock is taken.

A batch of many cells is worked out on a snapshot of the session (the engine's checks, the chain's hashes, the
answer's JSON), in the batch process when there is one (``server.batch_process``), else in the worker; under the
lock only its inserts remain, if the session has not moved meanwhile (``SessionSteps.write``). A small batch is
done under the lock sooner than its snapshot could be read.
"""

from __future__ import annotations

from typing import Protocol

from budgetlab import engine
from budgetlab.contract.calls import ObserveBatchRequest, ObserveBatchResponse, ObserveRequest
from budgetlab.contract.ledger import Receipt
from budgetlab.errors import OracleError
from server.steps import LockedStep, Prepared, SessionSteps

# From this many cells on, an observe is prepared outside the write lock.
PREPARE_CELLS = 1000


class BatchPreparer(Protocol):
    """Works out big batches elsewhere (``server.batch_process``); None: the caller must do it itself."""

    def prepare(self, session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None: ...


def observe_step(items: list[ObserveRequest]) -> LockedStep[ObserveBatchResponse]:
    return lambda rt, c, paid: engine.observe(rt, c, paid, items)


def batch_json(answer: ObserveBatchResponse) -> bytes:
    """``answer.model_dump_json()``, the same bytes, an item at a time: the JSON of 10,000 values in one call holds
    the GIL for half a millisecond, during which no other request of the worker moves; between items it can."""
    rest = answer.model_dump_json(exclude={"items"})
    items = ",".join([item.model_dump_json() for item in answer.items])
    return f'{{"items":[{items}],{rest[1:]}'.encode()


class Batches:
    """``observe_batch`` on stored sessions, big ones prepared outside the lock."""

    def __init__(self, steps: SessionSteps, process: BatchPreparer | None = None) -> None:
        self.steps = steps
        self.process = process

    def observe_json(self, session_id: str, token: str, items: list[ObserveRequest], raw: bytes) -> bytes:
        """``observe_batch``'s answer as JSON, the same bytes; a big one prepared in the batch process if there is
        one, which is sent the request's ``raw`` body rather than its parsed items."""
        step = observe_step(items)
        big = sum(len(item.attributes) for item in items) >= PREPARE_CELLS
        prepared: Prepared[ObserveBatchResponse] | Prepared[bytes] | None = None
        if big and self.process is not None:
            prepared = self.process.prepare(session_id, token, raw)
        if big and prepared is None:
            prepared = self.steps.snapshot(session_id, token, step)
        answer: ObserveBatchResponse | bytes = self.steps.write(session_id, token, step, prepared=prepared)[0]
        return answer if isinstance(answer, bytes) else batch_json(answer)

    def prepare(self, session_id: str, token: str, raw: bytes) -> Prepared[bytes] | None:
        """In the batch process: a batch worked out on a snapshot, its answer (receipt included) as JSON; None
        when it is refused there (an unknown session, a wrong token: the worker answers the refusal)."""
        items = ObserveBatchRequest.model_validate_json(raw).items
        try:
            prepared = self.steps.snapshot(session_id, token, observe_step(items))
        except OracleError:
            return None
        if prepared is None:
            return None
        answer, chain = prepared.answer, prepared.chain
        answer.receipt = Receipt(rows=chain.seq, head=chain.head)
        return Prepared(prepared.before, prepared.counters, chain, batch_json(answer), prepared.recorded)
