"""What every part of the contract is made of: the value of a parameter, the strict request body, and the examples
that models of several concerns show.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    PlainSerializer,
    SecretStr,
    SerializationInfo,
    WithJsonSchema,
)

ParamValue = int | float | str | bool


def _in_utc(moment: datetime) -> datetime:
    # SQLite gives back the UTC times a service stored without their zone; a reader would take them as local time.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


UtcTime = Annotated[datetime, AfterValidator(_in_utc)]
"""A moment, always with its offset: the services store UTC, and a time without a zone is read as UTC."""

# The number of attributes per example (the papers' d), as a session and a dataset show it: n_attributes since
# 2026-11-29 (docs/reference/changelog.md), since a field named d broke generated clients (openapi-python-client
# parses each answer into a local named d). Read as either name, so the SDK still reads an older oracle's answers;
# written as n_attributes only.
N_ATTRIBUTES_READ_AS = AliasChoices("n_attributes", "d")

# Examples of the models that other models hold, for the fields that hold them: the OpenAPI documents show an
# example of every field (tests/e2e/test_openapi.py checks each against its schema).
SESSION_ID_EXAMPLE = "f396ed88b0c0e8e3d6b3b937b222247e"
HASH_EXAMPLE = "9c5ef082f04c2d4ab82b42566791accdbb2928a2df3cadaa5608a74301181c5f"


# The serialisation context in which a request's secrets (an API key a run carries) are written out: a client sending
# the request uses it; whatever a service shows or stores is written without it, the secrets masked.
WITH_SECRETS = {"secrets": True}


def _secret_text(secret: SecretStr, info: SerializationInfo) -> str:
    return secret.get_secret_value() if (info.context or {}).get("secrets") else "**********"


Secret = Annotated[SecretStr, PlainSerializer(_secret_text, when_used="json"),
                   WithJsonSchema({"type": "string", "format": "password", "writeOnly": True})]
"""A secret in a request (an API key a run carries): written out as JSON only in the ``WITH_SECRETS`` context, else
masked; one JSON schema whichever way it goes, so a model holding one has a single OpenAPI schema."""


class Strict(BaseModel):
    """A request body: a field it does not declare is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")
