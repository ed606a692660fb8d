"""The files and sections a text (a preset, a report, a docstring) refers to, and which of them the project lacks.

A reference is a path with a folder (``docs/papers.md``, ``tests/papers/test_claim_ito_table3.py``), a document named in
capitals (``README``, ``ERRATA.md``: the project has one at its root or under ``docs/``, or the name dangles), or a
section, written ``docs/papers.md, section "Ito et al. (2017)"``: a heading of that file must start with it.
Absolute paths (``/usr/share/datasets/...``) name the user's system, not the project, and are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)+[\w.-]+\.(?:md|py|toml|json|txt|yml|yaml|html))\b")
_SECTION = re.compile(r"([\w/.-]+\.md), section \"([^\"]+)\"")
_CAPITALS = re.compile(r"\b(ERRATA|README|DESIGN|CHANGELOG|CONTRIBUTING)(?:\.md)?\b")


def headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in path.read_text().splitlines() if line.startswith("#")]


def dangling(text: str) -> list[str]:
    """What ``text`` refers to that the project does not have (a section's name may wrap onto the next line)."""
    text = " ".join(text.split())
    missing = [path for path in _PATH.findall(text) if not (ROOT / path).exists()]
    missing += [name for name in _CAPITALS.findall(text)
                if not any((ROOT / folder / f"{name}.md").exists() for folder in (".", "docs"))]
    for path, section in _SECTION.findall(text):
        if not (ROOT / path).is_file() or not any(h.startswith(section) for h in headings(ROOT / path)):
            missing.append(f'{path}, section "{section}"')
    return missing
