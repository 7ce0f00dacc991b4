"""`manage_schedule` end to end: an agent schedules work for itself through the model, the
schedule comes due in the running service and is answered, the owner sees and stops it, and
it outlives a restart."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.agents.conftest import Room, provider_settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.support import Api, Guest, Server, Ws, sql, wait_until

NEVER_SOON = "0 0 1 1 *"
"""Midnight on New Year's Day: a cron schedule that will not come due during a test."""


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def scheduled(room: Room, fake_openai: FakeOpenAI, *args: dict[str, Any]) -> list[Any]:
    """Have the room's agent call `manage_schedule` with each of `args`; answers the results."""
    fake_openai.enqueue(
        tool_calls(*(tool_call("manage_schedule", a) for a in args)), text("Noted.")
    )
    room.post("please schedule that")
    reply = room.reply()
    return [
        json.loads(e["data"]["result"])
        for e in room.ws.seen
        if e["type"] == "tool_result" and e["data"]["messageId"] == reply["data"]["id"]
    ]


def listed(api: Api, **params: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok("GET", "/api/schedules", params=params)["schedules"]
    return found


def test_a_one_shot_comes_due_and_the_agent_answers_it(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Gardener", "tools": ["manage_schedule"]}, kind="dm")
    agent_id = room.agents[0]["id"]
    [created] = scheduled(
        room,
        fake_openai,
        # Far enough ahead to be in the future still when the model's tool call runs, on a
        # loaded machine too.
        {"action": "create", "at": soon(5), "prompt": "Water the plants"},
    )
    schedule = created["created"]
    assert [s["id"] for s in listed(room.api, agentId=agent_id)] == [schedule["id"]]
    fake_openai.enqueue(text("Watering now."))
    prompt = room.ws.expect("message", timeout=15, content="Water the plants")["data"]
    assert prompt["userId"] is None and prompt["agentId"] is None
    assert prompt["metadata"]["scheduleId"] == schedule["id"]
    assert prompt["metadata"]["scheduledBy"] == agent_id
    answer = room.reply()["data"]
    assert answer["agentId"] == agent_id
    assert answer["content"] == "Watering now."
    assert answer["metadata"]["scheduleId"] == schedule["id"]
    request = fake_openai.model_requests[-1].body["messages"]
    assert f"your own schedule {schedule['id']}" in request[0]["content"]
    assert request[-1]["content"].endswith("Water the plants")
    [after] = listed(room.api, agentId=agent_id)
    assert after["active"] is False and after["lastRunAt"] is not None


def test_the_owner_sees_and_stops_schedules(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Reporter", "tools": ["manage_schedule"]}, kind="dm")
    agent_id = room.agents[0]["id"]
    [created] = scheduled(
        room, fake_openai, {"action": "create", "schedule": NEVER_SOON, "prompt": "Year report"}
    )
    [schedule] = listed(room.api, agentId=agent_id)
    assert schedule == {**created["created"], "state": "active", "lastResult": None}
    assert schedule["schedule"] == NEVER_SOON and schedule["at"] is None
    assert schedule["channelId"] == room.id and schedule["active"] is True
    assert schedule["nextRunAt"].endswith("-01-01T00:00:00.000Z")
    assert schedule["id"] in {s["id"] for s in listed(room.api)}
    assert room.api.ok("DELETE", f"/api/schedules/{schedule['id']}") == {"ok": True}
    assert listed(room.api, agentId=agent_id) == []
    assert room.api.delete(f"/api/schedules/{schedule['id']}").status_code == 404
    assert room.api.get("/api/schedules", params={"agentId": "agent_none"}).status_code == 404
    [answer] = scheduled(room, fake_openai, {"action": "list"})
    assert answer == {"schedules": []}


def test_guests_may_not_see_or_stop_schedules(server: Server, owner: Api) -> None:
    guest = Guest(server, owner)
    try:
        for response in (
            guest.api.get("/api/schedules"),
            guest.api.delete("/api/schedules/sched_any"),
        ):
            assert response.status_code == 403
            assert "error" in response.json()
    finally:
        guest.close()


def test_schedules_outlive_a_restart_and_missed_runs_are_caught_up_or_skipped(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    fresh_server.start()
    api = fresh_server.login()
    api.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))
    agent = api.ok(
        "POST",
        "/api/agents",
        json={"name": "Keeper", "model": "oai/m", "tools": ["manage_schedule"]},
    )["agent"]
    channel = api.ok(
        "POST", "/api/channels", json={"name": "c", "type": "dm", "agentIds": [agent["id"]]}
    )["channel"]
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel["id"])
        room = Room(api, channel, [agent], ws)
        made = scheduled(
            room,
            fake_openai,
            *(
                {"action": "create", "at": soon(3600), "prompt": prompt}
                for prompt in ("Feed the cat", "Walk the dog")
            ),
            {"action": "create", "schedule": NEVER_SOON, "prompt": "Year report"},
        )
    api.close()
    fresh_server.stop()
    ids = {m["created"]["prompt"]: m["created"]["id"] for m in made}
    for prompt, late in (("Feed the cat", 10), ("Walk the dog", 61)):
        missed = (datetime.now(UTC) - timedelta(minutes=late)).strftime("%Y-%m-%d %H:%M:%S.%f")
        sql(
            fresh_server,
            "UPDATE schedules SET at = ?, next_run_at = ? WHERE id = ?",
            missed,
            missed,
            ids[prompt],
        )
    fake_openai.enqueue(text("Fed."))
    fresh_server.start()
    with fresh_server.login() as api:

        def answers() -> list[dict[str, Any]]:
            messages = api.ok("GET", "/api/messages", params={"channelId": channel["id"]})
            return [m for m in messages["messages"] if m["metadata"].get("scheduleId")]

        wait_until(lambda: len(answers()) == 2, timeout=15, what="the caught-up run's answer")
        prompt, answer = answers()
        assert prompt["content"] == "Feed the cat" and prompt["userId"] is None
        assert answer["content"] == "Fed." and answer["agentId"] == agent["id"]
        assert answer["metadata"]["scheduleId"] == ids["Feed the cat"]
        schedules = {s["prompt"]: s for s in listed(api)}
        assert not schedules["Feed the cat"]["active"] and not schedules["Walk the dog"]["active"]
        assert schedules["Year report"]["active"] is True
        assert schedules["Year report"]["schedule"] == NEVER_SOON
    runs = sql(fresh_server, "SELECT schedule_id, status, reason FROM schedule_runs")
    assert sorted(runs) == sorted(
        [(ids["Feed the cat"], "fired", None), (ids["Walk the dog"], "skipped", "late")]
    )
