"""Every snippet of the README and the docs runs as written.

Each Markdown file's fenced blocks are extracted in order and run as one bash script (``set -euo pipefail``) in a
temporary directory of its own, so that a block can use what an earlier one made (``$SID``, a file):

- ``sh`` (``bash``, ``shell``) blocks run as they are; ``python`` blocks run with this interpreter;
- a block with ``title="NAME"`` (``toml title="my-comparison.toml"``) is a file: it is written to NAME, not run;
- ``text``, ``json`` and other blocks are output or fragments, and are not run.

Two markers, an HTML comment on the line just before a block (invisible on GitHub and on the site), say otherwise:

- ``<!-- snippet: services: WHY -->``: the block starts the oracle and the learner (``make sandbox``, ``budgetlab
  serve oracle --port 8000 &``). It is not run; the test starts both services in its place with ``budgetlab serve``
  on free ports (never 8000 and 8001, where a developer's sandbox may be running), replaces ``localhost:8000`` and
  ``localhost:8001`` (or ``127.0.0.1:...``) in the file's other blocks with their addresses, and sets ``ORACLE_URL``
  and ``LEARNER_URL``, the defaults of the CLI and of the learner, to them.
- ``<!-- snippet: skip: WHY -->``: the block is not run (an interactive command, one that another test covers). Rare:
  at most ``MAX_SKIPPED`` in all, each with its reason.

``curl`` is run with ``--fail-with-body``, so a snippet whose request is refused fails here instead of printing an
error a reader would take for the answer. The README's ``.venv`` is this interpreter's. The pages and their services
share one cache of parsed datasets (``BUDGETLAB_CACHE_DIR``, the test run's), as a user's commands share theirs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from budgetlab.service_client import tls_context
from tests.helpers import ROOT
from tests.servers import cli_service, shared_cluster_env

DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]
SHELL, PYTHON = {"sh", "bash", "shell"}, {"python", "py"}
MARKER = re.compile(r"^<!-- snippet: (skip|services): (.+) -->$")
FENCE = re.compile(r"^```(\S*)(.*)$")
TITLE = re.compile(r'title="([^"]+)"')
LOCAL = re.compile(r"\b(?:localhost|127\.0\.0\.1):(8000|8001)\b")
MAX_SKIPPED = 4
END = "BUDGETLAB_SNIPPET_END"
# The learner the test starts and the pages' ``compare --local`` (and ``bench``) run on the test process's Dask cluster
# (tests.servers.shared_cluster_env: BUDGETLAB_SCHEDULER, the setting a lab points them at its cluster with)
# instead of starting a LocalCluster each. Not the other pages: ``compare --learner`` refuses a scheduler, the
# scale-out page is about the LocalCluster (--workers), and the plugins' page's workers import what it installs.
ON_SHARED_CLUSTER = {"algorithms.md", "bench.md", "comparisons.md"}
# The admin token of the oracle the test starts in a services block's place (a page's snippets have it too, as a
# reader who started that oracle with it would).
ADMIN_TOKEN = "change-me"
# Pages whose snippets close every oracle session they open, as a reader's code should: the SDK's guide is the code a
# reader copies into theirs.
CLOSES_ITS_SESSIONS = {"sdk.md"}


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    title: str | None
    text: str
    marker: str | None = None
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.marker is None and self.title is None and self.lang in SHELL | PYTHON


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the marker on the line before it."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        assert not (line.lstrip().startswith("```") and not line.startswith("```")), (
            f"{path.relative_to(ROOT)}:{i + 1}: an indented fence; put code blocks at the margin so that they run here")
        opening = FENCE.match(line)
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        title = TITLE.search(opening.group(2))
        block = Block(path, i + 1, opening.group(1), title.group(1) if title else None, "\n".join(lines[i + 1:end]))
        previous = lines[i - 1] if i else ""
        marked = MARKER.match(previous)
        if marked:
            block.marker, block.reason = marked.groups()
        elif previous.startswith("<!-- snippet"):
            raise AssertionError(f"{block.where}: not a marker: {previous!r} (see {Path(__file__).name})")
        found.append(block)
        i = end + 1
    return found


def script(page: list[Block], oracle: str | None, learner: str | None) -> str:
    """The page's blocks as one bash script; each block announces itself on stderr with the time, so that a failure
    says where it is and the test can say how long each block took."""
    parts = ["set -euo pipefail"]
    for block in page:
        text = block.text
        if oracle and learner:
            text = LOCAL.sub(lambda m: (oracle if m.group(1) == "8000" else learner).removeprefix("http://"), text)
        announce = f'echo ">>> {block.where} $(date +%s.%N)" >&2'
        if block.title:
            parts.append(f"mkdir -p \"$(dirname '{block.title}')\"\ncat > '{block.title}' <<'{END}'\n{text}\n{END}")
        elif not block.runs:
            continue
        elif block.lang in PYTHON:
            parts.append(f"{announce}\n'{sys.executable}' - <<'{END}'\n{text}\n{END}")
        else:
            parts.append(f"{announce}\n{text}")
    return "\n".join([*parts, 'echo ">>> end $(date +%s.%N)" >&2']) + "\n"


@pytest.fixture(scope="module")
def dataset_cache(_dataset_cache: Path) -> Path:
    """One cache of parsed datasets for every page's snippets and services (as a user's one cache serves all their
    commands): the test run's (tests/conftest.py)."""
    return _dataset_cache


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory, dataset_cache: Path) -> Iterator[tuple[str, str]]:
    """An oracle and a learner as ``budgetlab serve`` starts them (the commands the docs show), on free ports."""
    root = tmp_path_factory.mktemp("snippet-services")
    cache = {"BUDGETLAB_CACHE_DIR": str(dataset_cache)}
    with cli_service(["serve", "oracle", "--port", "0", "--database-url", f"sqlite:///{root / 'ledger.db'}"],
                     cwd=root, env={**cache, "BUDGETLAB_ADMIN_TOKEN": ADMIN_TOKEN,
                                    "BUDGETLAB_DATA_DIR": str(root / "oracle-data")}) as oracle, \
            cli_service(["serve", "learner", "--port", "0"], cwd=root,
                        env={**cache, **shared_cluster_env(), "ORACLE_URL": oracle,
                             "LEARNER_DATABASE_URL": f"sqlite:///{root / 'runs.db'}"}) as learner:
        yield oracle, learner


def runnable(path: Path) -> bool:
    return any(block.runs for block in blocks(path))


def test_markers_are_few_and_say_why() -> None:
    marked = [block for path in DOCS for block in blocks(path) if block.marker]
    for block in marked:
        assert len(block.reason) >= 20, f"{block.where}: say why the block is not run"
    skipped = [block.where for block in marked if block.marker == "skip"]
    assert len(skipped) <= MAX_SKIPPED, f"too many blocks not run: {skipped}"
    # Every page whose blocks talk to the services on the usual ports has them started in its snippets' place.
    for path in DOCS:
        page = blocks(path)
        if any(block.runs and LOCAL.search(block.text) for block in page):
            assert any(block.marker == "services" for block in page), (
                f"{path.relative_to(ROOT)} talks to localhost:8000/8001 but starts no services")
    readme = blocks(ROOT / "README.md")
    assert sum(block.runs for block in readme) >= 3 and any(block.title for block in readme)
    # The quick start is two commands, the first block of the README.
    commands = [line.split("#")[0].strip() for line in readme[0].text.splitlines()]
    assert commands == ["make sandbox", "make test"], commands


@pytest.mark.process
@pytest.mark.parametrize("path", [p for p in DOCS if runnable(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_snippets_run_as_written(path: Path, tmp_path: Path, dataset_cache: Path,
                                 request: pytest.FixtureRequest) -> None:
    page = blocks(path)
    needs_services = any(block.marker == "services" for block in page)
    oracle, learner = request.getfixturevalue("services") if needs_services else (None, None)
    work = tmp_path / "work"
    (work / ".shims").mkdir(parents=True)
    real_curl = shutil.which("curl")
    if real_curl:
        shim = work / ".shims" / "curl"
        shim.write_text(f"#!/bin/sh\nexec '{real_curl}' --fail-with-body \"$@\"\n")
        shim.chmod(0o755)
    elif "curl " in "".join(block.text for block in page if block.runs):
        pytest.skip("curl is not installed")
    (work / ".venv").symlink_to(sys.prefix)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("BUDGETLAB_LEARNER_TOKEN", "BUDGETLAB_TOKEN", "PYTEST_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{work / '.shims'}:{Path(sys.executable).parent}:{env.get('PATH', '')}", MPLBACKEND="Agg",
               BUDGETLAB_DATA_DIR=str(work / "budgetlab-data"), BUDGETLAB_CACHE_DIR=str(dataset_cache))
    if oracle and learner:
        env.update(ORACLE_URL=oracle, LEARNER_URL=learner, BUDGETLAB_ADMIN_TOKEN=ADMIN_TOKEN)
    if path.name in ON_SHARED_CLUSTER:
        env.update(shared_cluster_env())
    (tmp_path / "page.sh").write_text(script(page, oracle, learner))
    open_before = open_sessions(oracle) if oracle and path.name in CLOSES_ITS_SESSIONS else None
    # Output to files, not pipes: a snippet may leave a process behind (``cmd &``) that would hold a pipe open.
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        process = subprocess.Popen(["bash", str(tmp_path / "page.sh")], cwd=work, env=env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(timeout=240)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    output = (tmp_path / "out").read_text(errors="replace")[-6000:]
    errors = (tmp_path / "err").read_text(errors="replace")[-6000:]
    marks = re.findall(r"^>>> (\S+) ([\d.]+)$", errors, flags=re.M)
    started = [where for where, _ in marks if where != "end"]
    assert code == 0, (f"{started[-1] if started else path.name}: a snippet failed (exit {code})\n"
                       f"--- stdout\n{output}\n--- stderr\n{errors}")
    for (where, at), (_, then) in zip(marks, marks[1:], strict=False):
        print(f"{float(then) - float(at):6.1f} s  {where}")
    ran = [block.where for block in page if block.runs]
    assert started == ran, f"not every block ran: {sorted(set(ran) - set(started))}"
    if oracle and open_before is not None:
        assert open_sessions(oracle) == open_before, f"{path.name}'s snippets leave oracle sessions open"


def open_sessions(oracle: str) -> int:
    """How many sessions the oracle holds open (its page's counts, for anyone to see)."""
    with httpx.Client(timeout=30, verify=tls_context()) as http:
        return int(http.get(f"{oracle}/v1/dashboard/sessions").json()["counts"]["open"])
