"""Where the environment's sessions come from: in memory (``LocalSession``) or a real oracle (the SDK's
``OracleClient``, over HTTP or the session's stream). Both open the same session (the online protocol, a stream of
the split in the seed's order, the budgets asked for) and describe the dataset the same way, so the environment above
them cannot tell which it runs on, except by speed and by the ledger the oracle keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.datasets import DatasetInfo
from budgetlab.contract.sessions import Split
from budgetlab.datasets import describe
from budgetlab.local_session import LocalSession
from budgetlab.oracle_client import OracleClient, OracleSession

Session = LocalSession | OracleSession


@dataclass(frozen=True)
class SessionSpec:
    """What every session of one environment is opened with; only the seed changes from one to the next."""

    dataset: str
    dataset_params: dict[str, ParamValue]
    split: Split
    budget: Budget


class Source(Protocol):
    """Opens an environment's sessions and describes its dataset."""

    def describe(self, spec: SessionSpec, seed: int) -> DatasetInfo: ...

    def open(self, spec: SessionSpec, seed: int) -> Session: ...

    def close(self) -> None: ...


class MemorySource:
    """Sessions in this process: the session engine without a database (fast, for training)."""

    def describe(self, spec: SessionSpec, seed: int) -> DatasetInfo:
        return describe(spec.dataset, spec.dataset_params, seed)

    def open(self, spec: SessionSpec, seed: int) -> Session:
        return LocalSession.open(spec.dataset, dataset_params=spec.dataset_params, split=spec.split,
                                 protocol="online", order="stream", budget=spec.budget, seed=seed)

    def close(self) -> None:
        return None


class OracleSource:
    """Sessions of the oracle at ``url``: every read and prediction is in its ledger (for an audited evaluation).

    ``stream``: over the session's WebSocket; an oracle that offers none is an error, not a silent fall back to
    HTTP (the caller asked for the stream's figures)."""

    def __init__(self, url: str, *, stream: bool, api_key: str | None) -> None:
        self.url = url
        self.stream = stream
        self.client = OracleClient(url, api_key=api_key, stream=stream)

    def describe(self, spec: SessionSpec, seed: int) -> DatasetInfo:
        params = ",".join(f"{key}={value}" for key, value in spec.dataset_params.items())
        return self.client.dataset(f"{spec.dataset}:{params}" if params else spec.dataset, seed)

    def open(self, spec: SessionSpec, seed: int) -> Session:
        session = self.client.open_session(spec.dataset, dataset_params=spec.dataset_params, split=spec.split,
                                           protocol="online", order="stream", budget=spec.budget, seed=seed)
        if self.stream:
            session.get()  # a request the stream carries: it opens the stream now, if the oracle offers one
            if session.transport != "websocket":
                session.close()
                raise RuntimeError(f"the oracle at {self.url} offers no session stream; use stream=False for HTTP")
        return session

    def close(self) -> None:
        self.client.close()


def source(oracle: str | None, *, stream: bool, api_key: str | None) -> Source:
    """In memory (``oracle`` None) or the oracle at that URL."""
    if oracle is None:
        if stream or api_key is not None:
            raise ValueError("stream and api_key are settings of a real oracle: give its URL as oracle=")
        return MemorySource()
    return OracleSource(oracle, stream=stream, api_key=api_key)
