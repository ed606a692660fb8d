"""The SDK's one public face: ``budgetlab.__all__`` (as httpx tests its exported members). Every name in it imports
from ``budgetlab`` and is its module's own object; ``import budgetlab`` alone loads nothing more; the Python
reference lists exactly these names and documents each; the guides import them from ``budgetlab``, not from the
modules they live in."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import budgetlab
from tests.helpers import ROOT

REFERENCE = ROOT / "docs" / "reference" / "python.md"
GUIDES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
MARKER = "<!-- budgetlab.__all__"
# ``::: module`` and, where the page lists them, its ``members: [...]``
DOCUMENTED = re.compile(r"^::: ([\w.]+)\n(?:    options:\n      members: \[([^\]]*)\])?", re.M)


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python[^\n]*\n(.*?)^```", text, re.M | re.S)


def imports_from_budgetlab(code: str) -> list[tuple[str, str]]:
    """(module, name) of each ``from budgetlab... import name`` in ``code``."""
    return [(node.module, alias.name) for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.partition(".")[0] == "budgetlab"
            for alias in node.names]


def is_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def test_every_exported_name_imports_as_its_module_s_own_object() -> None:
    assert budgetlab.__all__ == sorted(budgetlab.__all__)
    assert len(set(budgetlab.__all__)) == len(budgetlab.__all__)
    assert set(budgetlab.__all__) == set(budgetlab._HOMES)
    for name in budgetlab.__all__:
        home = importlib.import_module(budgetlab._HOMES[name])
        assert getattr(budgetlab, name) is getattr(home, name), name
    assert set(budgetlab.__all__) <= set(dir(budgetlab))
    with pytest.raises(AttributeError, match="no attribute 'OracleClent'"):
        budgetlab.OracleClent  # noqa: B018


@pytest.mark.process
def test_importing_budgetlab_loads_nothing_more() -> None:
    """A service's worker imports ``budgetlab.errors`` and the like by their names: the package itself must not
    bring the SDK's clients (httpx), the engine and the datasets (numpy) or the contract (pydantic) along."""
    code = ("import json, sys; import budgetlab; print(json.dumps(sorted(m for m in sys.modules if m.partition('.')[0]"
            " in ('budgetlab', 'httpx', 'websockets', 'numpy', 'pydantic'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["budgetlab"]


def test_the_reference_lists_the_exported_names_and_documents_each() -> None:
    text = REFERENCE.read_text()
    listed = text[text.index(MARKER):].split("\n\n")[0].partition("-->")[2]
    assert sorted(re.findall(r"`(\w+)`", listed)) == budgetlab.__all__
    blocks = {module: members for module, members in DOCUMENTED.findall(text)}
    for name in budgetlab.__all__:
        home = budgetlab._HOMES[name]
        if home.startswith("budgetlab.contract."):
            continue  # a wire model: the HTTP references describe it, field by field
        assert home in blocks, f"{name}: python.md documents nothing of {home}"
        members = blocks[home]
        assert not members or name in re.findall(r"\w+", members), f"{name} is not among {home}'s members"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_guides_import_the_exported_names_from_budgetlab(guide: Path) -> None:
    wrong = []
    for code in python_blocks(guide.read_text()):
        for module, name in imports_from_budgetlab(code):
            if module == "budgetlab" and name not in budgetlab.__all__ and not is_module(f"budgetlab.{name}"):
                wrong.append(f"from budgetlab import {name}: not exported")
            elif module != "budgetlab" and name in budgetlab.__all__:
                wrong.append(f"from {module} import {name}: exported by budgetlab itself")
    assert wrong == []


def test_the_sdk_guide_imports_from_budgetlab() -> None:
    """The parametrized check above passes on a guide that imports nothing: this one must import the SDK."""
    imported = {name for code in python_blocks((ROOT / "docs" / "guide" / "sdk.md").read_text())
                for module, name in imports_from_budgetlab(code) if module == "budgetlab"}
    assert {"OracleClient", "AsyncOracleClient", "LearnerClient", "LocalSession", "Budget", "BudgetExhausted"} <= \
        imported
