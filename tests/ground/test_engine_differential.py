"""Proof that the oracle and ``LocalSession`` are one engine: random requests, in-process and over real HTTP
(each request on its own, and over the session's WebSocket).

For every protocol (batch, online, pool, test split) and budget mix (per example, total, per-attribute costs,
label cost), a seeded stream of valid and invalid requests goes to a ``LocalSession`` and, through the SDK, to
the real oracle under uvicorn. Each request must get the same answer or the same refusal (status, error code,
and the same text, except for request-validation errors whose location format is the transport's), and the
two sessions must end with the same counters and the same number of ledger rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from budgetlab.errors import Refused
from budgetlab.local_session import LocalSession
from budgetlab.oracle_client import OracleClient

DATASET = "sparse-gaussian"
PARAMS = {"d": 12, "n_train": 40, "n_test": 15, "s_plus": 3, "s_minus": 3}
D = PARAMS["d"]
REQUESTS = 300
COSTS = [0.5, 1.0, 1.5, 2.0] * (D // 4)
# Fields that name the session or the moment, not what the rules decided (a receipt is the oracle's chain head).
INCIDENTAL = {"id", "created_at", "head_hash", "session", "receipt"}

SETTINGS: dict[str, dict[str, Any]] = {
    "batch-local": {"protocol": "batch", "order": "stream", "budget": {"per_example": 3}},
    "batch-total-label-cost": {"protocol": "batch", "order": "stream",
                               "budget": {"total": 45.0, "label_cost": 0.5}},
    "pool-costs": {"protocol": "batch", "order": "pool", "budget": {"per_example": 4, "total": 30.0,
                                                                   "costs": COSTS}},
    "pool-label-cost": {"protocol": "batch", "order": "pool", "budget": {"total": 12.0, "label_cost": 1.0}},
    "online": {"protocol": "online", "order": "stream", "budget": {"per_example": 4, "total": 80.0}},
    "online-pool-costs": {"protocol": "online", "order": "pool", "budget": {"costs": COSTS, "total": 20.0}},
    "test": {"split": "test", "protocol": "online", "order": "stream", "budget": {"per_example": 2}},
}


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a request got: its answer without incidental fields, or its refusal."""
    try:
        answer = call()
    except Refused as exc:
        detail = None if exc.error == "invalid_request" else exc.detail
        remaining = None if exc.remaining is None else exc.remaining.model_dump()
        return "refused", (exc.status, exc.error, detail, remaining)
    if isinstance(answer, BaseModel):
        return "ok", {k: v for k, v in answer.model_dump().items() if k not in INCIDENTAL}
    return "ok", answer


class RandomRequests:
    """A seeded mix of valid and invalid requests, aimed near the edges of what the session allows."""

    def __init__(self, seed: int, issued: Callable[[], int], n: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.issued = issued
        self.n = n

    def example(self) -> int:
        r = self.rng.random()
        if r < 0.06:
            return int(self.rng.integers(-3, 0))  # invalid: negative
        if r < 0.16:
            return int(self.rng.integers(self.n, self.n + 3))  # not in the split (or not issued)
        high = max(self.issued(), 1)
        return int(self.rng.integers(0, high + 1))  # mostly issued, sometimes the next one

    def attributes(self) -> list[int]:
        r = self.rng.random()
        if r < 0.05:
            return []
        attrs = [int(a) for a in self.rng.choice(D, size=int(self.rng.integers(1, 6)), replace=False)]
        if r < 0.12:
            attrs.append(attrs[0])  # a duplicate
        elif r < 0.18:
            attrs.append(int(self.rng.choice([-1, D, D + 5])))  # out of range
        return attrs

    def request(self, session: Any) -> Callable[[], Any]:
        op = self.rng.choice(["next", "step", "observe", "batch", "label", "predict", "evaluate", "moments",
                              "get"], p=[0.15, 0.12, 0.23, 0.1, 0.1, 0.12, 0.04, 0.03, 0.11])
        if op == "next":
            return session.next
        if op == "step":
            step_attrs = self.attributes()
            return lambda: session.step(step_attrs)
        if op == "observe":
            example, attrs = self.example(), self.attributes()
            return lambda: session.observe(example, attrs)
        if op == "batch":
            items = [(self.example(), self.attributes()) for _ in range(int(self.rng.integers(1, 4)))]
            if self.rng.random() < 0.15:
                items.append(items[0])  # the same example twice
            return lambda: session.observe_batch(items)
        if op == "label":
            example = self.example()
            return lambda: session.label(example)
        if op == "predict":
            example = self.example()
            prediction = 1e200 if self.rng.random() < 0.05 else float(self.rng.normal(0, 3))
            return lambda: session.predict(example, prediction)
        if op == "evaluate":
            size = D if self.rng.random() < 0.8 else D - 1
            weights = self.rng.normal(0, 0.3, size=size).tolist()
            return lambda: session.evaluate(weights, 0.1)
        if op == "moments":
            return session.moments
        return session.get


@pytest.mark.parametrize("stream", [True, False], ids=["websocket", "http"])
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_same_requests_same_answers_in_process_and_over_http(name: str, stream: bool, oracle_url: str) -> None:
    setting = {"split": "train", **SETTINGS[name]}
    seed = sorted(SETTINGS).index(name)
    local = LocalSession.open(DATASET, dataset_params=PARAMS, seed=seed, **setting)
    with OracleClient(oracle_url, stream=stream) as client:
        remote = client.open_session(DATASET, dataset_params=PARAMS, seed=seed, **setting)
        assert outcome(remote.get) == outcome(local.get)
        assert remote.transport == ("websocket" if stream else "http")
        # Two generators with one seed and one view of the stream: both sides are sent identical requests.
        local_draws, remote_draws = (RandomRequests(seed, lambda: local.counters.issued, local.info.n_examples)
                                     for _ in range(2))
        kinds: Counter[str] = Counter()
        for i in range(REQUESTS):
            if i == REQUESTS - 20:
                assert outcome(remote.close) == outcome(local.close)  # the last requests meet a closed session
            local_call, remote_call = local_draws.request(local), remote_draws.request(remote)
            got_local, got_remote = outcome(local_call), outcome(remote_call)
            assert got_remote == got_local, f"request {i} of {name}"
            kinds[got_local[0] if got_local[0] == "ok" else got_local[1][1]] += 1
        assert outcome(remote.get) == outcome(local.get)
        final = remote.get()
    assert final.ledger_rows == local.ledger_rows and final.status == "closed"
    # The mix really exercised both sides of the rules: answers and several kinds of refusal.
    assert kinds["ok"] >= 60 and len(kinds) >= 5, kinds
    assert final.spent.cost > 0 or setting["protocol"] == "online"


def test_the_drift_the_engine_removed_label_cost_and_negative_ids(oracle_url: str) -> None:
    """A second label of a revealed example is free on both sides; a negative id is 422 on both sides."""
    setting = {"order": "pool", "budget": {"total": 1.5, "label_cost": 1.0}}
    local = LocalSession.open(DATASET, dataset_params=PARAMS, seed=1, **setting)
    with OracleClient(oracle_url) as client:
        remote = client.open_session(DATASET, dataset_params=PARAMS, seed=1, **setting)
        for session in (local, remote):
            first, again = session.label(4), session.label(4)
            assert (first.charged, again.charged, again.label) == (1.0, 0.0, first.label)
            with pytest.raises(Refused) as refused:
                session.label(-1)
            assert (refused.value.status, refused.value.error) == (422, "invalid_request")
            assert session.get().spent.cost == 1.0
