"""How both services read their settings from the environment: one rule for each kind of value, so that the oracle's
and the learner's variables read alike. A variable that is unset or empty takes its default (a count, an amount: None,
no limit); names are separated by spaces or commas."""

from __future__ import annotations

import os


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


def env_count(name: str, default: int | None = None) -> int | None:
    text = os.environ.get(name)
    return default if not text else int(text)


def env_amount(name: str) -> float | None:
    text = os.environ.get(name)
    return None if not text else float(text)


def env_names(name: str) -> tuple[str, ...] | None:
    """The names the variable lists; None when it is unset (an empty one lists none)."""
    text = os.environ.get(name)
    return None if text is None else tuple(text.replace(",", " ").split())


def env_switch(name: str, default: bool) -> bool:
    text = os.environ.get(name)
    return default if not text else text.strip().lower() not in ("0", "false", "no", "off")
