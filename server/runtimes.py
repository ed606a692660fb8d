"""The runtimes (dataset, costs, stream order) of the sessions this process served lately, in bounded memory.

An LRU of at most ``max_entries`` sessions whose own arrays (stream orders, costs) take at most ``max_bytes``.
Their datasets are the registry's: the cache keeps no runtime whose dataset the registry's cache has evicted,
else sessions on many datasets (distinct seeds of a big one) would keep every one of them alive past that
cache's bound. A hit counts as a use of its dataset in the registry's LRU (``cache_touch``), so the datasets of the
sessions in use stay cached while idle ones go; the runtimes are swept when the registry has evicted something
since the last look.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from budgetlab.datasets.registry import cache_evictions, cache_holds, cache_touch
from budgetlab.engine import Runtime

MAX_ENTRIES = 1024
MAX_BYTES = 128 << 20


def own_bytes(rt: Runtime) -> int:
    """What a runtime holds besides its (shared) dataset."""
    return rt.costs.nbytes + (0 if rt.order is None else rt.order.nbytes)


class RuntimeCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries: OrderedDict[str, tuple[Runtime, int]] = OrderedDict()
        self._bytes = 0
        self._seen_evictions = cache_evictions()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, session_id: str) -> Runtime | None:
        with self._lock:
            self._sweep()
            entry = self._entries.get(session_id)
            if entry is None:
                return None
            if not cache_touch(entry[0].dataset):  # evicted since the last sweep
                self._drop(session_id)
                return None
            self._entries.move_to_end(session_id)
            return entry[0]

    def put(self, session_id: str, rt: Runtime) -> None:
        size = own_bytes(rt)
        with self._lock:
            self._drop(session_id)
            self._entries[session_id] = (rt, size)
            self._bytes += size
            while len(self._entries) > 1 and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                self._drop(next(iter(self._entries)))
            self._sweep()

    def _drop(self, session_id: str) -> None:
        entry = self._entries.pop(session_id, None)
        if entry is not None:
            self._bytes -= entry[1]

    def _sweep(self) -> None:
        evictions = cache_evictions()
        if evictions == self._seen_evictions:
            return
        self._seen_evictions = evictions
        for session_id in [sid for sid, (rt, _) in self._entries.items() if not cache_holds(rt.dataset)]:
            self._drop(session_id)
