"""How a parameter is read from text, the same for a dataset's and an algorithm's, from the command line, a config
or a request: ``key=value`` pairs, booleans by one rule (unknown text is an error, never False), and a value by the
type its algorithm's constructor declares (``read_value``)."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Choice:
    """One value of a ``Literal`` type: a named rule such as ``"adaptive"``."""

    value: object


def _members(annotation: object) -> list[object]:
    """The alternatives of a type, flattened: each member of a union (``float | None``, ``Optional[float]``), and each
    value of a ``Literal`` as a ``Choice``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return [member for arg in typing.get_args(annotation) for member in _members(arg)]
    if origin is typing.Literal:
        return [Choice(value) for value in typing.get_args(annotation)]
    return [annotation]


def read_value(value: object, annotation: object) -> object:
    """``value`` as a parameter of the type ``annotation`` takes it (an algorithm's constructor declares it, e.g.
    ``float | Literal["adaptive"] | None``), whether it came typed or as text, from a command line, a config or a
    request; ``ValueError`` says why it does not fit (``"is not a number"``).

    In order: None where the type allows None; one of its ``Literal`` choices as it is; then by the first of these
    the type holds: ``bool`` (``parse_bool``), ``float`` (a number, or text that is one), ``int`` (an integral number:
    ``3``, ``3.0``, ``"3"``), ``str`` (the value as text). A boolean is no number. A type of ``Literal`` choices alone
    takes only them; any other annotation (none, ``Any``) takes the value as it is."""
    members = _members(annotation)
    choices = [m.value for m in members if isinstance(m, Choice)]
    if value is None and type(None) in members:
        return None
    if isinstance(value, str) and value in choices:
        return value
    if bool in members:
        try:
            if isinstance(value, int | float | str):
                return parse_bool(value)
        except ValueError:
            pass
        raise ValueError("is not a boolean (use true or false)")
    if float in members:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError("is not a number")
        try:
            return float(value)
        except ValueError:
            raise ValueError("is not a number") from None
    if int in members:
        return _integer(value)
    if str in members:
        return str(value)
    if choices and all(isinstance(m, Choice) or m is type(None) for m in members):
        raise ValueError(f"must be one of {', '.join(map(repr, choices))}")
    return value


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("is not an integer")
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except ValueError:
        raise ValueError("is not an integer") from None
    if not number.is_integer():
        raise ValueError("is not an integer")
    return int(number)
