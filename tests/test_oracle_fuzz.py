"""Schemathesis over the oracle's own OpenAPI document: no input, however odd, gets a 5xx."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.servers import oracle_server

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("fuzz") / "ledger.db"
    with oracle_server(f"sqlite:///{path}") as url:
        created = httpx.post(f"{url}/v1/sessions", json={
            "dataset": "sparse-gaussian",
            "dataset_params": {"d": 10, "n_train": 50, "n_test": 10, "s_plus": 2, "s_minus": 2},
            "budget": {"per_example": 3, "total": 100},
        }).json()
        httpx.post(f"{url}/v1/sessions/{created['id']}/next",
                   headers={"Authorization": f"Bearer {created['token']}"})
        yield url, created["id"], created["token"]


def test_no_server_errors(fuzz_target) -> None:  # type: ignore[no-untyped-def]
    url, session_id, token = fuzz_target
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    failures: list[str] = []
    calls: list[int] = []

    def fuzz(op) -> None:  # type: ignore[no-untyped-def]
        # Half the cases aim at the live session with its token so the fuzzer reaches past the 404 of auth.
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                  database=None)
        @given(case=op.as_strategy(), aim=st.booleans())
        def check(case, aim: bool) -> None:  # type: ignore[no-untyped-def]
            if aim and case.path_parameters and "session_id" in case.path_parameters:
                case.path_parameters["session_id"] = session_id
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            calls.append(response.status_code)
            if response.status_code >= 500:
                failures.append(f"{op.method.upper()} {op.path}: {response.status_code} {response.text[:200]}")

        check()

    for operation in schema.get_all_operations():
        fuzz(operation.ok())
    assert len(calls) > 100, "the fuzzer barely ran"
    assert any(200 <= code < 300 for code in calls), "no fuzzed request ever succeeded: the fuzzer is not reaching in"
    assert not failures, "\n".join(failures[:5])
