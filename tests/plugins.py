"""The example plugin (``examples/budgetlab-example-plugin``) made visible as ``pip install -e`` would make it, in a
second: its directory and a ``.dist-info`` (``METADATA``, ``entry_points.txt``, written from its pyproject.toml) on a
path, so that ``importlib.metadata`` finds its entry points and ``import`` its package."""

from __future__ import annotations

import tomllib
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "budgetlab-example-plugin"
PROJECT = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
PACKAGE, VERSION = PROJECT["name"], PROJECT["version"]
ENTRY_POINTS = PROJECT["entry-points"]["budgetlab.algorithms"]
ALGORITHM = next(iter(ENTRY_POINTS))  # split-sgd
TARGET = ENTRY_POINTS[ALGORITHM]


def write_metadata(directory: Path) -> Path:
    """The example's .dist-info in ``directory``; with ``EXAMPLE`` and ``directory`` on the path, it is installed."""
    info = directory / f"{PACKAGE.replace('-', '_')}-{VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {VERSION}\n")
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (info / "entry_points.txt").write_text(f"[budgetlab.algorithms]\n{lines}")
    return directory
