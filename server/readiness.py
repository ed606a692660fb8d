"""Whether the ledger would refuse a write now, known before one is tried: what writes, ``/readyz`` and the dashboards
go by.

A write that changes nothing (the readiness probe of ``Database.check_writable``) answers for the database itself:
reachable, not a read-only server or file. It cannot answer for room: on a full disk SQLite commits it (it adds
nothing to the log), nor for a file system turned read-only under an open database (SQLite writes its log through
descriptors opened before). Two looks answer for those:

- ``LedgerDisk``, the SQLite ledger's file system as ``statvfs`` sees it: read-only, or no more room free than the
  reserve (``BUDGETLAB_LEDGER_RESERVE_BYTES``). Writes are refused (507) as soon as it says so, before they are
  tried: the reserve is the room the write-ahead log and its checkpoints need to finish what was committed (the log
  at its bound, and as much again for the database taking it in), so that a full disk never leaves the ledger
  unable to checkpoint. Every worker process of one ledger sees the same file system, so they all agree.
- ``LastRefusal``, the last write of this process refused for lack of room (SQLite's SQLITE_FULL above the reserve:
  a quota, a request bigger than the reserve; PostgreSQL's disk full, whose disk the oracle cannot look at): not
  ready until a write succeeds, ``ROOM_BACK`` more bytes are free than then, or ``HOLD`` seconds have passed (the
  Retry-After of the refusal; a write refused again then starts it over).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

from budgetlab.errors import Code, Refused
from server.checkpoint import LIMIT_BYTES
from web.database_faults import full_refusal, read_only_refusal

# How long a refusal for lack of room keeps the oracle not ready without a look that says otherwise (seconds):
# the Retry-After such a refusal carries.
HOLD = 30.0
# Room freed on the file system since a write was refused for lack of it, past which it is deemed back (bytes): a
# write-ahead log at the size where it is started over.
ROOM_BACK = LIMIT_BYTES
# The reserve's default (bytes): the log at its bound (8 MB) and as much again for the database that takes it in.
RESERVE_BYTES = 16 << 20
# How long a look at the file system answers for the writes after it (seconds): a statvfs at every write cost a small
# step 8-12 us (2-3 % of the oracle's CPU per step). A ledger growing 1 MB a second (16 clients stepping) takes 0.1 MB
# of its reserve meanwhile; readiness and the naming of a write's fault look afresh.
LOOK_SECONDS = 0.1


class LedgerDisk:
    """The file system of a SQLite ledger at ``path``, which must keep ``reserve`` bytes free."""

    def __init__(self, path: Path, reserve: int) -> None:
        self.path, self.directory = path, path.parent
        self.reserve = reserve
        self._last: tuple[float, Refused | None] = (-LOOK_SECONDS, None)  # the last look: when, and what it found

    def free(self) -> int | None:
        """Bytes free to this process (root may use the blocks kept for it), or None if it cannot be looked at."""
        looked = self._look()
        return None if looked is None else looked[1]

    def refusal(self, *, touch: bool = False) -> Refused | None:
        """The refusal every write gets now (read-only, or no room past the reserve), else None: as the last look
        found it, if that was less than ``LOOK_SECONDS`` ago and ``touch`` is not asked.

        ``touch``: also set the ledger file's times to now, a write of the file system's own: an ext4 file system
        turned read-only after an error says so only to writes (Linux 6.x: not in statvfs's flags, nor to
        access(2)), and SQLite reports its refused writes as I/O errors. Not at each write (it dirties an inode):
        readiness, and the naming of a write's I/O error, do it."""
        at, refused = self._last
        now = time.monotonic()
        if touch or now - at >= LOOK_SECONDS:
            refused = self._refusal(touch)
            self._last = (now, refused)
        return refused

    def _refusal(self, touch: bool) -> Refused | None:
        looked = self._look()
        if looked is None:  # the directory is gone or unreadable: the database's own error says what it is
            return None
        read_only, free = looked
        if not read_only and touch:
            try:
                os.utime(self.path)
            except OSError as exc:
                read_only = exc.errno == errno.EROFS
        if read_only:
            return read_only_refusal("the oracle", f"the file system of {self.directory} is read-only")
        if free <= self.reserve:
            return full_refusal("the oracle", f"{free:,} bytes free on the file system of {self.directory}, within "
                                              f"the ledger's reserve of {self.reserve:,} bytes "
                                              "(BUDGETLAB_LEDGER_RESERVE_BYTES)")
        return None

    def _look(self) -> tuple[bool, int] | None:
        try:
            st = os.statvfs(self.directory)
        except OSError:
            return None
        return bool(st.f_flag & os.ST_RDONLY), (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


class LastRefusal:
    """The last write refused for lack of room, until room is back (see the module's docstring)."""

    def __init__(self, disk: LedgerDisk | None) -> None:
        self._disk = disk
        self._lock = threading.Lock()
        self._refused: tuple[Refused, float, int | None] | None = None  # the refusal, when, bytes free then

    def refused(self, refusal: Refused) -> None:
        if refusal.error == Code.STORAGE_FULL:
            free = None if self._disk is None else self._disk.free()
            with self._lock:
                self._refused = (refusal, time.monotonic(), free)

    def wrote(self) -> None:
        """A write committed: there is room."""
        if self._refused is not None:  # read without the lock: a write's only cost is this look
            with self._lock:
                self._refused = None

    def current(self) -> Refused | None:
        """The refusal still in force, or None."""
        with self._lock:
            if self._refused is None:
                return None
            refusal, at, free_then = self._refused
            free = None if self._disk is None else self._disk.free()
            back = free is not None and free_then is not None and free >= free_then + ROOM_BACK
            if back or time.monotonic() - at >= HOLD:
                self._refused = None
                return None
            return refusal
