"""Clients that load an oracle through its faults and keep every value they were answered, and the check that the
ledger holds each of them once, unchanged (the fault tests' traffic: kill -9 of the oracle, a database restart)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import httpx

from budgetlab.errors import OracleUnavailable
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context

Acknowledged = dict[tuple[int, int], float]


def _keep(acknowledged: Acknowledged, errors: list[str], example: int, attributes: list[int],
          values: list[float]) -> None:
    for attribute, value in zip(attributes, values, strict=True):
        seen = acknowledged.setdefault((example, attribute), value)
        if seen != value:
            errors.append(f"cell {example},{attribute} answered {seen}, then {value}")


class Observer(threading.Thread):
    """A client observing fresh examples of its own session until ``stop``; what it was answered and what went wrong."""

    def __init__(self, url: str, session: dict, seed: int, stop: threading.Event, d: int = 20,
                 pause: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.url, self.session, self.stop, self.d = url, session, stop, d
        self.pause = pause  # between two requests: a lighter load
        self.rng = random.Random(seed)
        self.acknowledged: Acknowledged = {}
        self.answers = 0
        self.lost = 0  # requests with no answer, or whose stream dropped (sent again)
        self.errors: list[str] = []


class Client(Observer):
    """Observes fresh examples of its own session over plain HTTP, one request at a time, sending a request again
    until it gets an answer; keeps every value it was answered with a 200. Any answer but 200, 503 and 429 (refused,
    nothing done: sent again) is an error, and ends it."""

    def __init__(self, url: str, session: dict, seed: int, stop: threading.Event, d: int = 20,
                 pause: float = 0.0) -> None:
        super().__init__(url, session, seed, stop, d, pause)
        self.refused = 0  # 503s
        self.rate_limited = 0  # 429s

    def request(self, example: int) -> tuple[str, dict]:
        attributes = self.rng.sample(range(self.d), 3)
        if self.rng.random() < 0.3:  # now and then two examples in one all-or-nothing batch
            return "observe/batch", {"items": [{"example": example, "attributes": attributes},
                                               {"example": example + 1, "attributes": attributes[:2]}]}
        return "observe", {"example": example, "attributes": attributes}

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.session['token']}"}
        example = 0
        with httpx.Client(base_url=self.url, timeout=5, verify=tls_context()) as http:
            while not self.stop.is_set():
                path, body = self.request(example)
                while not self.stop.is_set():
                    try:
                        answer = http.post(f"/v1/sessions/{self.session['id']}/{path}", json=body, headers=headers)
                    except httpx.TransportError:
                        self.lost += 1
                        time.sleep(0.05)
                        continue
                    if answer.status_code == 503:  # busy, or the database away: nothing was done, send it again
                        self.refused += 1
                        continue
                    if answer.status_code == 429:  # a restarted worker rebuilds the dataset: nothing was done either
                        self.rate_limited += 1
                        time.sleep(min(float(answer.headers.get("Retry-After", "1")), 2.0))
                        continue
                    if answer.status_code != 200:
                        self.errors.append(f"{answer.status_code} {answer.text[:200]}")
                        return
                    self.answers += 1
                    items = answer.json()["items"] if path == "observe/batch" else [answer.json()]
                    for item in items:
                        _keep(self.acknowledged, self.errors, item["example"], item["attributes"], item["values"])
                    break
                example += 2
                time.sleep(self.pause)


class StreamClient(Observer):
    """Observes fresh examples of its own session through the SDK over the session's stream (which sends a refused
    request again itself, and reconnects after a dropped stream); keeps every value it was answered. Any other
    failure is an error, and ends it."""

    def __init__(self, url: str, session: dict, seed: int, stop: threading.Event, d: int = 20,
                 pause: float = 0.0) -> None:
        super().__init__(url, session, seed, stop, d, pause)
        self.transport = ""

    def run(self) -> None:
        with OracleClient(self.url, timeout=10) as client:
            session = client.session(self.session["id"], self.session["token"])
            example = 0
            while not self.stop.is_set():
                attributes = self.rng.sample(range(self.d), 3)
                try:
                    values = session.observe(example, attributes).values
                except OracleUnavailable:
                    self.lost += 1
                    time.sleep(0.05)
                    continue
                except Exception as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    return
                self.answers += 1
                self.transport = session.transport
                _keep(self.acknowledged, self.errors, example, attributes, values)
                example += 1
                time.sleep(self.pause)


def ledger_cells(url: str, session: dict) -> list[tuple[int, int, float]]:
    headers = {"Authorization": f"Bearer {session['token']}"}
    cells, after = [], -1
    with httpx.Client(timeout=30, verify=tls_context()) as http:  # one client for the pages
        while True:
            page = http.get(f"{url}/v1/sessions/{session['id']}/ledger", params={"after": after, "limit": 10_000},
                            headers=headers).json()
            cells += [(r["example"], r["attribute"], r["value"]) for r in page["rows"] if r["kind"] == "observe"]
            if page["next_after"] is None:
                return cells
            after = page["next_after"]


def assert_in_the_ledger_once(url: str, session: dict[str, Any], acknowledged: Acknowledged) -> None:
    """Every value acknowledged is in the session's ledger once, with the value answered; its audit is compliant."""
    cells = ledger_cells(url, session)
    stored = {(example, attribute): value for example, attribute, value in cells}
    twice = [cell for cell, n in Counter((e, a) for e, a, _ in cells).items() if n > 1]
    assert not twice, f"cells recorded twice: {twice[:5]}"
    missing = [cell for cell in acknowledged if cell not in stored]
    assert not missing, f"acknowledged values missing from the ledger: {missing[:5]}"
    changed = [cell for cell, value in acknowledged.items() if stored[cell] != value]
    assert not changed, f"acknowledged values changed in the ledger: {changed[:5]}"
    audit = httpx.get(f"{url}/v1/sessions/{session['id']}/audit",
                      headers={"Authorization": f"Bearer {session['token']}"}, timeout=30,
                      verify=tls_context()).json()
    assert audit["compliant"], audit["reasons"]
    assert audit["attributes_recomputed"] == len(cells)
