"""An agent form shows each server error beside its field: the error names it in `field`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, new_agent, unique


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"avatar": "ab"}, 400, "avatar"),
        ({"model": "never-configured/some-model"}, 409, "model"),
        ({"model": "no slash"}, 400, "model"),
        ({"tools": ["no_such_tool"]}, 400, "tools"),
        ({"tools": ["mcp:absent:tool"]}, 409, "tools"),
        ({"description": "x" * 2001}, 400, "description"),
        ({"autoInjectMemory": "yes please"}, 400, "autoInjectMemory"),
    ],
)
def test_a_refused_agent_field_is_named_in_the_error(
    owner: Api, body: dict[str, Any], status: int, field: str
) -> None:
    response = owner.post("/api/agents", json={"name": unique("Fielded "), **body})
    assert response.status_code == status, response.text
    assert response.json()["field"] == field
    assert response.json()["error"]


def test_a_taken_name_is_named_on_create_and_on_rename(owner: Api) -> None:
    taken = new_agent(owner)
    other = new_agent(owner)
    created = owner.post("/api/agents", json={"name": taken["name"]})
    assert (created.status_code, created.json()["field"]) == (409, "name")
    renamed = owner.put(f"/api/agents/{other['id']}", json={"name": taken["name"]})
    assert (renamed.status_code, renamed.json()["field"]) == (409, "name")
    reserved = owner.put(f"/api/agents/{other['id']}", json={"name": "agent_x"})
    assert (reserved.status_code, reserved.json()["field"]) == (400, "name")


def test_an_error_about_no_field_names_none(owner: Api) -> None:
    missing = owner.put("/api/agents/agent_nope", json={"description": "x"})
    assert missing.status_code == 404
    assert "field" not in missing.json()
    malformed = owner.post(
        "/api/agents", content=b"{", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400 and "field" not in malformed.json()
