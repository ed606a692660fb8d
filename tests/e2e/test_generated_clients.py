"""Clients generated from the services' OpenAPI documents, as a user without the SDK makes them
(openapi-python-client, from the running service's /openapi.json), drive the real oracle and learner: the README's
curl flow through the oracle's, a run through the learner's. Every answer is parsed into the generated models, so a
wire name the generated code cannot hold (the number of attributes was ``d``, which shadowed the local variable
``d`` of every ``from_dict``) fails here."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_type_hints

import httpx
import numpy as np
import pytest

from budgetlab.contract.budgets import Budget
from budgetlab.oracle_client import OracleClient
from budgetlab.service_client import tls_context
from learner.oracle import LocalOracle
from learner.runner import run_algorithm
from tests.helpers import ADMIN_TOKEN, TINY

GENERATOR = str(Path(sys.executable).with_name("openapi-python-client"))
# The README's curl flow: a session on MNIST 3 vs 5 with 5 attributes of each example, its first example, the
# centre pixel of it (and what the README shows it is).
README_SESSION = {"dataset": "mnist-3v5", "budget": {"per_example": 5}, "seed": 1}
CENTRE, CENTRE_VALUE = 407, 0.996078431372549
# Four more pixels use up the local budget of the example; a sixth is refused.
MORE, REFUSED = [406, 408, 379, 435], 380
RUN = {"dataset": "sparse-gaussian", "dataset_params": TINY, "algorithm": "aerr", "budget": {"per_example": 5},
       "seed": 1}


class Generated:
    """A generated client, imported: its package, its models, its operations by tag and name."""

    def __init__(self, package: ModuleType, output: str) -> None:
        self.package = package
        self.models: Any = importlib.import_module(f"{package.__name__}.models")
        self.output = output  # what the generator printed: its warnings

    def operation(self, tag: str, name: str) -> Any:
        return importlib.import_module(f"{self.package.__name__}.api.{tag}.{name}")

    def client(self, url: str, token: str | None = None) -> Any:
        """A client without credentials, or with ``token`` as its bearer; an answer whose status the document does
        not list raises. The process's TLS settings, as every client of the tests (tests/conftest.py's ``http``);
        60 s, since the first request for a dataset may parse it."""
        options = {"base_url": url, "raise_on_unexpected_status": True, "timeout": httpx.Timeout(60.0),
                   "verify_ssl": tls_context()}
        if token is None:
            return self.package.Client(**options)
        return self.package.AuthenticatedClient(token=token, **options)


@pytest.fixture(scope="module")
def generate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``generate(url, name)``: the client generated from the document the service at ``url`` serves."""
    where = tmp_path_factory.mktemp("generated")
    sys.path.insert(0, str(where))
    # The generator formats what it writes with ruff (its post hooks), found on the PATH: this environment's.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def make(url: str, name: str) -> Generated:
        document = httpx.get(f"{url}/openapi.json", verify=tls_context())
        assert document.status_code == 200
        spec = where / f"{name}.json"
        spec.write_bytes(document.content)
        done = subprocess.run([GENERATOR, "generate", "--path", str(spec), "--output-path", str(where / name),
                               "--meta", "none"], capture_output=True, text=True, env=env, timeout=120)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output
        assert "ruff" not in output, output  # its post hooks ran: ruff fixed and formatted the code
        return Generated(importlib.import_module(name), output)

    yield make
    sys.path.remove(str(where))
    for name in [name for name in sys.modules if name.split(".")[0] in ("oracle_api", "learner_api")]:
        del sys.modules[name]


def test_the_readme_curl_flow_through_a_client_generated_from_the_oracles_document(generate: Any,
                                                                                   shared_oracle_url: str) -> None:
    api = generate(shared_oracle_url, "oracle_api")
    assert "Warning" not in api.output, api.output
    models, anonymous = api.models, api.client(shared_oracle_url)
    open_session = api.operation("sessions", "open_session_v1_sessions_post")
    # The account's key is optional: the generated types take a client without credentials for opening a session.
    assert api.package.Client in get_args(get_type_hints(open_session.sync_detailed)["client"])

    described = api.operation("datasets", "dataset_v1_datasets_spec_get").sync("mnist-3v5", client=anonymous)
    assert isinstance(described, models.DatasetInfo), described
    with OracleClient(shared_oracle_url, stream=False) as sdk:
        known = sdk.dataset("mnist-3v5")
    assert (described.n_attributes, described.n_train, described.n_test) == (784, known.n_train, known.n_test)

    opened = open_session.sync_detailed(client=anonymous, body=models.SessionCreate.from_dict(README_SESSION))
    assert opened.status_code == 201 and isinstance(opened.parsed, models.SessionCreated), opened.content
    created = opened.parsed
    assert (created.session.dataset, created.session.n_attributes, created.session.seed) == ("mnist-3v5", 784, 1)
    assert created.session.remaining.per_example == 5
    owner = api.client(shared_oracle_url, created.token)

    first = api.operation("sessions", "next_v1_sessions_session_id_next_post").sync(created.id, client=owner)
    assert isinstance(first, models.NextResponse), first
    assert (first.example, first.label, first.position) == (0, -1.0, 0)  # as the README shows

    observe = api.operation("sessions", "observe_v1_sessions_session_id_observe_post")
    centre = observe.sync(created.id, client=owner, body=models.ObserveRequest(example=0, attributes=[CENTRE]))
    assert isinstance(centre, models.ObserveResponse), centre
    assert centre.values == [CENTRE_VALUE]
    assert (centre.charged, centre.fresh, centre.spent, centre.remaining.example_attributes) == (1.0, 1, 1.0, 4)
    more = observe.sync(created.id, client=owner, body=models.ObserveRequest(example=0, attributes=MORE))
    assert (more.charged, more.spent, more.remaining.example_attributes) == (4.0, 5.0, 0)
    # The SDK is answered the same values by a session of the same seed.
    with OracleClient(shared_oracle_url, stream=False) as sdk:
        session = sdk.open_session("mnist-3v5", budget=README_SESSION["budget"], seed=1)
        assert session.next().example == 0
        assert centre.values + more.values == session.observe(0, [CENTRE, *MORE]).values

    refused = observe.sync_detailed(created.id, client=owner, body=models.ObserveRequest(example=0,
                                                                                        attributes=[REFUSED]))
    assert refused.status_code == 402 and isinstance(refused.parsed, models.ErrorBody), refused.content
    assert refused.parsed.error == "budget_exceeded"
    assert refused.parsed.remaining.example_attributes == 0

    info = api.operation("sessions", "get_v1_sessions_session_id_get").sync(created.id, client=owner)
    assert isinstance(info, models.SessionInfo), info
    assert (info.n_attributes, info.spent.attributes, info.spent.cost) == (784, 5, 5.0)
    # A row for the opening, the label, each pixel; none for the refusal.
    assert info.ledger_rows == more.receipt.rows == 7
    audit = api.operation("sessions", "audit_v1_sessions_session_id_audit_get").sync(created.id, client=owner)
    assert isinstance(audit, models.AuditReport), audit
    assert audit.compliant and audit.chain_ok, audit.reasons
    assert (audit.attributes_recomputed, audit.spent_recomputed, audit.max_attributes_per_example) == (5, 5.0, 5)

    # With an account's key, the same operation opens a session that draws on the account.
    admin = api.client(shared_oracle_url, ADMIN_TOKEN)
    account = api.operation("accounts", "create_account_v1_accounts_post").sync(
        client=admin, body=models.AccountCreate(name="generated"))
    assert isinstance(account, models.AccountCreated), account
    keyed = open_session.sync(client=api.client(shared_oracle_url, account.key),
                              body=models.SessionCreate.from_dict(README_SESSION))
    assert isinstance(keyed, models.SessionCreated), keyed

    # The admin's listing holds both, as the dashboard lists them.
    listing = api.operation("dashboard", "dashboard_sessions_v1_dashboard_sessions_get").sync(client=admin, limit=10)
    assert isinstance(listing, models.SessionsView), listing
    listed = {s.id: s for s in listing.sessions}
    assert (listed[created.id].n_attributes, listed[created.id].spent.attributes) == (784, 5)
    assert (listed[created.id].account, listed[keyed.id].account) == (None, account.account.id)


def test_a_run_through_a_client_generated_from_the_learners_document(generate: Any, shared_oracle_url: str,
                                                                    learner_url: str) -> None:
    api = generate(learner_url, "learner_api")
    # The one part it leaves out: a comparison's plot, whose answer is a PNG (it parses no image/png answer).
    warned = [line for line in api.output.splitlines() if line.startswith("WARNING")]
    assert warned == ["WARNING parsing GET /v1/dashboard/comparisons/{name}/plots/{plot} within dashboard."], \
        api.output
    models, anonymous = api.models, api.client(learner_url)

    algorithms = api.operation("algorithms", "list_algorithms_v1_algorithms_get").sync(client=anonymous)
    assert isinstance(algorithms, models.AlgorithmList), algorithms
    assert {"aerr", "ddaerr", "ito1"} <= {algorithm.id for algorithm in algorithms.algorithms}
    datasets = api.operation("dashboard", "dashboard_datasets_v1_dashboard_datasets_get").sync(client=anonymous)
    assert isinstance(datasets, models.DatasetList), datasets
    assert next(d for d in datasets.datasets if d.name == "mnist-3v5").n_attributes == 784

    caller = api.operation("callers", "new_caller_v1_callers_post").sync(client=anonymous)
    assert isinstance(caller, models.CallerToken), caller
    owner = api.client(learner_url, caller.token)
    body = models.RunCreate.from_dict({**RUN, "oracle_url": shared_oracle_url})
    started = api.operation("runs", "start_run_v1_runs_post").sync_detailed(client=owner, body=body)
    assert started.status_code == 201 and isinstance(started.parsed, models.RunInfo), started.content

    get_run = api.operation("runs", "get_run_v1_runs_run_id_get")
    deadline = time.monotonic() + 120
    while (run := get_run.sync(started.parsed.id, client=owner)).status.value in ("pending", "queued", "running"):
        assert time.monotonic() < deadline, f"the run did not end: {run.status}"
        time.sleep(0.05)
    assert isinstance(run, models.RunInfo) and run.status.value == "finished", run.message
    result = run.result
    assert (result.algorithm, result.seed, result.examples) == ("aerr", 1, TINY["n_train"])
    assert result.attributes == run.progress_attributes <= 5 * TINY["n_train"]
    # The weights of the same run in this process, with the same seed.
    here = run_algorithm("aerr", LocalOracle("sparse-gaussian", dataset_params=TINY, budget=Budget(per_example=5),
                                             seed=1), seed=1)
    assert np.any(np.asarray(here.weights) != 0), "a run that never moves proves nothing"
    assert result.weights == list(here.weights)

    audit = api.operation("runs", "audit_run_v1_runs_run_id_audit_get").sync(started.parsed.id, client=owner)
    assert isinstance(audit, models.AuditReport), audit
    assert audit.compliant and audit.session_id == result.session, audit.reasons
    assert audit.attributes_recomputed == result.attributes
