"""Readiness that tells the truth about the ledger's disk, on real file systems mounted by the test: a tmpfs filled up
while the oracle runs, and an ext4 image that the kernel turns read-only under it (``errors=remount-ro`` after an
error, as a failing disk does; an administrator's ``mount -o remount,ro`` is refused while the oracle holds its files
open for writing, so that is not how a ledger's file system turns read-only under a running oracle).

/readyz is 503 with the reason as its error whenever writes are refused, /healthz stays 200, reads go on, nothing
refused is charged, and the oracle is ready and writes again once there is room. Mounting needs root (or
CAP_SYS_ADMIN): without it these tests skip, saying so; the same behaviour is tested at the database layer (SQLite's
``max_page_count`` and ``query_only``) in ``test_database_faults.py``, which needs no mount.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from server import readiness
from server.app import create_app
from server.config import Settings
from server.readiness import LedgerDisk
from tests.helpers import session_auth
from tests.servers import serve_in_thread

STREAM = {"dataset": "sparse-gaussian", "budget": {"per_example": 10},
        "dataset_params": {"d": 20, "n_train": 2000, "n_test": 10, "s_plus": 2, "s_minus": 2}}
MOUNT_SIZE = "12m"


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _mount_or_skip(*args: str) -> None:
    if shutil.which("mount") is None:
        pytest.skip("no mount command here: the database-layer faults of test_database_faults.py stand in")
    done = _run("mount", *args)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a file system here ({done.stderr.strip() or done.returncode}; needs root or "
                    "CAP_SYS_ADMIN): the database-layer faults of test_database_faults.py stand in")


def _unmount(folder: Path) -> None:
    # Lazily if something still holds a file there, so that a failing test never leaves a mount behind.
    if _run("umount", str(folder)).returncode != 0:
        _run("umount", "-l", str(folder))


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "tmpfs"
    folder.mkdir()
    _mount_or_skip("-t", "tmpfs", "-o", f"size={MOUNT_SIZE}", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        _unmount(folder)


@contextmanager
def _oracle(ledger: Path, **settings: Any) -> Iterator[tuple[str, Any]]:
    """The oracle on ``ledger``, served; its files all closed when it ends (the file system can then be unmounted)."""
    app = create_app(Settings(database_url=f"sqlite:///{ledger}", batch_process=False, **settings))
    try:
        with serve_in_thread(app) as url:
            yield url, app
    finally:
        app.state.sessions.close_connections()


def _fill(folder: Path, leave: int = 0) -> Path:
    """A file that takes every byte of the file system but ``leave``."""
    filler = folder / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * (1 << 16))
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    # The last chunk may be partly written; what the file system then holds is all of it.
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def _step(http: httpx.Client, url: str, created: dict[str, Any]) -> httpx.Response:
    return http.post(f"{url}/v1/sessions/{created['id']}/step", headers=session_auth(created),
                     json={"attributes": list(range(10))})


def _spent(http: httpx.Client, url: str, created: dict[str, Any]) -> float:
    answer = http.get(f"{url}/v1/sessions/{created['id']}", headers=session_auth(created))
    assert answer.status_code == 200, answer.text  # reads go on whatever the disk's state
    return answer.json()["spent"]["cost"]


@pytest.mark.parametrize("reserve", [1 << 20, 0], ids=["below-the-reserve", "sqlite-full"])
def test_a_full_file_system_makes_the_oracle_not_ready_until_space_returns(tmpfs: Path, reserve: int,
                                                                            http: httpx.Client) -> None:
    """With a reserve, a file system filled past it refuses writes before SQLite tries them; without one, SQLite
    runs out of room itself (SQLITE_FULL) while the file system still shows some: readiness says so either way."""
    with _oracle(tmpfs / "ledger.db", ledger_reserve_bytes=reserve) as (url, _):
        created = http.post(f"{url}/v1/sessions", json=STREAM).json()
        assert _step(http, url, created).status_code == 200
        assert http.get(f"{url}/readyz").json() == {"status": "ready", "database": "ok"}

        # Without a reserve, a little room is left: a few steps still fit before SQLite runs out of it.
        filler = _fill(tmpfs, leave=0 if reserve else 64 << 10)
        paid = 10
        for _ in range(500):
            answer = _step(http, url, created)
            if answer.status_code != 200:
                break
            paid += 10
        assert (answer.status_code, answer.json()["error"]) == (507, "storage_full"), answer.text
        assert "nothing was done or charged" in answer.json()["detail"]
        opened = http.post(f"{url}/v1/sessions", json=STREAM)
        assert (opened.status_code, opened.json()["error"]) == (507, "storage_full"), opened.text
        ready = http.get(f"{url}/readyz")
        assert (ready.status_code, ready.json()["error"]) == (503, "storage_full"), ready.text
        assert ready.headers["Retry-After"] == "30"
        assert http.get(f"{url}/healthz").status_code == 200, "liveness is not readiness"
        assert _spent(http, url, created) == paid, "a refused step charged nothing"
        dashboard = http.get(f"{url}/v1/dashboard/sessions").json()
        assert (dashboard["ledger"]["ready"], dashboard["ledger"]["error"]) == (False, "storage_full")

        filler.unlink()  # space returns
        assert http.get(f"{url}/readyz").status_code == 200
        assert _step(http, url, created).status_code == 200
        assert _spent(http, url, created) == paid + 10
        audit = http.get(f"{url}/v1/sessions/{created['id']}/audit", headers=session_auth(created)).json()
        assert audit["compliant"], audit


def test_the_oracle_does_not_start_on_a_file_system_within_its_reserve(tmpfs: Path) -> None:
    with pytest.raises(ValueError, match="cannot be written.*BUDGETLAB_LEDGER_RESERVE_BYTES"):
        create_app(Settings(database_url=f"sqlite:///{tmpfs / 'ledger.db'}", batch_process=False,
                            ledger_reserve_bytes=64 << 20))


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """An ext4 file system on a loop device that turns read-only on an error; yields it and its error trigger."""
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("no mkfs.ext4 here: the database-layer read-only fault of test_database_faults.py stands in")
    image, folder = tmp_path / "ext4.img", tmp_path / "ext4"
    folder.mkdir()
    with image.open("wb") as out:
        out.truncate(32 << 20)
    made = _run("mkfs.ext4", "-q", "-F", str(image))
    assert made.returncode == 0, made.stderr
    _mount_or_skip("-o", "loop,errors=remount-ro", str(image), str(folder))
    try:
        device = next(line.split()[0] for line in Path("/proc/mounts").read_text().splitlines()
                      if line.split()[1] == str(folder))
        trigger = Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
        if not trigger.exists():
            pytest.skip(f"this kernel has no {trigger} to fail ext4 with: the database-layer read-only fault of "
                        "test_database_faults.py stands in")
        yield folder, trigger
    finally:
        _unmount(folder)


def test_a_file_system_turned_read_only_under_the_oracle_makes_it_not_ready(ext4: tuple[Path, Path], tmp_path: Path,
                                                                           http: httpx.Client) -> None:
    folder, trigger = ext4
    ledger = folder / "ledger.db"
    with _oracle(ledger) as (url, _):
        created = http.post(f"{url}/v1/sessions", json=STREAM).json()
        assert _step(http, url, created).status_code == 200
        assert http.get(f"{url}/readyz").status_code == 200

        trigger.write_text("budgetlab test: a disk error\n")  # the kernel remounts the file system read-only
        ready = http.get(f"{url}/readyz")
        assert (ready.status_code, ready.json()["error"]) == (503, "read_only"), ready.text
        assert "read-only" in ready.json()["detail"]
        refused = [_step(http, url, created), http.post(f"{url}/v1/sessions", json=STREAM)]
        assert [(r.status_code, r.json()["error"]) for r in refused] == [(507, "read_only")] * 2, [r.text for r in
                                                                                                  refused]
        assert http.get(f"{url}/healthz").status_code == 200
        assert _spent(http, url, created) == 10, "reads go on; the refused step charged nothing"
        dashboard = http.get(f"{url}/v1/dashboard/sessions").json()
        assert (dashboard["ledger"]["ready"], dashboard["ledger"]["error"]) == (False, "read_only")

    # An ext4 file system that failed comes back only through an unmount and a check; the ledger with it.
    copy = tmp_path / "after.db"
    shutil.copy(ledger, copy)
    for sidecar in ("-wal", "-shm"):
        if Path(f"{ledger}{sidecar}").exists():
            shutil.copy(f"{ledger}{sidecar}", f"{copy}{sidecar}")
    with _oracle(copy) as (url, _):
        assert http.get(f"{url}/readyz").status_code == 200
        assert _step(http, url, created).status_code == 200
        assert _spent(http, url, created) == 20
        audit = http.get(f"{url}/v1/sessions/{created['id']}/audit", headers=session_auth(created)).json()
        assert audit["compliant"], audit


def test_a_look_at_the_file_system_answers_for_the_writes_of_a_moment(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A statvfs at every write cost a small step 8-12 us: a write goes by a look less than ``LOOK_SECONDS`` old,
    while readiness (``touch``) looks afresh, and the writes after it go by what it found. No mount needed."""
    ledger = tmp_path / "ledger.db"
    ledger.touch()
    looks: list[str] = []
    statvfs = os.statvfs

    def counted(path: Any) -> os.statvfs_result:
        looks.append(str(path))
        return statvfs(path)

    monkeypatch.setattr(os, "statvfs", counted)
    monkeypatch.setattr(readiness, "LOOK_SECONDS", 3600.0)  # no look goes stale during the test
    disk = LedgerDisk(ledger, reserve=1 << 62)  # more than any file system holds: every write refused
    first = disk.refusal()
    assert first is not None and first.error == "storage_full"
    disk.reserve = 0  # room again, which a write does not look for
    assert disk.refusal() is first and len(looks) == 1
    assert disk.refusal(touch=True) is None and len(looks) == 2  # readiness looks afresh
    assert disk.refusal() is None and len(looks) == 2  # and the writes go by its look

    monkeypatch.setattr(readiness, "LOOK_SECONDS", 0.0)  # every look stale at once: each write looks
    disk.reserve = 1 << 62
    refused = disk.refusal()
    assert refused is not None and refused.error == "storage_full" and len(looks) == 3
