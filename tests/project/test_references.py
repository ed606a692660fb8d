"""No dangling reference: every file or section that a preset, an algorithm's or a dataset's docstring, or the
papers' page refers to is in the project (the papers' errata live in docs/papers.md, not in a file users lack), and
every file the code, the tests, the benchmarks and the pages about the code (docs/internals/) cite. The reports the
presets write are checked in tests/client/test_presets.py with the same rule."""

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


# Texts that hold dangling references on purpose: the rule's own patterns and examples, a fake tree, the names the
# docs site must not mention, and a report a test writes.
FIXTURES = {"tests/references.py", "tests/project/test_references.py", "tests/project/test_layers.py",
            "tests/project/test_function_length.py", "tests/project/test_docs_site.py", "tests/dashboard_helpers.py"}


def test_no_code_test_or_internals_page_names_a_file_the_project_lacks() -> None:
    """Comments, docstrings and the pages about the code cite what the project has (its design is docs/internals/,
    not a file of the team's)."""
    texts = [*(path for folder in ("budgetlab", "web", "server", "learner", "client", "tests", "benchmarks")
               for path in (ROOT / folder).rglob("*.py") if "__pycache__" not in path.parts),
             *(ROOT / "docs" / "internals").glob("*.md"), ROOT / "tests" / "README.md",
             ROOT / "benchmarks" / "README.md"]
    missing = {str(path.relative_to(ROOT)): found for path in texts
               if str(path.relative_to(ROOT)) not in FIXTURES and (found := dangling(path.read_text()))}
    assert missing == {}
