"""Which oracles a run may use, and what a caller learns when one cannot be used.

The learner contacts no URL but the oracles it is configured with: its ``ORACLE_URL`` and those of
``BUDGETLAB_LEARNER_ORACLES``. A URL off that list, an oracle that cannot be reached (closed port, a service that
does not speak HTTP, a timeout) and an answer that is not an oracle's all get the same error with the same words,
which echo nothing the remote side sent: the learner cannot be used to read internal services or to scan ports.
An allowed oracle's own refusal (an unknown dataset, a bad budget) is passed on, since that oracle is trusted.

URLs are compared as text once canonical (scheme, lower-case host, port spelled out, path), with one exception: a
configured oracle on this machine's loopback is also taken as ``localhost``, ``127.0.0.1`` or ``[::1]`` with the
same scheme, port and path, the spellings a user types for one address (the sandbox prints 127.0.0.1, the README
and a browser say localhost). Nothing else is equivalent (not ``127.0.0.2``, ``127.1`` nor another port), an oracle
configured by another name gains no loopback spelling, and the run then uses the configured URL, never the spelling
the request chose: the learner resolves no name a caller picked.

The refusal of a run names the URLs the learner would accept. That discloses the configured oracles to a caller, and
anyone may be one (``POST /v1/callers`` issues tokens to whoever asks, within a rate; ``learner.service.auth``): it is
what the learner offers every caller anyway, a run may name each of them, and ``ORACLE_URL`` is on the unauthenticated
``/v1/dashboard/config``. It is the same text whatever the URL asked for, so it tells a closed port from an off-list one
no better than before, and it never holds credentials (a URL with them is not canonical, so never listed). The page's
unauthenticated dataset listing keeps the refusal without the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import httpx
from pydantic import ValidationError

from budgetlab.errors import Code, LearnerError, OracleError, OracleUnavailable, SessionBusy, learner_refusal

UNUSABLE = ("the oracle is not one this learner may use, or it did not answer as a budgetlab oracle; a run may name "
            "only the learner's ORACLE_URL and the oracles listed in BUDGETLAB_LEARNER_ORACLES")
BUSY = "the oracle is busy; nothing was started, retry shortly"
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
# An answer that is not an oracle's (a non-HTTP port, another kind of service): never passed on to the caller.
NOT_AN_ORACLE = (OracleUnavailable, ValidationError, ValueError, httpx.HTTPError)


def _parts(url: str) -> tuple[str, str, int, str] | None:
    """Scheme, host (lower-case, an IPv6 address in brackets), port (the default spelled out) and path without its
    trailing slash; None for what is not a plain HTTP URL (credentials, a query or a fragment included)."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError):
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host or parsed.userinfo or parsed.query \
            or parsed.fragment:
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return parsed.scheme, host.lower(), port, parsed.path.rstrip("/")


def _join(scheme: str, host: str, port: int, path: str) -> str:
    return f"{scheme}://{host}:{port}{path}"


def canonical(url: str) -> str | None:
    """``scheme://host:port/path`` with the default port spelled out, or None for what is not a plain HTTP URL
    (credentials, a query or a fragment included)."""
    parts = _parts(url)
    return None if parts is None else _join(*parts)


class OracleAllowList:
    def __init__(self, default: str, extra: Iterable[str] = ()) -> None:
        self.default = default.rstrip("/")
        configured = [p for p in map(_parts, (default, *extra)) if p is not None]
        self._accepted = list(dict.fromkeys(_join(*p) for p in configured))
        # Each spelling a request may use, to the configured URL the run then uses: a configured URL to itself (so
        # that one configured under two loopback spellings keeps both), then a loopback one's other spellings.
        self._allowed = {url: url for url in self._accepted}
        for scheme, host, port, path in configured:
            if host in LOOPBACK:
                for other in LOOPBACK:
                    self._allowed.setdefault(_join(scheme, other, port, path), _join(scheme, host, port, path))
        loopback = any(host in LOOPBACK for _, host, _, _ in configured)
        self._refusal = f"{UNUSABLE}: {', '.join(self._accepted) or 'none'}" + (
            " (a loopback one also as localhost, 127.0.0.1 or [::1])" if loopback else "")

    def resolve(self, url: str | None) -> str:
        """The URL a run will use: the default, or the configured URL ``url`` spells; else the one refusal."""
        if url is None:
            return self.default
        found = canonical(url)
        if found is None or found not in self._allowed:
            raise self.unusable()
        return self._allowed[found]

    def unusable(self) -> LearnerError:
        """``unusable()`` naming the URLs a run may use (see the module's docstring for why a caller may read them)."""
        return learner_refusal(Code.ORACLE_UNAVAILABLE, self._refusal)

    @contextmanager
    def asking(self, refused: Code) -> Iterator[None]:
        """The one translation of what an allowed oracle answers inside into the learner's refusals: busy stays busy
        (with its Retry-After), the oracle's own refusal is passed on as ``refused`` in its words (that oracle is
        trusted), and whatever is not an oracle's answer is ``unusable``, which echoes nothing the remote side sent."""
        try:
            yield
        except SessionBusy as exc:
            raise busy(exc.retry_after) from None
        except OracleError as exc:
            raise learner_refusal(refused, exc.detail) from None
        except NOT_AN_ORACLE:
            raise self.unusable() from None


def unusable() -> LearnerError:
    """The one answer for an oracle that is not allowed, cannot be reached or does not answer as an oracle."""
    return learner_refusal(Code.ORACLE_UNAVAILABLE, UNUSABLE)


def busy(retry_after: float | None) -> LearnerError:
    return learner_refusal(Code.ORACLE_BUSY, BUSY, retry_after=retry_after or 1.0)
