"""Where a result came from: budgetlab's version and git commit, the numerical libraries, Python and the host.

The version is the installed distribution's (``importlib.metadata``); the commit is read only when budgetlab runs
from a git checkout (the package's parent directory holds ``.git``), with whether tracked files were modified.
"""

from __future__ import annotations

import platform
import socket
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[2]
LIBRARIES = ("numpy", "scikit-learn", "scipy")


def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@cache
def git_state() -> dict[str, Any] | None:
    """``{"commit", "modified"}`` of the checkout budgetlab runs from; None when it is not one (an installed
    wheel, or git missing)."""
    if not (CHECKOUT / ".git").exists():
        return None
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "modified": bool(status) if status is not None else None}


def provenance() -> dict[str, Any]:
    """What ``results.json`` records of the software and machine that produced it."""
    git = git_state()
    return {
        "budgetlab": _installed("budgetlab"),
        "git_commit": git["commit"] if git else None,
        "git_modified": git["modified"] if git else None,
        "python": platform.python_version(),
        **{name: _installed(name) for name in LIBRARIES},
        "host": socket.gethostname(),
        "platform": platform.platform(),
    }


def plugin_origins(names: Iterable[str], served: Mapping[str, tuple[str, str | None]] | None = None,
                   ) -> dict[str, dict[str, str | None]]:
    """``Provenance.algorithms``: the package, version and code of each algorithm of ``names`` that is not
    budgetlab's own; one not installed here ran on a learner that has it: its package and version are those the
    learner lists (``served``), else nulls."""
    from learner.algorithms import ParamError, algorithm_modules, origin

    found: dict[str, dict[str, str | None]] = {}
    for name in dict.fromkeys(names):
        if name in algorithm_modules():
            continue
        try:
            where = origin(name)
        except ParamError:
            package, version = (served or {}).get(name, (None, None))
            found[name] = {"package": package, "version": version, "target": name if ":" in name else None}
        else:
            found[name] = {"package": where.package, "version": where.version, "target": where.target}
    return found


def version_line() -> str:
    """``budgetlab --version``: ``budgetlab 0.1.0 (git 3ec2ded, modified; Python 3.11.2)``."""
    git = git_state()
    where = f"git {git['commit'][:12]}" + (", modified" if git["modified"] else "") + "; " if git else ""
    return f"budgetlab {_installed('budgetlab') or 'unknown'} ({where}Python {platform.python_version()})"
