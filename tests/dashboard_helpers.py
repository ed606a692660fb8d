"""What the dashboard tests share: a real comparison report, written by ``budgetlab compare --local``, and Debian's
headless Chromium (driven through its chromedriver by selenium) with the helpers that wait on it and save its
screenshots."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

from client.cli import app
from tests.helpers import made_once
from tests.servers import shared_cluster_env

CONFIG = """
title = "dashboard demo"
dataset = { name = "digits-3v5" }
budget = { per_example = 4 }
seeds = [0, 1, 2, 3, 4]
max_examples = 40
eval_every = 10

[[algorithms]]
id = "aer"
label = "AER"

[[algorithms]]
id = "ridge"
label = "Ridge"
per_example = 64

[[claims]]
claim = "full information beats four attributes per example"
source = "this test"
paper = "Ridge < AER"
kind = "ordering"
order = ["Ridge", "AER"]
"""


def write_report(reports: Path, tmp_path_factory: pytest.TempPathFactory, name: str = "demo") -> dict:
    """``budgetlab compare`` (in-process oracles)'s report in ``reports/name`` and its config in
    ``reports/demo.toml``; its results.json. The comparison runs once in the test run (``made_once``): the tests that
    read it get a copy each."""

    def compare(made: Path) -> None:
        (made / "demo.toml").write_text(CONFIG)
        result = CliRunner().invoke(app, ["compare", str(made / "demo.toml"), "--out", str(made / "demo"), "--local"],
                                    env=shared_cluster_env())
        assert result.exit_code == 0, result.output

    made = made_once(tmp_path_factory, "dashboard-demo", compare)
    reports.mkdir(parents=True, exist_ok=True)
    shutil.copy(made / "demo.toml", reports / "demo.toml")
    shutil.copytree(made / "demo", reports / name)
    return json.loads((reports / name / "results.json").read_text())


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
HAVE_CHROMIUM = CHROMIUM.exists() and CHROMEDRIVER.exists()
NO_CHROMIUM = "needs Debian's chromium and chromium-driver (.ci/run installs them)"
T = TypeVar("T")


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium, quit on the way out."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1500"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def screenshots(fallback: Path) -> Path:
    """Where screenshots go: ``$BUDGETLAB_SCREENSHOTS``, else ``fallback`` (a pytest temporary folder)."""
    folder = Path(os.environ.get("BUDGETLAB_SCREENSHOTS") or fallback)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(driver: Any, folder: Path, name: str) -> Path:
    path = folder / name
    assert driver.save_screenshot(str(path)), f"no screenshot {path}"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    print(f"dashboard screenshot: {path}")
    return path


def wait(what: Callable[[], T], message: str, timeout: float = 15.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out: {message}"
        time.sleep(0.05)


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)
