"""The owner's schedule endpoints: create, pause and resume, and the list's state and last
result (the page's schedules screen needs all of them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support import Api, Guest, Server, history, new_agent, new_channel, wait_until


def _soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def _listed(owner: Api, schedule_id: str) -> dict[str, Any]:
    [found] = [s for s in owner.ok("GET", "/api/schedules")["schedules"] if s["id"] == schedule_id]
    return found


def test_a_one_shot_the_owner_creates_posts_its_prompt_and_reports_the_run(owner: Api) -> None:
    agent = new_agent(owner)
    channel = new_channel(owner, [agent["id"]])
    body = {"agentId": agent["id"], "channelId": channel["id"], "prompt": "Water the ferns."}
    created = owner.ok("POST", "/api/schedules", json={**body, "at": _soon(3)})["schedule"]
    assert created["state"] == "active" and created["lastResult"] is None
    assert created["nextRunAt"] == created["at"] and created["schedule"] is None

    def posted() -> bool:
        return any(
            m["metadata"].get("scheduleId") == created["id"] for m in history(owner, channel["id"])
        )

    wait_until(posted, timeout=15, what="the scheduled prompt")
    wait_until(lambda: _listed(owner, created["id"])["lastResult"] is not None, what="the run")
    listed = _listed(owner, created["id"])
    assert listed["state"] == "done" and listed["nextRunAt"] is None
    assert listed["lastResult"]["status"] == "fired"
    assert listed["lastResult"]["messageId"]
    response = owner.patch(f"/api/schedules/{created['id']}", json={"active": True})
    assert response.status_code == 409 and "run already" in response.json()["error"]


def test_a_paused_cron_schedule_keeps_its_place_and_resumes_from_now(owner: Api) -> None:
    agent = new_agent(owner)
    channel = new_channel(owner, [agent["id"]])
    created = owner.ok(
        "POST",
        "/api/schedules",
        json={
            "agentId": agent["id"],
            "channelId": channel["id"],
            "prompt": "Weekly report",
            "schedule": "0  9 * * 1",
        },
    )["schedule"]
    assert created["schedule"] == "0 9 * * 1" and created["nextRunAt"].endswith("T09:00:00.000Z")
    paused = owner.ok("PATCH", f"/api/schedules/{created['id']}", json={"active": False})
    assert paused["schedule"]["state"] == "paused" and paused["schedule"]["active"] is False
    assert _listed(owner, created["id"])["state"] == "paused"
    resumed = owner.ok("PATCH", f"/api/schedules/{created['id']}", json={"active": True})
    assert resumed["schedule"]["state"] == "active"
    assert resumed["schedule"]["nextRunAt"] == created["nextRunAt"]


def test_creating_a_schedule_refuses_what_could_never_run(owner: Api) -> None:
    agent = new_agent(owner)
    outsider = new_agent(owner)
    channel = new_channel(owner, [agent["id"]])
    base = {"agentId": agent["id"], "channelId": channel["id"], "prompt": "p"}
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({**base, "schedule": "every day"}, 400, "five fields"),
        ({**base, "schedule": "61 * * * *"}, 400, "five fields"),
        ({**base, "schedule": "0 0 31 2 *"}, 400, "never comes due"),
        ({**base, "at": "2001-01-01T00:00:00Z"}, 409, "not in the future"),
        ({**base, "at": "tomorrow"}, 400, "ISO 8601"),
        ({**base, "at": "2030-02-30T00:00:00Z"}, 400, "ISO 8601"),
        ({**base, "at": "2030-01-01T00:00:00"}, 400, "with its offset"),
        ({**base, "at": _soon(60), "schedule": "* * * * *"}, 400, "exactly one"),
        ({**base, "schedule": None}, 400, "exactly one"),
        ({**base, "prompt": "   ", "at": _soon(60)}, 400, "prompt"),
        ({**base, "agentId": outsider["id"], "at": _soon(60)}, 409, "not a member"),
        ({**base, "agentId": "agent_none", "at": _soon(60)}, 404, "agent_none"),
        ({**base, "channelId": "chan_none", "at": _soon(60)}, 404, "chan_none"),
    ]
    for body, status, words in cases:
        response = owner.post("/api/schedules", json=body)
        assert response.status_code == status, (body, response.text)
        assert words in response.json()["error"], (body, response.text)
    assert owner.patch("/api/schedules/sched_none", json={"active": False}).status_code == 404
    assert owner.ok("GET", "/api/schedules", params={"agentId": agent["id"]}) == {"schedules": []}


def test_guests_may_not_create_pause_or_resume_schedules(server: Server, owner: Api) -> None:
    agent = new_agent(owner)
    with Guest(server, owner) as guest:
        channel = new_channel(owner, [agent["id"]], [guest.id])
        created = owner.ok(
            "POST",
            "/api/schedules",
            json={
                "agentId": agent["id"],
                "channelId": channel["id"],
                "prompt": "p",
                "at": _soon(3600),
            },
        )["schedule"]
        for response in (
            guest.api.post(
                "/api/schedules",
                json={
                    "agentId": agent["id"],
                    "channelId": channel["id"],
                    "prompt": "p",
                    "at": _soon(3600),
                },
            ),
            guest.api.patch(f"/api/schedules/{created['id']}", json={"active": False}),
        ):
            assert response.status_code == 403 and "error" in response.json()
        assert _listed(owner, created["id"])["state"] == "active"
