"""What both services' routes depend on from their app: the objects ``create_app`` put in its state (the session
service, the run manager, the settings), each as a FastAPI dependency of its type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import Request

T = TypeVar("T")


def from_state(name: str, kind: type[T]) -> Callable[[Request], Awaitable[T]]:
    """A request dependency answering the app's ``state.<name>``, a ``kind`` (async: it waits on nothing, so it
    takes no thread of the pool)."""

    async def dependency(request: Request) -> T:
        found: T = getattr(request.app.state, name)
        return found

    return dependency
