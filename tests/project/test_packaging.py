"""``pip install budgetlab`` is the ground floor with light dependencies: the SDK clients, the session engine and its
in-memory store, the ledger's audit and the datasets that need nothing more. The services and the command come
with the extras (``server``, ``learner``, ``client``, ``gym``; ``all`` for the quick start).

The base install is imitated in a fresh interpreter that cannot import any package of the extras (an import hook
refuses them as if they were not installed), so the test sees what a user of the base install would."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib

import pytest

from tests.helpers import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# The base install's dependencies: nothing of the web, SQL, plotting or CLI stacks, and no scikit-learn.
LIGHT = {"pydantic", "httpx", "websockets", "numpy", "platformdirs"}
# Import names of the extras' distributions where they differ from the distribution's name.
IMPORT_NAMES = {"scikit-learn": "sklearn", "psycopg": "psycopg", "mlflow-skinny": "mlflow"}
EXTRAS = ("datasets", "service", "server", "learner", "client", "gym")


# Every module of budgetlab, imported; budgetlab.sensing alone may need its extra (gym), and must say so.
IMPORT_EVERY_MODULE = """
import json, pkgutil, importlib, budgetlab
needs_gym = []
for module in pkgutil.walk_packages(budgetlab.__path__, "budgetlab."):
    try:
        importlib.import_module(module.name)
    except ModuleNotFoundError as exc:  # only the environment may need its extra, and must say which
        if not module.name.startswith("budgetlab.sensing"):
            raise
        needs_gym.append(str(exc))
"""


def name_of(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower()


def extras_modules() -> set[str]:
    """The top-level modules of every distribution the extras add (their own dependencies: starlette)."""
    names = {name_of(r) for extra in EXTRAS for r in PROJECT["optional-dependencies"][extra]} - {"budgetlab"}
    return {IMPORT_NAMES.get(n, n.replace("-", "_")) for n in names} | {"starlette"}


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    blocker = f"""
import importlib.abc, sys
BLOCKED = {sorted(extras_modules())!r}
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (
    None if name.partition(".")[0] in BLOCKED else _find_spec(name, package))
"""
    return subprocess.run([sys.executable, "-c", "import importlib.util\n" + blocker + code], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_the_base_dependencies_are_light_and_the_extras_add_the_floors() -> None:
    assert {name_of(r) for r in PROJECT["dependencies"]} == LIGHT
    extras = PROJECT["optional-dependencies"]
    for heavy in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "psycopg", "matplotlib", "typer", "scikit-learn"):
        assert not any(name_of(r) == heavy for r in PROJECT["dependencies"])
    assert "budgetlab[all]" not in extras["dev"]  # make test installs '.[all,dev]'
    assert len(extras["all"]) == 1
    assert set(extras["all"][0].partition("[")[2].rstrip("]").split(",")) == {"server", "learner", "client", "gym"}
    assert {name_of(r) for r in extras["gym"]} == {"gymnasium"}
    assert "scikit-learn" in {name_of(r) for r in extras["datasets"]}
    assert {"fastapi", "uvicorn", "sqlalchemy"} <= {name_of(r) for r in extras["service"]}
    assert {"typer", "rich", "matplotlib"} <= {name_of(r) for r in extras["client"]}


@pytest.mark.process
def test_the_ground_floor_works_without_any_extra() -> None:
    """Every module of budgetlab imports, an in-memory session runs, the sets of the extras say how to get them."""
    done = run_without_extras(IMPORT_EVERY_MODULE + """
import sklearn
""")
    assert done.returncode == 1 and "No module named 'sklearn'" in done.stderr, done.stderr  # the hook holds
    done = run_without_extras(IMPORT_EVERY_MODULE + """
from budgetlab.datasets.registry import list_datasets, load_dataset
from budgetlab.datasets.base import UnknownDataset
from budgetlab.local_session import LocalSession
session = LocalSession.open("sparse-gaussian", dataset_params={"d": 8, "n_train": 30, "n_test": 10, "s_plus": 2,
                            "s_minus": 2}, budget={"per_example": 2})
first = session.next()
observed = session.observe(first.example, [3, 5])
try:
    load_dataset("digits-3v5")
    refused = ""
except UnknownDataset as exc:
    refused = str(exc)
print(json.dumps({"charged": observed.charged, "listed": [d.name for d in list_datasets().datasets],
                  "refused": refused, "needs_gym": needs_gym}))
""")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["charged"] == 2.0
    assert "sparse-gaussian" in answer["listed"] and not {"diabetes", "digits-3v5", "mnist-3v5"} & set(answer["listed"])
    assert "pip install 'budgetlab[datasets]'" in answer["refused"]
    assert answer["needs_gym"] and all("pip install 'budgetlab[gym]'" in m for m in answer["needs_gym"])


@pytest.mark.process
def test_the_command_without_the_client_extra_says_which_extra_to_install() -> None:
    done = run_without_extras("from client.command import main\nmain()\n")
    assert done.returncode == 1
    assert "the command needs the client extra" in done.stderr and "pip install 'budgetlab[client]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_license_is_an_spdx_expression_and_its_text_ships() -> None:
    # The table form (license = {text = ...}) made every install warn that setuptools refuses it from 2027-02-18;
    # an SPDX expression becomes the metadata's License-Expression (PEP 639), with the license file beside it.
    metadata = importlib.metadata.metadata("budgetlab")
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get("License") is None
    assert "LICENSE" in metadata.get_all("License-File", [])
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
