"""Bearer tokens as both services issue and check them: 256-bit random, kept only as SHA-256 digests, compared in
constant time, and parsed strictly so that a malformed or non-ASCII ``Authorization`` header is a refusal (401),
never an exception inside a comparison.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

TOKEN_BYTES = 32  # 256 bits
# RFC 6750's b64token, bounded: what ``secrets.token_urlsafe`` produces, and nothing a comparison could choke on.
B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]{1,256}={0,2}")


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The only form in which a token is stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None when the header is missing or malformed."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip(" ")
    if scheme.lower() != "bearer" or not B64TOKEN.fullmatch(token):
        return None
    return token


def matches(token: str, stored_hash: str) -> bool:
    """Whether ``token`` is the one whose digest is ``stored_hash``, in time independent of where they differ."""
    return hmac.compare_digest(token_hash(token), stored_hash)
