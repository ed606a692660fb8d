"""The documentation site: ``mkdocs build --strict`` passes (a broken link, anchor or API reference fails it), the HTTP
reference holds every operation and schema the oracle's and the learner's OpenAPI documents have, the Python
reference is generated from the docstrings, nothing on any page is loaded from another host, and the site served
over loopback loads only files of its own in headless Chromium, its search included."""

from __future__ import annotations

import fcntl
import functools
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from html import unescape
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per test session: under xdist in the session's shared temporary directory, by the first
    worker that needs it (under a file lock), the others reading it (``--dist loadgroup`` does not keep a group on
    one worker with pytest 9.2; see ``tests/learner/algorithms/test_alg_ito.py``)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "docs-site"
    with (shared / "docs-site.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (out / "index.html").exists():
            # NO_MKDOCS_2_WARNING: Material's banner about its successor, printed at every build.
            built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                                   cwd=ROOT, capture_output=True, text=True,
                                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=240)
            assert built.returncode == 0, built.stdout + built.stderr
    return out


class Loads(HTMLParser):
    """What a page makes the browser load: scripts, stylesheets, images, frames (links to follow are not loads)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source") and a.get("src"):
            self.loads.append(a["src"] or "")
        if tag == "link" and a.get("href") and set((a.get("rel") or "").split()) & {"stylesheet", "icon",
                                                                                    "preload", "modulepreload"}:
            self.loads.append(a["href"] or "")


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 4
    for page in pages:
        parser = Loads()
        parser.feed(page.read_text())
        remote = [url for url in parser.loads if re.match(r"^(https?:)?//", url)]
        assert not remote, f"{page.relative_to(site)} loads {remote}"


def test_no_page_points_at_files_users_do_not_have(site: Path) -> None:
    """The team's shared folder (design notes, the papers' PDFs) is not in the project: no page may send a reader
    there."""
    sources = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *site.rglob("*.html")]
    for source in sources:
        text = source.read_text()
        for pattern in ("../shared", "/work/shared", "shared/papers", "DESIGN.md", "ERRATA"):
            assert pattern not in text, f"{source} mentions {pattern}"


def openapi_operations(doc: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}


@pytest.mark.parametrize("service", ["oracle", "learner"])
def test_http_reference_is_the_services_openapi_document(site: Path, service: str, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import openapi_pages
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    doc = openapi_pages.DOCUMENTS[service](tmp_path)
    html = (site / "reference" / f"http-{service}.html").read_text()
    text = unescape(re.sub(r"<[^>]+>", "", html)).replace("\\|", "|")
    operations = openapi_operations(doc)
    assert len(operations) >= 8
    for method, path in operations:
        assert f"{method} {path}" in text, f"{method} {path} is missing from the {service}'s HTTP reference"
    schemas = doc["components"]["schemas"]
    examples = [openapi_pages.example_of(op["requestBody"]["content"], schemas)
                for _, _, op in ((m, p, o) for p, ops in doc["paths"].items() for m, o in ops.items())
                if "requestBody" in op]
    for example in filter(None, examples):
        first = json.dumps(example, indent=2, ensure_ascii=False).splitlines()[1].strip().rstrip(",")
        assert first in text, f"a request body's example ({first}) is missing"
    for name, schema in doc["components"]["schemas"].items():
        assert f'id="{openapi_pages.anchor(name)}"' in html, f"schema {name} has no section"
        for field, spec in schema.get("properties", {}).items():
            description = spec.get("description")
            if description:
                words = " ".join(description.replace("`", "").split()[:6])
                assert words in text, f"{name}.{field}'s description is missing"


def test_the_http_reference_leaves_no_thread_of_the_apps_it_builds(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """The hook builds both apps on a ledger in a folder it removes at once: an app it left open checkpointed that
    ledger a second later, and `make docs` printed "WAL checkpoint failed ... unable to open database file"."""
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import openapi_pages
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    before = set(threading.enumerate())
    for build in openapi_pages.DOCUMENTS.values():
        build(tmp_path)
    assert [t.name for t in set(threading.enumerate()) - before if t.name == "sqlite-checkpoint"] == []
    assert not [r for r in caplog.records if "checkpoint" in r.getMessage()]


def documented(module_name: str, members: list[str] | None) -> Iterator[Any]:
    """The public classes and functions a module defines (or ``members`` of them), and the public methods of those
    classes."""
    module = importlib.import_module(module_name)
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name or (members and name not in members):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield obj
        if inspect.isclass(obj):
            yield from (member for key, member in vars(obj).items()
                        if not key.startswith("_") and inspect.isfunction(member))


def test_python_reference_is_generated_from_the_docstrings(site: Path) -> None:
    page = ROOT / "docs" / "reference" / "python.md"
    # "::: module" and, in its options below, an optional "members: [A, B]"
    found = re.findall(r"^::: ([\w.]+)\n(?:(?: {4}.*\n)*? {6}members: \[([^\]]*)\])?", page.read_text(), flags=re.M)
    modules = {name: [m.strip() for m in members.split(",")] if members else None for name, members in found}
    assert {"budgetlab.oracle_client", "learner.estimator"} <= set(modules)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", (site / "reference" / "python.html").read_text())))
    checked = 0
    for module, members in modules.items():
        for obj in documented(module, members):
            if obj.__doc__:
                first = " ".join(obj.__doc__.replace("``", "").split()[:5])
                assert first in text, f"{module}.{obj.__qualname__}'s docstring is not in the reference"
                checked += 1
    assert checked >= 20


@pytest.fixture(scope="module")
def site_url(site: Path) -> Iterator[str]:
    """The built site served as ``make docs`` serves it: plain static files over loopback HTTP."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)")
def test_the_site_in_a_browser_loads_only_its_own_files_and_searches(site_url: str) -> None:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1300,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        for page in ("index.html", "reference/http-oracle.html", "reference/python.html"):
            driver.get(f"{site_url}/{page}")
            assert driver.find_element(By.CSS_SELECTOR, "article h1").text
            loaded = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
            assert any(url.endswith(".css") for url in loaded), f"{page} loaded no stylesheet: the theme is missing"
            assert all(url.startswith(site_url) for url in loaded), [u for u in loaded if not u.startswith(site_url)]
        shots = Path(os.environ.get("BUDGETLAB_SCREENSHOTS") or tempfile.mkdtemp(prefix="docs-screenshots-"))
        shots.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(shots / "docs-python-api.png"))
        print(f"docs screenshots: {shots / 'docs-python-api.png'}, {shots / 'docs-search.png'}")
        # The search index is built in a web worker from the site's own search_index.json.
        box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
        box.click()
        box.send_keys("receipt")
        WebDriverWait(driver, 20).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
        assert driver.save_screenshot(str(shots / "docs-search.png"))
    finally:
        driver.quit()
