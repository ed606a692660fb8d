"""The small per-example steps over HTTP (``next``, ``step``, ``observe``, ``label``, ``predict``), answered without the
web framework's routing and dependencies.

A step's own work is a fraction of a millisecond; FastAPI's route matching over every route of the oracle and its
dependency solving took as much again. ``SmallSteps`` sits inside the rate limits and the body limits (the same as
every request meets) and answers a well-formed request of such an operation itself: the table's request model
validates its JSON body (``budgetlab.operations``, as the stream does), the session service applies it in the group
of the steps ready at once (``server.scheduling.GroupCommit``), and the answer is the model's JSON, exactly what the
route answers. Anything else it hands on untouched to the routes, which answer it as before: no or a malformed
bearer, a body that is not JSON or does not validate (their 401 and 422), a session id past its length, another
method or path. The routes stay the OpenAPI document's, and the one answer for what this does not take.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from budgetlab.bearer import bearer_token
from budgetlab.errors import Refused
from budgetlab.operations import OPERATIONS, SESSIONS, Operation
from web.database_faults import database_refusal
from web.errors import error_response
from web.limits import replay_body

# The operations answered here: small steps of the table, POSTed.
SMALL = {name: op for name, op in OPERATIONS.items() if op.small and op.method == "POST"}
_PATH = re.compile(rf"^{SESSIONS}/([^/]{{1,64}})/({'|'.join(SMALL)})$")
_JSON = b"application/json"


class SmallSteps:
    """ASGI middleware: answer the small steps' well-formed requests (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or (match := _PATH.match(scope["path"])) is None:
            await self.app(scope, receive, send)
            return
        token, json_body = None, False
        for name, value in scope["headers"]:
            if name == b"authorization":
                token = bearer_token(value.decode("latin-1"))
            elif name == b"content-type":
                json_body = value.split(b";")[0].strip().lower() == _JSON
        op = SMALL[match.group(2)]
        body = await _body(receive)
        request = False if token is None else _request(op, body, json_body)
        if request is False:  # the routes refuse it as they do (401, 422)
            await self.app(scope, replay_body(body, receive), send)
            return
        sessions = scope["app"].state.sessions
        try:
            answer = await sessions.group.run(match.group(1), sessions.perform, op, match.group(1), token,
                                                 request)
        except Refused as exc:
            await error_response(exc.status, exc.error, exc.detail, exc.remaining, exc.retry_after)(scope, receive,
                                                                                                    send)
            return
        except Exception as exc:
            refused = database_refusal(exc)
            if refused is None:  # a bug: the app's 500
                raise
            await error_response(refused.status, refused.error, refused.detail, None, refused.retry_after)(
                scope, receive, send)
            return
        content = answer.__pydantic_serializer__.to_json(answer)  # model_dump_json's bytes, without a str between
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(content)).encode()), (b"content-type", _JSON)]})
        await send({"type": "http.response.body", "body": content})


def _request(op: Operation[..., Any], body: bytes, json_body: bool) -> Any:
    """The operation's request from the body, None for one without a body, or False if the routes must answer."""
    if op.request is None:
        return None
    if not json_body:
        return False
    # Parsed and validated at once (1.5 us a step's body, against 4.3 for json.loads and then the dict's validation):
    # the same model from every body either accepts; one that only json.loads reads (a UTF-8 BOM) the routes answer.
    try:
        return op.request.model_validate_json(body)
    except ValidationError:  # not JSON, or not the model
        return False


async def _body(receive: Receive) -> bytes:
    """The whole body (its size is bounded by ``web.limits.RequestLimits``, outside this)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
