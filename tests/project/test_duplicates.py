"""The product's code written twice stays rare (#35): at most 8 pairs of places sharing 6 or more lines of logic.

pylint's ``symilar`` counts them over every package the project ships (migrations aside: each is a frozen copy of a
schema by design), docstrings, comments, imports and signatures left out, since explicit keyword constructors in the
scikit-learn way repeat their parameters by design. The pairs it finds today are the constructors of the papers'
twin algorithms (AERR/AELR-shaped pairs that set the same attributes before their geometry differs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.project.test_function_length import PACKAGES

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

MOST_PAIRS = 8
MIN_LINES = 6
PAIR = re.compile(r"^(\d+) similar lines in (\d+) files$", re.MULTILINE)


def similar_pairs(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    files = [str(path) for package in packages for path in sorted((root / package).rglob("*.py"))
             if "migrations" not in path.parts]
    answer = subprocess.run([sys.executable, "-m", "pylint.checkers.symilar", "-d", str(MIN_LINES),
                             "--ignore-comments", "--ignore-docstrings", "--ignore-imports", "--ignore-signatures",
                             *files], capture_output=True, text=True, cwd=root, check=False)
    assert "TOTAL lines=" in answer.stdout, answer.stdout[-2000:] + answer.stderr[-2000:]
    blocks = answer.stdout.split("\n\n")
    return [block.strip() for block in blocks if PAIR.search(block)]


def test_the_product_writes_at_most_8_pairs_of_places_twice() -> None:
    pairs = similar_pairs()
    assert len(pairs) <= MOST_PAIRS, "\n\n".join(pairs)


def test_the_count_finds_logic_written_twice(tmp_path: Path) -> None:
    body = "\n".join(f"    total = total * {i} + len(items[{i}:])" for i in range(MIN_LINES + 2))
    (tmp_path / "pkg").mkdir()
    for name in ("a", "b"):
        (tmp_path / "pkg" / f"{name}.py").write_text(f'def {name}(items):\n    """Different words {name}."""\n'
                                                   f"    total = 0\n{body}\n    return total\n")
    (tmp_path / "pkg" / "migrations").mkdir()
    (tmp_path / "pkg" / "migrations" / "c.py").write_text(f"def c(items):\n    total = 0\n{body}\n    return total\n")
    pairs = similar_pairs(tmp_path, ("pkg",))
    assert len(pairs) == 1 and "a.py" in pairs[0] and "b.py" in pairs[0] and "c.py" not in pairs[0]
