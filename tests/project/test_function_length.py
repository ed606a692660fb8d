"""No function of the product is longer than 60 lines (#35): a function that long does several things, and a
newcomer reads it whole to change one. Counted from its ``def`` (decorators excluded) to its last line, docstring
included, over every package the project ships; tests, benchmarks and migrations are not product code."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

LIMIT = 60
PACKAGES = ("budgetlab", "web", "server", "learner", "client")


def long_functions(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > LIMIT:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_product_function_is_longer_than_60_lines() -> None:
    assert long_functions() == []


def test_the_count_finds_a_long_method_and_spares_a_migration(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "migrations").mkdir(parents=True)
    body = "\n".join(f"        x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "pkg" / "mod.py").write_text(f"class A:\n    async def long(self):\n{body}\n\n    def short(self):\n"
                                            "        return 1\n")
    (tmp_path / "pkg" / "migrations" / "m.py").write_text(f"def upgrade():\n{body}\n")
    assert long_functions(tmp_path, ("pkg",)) == [f"pkg/mod.py:2 long ({LIMIT + 1} lines)"]
