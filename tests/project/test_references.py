"""No dangling reference: every file or section that a preset, an algorithm's or a dataset's docstring, or the
papers' page refers to is in the project (the papers' errata live in docs/papers.md, not in a file users lack).
The reports the presets write are checked in tests/client/test_presets.py with the same rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.references import ROOT, dangling

TEXTS = sorted([*(ROOT / "client" / "comparison" / "presets").glob("*.toml"),
                *(ROOT / "learner" / "algorithms").rglob("*.py"),
                *(ROOT / "budgetlab" / "datasets").glob("*.py"), ROOT / "docs" / "papers.md"])


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_reference_exists_in_the_project(path: Path) -> None:
    assert dangling(path.read_text()) == []


def test_a_dangling_reference_is_found() -> None:
    text = """AELR uses 5 attributes, see ERRATA; the rest in docs/nowhere.md, tests/papers/test_claim_ito_table3.py and
    docs/papers.md, section "Ito et al. (2017)", not docs/papers.md, section "Foster
    et al." nor /usr/share/datasets/fashion-mnist (the user's system)."""
    assert dangling(text) == ["docs/nowhere.md", "ERRATA", 'docs/papers.md, section "Foster et al."']
