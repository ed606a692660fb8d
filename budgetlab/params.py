"""How a parameter is read from text, the same for a dataset's and an algorithm's, from the command line, a config
or a request: ``key=value`` pairs, and booleans by one rule (unknown text is an error, never False)."""

from __future__ import annotations

from budgetlab.contract.base import ParamValue

TRUE = frozenset({"true", "1", "yes", "on"})
FALSE = frozenset({"false", "0", "no", "off"})


def parse_bool(value: ParamValue) -> bool:
    """``value`` as a boolean: a bool as it is, else one of ``TRUE`` or ``FALSE`` (any case); ``ValueError`` for
    anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise ValueError(f"{value!r} is not a boolean (use true or false)")


def split_pair(text: str, what: str) -> tuple[str, str]:
    """``key=value`` as its stripped key and value; ``ValueError`` naming ``what`` when there is no ``=`` or no
    key."""
    key, eq, value = (part.strip() for part in text.partition("="))
    if not eq or not key:
        raise ValueError(f"{what} {text.strip()!r} is not key=value")
    return key, value
