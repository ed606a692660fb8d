"""The house stands the right way up: the import contracts of pyproject.toml's ``[tool.importlinter]`` hold
(import-linter; imports inside functions and under ``if TYPE_CHECKING:`` count).

- floors: ``client`` > ``server`` | ``learner`` (side by side, neither imports the other) > ``web`` > ``budgetlab``;
- the ground floor imports no web framework, database, plotting or command-line stack;
- the learner's core never imports its service (``learner.service``, imported by itself and the top floor alone);
- no package's modules import each other in a cycle.

The contracts are also run on a small fake tree that breaks each of them, so a contract that checks nothing fails."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def lint_imports(root: Path, cache: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-logo", *([] if cache else ["--no-cache"])], cwd=root,
                          capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(root),
                                                                            "PATH": "/usr/bin:/bin"})


@pytest.mark.process
def test_the_import_contracts_hold() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in done.stdout


@pytest.mark.process
def test_the_contracts_name_what_breaks_them(tmp_path: Path) -> None:
    """A fake tree with one breach of each contract, every one of them inside a function."""
    files = {
        "budgetlab/__init__.py": "",
        # back up the floors, and a web framework on the ground floor
        "budgetlab/engine.py": "def f():\n    import server.app\n    import fastapi\n",
        # a cycle between two modules of one package
        "budgetlab/a.py": "def f():\n    from budgetlab import b\n",
        "budgetlab/b.py": "def f():\n    from budgetlab import a\n",
        "web/__init__.py": "",
        "server/__init__.py": "",
        "server/app.py": "",
        # the two services side by side
        "learner/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import server.app\n",
        # the learning core reaching up into the service
        "learner/runner.py": "def f():\n    import learner.service.app\n",
        "learner/service/__init__.py": "",
        "learner/service/app.py": "",
        "client/__init__.py": "",
        "fastapi/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    done = lint_imports(tmp_path, cache=False)
    assert done.returncode == 1
    out = done.stdout
    assert f"Contracts: 0 kept, {len(CONFIG['contracts'])} broken." in out, out
    for breach in ("budgetlab.engine -> server.app", "learner -> server.app", "budgetlab.engine -> fastapi",
                   "No cycles are allowed in budgetlab", "- .b -> .a (1 import)",
                   "learner.runner -> learner.service.app"):
        assert breach in out, (breach, out)


def test_the_dashboards_pages_are_the_top_floor_s() -> None:
    """The dashboards' pages are the top floor's (docs/internals/layout.md): the services below answer them with JSON
    and events."""
    pages = {".html", ".js", ".css"}
    below = [f.relative_to(ROOT) for package in ("budgetlab", "web", "server", "learner")
             for f in (ROOT / package).rglob("*") if f.suffix in pages]
    assert not below, f"pages below the top floor: {below}"
    assert {"oracle.html", "learner.html"} <= {f.name for f in (ROOT / "client" / "static").iterdir()}
