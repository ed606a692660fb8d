"""Offline checks of Dockerfile and docker-compose.yml (no Docker engine here): schema, wiring, install command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT

COMPOSE = ROOT / "docker-compose.yml"
BIN = Path(sys.executable).parent
TIMEOUT = 60  # seconds for each offline command below (each takes 1-2 s)


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.mark.process
def test_compose_file_matches_the_compose_spec_schema() -> None:
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.process
def test_docker_compose_accepts_the_file() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("the docker-compose binary is not installed here")
    done = subprocess.run([binary, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, cwd=ROOT,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr


def host_port(services: dict, name: str) -> str:
    """The host's port a service is published on, as compose writes it (``${BUDGETLAB_ORACLE_PORT:-8000}``)."""
    match = re.fullmatch(r"\$\{BUDGETLAB_PUBLISH_ADDRESS:-[^}]*\}:(\$\{\w+:-\d+\}):\d+", services[name]["ports"][0])
    assert match is not None, services[name]["ports"]
    return match[1]


def test_services_are_wired_by_health() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "oracle", "learner", "scheduler", "worker", "demo"}
    assert services["postgres"]["image"] == "postgres:16"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    volume = services["postgres"]["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"]  # a named volume keeps the ledger
    for name, port in (("oracle", 8000), ("learner", 8001)):
        check = " ".join(services[name]["healthcheck"]["test"])
        assert "urllib" in check and f"{port}/healthz" in check
        (published,) = services[name]["ports"]
        # On the host's loopback unless BUDGETLAB_PUBLISH_ADDRESS opens it, at the port BUDGETLAB_*_PORT names.
        assert published == f"${{BUDGETLAB_PUBLISH_ADDRESS:-127.0.0.1}}:{host_port(services, name)}:{port}"
        assert host_port(services, name) == f"${{BUDGETLAB_{name.upper()}_PORT:-{port}}}"
    assert services["oracle"]["environment"]["DATABASE_URL"].startswith("postgresql+psycopg://")
    assert "@postgres:5432/" in services["oracle"]["environment"]["DATABASE_URL"]
    assert services["oracle"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["learner"]["environment"]["ORACLE_URL"] == "http://oracle:8000"
    assert services["learner"]["depends_on"] == {"oracle": {"condition": "service_healthy"},
                                                 "scheduler": {"condition": "service_healthy"}}
    # The learner's runs go to the Dask scheduler's workers, which scale (`--scale worker=3`), one thread each.
    assert services["learner"]["environment"]["BUDGETLAB_SCHEDULER"] == "tcp://scheduler:8786"
    assert services["scheduler"]["command"][:2] == ["dask", "scheduler"] and "8786" in services["scheduler"]["command"]
    assert "8786" in " ".join(services["scheduler"]["healthcheck"]["test"])
    worker = services["worker"]["command"]
    assert worker[:3] == ["dask", "worker", "tcp://scheduler:8786"] and worker[worker.index("--nthreads") + 1] == "1"
    assert services["worker"]["depends_on"] == {"scheduler": {"condition": "service_healthy"}}
    assert services["scheduler"]["image"] == services["worker"]["image"] == services["oracle"]["image"]
    assert "ports" not in services["worker"]  # scaled containers publish nothing
    assert services["demo"]["depends_on"] == {"oracle": {"condition": "service_healthy"},
                                              "learner": {"condition": "service_healthy"}}
    demo = services["demo"]["command"]
    assert demo[:2] == ["budgetlab", "sandbox"]  # the same demo as make sandbox, through these services
    assert demo[demo.index("--learner") + 1] == "http://learner:8001"
    assert demo[demo.index("--oracle") + 1] == "http://oracle:8000"
    # Its report lands where the learner's page lists comparisons.
    out = demo[demo.index("--out") + 1]
    assert services["learner"]["environment"]["BUDGETLAB_REPORTS_DIR"] == str(Path(out).parent) == "/reports"
    assert services["learner"]["volumes"] == services["demo"]["volumes"] == ["./reports:/reports"]


def test_dockerfile_installs_like_the_makefile_and_uses_python_311_slim() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim-bookworm$", dockerfile, re.M)
    # the quick start's install: every extra (the services and the command)
    (make_install,) = re.findall(r"^\t\$\(BIN\)/(python -m pip install .* -e '\.\[all\]')$",
                                 (ROOT / "Makefile").read_text(), re.M)
    assert f"RUN {make_install}\n" in dockerfile
    assert "make sandbox" in (ROOT / "README.md").read_text()  # the README's install goes through the Makefile


@pytest.mark.process
def test_the_image_has_debians_fashion_mnist_where_the_loader_looks() -> None:
    """The demo's data: Debian's package, installed in the image, in the folder the fashion-AvB loader reads."""
    from budgetlab.datasets.fashion import DEFAULT_DIR

    dockerfile = (ROOT / "Dockerfile").read_text()
    install = re.search(r"^RUN apt-get update \\\n\s+&& apt-get install -y --no-install-recommends ([^\n\\]+)",
                        dockerfile, re.M)
    assert install is not None and install[1].split() == ["dataset-fashion-mnist"]
    assert dockerfile.index("dataset-fashion-mnist") < dockerfile.index("pip install")  # a layer pip edits skip
    assert "BUDGETLAB_FASHION_DIR" not in dockerfile + COMPOSE.read_text()
    listed = subprocess.run(["dpkg", "-L", "dataset-fashion-mnist"], capture_output=True, text=True)
    if listed.returncode == 0:  # where the package is installed here, it puts the files where the loader looks
        assert f"{DEFAULT_DIR}/train-images-idx3-ubyte.gz" in listed.stdout.splitlines()


@pytest.mark.process
def test_entry_points_exist_in_the_cli() -> None:
    services = compose()["services"]
    commands = [services["oracle"]["command"], services["learner"]["command"], services["demo"]["command"]]
    assert commands[0][:3] == ["budgetlab", "serve", "oracle"] and "0.0.0.0" in commands[0]
    assert commands[1][:3] == ["budgetlab", "serve", "learner"] and "0.0.0.0" in commands[1]
    for dask in (services["scheduler"]["command"], services["worker"]["command"]):
        done = subprocess.run([str(BIN / "dask"), dask[1], "--help"], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "200"}, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        assert all(option in done.stdout for option in dask if option.startswith("--")), done.stdout
    for command in commands:
        first_option = next(i for i, a in enumerate(command) if a.startswith("--"))
        done = subprocess.run([str(BIN / "budgetlab"), *command[1:first_option], "--help"], capture_output=True,
                              text=True, env={**os.environ, "COLUMNS": "200"}, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        options = [a for a in command[first_option:] if a.startswith("--")]
        assert all(option in done.stdout for option in options), (options, done.stdout)


def test_dockerfile_copies_every_package_the_distribution_installs() -> None:
    """A top-level package missing from the image would install fine and fail at the first import."""
    import tomllib

    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = set(re.findall(r"^COPY (\S+) \./\1\s*$", (ROOT / "Dockerfile").read_text(), flags=re.M))
    assert {p.rstrip("*") for p in packages} <= copied


def test_the_image_holds_the_bytecode_of_every_package_it_copies() -> None:
    """Under the image's PYTHONDONTWRITEBYTECODE, a module without bytecode is compiled from source by every process
    that imports it (the oracle's own modules: about 0.25 CPU-s per start), and the editable install compiles none."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ENV .*PYTHONDONTWRITEBYTECODE=1", dockerfile, re.M)
    copied = set(re.findall(r"^COPY (\S+) \./\1\s*$", dockerfile, flags=re.M))
    compiled = re.search(r"^RUN python -m compileall -q ((?:\S+ ?)+)$", dockerfile, re.M)
    assert compiled is not None and set(compiled[1].split()) == copied
    assert dockerfile.index("pip install") < compiled.start()  # after the install: nothing rewrites the sources since


def test_the_dashboards_link_each_other_at_the_ports_the_host_sees() -> None:
    """Inside the network the learner calls the oracle by its service name; a browser on the host cannot, so
    the pages' links use the published ports."""
    services = compose()["services"]
    oracle_port, learner_port = host_port(services, "oracle"), host_port(services, "learner")
    assert services["oracle"]["environment"]["BUDGETLAB_LEARNER_URL"] == f"http://localhost:{learner_port}"
    assert services["learner"]["environment"]["BUDGETLAB_ORACLE_PUBLIC_URL"] == f"http://localhost:{oracle_port}"
