"""The usage ledger and budgets (issue 24): every model call of a reply is one ledger row,
priced by `settings.prices`, summed by `GET /api/usage`; a monthly cap refuses the next model
call, between the calls of a tool loop too, and a guest's cap leaves the owner alone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.agents.conftest import Room
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.support import Api, Guest, Server, Ws, unique

ADD = "mcp:fx:add"


@pytest.fixture
def settings_back(owner: Api) -> Iterator[None]:
    """Budgets and prices set by a test go when it ends."""
    yield
    current = owner.ok("GET", "/api/settings")["settings"]
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "prices": {model: None for model in current["prices"]},
            "budgets": {
                "agents": {a: None for a in current["budgets"]["agents"]},
                "guests": {g: None for g in current["budgets"]["guests"]},
                "total": None,
            },
        },
    )


def rows(owner: Api, group_by: str, **params: Any) -> dict[str, dict[str, Any]]:
    found = owner.ok("GET", "/api/usage", params={"groupBy": group_by, **params})["rows"]
    return {r["key"]: r for r in found}


def test_every_model_call_is_a_priced_ledger_row_summed_by_group(
    make_room: Any, fake_openai: FakeOpenAI, owner: Api, settings_back: None
) -> None:
    model = f"oai/{unique('priced')}"
    room: Room = make_room({"name": unique("Counter"), "model": model, "tools": ["web_search"]})
    agent_id = room.agents[0]["id"]
    owner.ok("PUT", "/api/settings", json={"prices": {model: {"input": 1.0, "output": 2.0}}})
    fake_openai.enqueue(
        tool_calls(tool_call("web_search", {"query": "x"}), usage=(100, 10)),
        text("Done.", usage=(200, 20)),
    )
    room.post(f"@{room.agents[0]['name']} count this")
    reply = room.reply(timeout=30)
    assert reply["data"]["metadata"]["usage"]["promptTokens"] == 300
    expected = {
        "inputTokens": 300,
        "outputTokens": 30,
        "cachedTokens": 0,
        "cost": pytest.approx((100 + 20 + 200 + 40) / 1_000_000),
        "calls": 2,
        "unpricedCalls": 0,
    }
    assert {k: v for k, v in rows(owner, "agent")[agent_id].items() if k != "key"} == expected
    assert rows(owner, "model")[model]["calls"] == 2
    assert rows(owner, "channel")[room.id]["inputTokens"] == 300
    me = owner.ok("GET", "/api/me")["user"]["id"]
    assert rows(owner, "person")[me]["calls"] >= 2
    today = datetime.now(UTC).date().isoformat()
    assert rows(owner, "day", **{"from": today, "to": today})[today]["calls"] >= 2
    assert agent_id not in rows(owner, "agent", **{"from": "2020-01-01", "to": "2020-01-31"})
    daily = owner.ok("GET", "/api/usage", params={"groupBy": "agent", "per": "day"})["rows"]
    assert [r for r in daily if r["key"] == agent_id] == [
        {"key": agent_id, "day": today, **expected}
    ]
    assert [(r["day"], r["key"]) for r in daily] == sorted((r["day"], r["key"]) for r in daily)


def test_a_model_without_a_price_costs_nothing_and_says_so(
    make_room: Any, fake_openai: FakeOpenAI, owner: Api
) -> None:
    room: Room = make_room({"name": unique("Free"), "model": f"oai/{unique('unpriced')}"})
    fake_openai.enqueue(text("Hi.", usage=(10, 5)))
    room.post(f"@{room.agents[0]['name']} hello")
    room.reply(timeout=30)
    row = rows(owner, "agent")[room.agents[0]["id"]]
    assert (row["cost"], row["calls"], row["unpricedCalls"]) == (0, 1, 1)


def test_a_spent_budget_refuses_the_reply_without_calling_the_model(
    make_room: Any, fake_openai: FakeOpenAI, owner: Api, settings_back: None
) -> None:
    name = unique("Thrifty")
    room: Room = make_room({"name": name})
    agent_id = room.agents[0]["id"]
    budget = {"budgets": {"agents": {agent_id: {"monthlyTokens": 50}}}}
    owner.ok("PUT", "/api/settings", json=budget)
    fake_openai.enqueue(text("First.", usage=(40, 20)))
    room.post(f"@{name} one")
    assert room.reply(timeout=30)["data"]["content"] == "First."
    asked = len(fake_openai.model_requests)
    room.post(f"@{name} two")
    refused = room.reply(timeout=30)["data"]
    error = refused["metadata"]["error"]
    assert f"monthly token budget of the agent {name} is spent" in error
    assert "60 of 50 tokens" in error and "resets on" in error
    assert len(fake_openai.model_requests) == asked


def test_the_cap_is_checked_between_the_calls_of_a_tool_loop(
    make_room: Any, fake_openai: FakeOpenAI, owner: Api, settings_back: None
) -> None:
    name = unique("Looper")
    room: Room = make_room({"name": name, "tools": ["web_search"]})
    owner.ok(
        "PUT",
        "/api/settings",
        json={"budgets": {"agents": {room.agents[0]["id"]: {"monthlyTokens": 100}}}},
    )
    fake_openai.enqueue(
        tool_calls(tool_call("web_search", {"query": "x"}), usage=(90, 20)), text("Never.")
    )
    asked = len(fake_openai.model_requests)
    room.post(f"@{name} search")
    reply = room.reply(timeout=30)["data"]
    assert "monthly token budget" in reply["metadata"]["error"]
    assert len(fake_openai.model_requests) == asked + 1
    assert any(m["type"] == "tool_call" for m in room.history())


def test_a_guests_cap_refuses_its_replies_and_leaves_the_owners_alone(
    server: Server, make_room: Any, fake_openai: FakeOpenAI, owner: Api, settings_back: None
) -> None:
    name = unique("Shared")
    room: Room = make_room({"name": name})
    with Guest(server, owner) as guest:
        owner.ok("POST", f"/api/channels/{room.id}/members", json={"userIds": [guest.id]})
        owner.ok(
            "PUT",
            "/api/settings",
            json={"budgets": {"guests": {guest.id: {"monthlyCost": 0.0}}}},
        )
        with Ws(server, guest.api.token) as ws:
            ws.subscribe(room.id)
            guest.api.ok(
                "POST", "/api/messages", json={"channelId": room.id, "content": f"@{name} hi"}
            )
            end = ws.expect("stream_end", 30)["data"]
            assert "monthly cost budget of replies for" in end["error"]
        fake_openai.enqueue(text("For the owner.", usage=(5, 5)))
        room.post(f"@{name} and me?")
        answer = room.ws.expect("message", 30, content="For the owner.")["data"]
        assert "error" not in answer["metadata"]


def test_usage_is_the_owners_and_bad_queries_are_400(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        refused = guest.api.get("/api/usage")
        assert refused.status_code == 403 and refused.json()["error"]
    for params in (
        {"groupBy": "planet"},
        {"from": "2026-13-01"},
        {"from": "2026-02-30"},
        {"per": "week"},
    ):
        response = owner.get("/api/usage", params=params)
        assert response.status_code == 400, params
        assert response.json()["error"]
    backwards = {"from": "2026-11-02", "to": "2026-11-01"}
    assert owner.ok("GET", "/api/usage", params=backwards) == {"rows": []}
