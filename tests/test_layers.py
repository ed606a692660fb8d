"""The house stands the right way up (DESIGN.md, issue 10): the ground floor (``budgetlab``) imports none of the
floors above it, ``server`` and ``learner`` stand side by side without importing each other or the top floor
(``client``), and no module of the four packages is in an import cycle. Imports inside functions and under
``if TYPE_CHECKING:`` count. The sources are parsed with ``ast``, never imported."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("budgetlab", "server", "learner", "client")
# What each top-level package must never import (the floors: ground, then middle side by side, then top).
FORBIDDEN = {
    "budgetlab": {"server", "learner", "client"},
    "server": {"learner", "client"},
    "learner": {"server", "client"},
    "client": set(),
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (a submodule where ``from pkg import sub`` names one)
    path: str  # file of the importing module, relative to the root
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.path}:{self.line})"


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Module name -> file, for every .py file under the given top-level packages (``__init__`` is the package)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _existing(name: str, modules: dict[str, Path]) -> str | None:
    """The module itself if it is one of ours, else its longest prefix that is (``a.b.attr`` -> ``a.b``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _base_of_relative(module: str, is_package: bool, level: int) -> str:
    """The package a relative import of ``level`` dots starts from, inside ``module``."""
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]  # a plain module's "." is its package
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


def _import_module_call(node: ast.Call) -> str | None:
    """``importlib.import_module("a.b")`` / ``import_module("a.b")`` / ``__import__("a.b")`` with a literal name."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        if isinstance(value, str) and not value.startswith("."):
            return value
    return None


def import_edges(root: Path, packages: Iterable[str] = PACKAGES) -> tuple[dict[str, Path], list[Edge]]:
    """Every import (anywhere in a file: top level, functions, ``if TYPE_CHECKING:``) between modules of the
    packages, resolved to the module it loads: relative imports against the importing module's package,
    ``from pkg import sub`` to ``pkg.sub`` when ``sub`` is a module, ``import a.b.c`` to ``a.b.c``."""
    modules = module_files(root, packages)
    edges: list[Edge] = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = _base_of_relative(module, is_package, node.level)
                    origin = f"{base}.{node.module}" if node.module and base else (node.module or base)
                else:
                    origin = node.module or ""
                for alias in node.names:
                    submodule = f"{origin}.{alias.name}"
                    targets.append(submodule if alias.name != "*" and submodule in modules else origin)
            elif isinstance(node, ast.Call):
                literal = _import_module_call(node)
                targets = [literal] if literal else []
            for name in targets:
                target = _existing(name, modules)
                if target is not None and target != module:
                    edges.append(Edge(module, target, rel, node.lineno))
    return modules, sorted(set(edges), key=lambda e: (e.source, e.target, e.line))


def floor_violations(edges: Iterable[Edge]) -> list[Edge]:
    return [e for e in edges if e.target.split(".")[0] in FORBIDDEN.get(e.source.split(".")[0], set())]


def import_components(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative), sorted."""
    graph = _graph(edges)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def _graph(edges: Iterable[Edge]) -> dict[str, dict[str, Edge]]:
    """source -> target -> the first edge (lowest line) between them; every module a key."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in sorted(edges, key=lambda e: (e.source, e.target, e.line)):
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
        graph.setdefault(edge.target, {})
    return graph


def import_cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One concrete cycle (as its edges, with file and line) for each strongly connected component: the shortest
    way from the component's first module back to itself."""
    edges = list(edges)
    graph = _graph(edges)
    cycles = []
    for component in import_components(edges):
        members, start = set(component), component[0]
        previous: dict[str, Edge] = {}
        frontier, found = [start], None
        while frontier and found is None:  # breadth first, inside the component
            reached = []
            for node in frontier:
                for child, edge in graph[node].items():
                    if child == start:
                        found = found or edge
                    elif child in members and child not in previous:
                        previous[child] = edge
                        reached.append(child)
            frontier = reached
        assert found is not None  # a strongly connected component always has one
        cycle = [found]
        while cycle[0].source != start:
            cycle.insert(0, previous[cycle[0].source])
        cycles.append(cycle)
    return cycles


def describe_cycle(cycle: list[Edge]) -> str:
    names = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
    return names + "\n" + "\n".join(f"    {e}" for e in cycle)


def describe_cycles(edges: Iterable[Edge]) -> str:
    """Each component: its modules, one cycle through it, and every import inside it (the ones to cut)."""
    edges = sorted(set(edges), key=lambda e: (e.source, e.target, e.line))
    out = []
    for component, cycle in zip(import_components(edges), import_cycles(edges), strict=True):
        members = set(component)
        inside = [e for e in edges if e.source in members and e.target in members]
        out.append(f"{len(component)} modules in a cycle: {', '.join(component)}\n  one cycle: "
                   + describe_cycle(cycle) + "\n  every import among them:\n"
                   + "\n".join(f"    {e}" for e in inside))
    return "\n".join(out)


# --- the real tree --------------------------------------------------------------------------------


def test_every_package_is_there_and_parsed() -> None:
    modules, edges = import_edges(ROOT)
    for package in PACKAGES:
        assert package in modules, f"{package}/__init__.py is missing"
    assert edges  # the parser sees the imports at all


def test_no_import_runs_back_up_the_floors() -> None:
    _, edges = import_edges(ROOT)
    violations = floor_violations(edges)
    assert not violations, "imports against the floors (ground: budgetlab; middle: server | learner; top: client):\n" \
        + "\n".join(f"  {e}" for e in violations)


def test_no_module_is_in_an_import_cycle() -> None:
    _, edges = import_edges(ROOT)
    cycles = import_cycles(edges)
    assert not cycles, "import cycles (imports inside functions and under TYPE_CHECKING included):\n" \
        + describe_cycles(edges)


def test_the_dashboards_pages_are_the_top_floor_s() -> None:
    """DESIGN.md puts the dashboards' pages on the top floor: the services below answer them with JSON and events."""
    pages = {".html", ".js", ".css"}
    below = [f.relative_to(ROOT) for package in ("budgetlab", "server", "learner")
             for f in (ROOT / package).rglob("*") if f.suffix in pages]
    assert not below, f"pages below the top floor: {below}"
    assert {"oracle.html", "learner.html"} <= {f.name for f in (ROOT / "client" / "static").iterdir()}


# --- the checker itself, on small fake trees -----------------------------------------------------


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def pairs(edges: Iterable[Edge]) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in edges}


def test_imports_resolve_to_the_module_they_load(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "budgetlab/__init__.py": "from .models import Thing\n",
        "budgetlab/models.py": "import json\nfrom budgetlab import errors\n",
        "budgetlab/errors.py": "",
        "budgetlab/sub/__init__.py": "from . import deep\nfrom .. import models\n",
        "budgetlab/sub/deep.py": "from ..errors import Refused\nimport budgetlab.sub\nfrom budgetlab.models import X\n",
        "client/__init__.py": "",
        "client/cli.py": (
            "import budgetlab.sub.deep\n"
            "from budgetlab import models, VERSION\n"
            "from budgetlab.sub import *\n"
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from client import report\n"
            "def later():\n    from . import report\n"
            "    import importlib\n    importlib.import_module('budgetlab.errors')\n"
        ),
        "client/report.py": "",
    })
    modules, edges = import_edges(tmp_path, ("budgetlab", "client"))
    assert set(modules) == {"budgetlab", "budgetlab.models", "budgetlab.errors", "budgetlab.sub",
                            "budgetlab.sub.deep", "client", "client.cli", "client.report"}
    assert pairs(edges) == {
        ("budgetlab", "budgetlab.models"),
        ("budgetlab.models", "budgetlab.errors"),  # from pkg import submodule -> the submodule
        ("budgetlab.sub", "budgetlab.sub.deep"),  # from . import deep, in a package's __init__
        ("budgetlab.sub", "budgetlab.models"),  # from .. import models
        ("budgetlab.sub.deep", "budgetlab.errors"),  # from ..errors, in a plain module
        ("budgetlab.sub.deep", "budgetlab.sub"),
        ("budgetlab.sub.deep", "budgetlab.models"),
        ("client.cli", "budgetlab.sub.deep"),  # import a.b.c -> a.b.c
        ("client.cli", "budgetlab.models"),
        ("client.cli", "budgetlab"),  # VERSION is no module: the package
        ("client.cli", "budgetlab.sub"),  # star import: the package
        ("client.cli", "client.report"),  # TYPE_CHECKING and inside a function both count
        ("client.cli", "budgetlab.errors"),  # importlib with a literal name
    }
    lines = {e.line for e in edges if (e.source, e.target) == ("client.cli", "client.report")}
    assert lines == {6, 8}


def test_a_back_import_inside_a_function_is_named(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "budgetlab/__init__.py": "",
        "budgetlab/models.py": "def f():\n    from server.app import create_app\n",
        "server/__init__.py": "",
        "server/app.py": "from budgetlab.models import f\n",
        "learner/__init__.py": "",
        "learner/runner.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import client.cli\n",
        "client/__init__.py": "",
        "client/cli.py": "from server import app\nfrom learner import runner\n",  # the top may import anything
    })
    _, edges = import_edges(tmp_path)
    violations = floor_violations(edges)
    assert [str(e) for e in violations] == [
        "budgetlab.models -> server.app (budgetlab/models.py:2)",
        "learner.runner -> client.cli (learner/runner.py:3)",
    ]
    # Each back-import also closes a cycle with an import that runs the right way.
    assert [describe_cycle(c).splitlines()[0] for c in import_cycles(edges)] == [
        "budgetlab.models -> server.app -> budgetlab.models",
        "client.cli -> learner.runner -> client.cli",
    ]


def test_a_cycle_held_together_by_function_level_imports_is_named(tmp_path: Path) -> None:
    # The shape of issue 10's client cycle: compare -> plots -> report -> compare, closed inside functions.
    write_tree(tmp_path, {
        "client/__init__.py": "",
        "client/compare.py": "from client.plots import draw\n",
        "client/plots.py": "def draw():\n    from client import report\n",
        "client/report.py": "def render():\n    from .compare import run\n",
        "client/presets.py": "from client.compare import run\n",  # into the cycle, not on it
        "client/cli.py": "import client.cli\n",  # importing itself is no cycle between modules
    })
    _, edges = import_edges(tmp_path, ("client",))
    (cycle,) = import_cycles(edges)
    assert [str(e) for e in cycle] == [
        "client.compare -> client.plots (client/compare.py:1)",
        "client.plots -> client.report (client/plots.py:2)",
        "client.report -> client.compare (client/report.py:2)",
    ]
    assert describe_cycle(cycle).startswith("client.compare -> client.plots -> client.report -> client.compare\n")
    assert import_components(edges) == [["client.compare", "client.plots", "client.report"]]
    message = describe_cycles(edges)
    assert message.startswith("3 modules in a cycle: client.compare, client.plots, client.report\n")
    assert "client.presets" not in message


def test_two_separate_cycles_are_both_reported(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "server/__init__.py": "",
        "server/a.py": "from server import b\n",
        "server/b.py": "from server import a\n",
        "learner/__init__.py": "",
        "learner/x.py": "import learner.y\n",
        "learner/y.py": "import learner.z\n",
        "learner/z.py": "from learner.x import f\n",
    })
    _, edges = import_edges(tmp_path, ("server", "learner"))
    cycles = import_cycles(edges)
    assert [[e.source for e in c] for c in cycles] == [["learner.x", "learner.y", "learner.z"],
                                                        ["server.a", "server.b"]]
