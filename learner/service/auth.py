"""Who is asking: every run belongs to the caller whose bearer token started it; the admin token sees all.

A caller gets its token from ``POST /v1/callers`` (256-bit random, shown once; the learner keeps its SHA-256
digest), in the style of the oracle's session tokens. A missing, malformed, non-ASCII or unknown bearer is a 401;
another caller's run is a 404, exactly like a run that does not exist.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from budgetlab.bearer import bearer_token, matches, new_token, token_hash
from budgetlab.contract.callers import CallerToken
from budgetlab.errors import Code, learner_refusal
from learner.service.store import RunStore

ADMIN = "admin"  # the owner of runs the admin starts; caller ids are hex, so no caller is named so
UNAUTHORIZED = ("send a caller token as 'Authorization: Bearer <token>' (POST /v1/callers issues one) "
                "or the learner's admin token")


@dataclass(frozen=True)
class Caller:
    id: str

    @property
    def is_admin(self) -> bool:
        return self.id == ADMIN

    def owns(self, owner: str) -> bool:
        return self.is_admin or hmac.compare_digest(owner, self.id)


class Callers:
    """Issues caller tokens and tells whose a bearer token is."""

    def __init__(self, store: RunStore, admin_token: str | None) -> None:
        self.store = store
        self._admin_hash = token_hash(admin_token) if admin_token and bearer_token(f"Bearer {admin_token}") else None
        if admin_token and self._admin_hash is None:
            raise ValueError("BUDGETLAB_LEARNER_ADMIN_TOKEN must be a bearer token: letters, digits and -._~+/")

    def issue(self) -> CallerToken:
        caller_id, token = secrets.token_hex(16), new_token()
        self.store.add_caller(caller_id, token_hash(token))
        return CallerToken(caller=caller_id, token=token)

    def identify(self, authorization: str | None) -> Caller:
        token = bearer_token(authorization)
        if token is None:
            raise learner_refusal(Code.UNAUTHORIZED, UNAUTHORIZED)
        if self._admin_hash is not None and matches(token, self._admin_hash):
            return Caller(ADMIN)
        found = self.store.caller_with(token_hash(token))
        if found is None or not matches(token, found[1]):
            raise learner_refusal(Code.UNAUTHORIZED, "this token is not one this learner issued")
        return Caller(found[0])

