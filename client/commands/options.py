"""The options several commands share: where the oracle is, a session's token, an account's API key."""

from __future__ import annotations

import os
from typing import Annotated

import typer

ORACLE_URL = os.environ.get("ORACLE_URL", "http://127.0.0.1:8000")

OracleOpt = Annotated[str, typer.Option("--oracle", help="oracle base URL", envvar="ORACLE_URL")]
TokenOpt = Annotated[str, typer.Option("--token", help="the session's bearer token", envvar="BUDGETLAB_TOKEN")]
ApiKeyOpt = Annotated[str | None, typer.Option(
    "--api-key", envvar="BUDGETLAB_API_KEY", show_envvar=True,
    help="an account's API key on the oracle: its sessions draw on the account's allowance (default: anonymous "
         "sessions)")]
