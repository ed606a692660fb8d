"""``HttpOracle``: the runner's oracle over HTTP, through the SDK (the learner's only way to the server)."""

from __future__ import annotations

from budgetlab.contract.base import ParamValue
from budgetlab.contract.budgets import Budget
from budgetlab.contract.sessions import Protocol, Split
from budgetlab.oracle_client import OracleClient
from learner.oracle import SessionOracle


class HttpOracle(SessionOracle):
    """One oracle session on a remote oracle, opened on construction."""

    def __init__(
        self,
        url: str,
        dataset: str,
        *,
        dataset_params: dict[str, ParamValue] | None = None,
        split: Split = "train",
        protocol: Protocol = "batch",
        budget: Budget | None = None,
        seed: int = 0,
        client: OracleClient | None = None,
        api_key: str | None = None,
    ) -> None:
        """A session opened with ``api_key`` draws on that account's allowance (None: an anonymous session)."""
        self._owns_client = client is None
        self.client = client or OracleClient(url, api_key=api_key)
        try:
            session = self.client.open_session(dataset, dataset_params=dataset_params, split=split,
                                               protocol=protocol, budget=budget or Budget(), seed=seed)
        except BaseException:
            self.close()
            raise
        super().__init__(session, session.id)

    @classmethod
    def attach(cls, url: str, session_id: str, token: str) -> HttpOracle:
        """The session ``session_id`` someone else opened (the learner service, for a run on a Dask worker)."""
        oracle = cls.__new__(cls)
        oracle._owns_client = True
        oracle.client = OracleClient(url)
        try:
            session = oracle.client.session(session_id, token)
            session.info = session.get()
        except BaseException:
            oracle.close()
            raise
        SessionOracle.__init__(oracle, session, session_id)
        return oracle

    def close(self) -> None:
        if self._owns_client:
            self.client.close()
