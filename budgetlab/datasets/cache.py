"""Parsed collections cached on disk: a bundled file is parsed once per machine, not once per process.

Where: ``$BUDGETLAB_CACHE_DIR`` if set, else the per-user cache directory (platformdirs: ``~/.cache/budgetlab`` on
Linux), in ``datasets/``. An entry is a directory ``<name>-<key>/`` with one ``.npy`` file per array, read back
memory-mapped and read-only (no copy in memory until a session reads its rows). The key hashes the collection's
name, its loader's ``version`` (bumped when the parsing changes) and the path, size and modification time of each
source file, so a changed source or loader builds a new entry; older entries of the same name are then removed.

Two processes may build an entry at once: each writes a temporary directory and renames it into place, which
either succeeds whole or finds the entry already there (the other copy is dropped), so a reader never sees half
an entry. Parsing is announced on the ``budgetlab.datasets`` logger (the CLI prints it), as is a cache that cannot
be written (the arrays are then served from memory, and parsed again by the next process).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger("budgetlab.datasets")

ENV = "BUDGETLAB_CACHE_DIR"
FORMAT = 1  # of an entry's layout; part of every key
# A temporary directory older than this is a crashed build's, removed when an entry of its name is written.
STALE_SECONDS = 3600


def cache_root() -> Path:
    """The directory of the dataset entries (not created until one is written)."""
    configured = os.environ.get(ENV)
    if configured:
        return Path(configured).expanduser() / "datasets"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("budgetlab", appauthor=False)) / "datasets"


def entry_key(name: str, version: int, sources: Sequence[Path]) -> str:
    """What an entry is valid for: the name, the loader's version, each source's path, size and mtime."""
    stamps = []
    for path in sources:
        stat = path.stat()
        stamps.append([str(path.resolve()), stat.st_size, stat.st_mtime_ns])
    text = json.dumps({"format": FORMAT, "name": name, "version": version, "sources": stamps}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_arrays(name: str, what: str, version: int, sources: Sequence[Path],
                  build: Callable[[], Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays ``build`` parses from ``sources``, from the cache when an entry for them exists, else built, written
    to the cache and announced (``what`` names the collection in that line)."""
    root = cache_root()
    entry = root / f"{name}-{entry_key(name, version, sources)}"
    found = _read(entry)
    if found is not None:
        return found
    log.info("parsing %s once; later loads read the cache in %s", what, root)
    arrays = {key: np.ascontiguousarray(value) for key, value in build().items()}
    try:
        _write(entry, arrays)
    except OSError as exc:
        log.warning("cannot write the dataset cache in %s (%s): %s is served from memory and parsed again by the next "
                    "process; set %s to a writable directory", root, exc.strerror or exc, what, ENV)
        return arrays
    found = _read(entry)
    return found if found is not None else arrays


def _read(entry: Path) -> dict[str, np.ndarray] | None:
    try:
        names = json.loads((entry / "arrays.json").read_text())
        return {key: np.load(entry / f"{key}.npy", mmap_mode="r", allow_pickle=False) for key in names}
    except (OSError, ValueError):  # no entry, or one removed meanwhile by a newer key's writer: build it again
        return None


def _write(entry: Path, arrays: Mapping[str, np.ndarray]) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent))
    try:
        for key, array in arrays.items():
            np.save(temporary / f"{key}.npy", array, allow_pickle=False)
        # Written last: an entry is complete when its list of arrays exists.
        (temporary / "arrays.json").write_text(json.dumps(list(arrays)))
        try:
            temporary.rename(entry)
        except OSError:
            if (entry / "arrays.json").exists():
                return  # another process renamed its copy into place first: keep that one
            # A directory without its list of arrays (cut short by hand): replace it.
            shutil.rmtree(entry, ignore_errors=True)
            temporary.rename(entry)
        _remove_older(entry)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _remove_older(entry: Path) -> None:
    """Entries of the same name under other keys (an old source or loader) and crashed builds' temporaries."""
    name, key = entry.name.rsplit("-", 1)
    now = time.time()
    for other in entry.parent.iterdir():
        if other == entry:
            continue
        other_name, _, other_key = other.name.rpartition("-")
        if other_name == name and len(other_key) == len(key):
            shutil.rmtree(other, ignore_errors=True)
        elif other.name.startswith(f".{name}-") and other.name.endswith(".tmp"):
            try:
                if now - other.stat().st_mtime > STALE_SECONDS:
                    shutil.rmtree(other, ignore_errors=True)
            except OSError:
                pass
