"""What every part of the contract is made of: the value of a parameter, the strict request body, and the examples
that models of several concerns show.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

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
M = TypeVar("M", bound=BaseModel)


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


# --- answers built from values already validated -----------------------------------------------------------

_new = object.__new__
_set = object.__setattr__


class _Template:
    """What ``built`` needs of a model: each field's default in the fields' order, and the fields it must be given."""

    def __init__(self, model: type[BaseModel]) -> None:
        fields = model.model_fields
        # Those without a default, and those whose default is a factory's (a new value each time): given, or left to
        # model_construct.
        self.given = frozenset(name for name, f in fields.items() if f.is_required() or f.default_factory is not None)
        self.defaults: dict[str, Any] = {name: None if name in self.given else f.default for name, f in fields.items()}
        # What only pydantic's own construction handles: extra fields kept, private attributes, a post-init hook.
        self.plain = (model.model_config.get("extra") != "allow" and not model.__private_attributes__
                      and model.model_post_init is BaseModel.model_post_init)


_TEMPLATES: dict[type[BaseModel], _Template] = {}


def built(model: type[M], **values: Any) -> M:
    """``model.model_construct(**values)``, for an answer made of values already validated (a validated request's,
    stored floats, a session's counters): the same model, its ``model_fields_set`` the fields given and every other
    field its default, with nothing validated, at half of model_construct's cost (whose generality, aliases,
    extras and factories, an answer of the engine needs none of; the oracle and in-process runs build two a step)."""
    template = _TEMPLATES.get(model)
    if template is None:
        template = _TEMPLATES[model] = _Template(model)
    keys = values.keys()
    if not (template.plain and keys >= template.given):
        return model.model_construct(**values)
    fields = template.defaults.copy()
    fields.update(values)  # the fields' own order, as model_construct's, whatever the order given
    answer = _new(model)
    _set(answer, "__dict__", fields)
    _set(answer, "__pydantic_fields_set__", set(keys))
    _set(answer, "__pydantic_extra__", None)
    _set(answer, "__pydantic_private__", None)
    return answer
