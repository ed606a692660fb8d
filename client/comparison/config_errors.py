"""Errors in a comparison config as a user reads them: ``FILE:LINE: where: what``, with "did you mean" for names.

``tomllib`` keeps no positions, so ``key_lines`` reads them from the text: the line of every table header and every
key, under the path pydantic reports (``("algorithms", 2, "params", "eta")`` is the ``eta`` of the third
``[[algorithms]]``). A value written inline (``params = { eta = 0.1 }``) is found at its key's line.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterable, Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

Loc = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[|\[)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
_PART = re.compile(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""")
_STRINGS = re.compile(r""""(?:\\.|[^"\\])*"|'[^']*'""")


class ConfigError(ValueError):
    """A config that cannot run; its text is one ``FILE:LINE: ...`` line per problem."""


def _parts(dotted: str) -> list[str]:
    return [p.strip("\"'") for p in _PART.findall(dotted)]


def key_lines(text: str) -> dict[Loc, int]:
    """The (1-based) line where each table and key of a TOML text starts, by its path."""
    found: dict[Loc, int] = {}
    arrays: dict[Loc, int] = {}  # array of tables -> index of its latest [[entry]]
    table: Loc = ()
    depth = 0  # open brackets of a value that spans lines
    in_string: str | None = None  # the delimiter of a multi-line string we are inside

    def resolve(parts: Sequence[str]) -> Loc:
        path: Loc = ()
        for part in parts:
            path += (part,)
            if path in arrays:
                path += (arrays[path],)
        return path

    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if depth > 0:
            depth = max(0, depth + _balance(line))
            continue
        header = _HEADER.match(line)
        if header and not _KEY.match(line):
            parts = _parts(header.group(2))
            if header.group(1) == "[[":
                array = resolve(parts[:-1]) + (parts[-1],)
                arrays[array] = arrays.get(array, -1) + 1
                found.setdefault(array, number)
                table = array + (arrays[array],)
            else:
                table = resolve(parts)
            found.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        path = table + tuple(_parts(key.group(1)))
        for end in range(len(table) + 1, len(path) + 1):
            found.setdefault(path[:end], number)
        value = line[key.end():]
        for quote in ('"""', "'''"):
            if value.count(quote) % 2 == 1:
                in_string = quote
        if in_string is None:
            depth = max(0, _balance(value))
    return found


def _balance(text: str) -> int:
    """Brackets a line opens minus those it closes, outside strings and comments."""
    code = _STRINGS.sub("", text).split("#", 1)[0]
    return code.count("[") + code.count("{") - code.count("]") - code.count("}")


def line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    """The line of ``loc``, or of the nearest enclosing key or table the text has."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def where(loc: Loc) -> str:
    """``("algorithms", 2, "params", "eta")`` as ``algorithms[2].params.eta``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices``, or nothing when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def unknown(what: str, name: str, choices: Iterable[str], listed: str) -> str:
    """``unknown algorithm 'aerr2'; did you mean 'aerr'? Known: ...``, or ``...; known: ...`` without a close one."""
    choices = list(choices)
    hint = did_you_mean(name, choices)
    return f"{what} {name!r}{hint}" + (f" {listed[:1].upper()}{listed[1:]}" if hint else f"; {listed}")


def located(source: str, lines: dict[Loc, int], loc: Loc, message: str) -> str:
    line = line_of(lines, loc)
    at = f"{source}:{line}" if line is not None else source
    return f"{at}: {where(loc)}: {message}" if loc else f"{at}: {message}"


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The pydantic model that holds the key at the end of ``loc`` (its parent), if there is one."""
    annotation: Any = model
    for part in loc[:-1]:
        annotation = _unwrap(annotation)
        if isinstance(part, int):
            annotation = (get_args(annotation) or (None,))[0]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part)
            annotation = field.annotation if field is not None else None
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        else:
            return None
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    """``X | None`` as ``X``."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return members[0] if len(members) == 1 else annotation
    return annotation


_TYPE_NAMES = {"int_type": "an integer", "float_type": "a number", "string_type": "a string",
               "bool_type": "a boolean"}


def shape_errors(exc: ValidationError, model: type[BaseModel], source: str, text: str) -> ConfigError:
    """A pydantic validation error of ``model`` read from ``text`` as one located line per problem."""
    lines = key_lines(text)
    messages: list[str] = []
    errors = exc.errors(include_url=False)
    unions: dict[Loc, list[ErrorDetails]] = {}
    for error in errors:
        if error["type"] in _TYPE_NAMES and len(error["loc"]) > 1 and str(error["loc"][-1]) in ("int", "float",
                                                                                             "str", "bool"):
            unions.setdefault(tuple(error["loc"][:-1]), []).append(error)
    done: set[Loc] = set()
    for error in errors:
        loc: Loc = tuple(error["loc"])
        if loc[:-1] in unions and error in unions[loc[:-1]]:
            if loc[:-1] in done:
                continue
            done.add(loc[:-1])
            loc = loc[:-1]
            names = [_TYPE_NAMES[e["type"]] for e in unions[loc]]
            kinds = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
            message = f"expected {kinds}; got {error['input']!r}"
        elif error["type"] == "extra_forbidden":
            parent = _model_at(model, loc)
            known = list(parent.model_fields) if parent is not None else []
            message = f"unknown key {loc[-1]!r}{did_you_mean(str(loc[-1]), known)}"
            if known:
                message += f" (keys here: {', '.join(known)})"
        elif error["type"] == "missing":
            message = "is required"
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
        messages.append(located(source, lines, loc, message))
    return ConfigError("\n".join(messages))
