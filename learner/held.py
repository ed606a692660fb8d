"""The oracle sessions the learner holds for its runs: apart from ``learner.service.store``, so that the Dask worker
processes that open them (``learner.cluster``) do not import SQLAlchemy and the run tables (0.3-0.6 CPU-s of every
worker's start)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpenSession:
    """An oracle session the learner holds for a run, by which it can audit or close it."""

    oracle_url: str
    id: str
    token: str
