"""Choosing ahead (``Algorithm.select_ahead``): what an algorithm that offers it keeps for the examples it chose.

``select()`` sets what its ``update()`` reads (the draws it made for the example); choosing several examples ahead
makes them all before the first ``update()``, so each is kept in order until its example's ``update()`` takes it.
``window`` is the number of selections an offer may make: at most the caller's ``limit``, and no further than the
point where what the examples show may change the choice (the end of a mini-batch, of a phase).
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


def window(limit: int, left: int | None) -> int:
    """How many selections to make ahead: ``limit``, at most the ``left`` examples until the choice may change (None:
    it never does), at least one (an offer makes one: the next example's choice is always known)."""
    return max(1, limit if left is None else min(limit, left))


class Ahead(Generic[T]):
    """The per-example state ``select()`` would set (``T``: the draws of one example), made ahead for the next
    examples, oldest first."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: deque[T] = deque()

    def keep(self, made: list[T]) -> list[T]:
        """Keep ``made``, one per coming example in order, for their ``update()``s; returns it."""
        self._pending.extend(made)
        return made

    def take(self, current: T) -> T:
        """The state of the example being learnt from: the oldest kept, or ``current`` (what ``select()`` set) when
        none is kept: that example was chosen by ``select()``."""
        return self._pending.popleft() if self._pending else current
