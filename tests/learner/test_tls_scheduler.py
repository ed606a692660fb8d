"""A Dask scheduler that speaks TLS: ``--scheduler tls://HOST:PORT`` sends a comparison's runs to it with the
certificates that ``BUDGETLAB_SCHEDULER_CA``, ``_CERT`` and ``_KEY`` name (made here: a self-signed certificate, its
own CA, as Dask's ``Security.temporary`` makes it), and a TLS address without them, or certificates for a plain
address, is a usage error before anything is sent. The scheduler requires its clients' certificates (Dask's TLS is
mutual), which is what makes it safe to open: it runs whatever code a client sends it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.cli import app
from learner.cluster import SCHEDULER_CA_ENV, SCHEDULER_CERT_ENV, SCHEDULER_KEY_ENV
from tests.helpers import RUNNER, TINY

pytestmark = pytest.mark.process  # it starts processes or servers of its own (tests/process_guard.py)

CONFIG = f"""
title = "over TLS"
dataset = {{ name = "sparse-gaussian", params = {json.dumps(TINY).replace(":", " =").replace('"', "")} }}
budget = {{ per_example = 4 }}
seeds = [0]
eval_every = 30
[[algorithms]]
id = "aerr"
"""


def test_compare_sends_its_runs_to_a_tls_scheduler_with_its_certificates(tmp_path: Path) -> None:
    pytest.importorskip("cryptography", reason="Dask makes its self-signed certificates with cryptography")
    # distributed here: every xdist worker collects every file, and the import costs seconds of CPU.
    from distributed import LocalCluster
    from distributed.security import Security

    made = Security.temporary()
    tls = made.get_tls_config_for_role("client")
    files = {SCHEDULER_CA_ENV: tls["ca_file"], SCHEDULER_CERT_ENV: tls["cert"], SCHEDULER_KEY_ENV: tls["key"]}
    env: dict[str, str | None] = {}
    for name, pem in files.items():
        path = tmp_path / f"{name.lower()}.pem"
        path.write_text(pem)
        env[name] = str(path)
    config = tmp_path / "tls.toml"
    config.write_text(CONFIG)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=made, dashboard_address="127.0.0.1:0") as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        out = tmp_path / "report"
        done = RUNNER.invoke(app, ["compare", str(config), "--local", "--scheduler", address, "--out", str(out)],
                             env=env)
        assert done.exit_code == 0, done.output
        results = json.loads((out / "results.json").read_text())
        assert address in results["mode"]
        (run,) = results["designs"][0]["algorithms"][0]["runs"]
        assert run["result"]["status"] == "finished"

        unset = {name: None for name in files}
        bare = RUNNER.invoke(app, ["compare", str(config), "--local", "--scheduler", address, "--out", str(out)],
                             env=unset)
        assert bare.exit_code == 1 and SCHEDULER_CA_ENV in bare.output, bare.output

    plain = RUNNER.invoke(app, ["compare", str(config), "--local", "--scheduler", "tcp://127.0.0.1:9", "--out",
                                str(tmp_path / "plain")], env=env)
    assert plain.exit_code == 1 and "not one" in plain.output, plain.output
