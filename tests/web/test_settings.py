"""web.environment and web.state: how both services read their settings from the environment, and how their routes
get what their app holds."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import Depends, FastAPI

from tests.helpers import in_process
from web.environment import env_amount, env_count, env_float, env_int, env_names, env_switch
from web.state import from_state


def test_an_unset_or_empty_variable_takes_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("X", raising=False)
    unset = (env_int("X", 3), env_float("X", 0.5), env_count("X"), env_count("X", 7), env_amount("X"),
             env_names("X"), env_switch("X", True))
    assert unset == (3, 0.5, None, 7, None, None, True)
    monkeypatch.setenv("X", "")
    # An empty list of names lists none: unlike unset, which leaves the choice to the setting.
    assert (env_int("X", 3), env_count("X", 7), env_amount("X"), env_names("X"), env_switch("X", False)) == \
        (3, 7, None, (), False)


def test_set_variables_read_as_their_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X", "12")
    assert (env_int("X", 3), env_float("X", 0.5), env_count("X"), env_amount("X")) == (12, 12.0, 12, 12.0)
    monkeypatch.setenv("X", "mnist-3v5, digits-3v5  powerlaw")
    assert env_names("X") == ("mnist-3v5", "digits-3v5", "powerlaw")
    for text, on in (("0", False), ("false", False), (" Off ", False), ("no", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("X", text)
        assert env_switch("X", not on) is on, text
    monkeypatch.setenv("X", "many")
    with pytest.raises(ValueError):
        env_int("X", 3)


def test_a_route_gets_what_its_app_holds_in_its_state() -> None:
    app = FastAPI()
    app.state.greeting = "hello"

    @app.get("/greeting")
    def greeting(said: Annotated[str, Depends(from_state("greeting", str))]) -> str:
        return said

    assert in_process(app, "GET", "/greeting").json() == "hello"
    app.state.greeting = "hello again"  # read at each request: what the app holds now
    assert in_process(app, "GET", "/greeting").json() == "hello again"
