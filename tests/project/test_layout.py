"""docs/internals/layout.md describes the tree as it is: its floors are the import contract's, every file and folder
it names is in the project, and every package of the code is named in it."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from tests.helpers import ROOT

LAYOUT = ROOT / "docs" / "internals" / "layout.md"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
PACKAGES = ("budgetlab", "web", "server", "learner", "client")
NUMBERS = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}
# A file or folder as the page names it: `engine.py`, `presets/`, `server/deployed.py`.
NAMED = re.compile(r"`((?:[\w-]+/)*[\w-]+(?:\.(?:py|md|toml|json)|/))`")


def project_paths() -> set[str]:
    """Every file and folder of the checkout, relative to it (hidden ones, caches and the built site left out)."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "site", "build")
                   and not d.endswith(".egg-info")]
        here = Path(folder).relative_to(ROOT)
        found.update(f"{here / d}/".removeprefix("./") for d in dirs)
        found.update(str(here / f).removeprefix("./") for f in files)
    return found


def test_the_pages_floors_are_the_layers_contracts_from_the_ground_up() -> None:
    layers = next(c for c in CONTRACTS if c["type"] == "layers")["layers"]
    floors = [{name.strip() for name in layer.split("|")} for layer in reversed(layers)]
    text = LAYOUT.read_text()
    listed = [set(re.findall(r"`(\w+)/`", line.partition(":")[0])) for line in text.splitlines()
              if re.match(r"- (ground|between|middle|top)\b", line)]
    assert listed == floors
    assert text.startswith(f"# Layout of the code\n\n{NUMBERS[len(floors)]} floors")


def test_every_file_and_folder_the_page_names_is_in_the_project() -> None:
    paths = project_paths()
    names = {p.rstrip("/").rsplit("/", 1)[-1] + ("/" if p.endswith("/") else "") for p in paths}
    missing = [named for named in NAMED.findall(LAYOUT.read_text())
               if named not in (paths if "/" in named.rstrip("/") else names)]
    assert missing == []


def test_every_package_of_the_code_is_named_on_the_page() -> None:
    named = set(NAMED.findall(LAYOUT.read_text()))
    packages = [init.parent.relative_to(ROOT) for package in PACKAGES for init in (ROOT / package).rglob("__init__.py")]
    unnamed = [str(p) for p in packages if f"{p.name}/" not in named and f"{p}/" not in named]
    assert unnamed == []
