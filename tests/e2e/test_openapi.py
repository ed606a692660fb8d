"""The OpenAPI documents of the real oracle and learner: valid, authorizable from /docs, every field described and
exemplified, every request with an example the service accepts, and each endpoint listing the refusals it can
answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from budgetlab.service_client import tls_context
from tests.helpers import ADMIN, TINY, caller, session_auth
from tests.servers import serve_in_thread

# Every test reads a document of a service it serves on a port (its fixtures, by name).
pytestmark = pytest.mark.process

SESSION_ROUTE = "/v1/sessions/{session_id}"
ADMIN_ROUTES = [("post", "/v1/datasets"), ("delete", "/v1/datasets/{name}"), ("post", "/v1/admin/close-idle"),
                ("post", "/v1/accounts"), ("get", "/v1/accounts"), ("get", "/v1/accounts/{account_id}"),
                ("delete", "/v1/accounts/{account_id}"), ("get", "/v1/accounts/{account_id}/audit")]
UNAUTHORIZED = "send the session's token as 'Authorization: Bearer <token>'"


@pytest.fixture(scope="module")
def limited_oracle_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An oracle with small caps, so that the refusals over them take small requests."""
    from server.app import create_app
    from server.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path_factory.mktemp('openapi') / 'ledger.db'}",
                        max_body_bytes=64 << 10, max_cells=50, max_examples=5)
    with serve_in_thread(create_app(settings)) as url:
        yield url


# The first request builds the document (a second or two of CPU): on cores other jobs share it took over 5 s.
@pytest.fixture(scope="module")
def oracle_doc(shared_oracle_url: str) -> dict[str, Any]:
    answer = httpx.get(f"{shared_oracle_url}/openapi.json", timeout=60, verify=tls_context())
    assert answer.status_code == 200
    return answer.json()


@pytest.fixture(scope="module")
def learner_doc(learner_url: str) -> dict[str, Any]:
    answer = httpx.get(f"{learner_url}/openapi.json", timeout=60, verify=tls_context())
    assert answer.status_code == 200
    return answer.json()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def statuses(doc: dict[str, Any], method: str, path: str) -> set[int]:
    return {int(code) for code in doc["paths"][path][method]["responses"] if code.isdigit() and int(code) >= 400}


def validator(doc: dict[str, Any], pointer: str) -> Draft202012Validator:
    """A validator for the schema at ``pointer`` of ``doc``, its ``$ref``s to the components resolved."""
    registry = Registry().with_resource("urn:openapi", Resource.from_contents(doc, DRAFT202012))
    return Draft202012Validator({"$ref": f"urn:openapi#{pointer}"}, registry=registry)


def request_schema(op: dict[str, Any]) -> str | None:
    """A JSON body's model, or a form's (a dataset upload)."""
    body = op.get("requestBody")
    if body is None:
        return None
    content = body["content"].get("application/json") or body["content"]["multipart/form-data"]
    return content["schema"]["$ref"].removeprefix("#")


@pytest.mark.parametrize("which", ["oracle_doc", "learner_doc"])
def test_the_documents_are_valid_openapi_31(which: str, request: pytest.FixtureRequest) -> None:
    doc = request.getfixturevalue(which)
    assert doc["openapi"].startswith("3.1")
    import schemathesis  # here: every xdist worker collects this file, one runs it (~0.5 CPU-s of import)

    schemathesis.openapi.from_dict(doc).validate()  # against the OpenAPI 3.1 meta-schema; raises if invalid
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    declared = set(doc["components"]["securitySchemes"])
    for requirement in doc.get("security", []):
        assert set(requirement) <= declared, "the root names an undeclared scheme"
    for method, path, op in operations(doc):
        for requirement in op.get("security", []):
            assert set(requirement) <= declared, f"{method} {path} names an undeclared scheme"


def test_session_and_admin_routes_carry_bearer_schemes_that_docs_can_authorize(oracle_doc: dict[str, Any]) -> None:
    schemes = oracle_doc["components"]["securitySchemes"]
    assert schemes["SessionToken"]["type"] == schemes["AdminToken"]["type"] == "http"
    assert schemes["SessionToken"]["scheme"].lower() == schemes["AdminToken"]["scheme"].lower() == "bearer"
    session_routes = [(m, p, op) for m, p, op in operations(oracle_doc) if p.startswith(SESSION_ROUTE)]
    assert len(session_routes) >= 12
    for method, path, op in session_routes:
        assert op.get("security") == [{"SessionToken": []}], f"{method} {path}"
    for method, path in ADMIN_ROUTES:
        assert oracle_doc["paths"][path][method].get("security") == [{"AdminToken": []}], f"{method} {path}"
    # Reading the datasets needs no token; opening a session takes an account's key or none (anonymous): stated at
    # the root, which it alone inherits (generated clients read an operation's own {} as a key it needs).
    for method, path in [("get", "/v1/datasets"), ("get", "/v1/datasets/{spec}"), ("get", "/healthz")]:
        assert oracle_doc["paths"][path][method]["security"] == [], f"{method} {path}"
    assert oracle_doc["security"] == [{"AccountKey": []}, {}]
    inheriting = [(method, path) for method, path, op in operations(oracle_doc) if "security" not in op]
    assert inheriting == [("post", "/v1/sessions")]
    for path in ("/v1/account", "/v1/account/audit"):
        assert oracle_doc["paths"][path]["get"]["security"] == [{"AccountKey": []}], path
    # The scheme is the lock, not a header parameter /docs would ask for a second time.
    for method, path, op in operations(oracle_doc):
        assert all(p["name"].lower() != "authorization" for p in op.get("parameters", [])), f"{method} {path}"


def test_bearers_are_parsed_as_before_the_schemes(shared_oracle_url: str) -> None:
    """The schemes never refuse: missing, malformed and non-ASCII bearers stay the oracle's own 401 JSON."""
    with httpx.Client(base_url=shared_oracle_url, verify=tls_context()) as http:
        created = http.post("/v1/sessions", json={"dataset": "online-sparse", "dataset_params": {"d": 10}}).json()
        path = f"/v1/sessions/{created['id']}"
        assert http.get(path, headers={"Authorization": f"Bearer {created['token']}"}).status_code == 200
        for header in [None, b"Bearer", b"Basic dXNlcjpwYXNz", b"Bearer \xc3\xa9t\xc3\xa9", b"Bearer a b",
                       b"Bearer " + b"a" * 300]:
            for method, url in [("GET", path), ("POST", f"{path}/next"), ("POST", "/v1/admin/close-idle")]:
                answer = http.request(method, url, headers={} if header is None else {"Authorization": header})
                assert answer.status_code == 401, (method, url, header, answer.text)
                assert answer.json() == {"error": "unauthorized", "detail": UNAUTHORIZED}


# The learner's dashboard and report models are in its document too (the comparisons at GET /v1/dashboard/...).
@pytest.mark.parametrize(("which", "properties"), [("oracle_doc", 190), ("learner_doc", 170)])
def test_every_property_is_described_and_its_examples_fit(which: str, properties: int,
                                                          request: pytest.FixtureRequest) -> None:
    doc = request.getfixturevalue(which)
    schemas = doc["components"]["schemas"]
    found = [(name, prop, spec) for name, schema in schemas.items()
             for prop, spec in schema.get("properties", {}).items()]
    assert len(found) >= properties  # the listing does not miss the models (oracle 196, learner 176 when written)
    undescribed = [f"{name}.{prop}" for name, prop, spec in found if not spec.get("description")]
    assert not undescribed, f"{len(undescribed)} properties have no description: {undescribed[:10]}"
    unexemplified = [f"{name}.{prop}" for name, prop, spec in found if not property_examples(schemas, spec)]
    assert not unexemplified, f"{len(unexemplified)} properties have no example: {unexemplified[:10]}"
    examples = 0
    for name, prop, spec in found:
        check = validator(doc, f"/components/schemas/{name}/properties/{prop}")
        for example in property_examples(schemas, spec):
            assert not list(check.iter_errors(example)), f"{name}.{prop}: example {example!r} does not fit"
            examples += 1
    assert examples >= len(found)


def property_examples(schemas: dict[str, Any], spec: dict[str, Any]) -> list[Any]:
    """A property's examples; for a property that is a model, the model's own when the property repeats them
    (pydantic then leaves them off the property: a ``$ref`` with a sibling equal to the target's is dropped)."""
    if spec.get("examples"):
        return spec["examples"]
    ref = spec.get("$ref", "")
    return schemas[ref.rsplit("/", 1)[1]].get("examples", []) if ref.startswith("#/components/schemas/") else []


@pytest.mark.parametrize("which", ["oracle_doc", "learner_doc"])
def test_every_request_body_has_examples_that_fit_its_schema(which: str, request: pytest.FixtureRequest) -> None:
    doc = request.getfixturevalue(which)
    bodies = {ref for _, _, op in operations(doc) if (ref := request_schema(op)) is not None}
    assert bodies
    for pointer in bodies:
        schema = validator(doc, pointer)
        examples = doc["components"]["schemas"][pointer.rsplit("/", 1)[1]].get("examples")
        assert examples, f"{pointer} has no example"
        for example in examples:
            assert not list(schema.iter_errors(example)), f"{pointer}: {example}"


def test_the_oracle_accepts_its_documented_examples(oracle_doc: dict[str, Any], shared_oracle_url: str) -> None:
    """The examples are requests that work, in the order a learner would send them."""

    def example(name: str, index: int = 0) -> dict[str, Any]:
        return oracle_doc["components"]["schemas"][name]["examples"][index]

    with httpx.Client(base_url=shared_oracle_url, timeout=30, verify=tls_context()) as http:
        opened = [http.post("/v1/sessions", json=body) for body in oracle_doc["components"]["schemas"]
                  ["SessionCreate"]["examples"]]
        assert [answer.status_code for answer in opened] == [201, 201], opened[0].text
        (batch, online) = (answer.json() for answer in opened)
        path, auth = f"/v1/sessions/{batch['id']}", {"Authorization": f"Bearer {batch['token']}"}
        assert http.post(f"{path}/next", headers=auth).status_code == 200
        for endpoint, body in [("observe", example("ObserveRequest")), ("step", example("StepRequest")),
                               ("label", example("LabelRequest")), ("observe/batch", example("ObserveBatchRequest"))]:
            answer = http.post(f"{path}/{endpoint}", json=body, headers=auth)
            assert answer.status_code == 200, (endpoint, answer.text)
        d = batch["session"]["n_attributes"]
        weights = example("EvaluateRequest")["weights"]
        answer = http.post(f"{path}/evaluate", json={**example("EvaluateRequest"), "weights": (weights * d)[:d]},
                           headers=auth)
        assert answer.status_code == 200, answer.text
        path, auth = f"/v1/sessions/{online['id']}", {"Authorization": f"Bearer {online['token']}"}
        assert http.post(f"{path}/next", headers=auth).status_code == 200
        answer = http.post(f"{path}/predict", json=example("PredictRequest"), headers=auth)
        assert answer.status_code == 200, answer.text


def test_the_learner_accepts_its_documented_run(learner_doc: dict[str, Any], learner_url: str) -> None:
    with httpx.Client(base_url=learner_url, timeout=30, verify=tls_context()) as http:
        auth = {"Authorization": f"Bearer {http.post('/v1/callers').json()['token']}"}
        started = http.post("/v1/runs", json=learner_doc["components"]["schemas"]["RunCreate"]["examples"][0],
                            headers=auth)
        assert started.status_code == 201, started.text
        assert http.delete(f"/v1/runs/{started.json()['id']}", headers=auth).status_code == 200


def test_each_oracle_endpoint_lists_only_the_refusals_it_can_answer(oracle_doc: dict[str, Any]) -> None:
    def listed(method: str, path: str) -> set[int]:
        return statuses(oracle_doc, method, path)

    s = SESSION_ROUTE
    # 429 everywhere: every request from an address, or with a key, is rate-limited.
    assert all(429 in statuses(oracle_doc, m, p) for m, p, _ in operations(oracle_doc))
    # 503 and 507: the database's state (unreachable; full or read-only, to a write), on every route that uses it.
    assert listed("get", s) == {401, 404, 409, 422, 429, 503}  # a read: no budget, no body, no lock to wait for
    assert listed("get", f"{s}/ledger") == listed("get", f"{s}/audit") == {401, 404, 422, 429, 503}
    # No session token yet: an account's key (or none), its allowance, a rate per address.
    assert listed("post", "/v1/sessions") == {401, 403, 409, 413, 422, 429, 503, 507}
    for charging in ("observe", "observe/batch", "step"):
        # 403: the session's account was revoked (it draws nothing more)
        assert listed("post", f"{s}/{charging}") == {401, 402, 403, 404, 409, 413, 422, 429, 503, 507}
    assert "database_unavailable" in oracle_doc["paths"][f"{s}/observe"]["post"]["responses"]["503"]["description"]
    assert listed("get", "/healthz") == {429}
    assert 402 in listed("post", f"{s}/next") and 413 not in listed("post", f"{s}/next")
    for free in ("predict", "moments"):
        assert 402 not in listed("post", f"{s}/{free}") and 503 in listed("post", f"{s}/{free}")
    assert 402 in listed("post", f"{s}/evaluate")  # free, but an account's evaluations are counted
    assert listed("get", "/v1/datasets") == {429}
    assert listed("post", "/v1/datasets") == {401, 403, 413, 422, 429}
    # Each refusal is described by its error codes.
    observe = oracle_doc["paths"][f"{s}/observe"]["post"]["responses"]
    assert "too_many_cells" in observe["413"]["description"] and "too_large" in observe["413"]["description"]
    assert "budget_exceeded" in observe["402"]["description"]
    assert "duplicate_example" in oracle_doc["paths"][f"{s}/observe/batch"]["post"]["responses"]["422"]["description"]
    for method, path, op in operations(oracle_doc):
        for code in statuses(oracle_doc, method, path):
            content = op["responses"][str(code)]["content"]["application/json"]["schema"]
            assert content == {"$ref": "#/components/schemas/ErrorBody"}, f"{method} {path} {code}"


def test_every_refusal_the_oracle_answers_is_listed_for_its_endpoint(oracle_doc: dict[str, Any],
                                                                     limited_oracle_url: str) -> None:
    """Drive the real oracle into its refusals on every session endpoint; each must be one the endpoint lists."""
    seen: list[tuple[str, str, int, str]] = []
    session_ops = [(m, p) for m, p, _ in operations(oracle_doc) if p.startswith(SESSION_ROUTE) and m != "delete"]
    bodies = {"observe": {"example": 0, "attributes": [0, 1]}, "observe/batch": {"items": [
        {"example": 0, "attributes": [0, 1]}]}, "step": {"attributes": [0, 1]}, "label": {"example": 0},
        "predict": {"example": 0, "prediction": 0.0}, "evaluate": {"weights": [0.0] * 10}}

    with httpx.Client(base_url=limited_oracle_url, timeout=30, verify=tls_context()) as http:

        def call(method: str, template: str, session_id: str = "", token: str | None = None,
                 **kw: Any) -> httpx.Response:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            headers.update(kw.pop("headers", {}))
            answer = http.request(method, template.replace("{session_id}", session_id), headers=headers, **kw)
            error = answer.json()["error"] if answer.status_code >= 400 else ""
            seen.append((method.lower(), template, answer.status_code, error))
            return answer

        def every_session_op(session_id: str, token: str | None) -> None:
            for method, template in session_ops:
                tail = template.removeprefix(SESSION_ROUTE).lstrip("/")
                call(method, template, session_id, token, json=bodies.get(tail))

        def opened(**budget: Any) -> tuple[str, str]:
            created = call("POST", "/v1/sessions", json={"dataset": "sparse-gaussian", "budget": budget,
                                                         "dataset_params": {"d": 10, "n_train": 20, "n_test": 10,
                                                                            "s_plus": 2, "s_minus": 2}}).json()
            return created["id"], created["token"]

        sid, token = opened(per_example=1, total=3, label_cost=1)
        every_session_op(sid, None)  # 401
        every_session_op(sid, "not-its-token")  # 404
        every_session_op("x" * 65, token)  # 422
        every_session_op(sid, token)  # a batch session: predict 409, the local budget k 402, ...
        observe, batch = f"{SESSION_ROUTE}/observe", f"{SESSION_ROUTE}/observe/batch"
        for body in ({"example": 0, "attributes": [0, 0]}, {"example": 0, "attributes": [99]},
                     {"example": 9, "attributes": [0]}):
            call("POST", observe, sid, token, json=body)  # 422 duplicate, 404 unknown attribute, 409 not issued
        call("POST", batch, sid, token, json={"items": [bodies["observe"]] * 2})  # 422 duplicate example
        not_utf8 = call("POST", observe, sid, token, content=b'{"example": "\xff"}',  # 422, not FastAPI's 400
                        headers={"content-type": "application/json"})
        assert not_utf8.status_code == 422 and "not UTF-8" in not_utf8.json()["detail"]
        call("POST", batch, sid, token, json={"items": [{"example": 0, "attributes": [0] * 60}]})  # 413 cells
        call("POST", f"{SESSION_ROUTE}/evaluate", sid, token, json={"weights": [0.0] * 20_000})  # 413 body
        for _ in range(3):
            call("POST", f"{SESSION_ROUTE}/next", sid, token)  # the label cost exhausts the global budget K
        call("POST", "/v1/sessions", json={"dataset": "no-such-dataset"})  # 422
        sid, token = opened()
        call("DELETE", SESSION_ROUTE, sid, token)
        call("DELETE", SESSION_ROUTE, sid, token)
        every_session_op(sid, token)  # 409 on every write

    undocumented = sorted({(m, p, code, error) for m, p, code, error in seen
                           if code >= 400 and code not in statuses(oracle_doc, m, p)})
    assert not undocumented, undocumented
    errors = {error for *_, error in seen}
    assert errors >= {"unauthorized", "not_found", "invalid_request", "budget_exceeded", "batch_protocol",
                      "duplicate_attributes", "unknown_attribute", "example_not_issued", "duplicate_example",
                      "too_many_cells", "too_large", "session_closed", "invalid_session"}, errors
    for method, path, _, error in seen:  # and each is named in its status's description
        if error:
            code = next(c for m, p, c, e in seen if (m, p, e) == (method, path, error))
            described = oracle_doc["paths"][path][method]["responses"][str(code)]["description"]
            assert error in described, (method, path, error, described)


def test_the_learner_lists_bad_gateway_and_unavailable_where_it_calls_the_oracle(learner_doc: dict[str, Any]) -> None:
    assert learner_doc["components"]["securitySchemes"]["LearnerToken"]["scheme"].lower() == "bearer"
    for method, path, op in operations(learner_doc):
        if path.startswith("/v1/runs"):
            assert op.get("security") == [{"LearnerToken": []}], f"{method} {path}"
    for method, path in [("post", "/v1/runs"), ("get", "/v1/runs/{run_id}/audit")]:
        assert {502, 503} <= statuses(learner_doc, method, path), f"{method} {path}"
    # Answered from the learner's store: no oracle refusal, only the store's state (503 database_unavailable).
    run = learner_doc["paths"]["/v1/runs/{run_id}"]["get"]["responses"]
    assert 502 not in statuses(learner_doc, "get", "/v1/runs/{run_id}")
    assert run["503"]["description"].startswith("database_unavailable") and "oracle" not in run["503"]["description"]


def _times(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every (key, value) of a JSON answer whose key names a time (``..._at``, ``last_active``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _times(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _times(v, key)
    elif (key.endswith("_at") or key == "last_active") and value is not None:
        yield key, value


def test_every_time_either_service_answers_carries_its_utc_offset(shared_oracle_url: str, learner_url: str,
                                                                  http: httpx.Client) -> None:
    oracle, learner = shared_oracle_url, learner_url
    answers: list[Any] = []
    created = http.post(f"{oracle}/v1/sessions", json={"dataset": "sparse-gaussian", "dataset_params": TINY,
                                                        "order": "pool"}).json()
    answers += [created, http.get(f"{oracle}/v1/sessions/{created['id']}", headers=session_auth(created)).json()]
    answers.append(http.get(f"{oracle}/v1/dashboard/sessions", headers=ADMIN).json())
    account = http.post(f"{oracle}/v1/accounts", json={"name": "offsets"}, headers=ADMIN).json()
    answers += [account, http.get(f"{oracle}/v1/accounts", headers=ADMIN).json()]
    auth = caller(learner)
    request = {"dataset": "sparse-gaussian", "dataset_params": TINY, "algorithm": "aerr", "budget": {"per_example": 4}}
    run = http.post(f"{learner}/v1/runs", json=request, headers=auth).json()
    deadline = time.monotonic() + 120
    while (ended := http.get(f"{learner}/v1/runs/{run['id']}", headers=auth).json())["status"] in ("queued",
                                                                                                     "running"):
        assert time.monotonic() < deadline, ended["status"]
        time.sleep(0.1)
    answers += [ended, http.get(f"{learner}/v1/runs", headers=auth).json()]
    times = [pair for answer in answers for pair in _times(answer)]
    assert {key for key, _ in times} >= {"created_at", "last_active", "ended_at"}, times
    for key, text in times:
        assert datetime.fromisoformat(text).utcoffset() == timedelta(0), f"{key}: {text} has no UTC offset"


def test_a_body_that_is_not_utf8_is_the_documented_422_on_the_learner(learner_url: str, http: httpx.Client) -> None:
    answer = http.post(f"{learner_url}/v1/runs", content=b'{"dataset": "\xff"}',
                       headers={**caller(learner_url), "content-type": "application/json"})
    assert answer.status_code == 422 and answer.json()["error"] == "invalid_request", answer.text
