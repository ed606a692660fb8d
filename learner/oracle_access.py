"""Which oracles a run may use, and what a caller learns when one cannot be used.

The learner contacts no URL but the oracles it is configured with: its ``ORACLE_URL`` and those of
``BUDGETLAB_LEARNER_ORACLES``. A URL off that list, an oracle that cannot be reached (closed port, a service that
does not speak HTTP, a timeout) and an answer that is not an oracle's all get the same error with the same words,
which echo nothing the remote side sent: the learner cannot be used to read internal services or to scan ports.
An allowed oracle's own refusal (an unknown dataset, a bad budget) is passed on, since that oracle is trusted.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from budgetlab.errors import Code, LearnerError, learner_refusal

UNUSABLE = ("the oracle is not one this learner may use, or it did not answer as a budgetlab oracle; a run may name "
            "only the learner's ORACLE_URL and the oracles listed in BUDGETLAB_LEARNER_ORACLES")
BUSY = "the oracle is busy; nothing was started, retry shortly"


def canonical(url: str) -> str | None:
    """``scheme://host:port/path`` with the default port spelled out, or None for what is not a plain HTTP URL
    (credentials, a query or a fragment included)."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host or parsed.userinfo or parsed.query \
            or parsed.fragment:
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{parsed.scheme}://{host.lower()}:{port}{parsed.path.rstrip('/')}"


class OracleAllowList:
    def __init__(self, default: str, extra: Iterable[str] = ()) -> None:
        self.default = default.rstrip("/")
        self._allowed = {c for c in map(canonical, (default, *extra)) if c is not None}

    def resolve(self, url: str | None) -> str:
        """The URL a run will use: the default, or ``url`` if it is on the list; else the one generic refusal."""
        if url is None:
            return self.default
        found = canonical(url)
        if found is None or found not in self._allowed:
            raise unusable()
        return found


def unusable() -> LearnerError:
    """The one answer for an oracle that is not allowed, cannot be reached or does not answer as an oracle."""
    return learner_refusal(Code.ORACLE_UNAVAILABLE, UNUSABLE)


def busy(retry_after: float | None) -> LearnerError:
    return learner_refusal(Code.ORACLE_BUSY, BUSY, retry_after=retry_after or 1.0)
