"""Agents: what defines one (name, avatar, model, tools, persona) and their lifecycle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import Api, new_agent, new_channel, unique

LIST_FIELDS = {"id", "name", "avatar", "description", "model", "tools", "status"}
DETAIL_FIELDS = LIST_FIELDS | {"soul", "autoInjectMemory", "createdAt", "updatedAt"}


def _create(owner: Api, **fields: Any) -> tuple[int, dict[str, Any]]:
    response = owner.post("/api/agents", json={"name": unique("agent-"), **fields})
    return response.status_code, response.json()


def _error(owner: Api, method: str, path: str, status: int, **kwargs: Any) -> str:
    response = owner.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) - {"field"} == {"error"}
    error: str = body["error"]
    return error


@pytest.fixture
def provider(owner: Api) -> Iterator[str]:
    """A model provider configured for the test, removed after it."""
    name = unique("prov")
    owner.ok("PUT", "/api/settings", json={"providers": {name: {"type": "openai"}}})
    yield name
    owner.ok("PUT", "/api/settings", json={"providers": {name: None}})


@pytest.fixture
def mcp_server(owner: Api) -> Iterator[str]:
    """An MCP server configured for the test (never started: nobody calls its tools)."""
    name = unique("mcp")
    owner.ok("PUT", "/api/settings", json={"mcpServers": {name: {"command": "true"}}})
    yield name
    owner.ok("PUT", "/api/settings", json={"mcpServers": {name: None}})


def test_creating_with_only_a_name_fills_in_the_defaults(owner: Api) -> None:
    name = unique("Ada ")
    agent = owner.ok("POST", "/api/agents", json={"name": name})["agent"]
    assert set(agent) == DETAIL_FIELDS
    assert agent["id"].startswith("agent_")
    assert agent["name"] == name
    assert agent["avatar"] == "🤖"
    assert agent["description"] == ""
    assert agent["model"] == owner.ok("GET", "/api/settings")["settings"]["defaultModel"]
    assert agent["tools"] == []
    assert agent["soul"] == ""
    assert agent["autoInjectMemory"] is True
    assert agent["status"] == "online"
    assert agent["createdAt"] == agent["updatedAt"]


def test_creating_with_every_field(owner: Api, provider: str, mcp_server: str) -> None:
    fields = {
        "name": unique("Scribe "),
        "avatar": "🦉",
        "description": "Writes things down.",
        "model": f"{provider}/gpt-4o-mini",
        "tools": ["web_search", "rag_query", f"mcp:{mcp_server}:read_file"],
        "soul": "# Scribe\n\nYou keep the minutes.",
        "autoInjectMemory": False,
    }
    agent = owner.ok("POST", "/api/agents", json=fields)["agent"]
    assert {k: agent[k] for k in fields} == fields
    assert owner.ok("GET", f"/api/agents/{agent['id']}") == {"agent": agent}


def test_the_list_shows_list_items_and_the_detail_adds_the_soul(owner: Api) -> None:
    agent = new_agent(owner, soul="Be brief.")
    listed = [a for a in owner.ok("GET", "/api/agents")["agents"] if a["id"] == agent["id"]]
    assert listed == [{k: agent[k] for k in LIST_FIELDS}]
    detail = owner.ok("GET", f"/api/agents/{agent['id']}")["agent"]
    assert detail["soul"] == "Be brief."


def test_an_unknown_agent_answers_404(owner: Api) -> None:
    for method, kwargs in (("GET", {}), ("PUT", {"json": {"description": "x"}}), ("DELETE", {})):
        error = _error(owner, method, "/api/agents/agent_nope", 404, **kwargs)
        assert "agent_nope" in error


@pytest.mark.parametrize(
    "fields",
    [
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 65},
        {"name": 7},
        {"name": "ok", "colour": "blue"},
        {"name": "ok", "autoInjectMemory": "sometimes"},
        {"name": "ok", "tools": "web_search"},
    ],
    ids=["empty", "blank", "too-long", "not-a-string", "unknown-field", "not-bool", "not-list"],
)
def test_invalid_fields_answer_400(owner: Api, fields: dict[str, Any]) -> None:
    _error(owner, "POST", "/api/agents", 400, json=fields)


def test_a_name_is_required(owner: Api) -> None:
    assert "name" in _error(owner, "POST", "/api/agents", 400, json={"avatar": "🤖"})


def test_a_name_may_have_64_characters(owner: Api) -> None:
    name = unique("n")[:9] + "x" * 55
    assert len(name) == 64
    assert _create(owner, name=name)[0] == 200


def test_names_are_unique_ignoring_case(owner: Api) -> None:
    name = unique("Echo ")
    new_agent(owner, name=name)
    error = _error(owner, "POST", "/api/agents", 409, json={"name": name.upper()})
    assert name.upper() in error
    other = new_agent(owner)
    _error(owner, "PUT", f"/api/agents/{other['id']}", 409, json={"name": name.lower()})


def test_an_agent_may_change_the_case_of_its_own_name(owner: Api) -> None:
    agent = new_agent(owner, name=unique("quiet "))
    renamed = owner.ok("PUT", f"/api/agents/{agent['id']}", json={"name": agent["name"].upper()})
    assert renamed["agent"]["name"] == agent["name"].upper()


@pytest.mark.parametrize("avatar", ["🦊", "👍🏽", "👩‍🔬", "🇫🇷", "❤️"])
def test_the_avatar_may_be_any_single_emoji(owner: Api, avatar: str) -> None:
    status, body = _create(owner, avatar=avatar)
    assert status == 200, body
    assert body["agent"]["avatar"] == avatar


@pytest.mark.parametrize("avatar", ["A", "🦊🦊", "🦊 ", ":)", "🦊x", ""])
def test_the_avatar_must_be_exactly_one_emoji(owner: Api, avatar: str) -> None:
    status, body = _create(owner, avatar=avatar)
    assert status == 400
    assert "emoji" in body["error"]


@pytest.mark.parametrize("model", ["gpt-4o", "/gpt-4o", "openai/", "open ai/gpt", ""])
def test_the_model_must_read_provider_slash_model(owner: Api, model: str) -> None:
    status, body = _create(owner, model=model)
    assert status == 400
    assert "provider" in body["error"]


def test_the_model_provider_must_be_configured(owner: Api, provider: str) -> None:
    """A well-formed model naming a provider the settings lack conflicts with them: 409."""
    missing = unique("unconfigured")
    status, body = _create(owner, model=f"{missing}/some-model")
    assert status == 409
    assert f"'{missing}'" in body["error"]
    assert _create(owner, model=f"{provider}/some-model")[0] == 200
    assert _create(owner, model="builtin/echo")[0] == 200


@pytest.mark.parametrize(
    "tools",
    [
        ["web_search", "memory_write", "memory_search", "rag_query", "call_agent"],
        ["manage_schedule"],
        [],
    ],
)
def test_tools_may_be_the_known_ones(owner: Api, tools: list[str]) -> None:
    status, body = _create(owner, tools=tools)
    assert status == 200, body
    assert body["agent"]["tools"] == tools


@pytest.mark.parametrize("tool", ["shell", "mcp:", "mcp:server", "mcp::tool", "WEB_SEARCH"])
def test_unknown_tools_answer_400_naming_the_tool(owner: Api, tool: str) -> None:
    status, body = _create(owner, tools=["web_search", tool])
    assert status == 400
    assert f"'{tool}'" in body["error"]


def test_a_tool_of_an_unconfigured_mcp_server_answers_409(owner: Api) -> None:
    status, body = _create(owner, tools=["web_search", "mcp:unconfigured:tool"])
    assert status == 409
    assert "'mcp:unconfigured:tool'" in body["error"]


def test_bridged_tools_name_a_configured_mcp_server(owner: Api, mcp_server: str) -> None:
    status, body = _create(owner, tools=[f"mcp:{mcp_server}:search:deep"])
    assert status == 200, body


def test_an_update_changes_only_the_fields_it_names(owner: Api) -> None:
    agent = new_agent(owner, description="before", soul="soul", tools=["web_search"])
    updated = owner.ok(
        "PUT",
        f"/api/agents/{agent['id']}",
        json={"description": "after", "autoInjectMemory": False},
    )["agent"]
    assert updated["description"] == "after"
    assert updated["autoInjectMemory"] is False
    unchanged = {k for k in DETAIL_FIELDS if k not in {"description", "autoInjectMemory"}}
    assert {k: updated[k] for k in unchanged - {"updatedAt"}} == {
        k: agent[k] for k in unchanged - {"updatedAt"}
    }
    assert updated["updatedAt"] > agent["updatedAt"]
    assert owner.ok("GET", f"/api/agents/{agent['id']}")["agent"] == updated


def test_an_update_validates_like_a_creation(owner: Api) -> None:
    agent = new_agent(owner)
    path = f"/api/agents/{agent['id']}"
    for fields in (
        {"name": ""},
        {"avatar": "no"},
        {"model": "nope"},
        {"tools": ["shell"]},
        {"id": "agent_other"},
        {"status": "offline"},
    ):
        _error(owner, "PUT", path, 400, json=fields)
    assert owner.ok("GET", path)["agent"] == agent


def test_deleting_an_agent_removes_it_and_its_channel_memberships(owner: Api) -> None:
    agent, stays = new_agent(owner), new_agent(owner)
    channel = new_channel(owner, agent_ids=[agent["id"], stays["id"]])
    assert owner.ok("DELETE", f"/api/agents/{agent['id']}") == {"ok": True}
    _error(owner, "GET", f"/api/agents/{agent['id']}", 404)
    assert agent["id"] not in [a["id"] for a in owner.ok("GET", "/api/agents")["agents"]]
    after = owner.ok("GET", f"/api/channels/{channel['id']}")["channel"]
    assert after["agentIds"] == [stays["id"]]
    _error(owner, "DELETE", f"/api/agents/{agent['id']}", 404)
